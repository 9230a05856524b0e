"""The whole stack: what it derives from more than one section (StackConfig.privilege_actions)."""

from __future__ import annotations

import pytest

from gpu_platform import config as config_model
from preview.offline import engine


@pytest.mark.parametrize(
    "create, value, actions",
    [
        (True, None, ("Deny",)),
        (False, None, ("Warn", "Audit")),
        (False, "deny", ("Deny",)),
        (True, "warn", ("Warn", "Audit")),
    ],
)
def test_privilege_admission_denies_on_a_created_cluster_and_warns_on_an_adopted_one(create, value, actions):
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"]["create"] = create
    if value:
        raw["gpu-platform:workloads"]["privilegeAdmission"] = value
    assert config_model.parse(raw).privilege_actions == actions
