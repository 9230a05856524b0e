"""gpu-platform:monitoring: the ServiceMonitor's labels and the Prometheus selectors are names
Kubernetes takes, and the selectors default to kube-prometheus-stack's Prometheus."""

from __future__ import annotations

import pytest

from gpu_platform import config as config_model
from preview.offline import engine


@pytest.mark.parametrize(
    "labels, fragment",
    [
        ({"release\n": "x"}, "is not a Kubernetes label key"),
        ({"release": "kps\n"}, "is not a Kubernetes label value"),
        ({"a" * 254 + "/release": "x"}, "is not a Kubernetes label key"),
        ({"app.kubernetes.io/name": "evil"}, "is the ServiceMonitor's own label"),
    ],
)
def test_service_monitor_labels_kubernetes_would_refuse_or_that_clash_are_errors(labels, fragment):
    raw = engine.read_stack_file(engine.stack_file("prod"))
    raw["gpu-platform:monitoring"] = {"serviceMonitor": True, "serviceMonitorLabels": labels}
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    assert "gpu-platform:monitoring.serviceMonitorLabels" in str(error.value) and fragment in str(error.value)


@pytest.mark.parametrize(
    "key, value, fragment",
    [
        ("prometheusPodLabels", {"app kubernetes": "prometheus"}, "is not a Kubernetes label key"),
        ("prometheusPodLabels", {"app.kubernetes.io/name": "prom etheus"}, "is not a Kubernetes label value"),
        ("prometheusNamespace", "Monitoring", "is not a Kubernetes namespace name"),
    ],
)
def test_prometheus_selectors_kubernetes_would_refuse_are_errors(key, value, fragment):
    raw = engine.read_stack_file(engine.stack_file("prod"))
    raw["gpu-platform:monitoring"] = {key: value}
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    assert f"gpu-platform:monitoring.{key}" in str(error.value) and fragment in str(error.value), str(error.value)


def test_prometheus_selectors_default_to_kube_prometheus_stack():
    monitoring = config_model.parse(engine.read_stack_file(engine.stack_file("dev"))).monitoring
    assert (monitoring.prometheus_namespace, dict(monitoring.prometheus_pod_labels)) == (
        "monitoring",
        {"app.kubernetes.io/name": "prometheus"},
    )
