"""One owner of the NVIDIA container runtime configuration. The program leaves the toolkit out when
the image bakes it, so the failing inputs are built directly."""

from __future__ import annotations

from gpu_platform.interface import contract
from policy.runtime import one_runtime_owner
from tests.policy.resources import node_group, workload
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("one-runtime-owner", "stack", "mandatory"),
]


TOOLKIT = {
    "name": "nvidia-container-toolkit",
    "operand": "container-toolkit",
    "image": "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1",
    "gate": "container-toolkit",
}


def test_toolkit_daemonset_on_pools_without_a_baked_toolkit_passes():
    pools = [node_group(gates=("container-toolkit", "device-plugin"))]
    assert violations(one_runtime_owner, [*pools, workload(**TOOLKIT)]) == []


def test_baked_pool_outside_the_toolkits_gate_passes():
    pools = [
        node_group(gates=("container-toolkit",)),
        node_group(pool="baked", toolkit_baked=True, gates=("device-plugin",)),
    ]
    assert violations(one_runtime_owner, [*pools, workload(**TOOLKIT)]) == []


def test_toolkit_daemonset_on_a_baked_pool_fails_naming_both():
    found = violations(
        one_runtime_owner, [node_group(toolkit_baked=True, gates=("container-toolkit",)), workload(**TOOLKIT)]
    )
    assert len(found) == 1
    message, _ = found[0]
    assert "nvidia-container-toolkit" in message and "'l4'" in message and contract.TOOLKIT_BAKED_TAG in message


def test_ungated_toolkit_daemonset_meets_every_baked_pool():
    found = violations(
        one_runtime_owner,
        [
            node_group(toolkit_baked=True),
            node_group(pool="b", toolkit_baked=True),
            workload(**{**TOOLKIT, "gate": None}),
        ],
    )
    assert len(found) == 2
