"""The taint and label contract between GPU pools and operands, read from resource inputs."""

from __future__ import annotations

from gpu_platform.interface import contract
from policy.scheduling import operand_gates_set_by_pools, operands_tolerate_gpu_taints
from tests.policy.resources import node_group, workload
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("operands-tolerate-gpu-taints", "stack", "mandatory"),
    ("operand-gates-set-by-pools", "stack", "mandatory"),
]


def test_operands_that_tolerate_the_gpu_taint_pass():
    nfd = workload(name="nfd-worker", operand="node-feature-discovery", gate=None, tolerations=[{"operator": "Exists"}])
    assert (
        violations(
            operands_tolerate_gpu_taints,
            [node_group(), node_group(pool="h100", gpu_model="H100-80GB"), workload(), nfd],
        )
        == []
    )


def test_an_operand_without_tolerations_fails_naming_pool_and_taint():
    found = violations(operands_tolerate_gpu_taints, [node_group(), workload(tolerations=[])])
    assert len(found) == 1
    message, urn = found[0]
    assert "nvidia.com/gpu=present:NoSchedule" in message and "'l4'" in message and urn == workload().urn


def test_a_toleration_for_another_value_fails():
    wrong = [{"key": contract.GPU_TAINT_KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}]
    assert len(violations(operands_tolerate_gpu_taints, [node_group(), workload(tolerations=wrong)])) == 1


def test_gates_set_by_a_pool_pass():
    mig = node_group(
        pool="h100", gpu_model="H100-80GB", gates=("device-plugin", "mig-manager"), mig_config="all-balanced"
    )
    resources = [node_group(), mig, workload(), workload(name="mig-manager", operand="mig-manager", gate="mig-manager")]
    assert violations(operand_gates_set_by_pools, resources) == []


def test_a_gate_no_pool_sets_fails_naming_both():
    found = violations(
        operand_gates_set_by_pools,
        [node_group(), workload(name="mig-manager", operand="mig-manager", gate="mig-manager")],
    )
    assert len(found) == 1
    message, _ = found[0]
    assert "nvidia.com/gpu.deploy.mig-manager=true" in message and "gpu-pool-l4-ng" in message


def test_a_gate_set_by_no_pool_of_several_fails():
    resources = [
        node_group(),
        node_group(pool="l40s", gpu_model="L40S"),
        workload(name="dcgm", operand="dcgm-exporter", gate="dcgm-exporter"),
    ]
    assert len(violations(operand_gates_set_by_pools, resources)) == 1


def test_a_noexecute_pool_taint_the_operand_does_not_tolerate_fails():
    # A pool tainted NoExecute evicts what does not tolerate it: tolerating NoSchedule is not enough.
    evicting = node_group(pool="h100", gpu_model="H100-80GB", taint_effect="NO_EXECUTE")
    only_noschedule = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    found = violations(operands_tolerate_gpu_taints, [evicting, workload(tolerations=only_noschedule)])
    assert len(found) == 1
    assert "nvidia.com/gpu=present:NoExecute" in found[0][0] and "'h100'" in found[0][0]
    both = [*only_noschedule, {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]
    assert violations(operands_tolerate_gpu_taints, [evicting, workload(tolerations=both)]) == []


def test_a_prefer_no_schedule_pool_taint_needs_no_toleration():
    # PreferNoSchedule only discourages the scheduler: an operand without a toleration still runs.
    soft = node_group(taint_effect="PREFER_NO_SCHEDULE")
    assert violations(operands_tolerate_gpu_taints, [soft, workload(tolerations=[])]) == []
