"""The GPU dashboard: a Grafana dashboard of the DCGM exporter's metrics, shipped as a ConfigMap that
kube-prometheus-stack's Grafana sidecar loads. The sidecar watches ConfigMaps labelled
`grafana_dashboard: "1"`, and the chart's default (`grafana.sidecar.dashboards.searchNamespace:
ALL`) looks in every namespace, so the dashboard stays beside the exporter in the operands'
namespace. The dashboard itself is data (`gpu-dashboard.json` beside this module): edit it in
Grafana, export it, and every query must keep to the metrics the exporter's metrics list collects
(tests/components/kubernetes/test_dashboard.py checks that). The file spells the exporter's host
label `Hostname`; for an exporter that spells it `hostname` the rendered dashboard does too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.catalog import image_refs

DASHBOARD_FILE = Path(__file__).resolve().with_name("gpu-dashboard.json")
CONFIG_MAP_NAME = "gpu-platform-dashboard"
# The sidecar writes every data key as a file into one folder shared by all dashboards: a
# distinctive key keeps another team's `gpus.json` from overwriting this one.
DATA_KEY = "gpu-platform-gpus.json"
SIDECAR_LABEL = {"grafana_dashboard": "1"}
# The exporter renamed its host label from `Hostname` to `hostname` in exporter 4.8.3 (image tag
# 4.6.0-4.8.3: dcgm-exporter commit d5e5f510, "Rename Hostname label to hostname (#655)";
# internal/pkg/rendermetrics/render_metrics.go metricLabels at 7ad58324, the 4.6.0-4.8.3 release).
RENAMED_HOST_LABEL_IN = (4, 8, 3)
_TAG = re.compile(r"^(\d+(?:\.\d+)*)-(\d+(?:\.\d+)*)")


def host_label(exporter_image: str) -> str:
    """The host label of the exporter's metrics: its tag is `<DCGM>-<exporter>[-flavour]`."""
    found = _TAG.match(image_refs.tag_of(exporter_image))
    if not found:
        raise ValueError(f"DCGM exporter image {exporter_image!r}: tag is not <dcgm version>-<exporter version>")
    exporter = tuple(int(n) for n in found.group(2).split("."))
    return "hostname" if exporter >= RENAMED_HOST_LABEL_IN else "Hostname"


def render(label: str) -> str:
    """The dashboard's JSON with the exporter's host label."""
    return re.sub(r"\bHostname\b", label, DASHBOARD_FILE.read_text())


@dataclass(frozen=True)
class DashboardArgs:
    namespace: pulumi.Input[str]
    provider: k8s.Provider
    host_label: str  # the exporter's host label (host_label())
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)  # the DCGM exporter


class GpuDashboard(pulumi.ComponentResource):
    """`gpu-platform:kubernetes:GpuDashboard`."""

    config_map: k8s.core.v1.ConfigMap

    def __init__(self, name: str, args: DashboardArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:GpuDashboard", name, None, opts)
        self.config_map = k8s.core.v1.ConfigMap(
            f"{name}-configmap",
            metadata={
                "name": CONFIG_MAP_NAME,
                "namespace": args.namespace,
                "labels": {
                    **SIDECAR_LABEL,
                    "app.kubernetes.io/name": "gpu-dashboard",
                    "app.kubernetes.io/part-of": "gpu-platform",
                },
            },
            data={DATA_KEY: render(args.host_label)},
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on)),
        )
        self.register_outputs({"name": self.config_map.metadata["name"]})
