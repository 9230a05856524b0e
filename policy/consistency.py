"""The declared facts agree. The version policies check each resource on the facts it declares
itself (so they run before it is created); this stack policy checks that those declarations are one
story: one operator release, one Kubernetes version (the cluster's own), one driver, one set of
CUDA versions, wherever they are declared."""

from __future__ import annotations

from collections import defaultdict

from pulumi_policy import EnforcementLevel

from gpu_platform import contract
from policy import facts, workloads
from policy.declare import stack_policy
from policy.props import text


def _declarations(resources) -> dict[str, dict[str, list[str]]]:
    """fact -> value -> the resources (described) that declare it."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))

    def declare(fact: str, value: str, who: str) -> None:
        if value:
            found[fact][value].append(who)

    for r in resources:
        who = f"{facts.kind(r.resource_type)} {r.name!r} ({r.urn})"
        if r.resource_type == facts.EKS_CLUSTER:
            declare("Kubernetes version", text(r.props.get("version")), who)
        elif r.resource_type == facts.NAMESPACE:
            notes = facts.annotations(r.props)
            if contract.OPERATOR_RELEASE_KEY in notes:
                declare("operator release", notes[contract.OPERATOR_RELEASE_KEY], who)
                declare("Kubernetes version", notes.get(contract.KUBERNETES_VERSION_TAG, ""), who)
                declare("CUDA versions", " ".join(sorted(contract.split_values(notes.get(contract.CUDA_VERSIONS_KEY, "")))), who)
        elif workloads.kind(r.resource_type) is not None and workloads.operand(r.props) is not None:
            declare("operator release", workloads.own_annotations(r.props).get(contract.OPERATOR_RELEASE_KEY, ""), who)
        elif r.resource_type in facts.GPU_NODE_TYPES and facts.is_gpu_resource(r.resource_type, r.props):
            gpu = facts.of(r)
            declare("operator release", gpu.release, who)
            declare("Kubernetes version", gpu.kubernetes, who)
            declare("NVIDIA driver", gpu.driver, who)
            declare("CUDA versions", " ".join(sorted(gpu.cuda_versions)), who)
    return found


@stack_policy(
    "declared-facts-agree", EnforcementLevel.MANDATORY,
    "Every resource declares the same operator release, Kubernetes version (the cluster's), driver and CUDA versions.",
)
def declared_facts_agree(args, report_violation) -> None:
    for fact, values in sorted(_declarations(args.resources).items()):
        if len(values) < 2:
            continue
        told = "; ".join(f"{value!r} by {', '.join(sorted(who))}" for value, who in sorted(values.items()))
        report_violation(
            f"the stack declares more than one {fact}: {told}; every resource must describe the one "
            f"stack it belongs to (a resource checked on its own {fact} would be checked against the wrong one)"
        )
