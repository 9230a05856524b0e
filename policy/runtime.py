"""One owner of the container runtime's NVIDIA configuration: either the node image (toolkit baked)
or the container-toolkit DaemonSet, never both on one pool (they would rewrite containerd's config
over each other). It compares a workload with node groups: a stack policy."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_platform.interface import contract
from policy import facts, workloads
from policy.declare import stack_policy

TOOLKIT_OPERAND = "container-toolkit"


@stack_policy(
    "one-runtime-owner",
    EnforcementLevel.MANDATORY,
    "The container-toolkit DaemonSet and a node image that already configures the NVIDIA runtime never meet on a pool.",
    fix="gpu-platform:nodeImage.toolkitBaked",
)
def one_runtime_owner(args, report_violation) -> None:
    baked = [p for p in facts.gpu_pools(args.resources) if p.toolkit_baked]
    if not baked:
        return
    for r in args.resources:
        if workloads.kind(r.resource_type) is None or workloads.operand(r.props) != TOOLKIT_OPERAND:
            continue
        selector = workloads.selector(workloads.pod_spec(r.resource_type, r.props))
        for pool in baked:
            if all(pool.labels.get(k) == v for k, v in selector.items()):
                report_violation(
                    f"{facts.kind(r.resource_type)} {r.name!r} ({r.urn}) configures the NVIDIA "
                    f"container runtime on {pool.describe()}, whose node image already does "
                    f"({contract.TOOLKIT_BAKED_TAG}=true); keep one owner: drop the container-toolkit "
                    f"operand (or its gating label {contract.gate_label(TOOLKIT_OPERAND)} on that pool), "
                    f"or use an image without the toolkit (toolkitBaked: false)",
                    r.urn,
                )
