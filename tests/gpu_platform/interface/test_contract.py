"""gpu_platform.interface.contract: the scheduler's toleration rule, restated case by case from Kubernetes'
ToleratesTaint (k8s.io/api core/v1/toleration.go) and its doc comment; other tests use `tolerates`
as their oracle, so it is pinned here against expectations written by hand."""

from __future__ import annotations

import pytest

from gpu_platform.interface import contract

GPU = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
EVICT = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}

CASES = [
    # (toleration, taint, tolerated, why)
    (
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        GPU,
        True,
        "same key and effect, any value",
    ),
    ({"key": "nvidia.com/gpu", "operator": "Exists"}, GPU, True, "empty effect matches every effect"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}, GPU, False, "effect differs"),
    ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "PreferNoSchedule"}, GPU, False, "effect differs"),
    (
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
        GPU,
        True,
        "equal value",
    ),
    ({"key": "nvidia.com/gpu", "value": "present"}, GPU, True, "an absent operator is Equal"),
    ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "false"}, GPU, False, "Equal with another value"),
    ({"key": "nvidia.com/gpu", "operator": "Equal"}, GPU, False, "Equal with no value is the empty value"),
    ({"key": "nvidia.com/mig", "operator": "Exists"}, GPU, False, "other key"),
    ({"operator": "Exists"}, GPU, True, "empty key with Exists tolerates every taint"),
    ({"operator": "Exists"}, EVICT, True, "empty key with Exists tolerates every taint"),
    ({"operator": "Exists", "effect": "NoSchedule"}, EVICT, False, "empty key, but the effect must still match"),
    ({"operator": "Exists", "effect": "NoExecute"}, EVICT, True, "empty key, matching effect"),
    (
        {
            "key": "node.kubernetes.io/unreachable",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": 300,
        },
        EVICT,
        True,
        "tolerationSeconds does not change whether it matches",
    ),
    (
        {"key": "node.kubernetes.io/unreachable", "operator": "Equal", "effect": "NoExecute"},
        EVICT,
        True,
        "Equal: an absent value on both sides is the same empty value",
    ),
    (
        {"key": "nvidia.com/gpu", "operator": "Gt", "value": "0"},
        GPU,
        False,
        "an operator the rule does not know never matches",
    ),
]


@pytest.mark.parametrize(("toleration", "taint", "tolerated", "why"), CASES, ids=[c[3] for c in CASES])
def test_a_toleration_tolerates_a_taint_as_the_scheduler_decides(toleration, taint, tolerated, why):
    assert contract.tolerates([toleration], taint) is tolerated


def test_any_one_toleration_of_the_list_is_enough():
    other = {"key": "example.com/x", "operator": "Exists"}
    assert contract.tolerates([other, {"key": "nvidia.com/gpu", "operator": "Exists"}], GPU) is True
    assert contract.tolerates([other], GPU) is False


def test_no_tolerations_tolerate_nothing():
    assert contract.tolerates([], GPU) is False
    assert contract.tolerates(None, GPU) is False


def test_the_gpu_taint_is_the_one_the_pools_set():
    # Written out: docs/what-gets-created.md's `nvidia.com/gpu=present:NoSchedule`, which users' GPU pods tolerate.
    assert contract.gpu_taint() == {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
