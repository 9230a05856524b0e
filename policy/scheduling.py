"""The taint and label contract as the resources declare it: every operand that runs on GPU nodes
tolerates every GPU pool's taint, and every gating label an operand selects on is set by a pool."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from gpu_platform import contract
from policy import workloads
from policy.facts import gather

# Taints that keep pods off a node; PreferNoSchedule only discourages.
_BLOCKING = ("NoSchedule", "NoExecute")


def node_operands(resources):
    """Operand workloads that run on nodes: every DaemonSet, and anything selecting a gating label."""
    for r in resources:
        if workloads.operand(r.props) is None or workloads.kind(r.resource_type) is None:
            continue
        spec = workloads.pod_spec(r.resource_type, r.props)
        gated = any(k.startswith(contract.GATE_PREFIX) for k in workloads.selector(spec))
        if workloads.kind(r.resource_type) == "DaemonSet" or gated:
            yield r, spec


def _describe(r) -> str:
    return f"{r.resource_type.rsplit(':', 1)[-1]} {r.name!r} ({r.urn})"


def _operands_tolerate_gpu_taints(args: StackValidationArgs, report_violation) -> None:
    pools = gather(args.resources).pools
    for r, spec in node_operands(args.resources):
        tolerations = spec.get("tolerations") or []
        for pool in pools:
            for taint in pool.taints:
                if taint["effect"] in _BLOCKING and not contract.tolerates(tolerations, taint):
                    report_violation(
                        f"{_describe(r)} does not tolerate taint {taint['key']}={taint['value']}:"
                        f"{taint['effect']} of {pool.describe()}, so it never runs there; add the toleration "
                        f"{{key: {taint['key']}, operator: Exists, effect: {taint['effect']}}}",
                        r.urn,
                    )


def _operand_gates_set_by_pools(args: StackValidationArgs, report_violation) -> None:
    pools = gather(args.resources).pools
    if not pools:
        return
    for r, spec in node_operands(args.resources):
        for key, value in sorted(workloads.selector(spec).items()):
            if not key.startswith(contract.GATE_PREFIX):
                continue
            if any(pool.labels.get(key) == value for pool in pools):
                continue
            names = ", ".join(f"{p.name} ({p.urn})" for p in pools)
            report_violation(
                f"{_describe(r)} selects nodes with {key}={value}, but no GPU pool sets that label "
                f"(pools: {names}); label the pools it belongs on with {key}={value}, or drop the operand",
                r.urn,
            )


operands_tolerate_gpu_taints = StackValidationPolicy(
    name="operands-tolerate-gpu-taints",
    description="Every operand that runs on nodes tolerates every GPU pool's taint.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_operands_tolerate_gpu_taints,
)

operand_gates_set_by_pools = StackValidationPolicy(
    name="operand-gates-set-by-pools",
    description="Every gating label an operand selects on is set by at least one GPU pool.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_operand_gates_set_by_pools,
)
