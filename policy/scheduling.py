"""The taint and label contract as the resources declare it: every operand that runs on GPU nodes
tolerates every GPU pool's taint, and every gating label an operand selects on is set by a pool.
Both compare operands with node groups, so both are stack policies."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_platform.interface import contract
from policy import facts, workloads
from policy.declare import stack_policy

# Taints that keep pods off a node; PreferNoSchedule only discourages.
_BLOCKING = ("NoSchedule", "NoExecute")


def node_operands(resources):
    """Operand workloads that run on nodes: every DaemonSet, and anything selecting a gating label."""
    for r in resources:
        if workloads.kind(r.resource_type) is None or workloads.operand(r.props) is None:
            continue
        spec = workloads.pod_spec(r.resource_type, r.props)
        gated = any(k.startswith(contract.GATE_PREFIX) for k in workloads.selector(spec))
        if workloads.kind(r.resource_type) == "DaemonSet" or gated:
            yield r, spec


def _describe(r) -> str:
    return f"{facts.kind(r.resource_type)} {r.name!r} ({r.urn})"


@stack_policy(
    "operands-tolerate-gpu-taints",
    EnforcementLevel.MANDATORY,
    "Every operand that runs on nodes tolerates every GPU pool's taint.",
    fix="no stack key: operands tolerate the GPU taint by construction (components/kubernetes/operands/manifests.py); report it",
)
def operands_tolerate_gpu_taints(args, report_violation) -> None:
    pools = facts.gpu_pools(args.resources)
    for r, spec in node_operands(args.resources):
        tolerations = workloads.tolerations(spec)
        for pool in pools:
            for taint in pool.taints:
                if taint["effect"] in _BLOCKING and not contract.tolerates(tolerations, taint):
                    report_violation(
                        f"{_describe(r)} does not tolerate taint {taint['key']}={taint['value']}:"
                        f"{taint['effect']} of {pool.describe()}, so it never runs there; add the toleration "
                        f"{{key: {taint['key']}, operator: Exists, effect: {taint['effect']}}}",
                        r.urn,
                    )


@stack_policy(
    "operand-gates-set-by-pools",
    EnforcementLevel.MANDATORY,
    "Every gating label an operand selects on is set by at least one GPU pool.",
    fix="no stack key: the pools' gates come from the stage order (components/kubernetes/operands/stages.py); report it",
)
def operand_gates_set_by_pools(args, report_violation) -> None:
    pools = facts.gpu_pools(args.resources)
    if not pools:
        return
    for r, spec in node_operands(args.resources):
        for key, value in sorted(workloads.selector(spec).items()):
            if not key.startswith(contract.GATE_PREFIX):
                continue
            if any(pool.labels.get(key) == value for pool in pools):
                continue
            names = ", ".join(f"{p.pool} ({p.urn})" for p in pools)
            report_violation(
                f"{_describe(r)} selects nodes with {key}={value}, but no GPU pool sets that label "
                f"(pools: {names}); label the pools it belongs on with {key}={value}, or drop the operand",
                r.urn,
            )
