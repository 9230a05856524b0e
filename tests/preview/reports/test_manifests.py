"""Every rendered Kubernetes object of both stacks (and of the parts only variants render) is strictly
valid for the stack's Kubernetes version, every resource quantity parses as the API server parses it,
and the prod stack's manifests are pinned by golden files (`make golden` refreshes them)."""

from __future__ import annotations

import re

import kubernetes_validate
import pytest
import yaml

from gpu_platform.catalog import operands as registry
from gpu_platform.interface import contract
from preview.reports import manifests
from preview.reports.report import operand_order
from tests.golden import GOLDEN, assert_golden, updating

# Objects of custom resource kinds have no schema kubernetes-validate knows; only these are skipped.
CUSTOM_KINDS = {"ServiceMonitor"}


# What the API server parses as a resource quantity: the grammar of k8s.io/apimachinery v0.34.0
# pkg/api/resource/quantity.go lines 40-58, with the decimal suffixes n and u that suffix.go (lines
# 123-132) accepts besides it. The schemas type a quantity as int-or-string only, so "16mi" passes them.
QUANTITY = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?(\d+(\.\d*)?|\.\d+)|[KMGTPE]i|[numkMGTPE])?")


def _quantities(doc) -> list[tuple[str, str, object]]:
    """(where, resource name, value) of every container resource request and limit in an object, at any depth."""
    found = []

    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "resources" and isinstance(value, dict) and {"requests", "limits"} >= set(value):
                    found.extend(
                        (f"{path}.resources.{kind}", name, q)
                        for kind in ("requests", "limits")
                        for name, q in (value.get(kind) or {}).items()
                    )
                else:
                    walk(value, f"{path}.{key}")
        elif isinstance(node, list):
            for i, item in enumerate(node):
                walk(item, f"{path}[{i}]")

    walk(doc, "")
    return found


# Names a container may request or limit: the API server's standard resources (k8s.io/api core/v1
# ResourceName constants: cpu, memory, ephemeral-storage, hugepages-<size>) or a domain-qualified
# extended resource (nvidia.com/gpu); it refuses any other name, "MEMORY" included.
RESOURCE_NAME = re.compile(r"cpu|memory|ephemeral-storage|hugepages-[0-9A-Za-z]+|[a-z0-9.-]+\.[a-z]+/[A-Za-z0-9._-]+")


def _problems(recording) -> list[str]:
    version = recording.config["gpu-platform:cluster"]["kubernetesVersion"] + ".0"
    problems = []
    for filename, text in manifests.files(recording).items():
        doc = yaml.safe_load(text)
        problems += [
            f"{filename}: {where}.{name} = {value!r} is not a Kubernetes quantity"
            for where, name, value in _quantities(doc)
            if not (isinstance(value, int) or QUANTITY.fullmatch(str(value)))
        ]
        problems += [
            f"{filename}: {where}: {name!r} is no resource name the API server takes"
            for where, name, _ in _quantities(doc)
            if not RESOURCE_NAME.fullmatch(name)
        ]
        if doc["kind"] in CUSTOM_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            problems.append(f"{filename}: {error.message}")
    return problems


def test_every_manifest_is_strictly_valid(stack):
    assert _problems(stack) == []


def _optional_parts(cfg):
    # What no shipped stack renders: a blue-green pool's readiness gate, the toolkit DaemonSet (both
    # stacks bake the toolkit) and the Grafana dashboard.
    cfg["gpu-platform:nodePools"][0].update(rollout="blue-green", minSize=1)
    cfg["gpu-platform:nodeImage"]["toolkitBaked"] = False
    cfg["gpu-platform:monitoring"] = {"dashboard": True}


def test_the_parts_no_shipped_stack_renders_are_strictly_valid_too(variant):
    rec = variant(_optional_parts)
    names = [r.name for r in rec.of_type("kubernetes:apps/v1:DaemonSet")]
    assert any(n.endswith("-gate-ds") for n in names) and any("toolkit" in n for n in names), names
    assert _problems(rec) == []


@pytest.mark.parametrize(
    "value, valid",
    [
        ("16Mi", True),
        ("10m", True),
        ("1.5", True),
        ("1e3", True),
        (".5Gi", True),
        ("100u", True),
        ("16mi", False),
        ("16MB", False),
        ("1 Gi", False),
        ("Gi", False),
    ],
)
def test_the_quantity_grammar_is_the_api_servers(value, valid):
    assert bool(QUANTITY.fullmatch(value)) is valid


@pytest.mark.parametrize(
    "name, valid",
    [
        ("cpu", True),
        ("memory", True),
        ("ephemeral-storage", True),
        ("hugepages-2Mi", True),
        ("nvidia.com/gpu", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("MEMORY", False),
        ("gpu", False),
        ("storage", False),
    ],
)
def test_the_resource_names_are_the_api_servers(name, valid):
    assert bool(RESOURCE_NAME.fullmatch(name)) is valid


def _daemonset_operands(recording) -> list[str]:
    """Each DaemonSet file's operand label (AWS's own add-ons: their name), in file order."""
    docs = [yaml.safe_load(t) for f, t in manifests.files(recording).items() if "-daemonset-" in f]
    return [d["metadata"]["labels"].get(contract.OPERAND_KEY, d["metadata"]["name"]) for d in docs]


def _expected(left_out: set[str]) -> list[str]:
    """AWS's EFA device plugin first (created with the namespace, for prod's EFA pool), then the registry's
    rows in order less `left_out`; each MIG reader's DaemonSet for the MIG pool sits beside its own (two
    files, one operand)."""
    readers = {"device-plugin", "gpu-feature-discovery", "dcgm-exporter"}
    rows = [r.operand for r in registry.rows() if r.operand not in left_out]
    return ["aws-efa-k8s-device-plugin", *(x for op in rows for x in ([op, op] if op in readers else [op]))]


def test_prod_operands_reach_the_manifests_in_order_without_the_toolkit_its_image_bakes(prod):
    # Less the toolkit (baked) and the DRA operands (prod allocates through the device plugin).
    assert _daemonset_operands(prod) == _expected({"container-toolkit", "dra-driver", "dra-validator"})


def test_every_operand_reaches_the_manifests_in_order_with_the_toolkit_daemonset(variant):
    rec = variant(lambda cfg: cfg["gpu-platform:nodeImage"].update(toolkitBaked=False), stack="prod")
    assert _daemonset_operands(rec) == _expected({"dra-driver", "dra-validator"})
    assert "container-toolkit" in _daemonset_operands(rec)


def _service_monitors(recording) -> list[dict]:
    return [d for d in map(yaml.safe_load, manifests.files(recording).values()) if d["kind"] == "ServiceMonitor"]


def test_no_service_monitor_without_the_monitoring_option(dev):
    assert _service_monitors(dev) == []
    assert "Service" in [yaml.safe_load(t)["kind"] for t in manifests.files(dev).values()]


def test_a_cluster_this_update_creates_gets_no_service_monitor_and_a_warning(prod):
    # A new cluster has no Prometheus operator CRDs: `pulumi up` would fail with "no matches for kind".
    assert prod.config["gpu-platform:monitoring"]["serviceMonitor"] is True
    assert _service_monitors(prod) == []
    assert any("serviceMonitor" in w and "does not exist yet" in w for w in prod.warnings)


@pytest.mark.parametrize(
    "cluster",
    [
        {"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False},  # adopted
        {"name": "gpu-shared", "kubernetesVersion": "1.32", "create": True},  # created by an earlier `pulumi up`
    ],
    ids=["adopted", "existing"],
)
def test_an_existing_cluster_gets_the_service_monitor_with_the_labels_prometheus_selects(variant, cluster):
    def change(config):
        config["gpu-platform:cluster"].update(cluster)
        config["gpu-platform:monitoring"] = {"serviceMonitor": True}

    (monitor,) = _service_monitors(variant(change))
    # kube-prometheus-stack selects `release: <its Helm release>` by default.
    assert monitor["metadata"]["labels"]["release"] == "kube-prometheus-stack"
    assert monitor["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "dcgm-exporter"}


def test_the_service_monitor_labels_are_configurable(variant):
    def change(config):
        config["gpu-platform:cluster"].update({"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False})
        config["gpu-platform:monitoring"] = {"serviceMonitor": True, "serviceMonitorLabels": {"release": "prometheus"}}

    (monitor,) = _service_monitors(variant(change))
    assert monitor["metadata"]["labels"]["release"] == "prometheus"


def _golden_files(recording) -> dict[str, str]:
    """The preview's `NN-kind-name.yaml` files as `<stage>/kind-name.yaml`, each stage a folder named
    by its operand (`shared`: the objects before the first), and `stages.txt`, the stages in rollout
    order: a new operand adds its folder and one line, and renames no other golden file."""
    stages = ["shared", *(op.name for op in operand_order(recording))]
    golden = {"stages.txt": "".join(f"{stage}\n" for stage in stages)}
    for filename, text in manifests.files(recording).items():
        number, rest = filename.split("-", 1)
        golden[f"{stages[int(number)]}/{rest}"] = text
    return golden


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_manifests_match_their_golden_files(request, stack):
    recording = request.getfixturevalue(stack)
    golden = _golden_files(recording)
    folder = GOLDEN / "manifests" / stack
    for relative, text in golden.items():
        assert_golden(f"manifests/{stack}/{relative}", text)
    if updating():
        for stale in [p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() not in golden]:
            stale.unlink()
        for empty in [d for d in folder.iterdir() if d.is_dir() and not any(d.iterdir())]:
            empty.rmdir()
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == sorted(golden)
