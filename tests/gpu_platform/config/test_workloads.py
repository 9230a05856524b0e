"""gpu-platform:workloads: the namespaces trusted with GPU nodes, and what the GPU-privilege policy
may be told to do."""

from __future__ import annotations

import pytest

from gpu_platform import config as config_model
from preview.offline import engine


@pytest.mark.parametrize(
    "value, path, fragment",
    [
        (["GPU-Monitoring"], "[0]", "is not a Kubernetes namespace name"),
        (["gpu-monitoring", "gpu-monitoring"], "[1]", "is listed twice"),
        (["kube-system"], "[0]", "is exempt already"),
        (["ml", "gpu-operator"], "[1]", "is exempt already"),
        (["default"], "[0]", "'default' is where pods without a namespace land"),
    ],
)
def test_privileged_namespaces_kubernetes_would_refuse_or_that_repeat_are_errors(value, path, fragment):
    raw = engine.read_stack_file(engine.stack_file("prod"))
    raw["gpu-platform:workloads"]["privilegedNamespaces"] = value
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    message = str(error.value)
    assert f"gpu-platform:workloads.privilegedNamespaces{path}" in message and fragment in message, message


def test_an_unknown_privilege_admission_names_the_valid_values():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:workloads"]["privilegeAdmission"] = "audit"
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    message = str(error.value)
    assert "gpu-platform:workloads.privilegeAdmission" in message and "'deny'" in message and "'warn'" in message, (
        message
    )
