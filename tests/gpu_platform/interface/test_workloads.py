"""Reading a pod spec as the pack, the reports and the lifecycle model all read it."""

from __future__ import annotations

from gpu_platform.interface import workloads

EXISTS = {"key": "nvidia.com/mig.config", "operator": "Exists"}
SETTLED = {"key": "nvidia.com/mig.config.state", "operator": "In", "values": ["success", "failed"]}


def _pod(terms) -> dict:
    return {
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    }


def test_required_node_terms_keep_each_terms_expressions_together():
    # Terms are ORed, the expressions of one term ANDed (k8s.io/api core/v1 NodeSelector).
    pod = _pod([{"matchExpressions": [EXISTS, SETTLED]}, {"matchExpressions": [EXISTS]}])
    assert workloads.required_node_terms(pod) == ((EXISTS, SETTLED), (EXISTS,))


def test_a_pod_without_affinity_or_with_a_malformed_one_has_no_terms():
    assert workloads.required_node_terms({}) == ()
    assert workloads.required_node_terms({"affinity": "everywhere"}) == ()
    assert workloads.required_node_terms(_pod("not a list")) == ()
    assert workloads.required_node_terms(_pod([{"matchExpressions": None}])) == ((),)
