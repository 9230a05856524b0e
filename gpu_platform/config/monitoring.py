"""gpu-platform:monitoring: the Prometheus that scrapes the DCGM exporter (a ServiceMonitor, who may
reach the metrics ports) and a Grafana dashboard."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import Field, StrictBool, field_validator

from gpu_platform.config.errors import ConfigProblem, shown
from gpu_platform.config.kubernetes_names import LABEL_KEY, LABEL_VALUE, NAMESPACE, NAMESPACE_FORM
from gpu_platform.config.section import Section

# kube-prometheus-stack's Prometheus selects ServiceMonitors labelled `release: <its Helm release>`
# unless prometheusSpec.serviceMonitorSelectorNilUsesHelmValues is false
# (prometheus-community/helm-charts, charts/kube-prometheus-stack/templates/prometheus/prometheus.yaml).
DEFAULT_SERVICE_MONITOR_LABELS = {"release": "kube-prometheus-stack"}
# What the stack labels its own objects with (components/kubernetes/operands/manifests.py).
OWN_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/part-of")


class Monitoring(Section):
    # A ServiceMonitor is a Prometheus operator CRD object: only a cluster with those CRDs can take it.
    service_monitor: StrictBool = Field(
        default=False,
        alias="serviceMonitor",
        description="Whether the stack creates a ServiceMonitor for the DCGM exporter. Needs the Prometheus operator's "
        "CRDs: a cluster the stack creates gets it on the first `pulumi up` after it exists.",
    )
    service_monitor_labels: Mapping[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_SERVICE_MONITOR_LABELS),
        alias="serviceMonitorLabels",
        description="The ServiceMonitor's labels, which your Prometheus selects it by "
        "(default: kube-prometheus-stack's release label).",
    )
    # Every Prometheus pod the Prometheus operator runs (kube-prometheus-stack, kube-prometheus) carries
    # app.kubernetes.io/name: prometheus (prometheus-operator v0.93.0 pkg/prometheus/server/operator.go:61,
    # 1696-1704; statefulset.go:218-229); `monitoring` is the namespace kube-prometheus deploys to
    # (prometheus-operator/kube-prometheus manifests/prometheus-prometheus.yaml:11 at 017b2aa0).
    # kube-prometheus-stack goes wherever it is installed: set it.
    prometheus_namespace: str = Field(
        default="monitoring",
        alias="prometheusNamespace",
        description="The namespace of the Prometheus pods that may scrape the operator namespace's metrics ports "
        "(its NetworkPolicy allow-metrics).",
    )
    prometheus_pod_labels: Mapping[str, str] = Field(
        default_factory=lambda: {"app.kubernetes.io/name": "prometheus"},
        alias="prometheusPodLabels",
        description="The labels of those Prometheus pods: not empty, which would select every pod of the namespace.",
    )
    # Harmless without kube-prometheus-stack's Grafana, but useful only with Prometheus scraping the exporter.
    dashboard: StrictBool = Field(
        default=False,
        description="Whether the stack creates a ConfigMap that kube-prometheus-stack's Grafana sidecar loads as a "
        "GPU dashboard.",
    )

    @field_validator("prometheus_namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not NAMESPACE.fullmatch(value):
            raise ConfigProblem(f"{shown(value)} is not a Kubernetes namespace name ({NAMESPACE_FORM})")
        return value

    @field_validator("prometheus_pod_labels")
    @classmethod
    def _some_pods(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        # An empty matchLabels selects every pod of the namespace: the metrics ports would be open to
        # all of them, not to Prometheus.
        if not value:
            raise ConfigProblem(
                "is empty, which selects every pod of prometheusNamespace; name the labels of the "
                "Prometheus pods (e.g. {app.kubernetes.io/name: prometheus}, the default), or remove "
                "the key for it"
            )
        return value

    @field_validator("service_monitor_labels", "prometheus_pod_labels")
    @classmethod
    def _labels(cls, value: Mapping[str, str], info) -> Mapping[str, str]:
        for key, label in value.items():
            prefix = key.rpartition("/")[0]
            if not LABEL_KEY.fullmatch(key) or len(prefix) > 253:
                raise ConfigProblem(
                    f"{shown(key)} is not a Kubernetes label key (e.g. release, app.kubernetes.io/part-of)"
                )
            if info.field_name == "service_monitor_labels" and key in OWN_LABELS:
                raise ConfigProblem(
                    f"{shown(key)} is the ServiceMonitor's own label (the stack sets it); pick another key"
                )
            if not isinstance(label, str) or not LABEL_VALUE.fullmatch(label):
                raise ConfigProblem(
                    f"{key}: {shown(label)} is not a Kubernetes label value (63 characters at most: "
                    "letters, digits, '-', '_', '.', starting and ending with a letter or digit)"
                )
        return dict(sorted(value.items()))
