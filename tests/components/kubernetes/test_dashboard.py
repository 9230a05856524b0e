"""The GPU dashboard: a ConfigMap the Grafana sidecar loads, only where the stack asks for it, whose
every query reads a metric the DCGM exporter's metrics list collects."""

from __future__ import annotations

import json
import re

import pytest

from components.kubernetes.dashboard import DASHBOARD_FILE, DATA_KEY
from components.kubernetes.namespace import NAMESPACE
from preview.recording import Recording, Registration

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"
DASHBOARD = "gpu-platform:kubernetes:GpuDashboard"
EXPORTER = "gpu-platform:operands:DcgmExporter"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
# A metric selector: a name right before its label matchers (every panel query writes them), or the
# first argument of a variable's `label_values(metric, label)`.
SELECTOR = re.compile(r"\b([A-Za-z_:][A-Za-z0-9_:]*)\s*\{|label_values\(\s*([A-Za-z_:][A-Za-z0-9_:]*)\s*[,)]")


def metrics_in(expr: str) -> set[str]:
    return {name for match in SELECTOR.findall(expr) for name in match if name}


def dashboard_config_maps(rec: Recording) -> list[Registration]:
    components = {r.urn for r in rec.of_type(DASHBOARD)}
    return [r for r in rec.of_type(CONFIG_MAP) if r.parent in components]


def collected_metrics(rec: Recording) -> set[str]:
    """The DCGM fields of the exporter's metrics ConfigMap, as the exporter reads them."""
    [metrics] = [r for r in rec.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == "nvidia-dcgm-exporter-metrics"]
    rows = metrics.inputs["data"]["metrics.csv"].splitlines()
    return {row.split(",")[0].strip() for row in rows if row.strip() and not row.startswith("#")}


def queries(dashboard: dict) -> list[str]:
    """Every PromQL expression: panel targets (rows included) and query variables."""
    panels = [*dashboard["panels"], *(p for row in dashboard["panels"] for p in row.get("panels", []))]
    exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
    exprs += [v["query"]["query"] for v in dashboard["templating"]["list"] if v["type"] == "query"]
    return exprs


@pytest.fixture(scope="module")
def shipped(prod) -> dict:
    [config_map] = dashboard_config_maps(prod)
    return json.loads(config_map.inputs["data"][DATA_KEY])


def test_the_prod_stack_ships_the_dashboard(prod):
    assert prod.config["gpu-platform:monitoring"]["dashboard"] is True
    assert len(dashboard_config_maps(prod)) == 1


def test_the_dev_stack_has_no_dashboard(dev):
    assert "dashboard" not in dev.config.get("gpu-platform:monitoring", {})
    assert dev.of_type(DASHBOARD) == []
    assert dashboard_config_maps(dev) == []


def test_the_dashboard_follows_the_option_alone(variant):
    on = variant(lambda cfg: cfg.setdefault("gpu-platform:monitoring", {}).update(dashboard=True))
    off = variant(lambda cfg: cfg["gpu-platform:monitoring"].update(dashboard=False), stack="prod")
    assert len(dashboard_config_maps(on)) == 1
    assert dashboard_config_maps(off) == []


def test_the_config_map_carries_the_grafana_sidecar_label(prod):
    [config_map] = dashboard_config_maps(prod)
    assert config_map.inputs["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert config_map.inputs["metadata"]["namespace"] == NAMESPACE


def test_the_dashboard_is_created_after_the_dcgm_exporter(prod):
    # Depending on a component is depending on its children: the engine records the DaemonSet.
    [config_map] = dashboard_config_maps(prod)
    [exporter] = prod.of_type(EXPORTER)
    # prod's: one for the MIG pool, one for the others.
    daemonsets = [r for r in prod.of_type(DAEMONSET) if r.parent == exporter.urn]
    assert len(daemonsets) == 2 and all(d.urn in config_map.dependencies for d in daemonsets)


def test_the_shipped_json_is_the_data_file(shipped):
    assert shipped == json.loads(DASHBOARD_FILE.read_text())
    assert shipped["uid"] and shipped["title"] and shipped["panels"]


def test_every_query_reads_a_metric_the_exporter_collects(prod, shipped):
    collected = collected_metrics(prod)
    for expr in queries(shipped):
        used = metrics_in(expr)
        assert used, f"no metric selector in {expr!r}"
        assert used <= collected, f"{expr!r} reads {sorted(used - collected)}, not in the exporter's metrics list"


def test_utilisation_memory_temperature_power_and_xid_are_all_shown(shipped):
    used = set().union(*(metrics_in(e) for e in queries(shipped)))
    assert {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "DCGM_FI_DEV_XID_ERRORS",
    } <= used


def test_every_panel_reads_the_datasource_variable(shipped):
    panels = [p for p in shipped["panels"] if p["type"] != "row"]
    assert {p["datasource"]["uid"] for p in panels} == {"${datasource}"}
    assert len({p["id"] for p in shipped["panels"]}) == len(shipped["panels"])


def test_there_are_panels_per_pod(shipped):
    per_pod = [t["expr"] for p in shipped["panels"] for t in p.get("targets", []) if "by (namespace, pod" in t["expr"]]
    assert per_pod


@pytest.mark.parametrize(
    "image, label",
    [
        # The rename landed in exporter 4.8.3 (dcgm-exporter #655); the DCGM half of the tag does not decide it.
        ("nvcr.io/nvidia/k8s/dcgm-exporter:4.5.3-4.8.2-distroless", "Hostname"),
        ("nvcr.io/nvidia/k8s/dcgm-exporter:4.6.0-4.8.3-distroless", "hostname"),
        ("nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.1-ubuntu22.04", "Hostname"),
    ],
)
def test_the_host_label_follows_the_exporter_version(image, label):
    from components.kubernetes.dashboard import host_label

    assert host_label(image) == label


def test_a_release_whose_exporter_says_hostname_gets_a_dashboard_that_says_it_too(variant):
    # v26.7.0 ships exporter 4.8.3: a dashboard grouping by `Hostname` would show empty per-node panels.
    rec = variant(lambda cfg: cfg["gpu-platform:operator"].update(release="v26.7.0"), stack="prod")
    [config_map] = dashboard_config_maps(rec)
    text = config_map.inputs["data"][DATA_KEY]
    assert "Hostname" not in text
    assert "by (namespace, pod, hostname, modelName)" in text and "{{hostname}}" in text
