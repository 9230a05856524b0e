"""What a change does to the GPU nodes, per pool, for `--against`: how many GPU nodes (and GPUs) it
replaces, how, and what that needs, read from two `--json` reports alone.

A pool's nodes are replaced when its node group is replaced, or when its launch template gets a new
version (a change of the template's content: image, user data, instance tags, volumes...; not its
own `tags`), which EKS rolls out with UpdateNodegroupVersion. Which of these a change is comes from
one place, preview/reports/changes.py's verdict per resource (with its cascades), read from
preview/reports/replacements.yaml. How:

- a node group that is REPLACED (instance type, capacity type, subnets, a blue-green pool's new
  template): Pulumi creates the new group beside the old one (create-before-delete), at the pool's
  desiredSize, and deletes the old one with all its nodes at the end of the update; both run at once,
  so the account needs room for both (instance quotas; a capacity block must hold both). Only a
  blue-green pool has a readiness gate in between; for the others nothing checks the new GPUs.
- a version roll inside the group, by the pool's `rollout` (contract.ROLLOUT_TAG on the node group;
  components/aws/node_pool.py): surge, new nodes first, at most maxUnavailable at a time, on spare
  capacity EKS launches beside the pool's nodes (surge_nodes); in-place, old nodes terminated before
  new ones launch (EKS's MINIMAL strategy), so the pool runs short. EKS waits for each new node to be
  Ready, not for its GPUs.

The node count is the old report's desired size: the pool as its stack file said, not as it runs
(the cluster autoscaler moves it, and `desiredSize` is ignored on update). The GPUs are that count
times the node group's `gpu-platform.io/gpu-count`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from gpu_platform.interface import contract
from gpu_platform.interface.resource_types import EKS_NODE_GROUP as NODE_GROUP, LAUNCH_TEMPLATE
from preview.reports import changes, replacements
from preview.reports.changes import identity

GATE_NAME = "gpu-readiness-gate"
GATE_KINDS = ("kubernetes:apps/v1:DaemonSet", "kubernetes:batch/v1:Job")  # a Job in reports before the DaemonSet
_REPLACING = (replacements.REPLACES, replacements.MAY_REPLACE, replacements.ROLLS_NODES)


@dataclass(frozen=True)
class PoolRollout:
    pool: str
    strategy: str
    nodes: int  # GPU nodes replaced (the old report's desired size)
    gpus: int
    why: tuple[str, ...]  # the changed keys that replace them
    gate: str | None = None  # the readiness gate, for blue-green
    max_unavailable: str = ""
    group_replaced: bool = False  # a new node group beside the old, not a roll inside it
    new_nodes: int = 0  # the new group's nodes: the new report's desired size
    notes: tuple[str, ...] = ()  # what else the change needs to say
    removed: bool = False  # the pool is gone from the new report: its node group is deleted
    surge_nodes: int = 0  # a surge roll: the most extra nodes EKS may launch beside the pool's (surge_nodes())
    zones: int = 0  # the Availability Zones surge_nodes counts: the node group's subnets, at most


def _by_identity(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {identity(r["urn"]): r for r in report.get("resources", [])}


def _inputs(resource: dict[str, Any]) -> dict[str, Any]:
    inputs = resource.get("inputs")
    return inputs if isinstance(inputs, dict) else {}


def _tags(resource: dict[str, Any]) -> dict[str, Any]:
    tags = _inputs(resource).get("tags")
    return tags if isinstance(tags, dict) else {}


def _pool_resources(resources: dict[str, dict[str, Any]], type_: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """pool -> (identity, resource) of the given type, by the pool tag the program puts on them."""
    found = {}
    for key, r in sorted(resources.items()):
        pool = _tags(r).get(contract.POOL_LABEL)
        if r.get("type") == type_ and isinstance(pool, str):
            found[pool] = (key, r)
    return found


def _count(value: Any) -> int:
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return 0


def _desired(group: dict[str, Any]) -> int:
    return _count((_inputs(group).get("scalingConfig") or {}).get("desiredSize"))


def max_unavailable(group: dict[str, Any]) -> str:
    update = _inputs(group).get("updateConfig") or {}
    if "maxUnavailablePercentage" in update:
        return f"{_count(update['maxUnavailablePercentage'])}%"
    if "maxUnavailable" in update:
        return str(_count(update["maxUnavailable"]))
    return "1"  # EKS's default (managed-node-update-behavior.adoc line 22)


def zones(group: dict[str, Any]) -> int:
    """The node group's Availability Zones, at most: one per subnet (the cluster's subnets; two subnets
    may share a zone, which the reports do not say)."""
    subnets = _inputs(group).get("subnetIds")
    return len(subnets) if isinstance(subnets, list) else 0


def surge_nodes(group: dict[str, Any]) -> int:
    """The most extra nodes EKS launches for a surge roll (updateStrategy DEFAULT). Its scale up phase
    raises the Auto Scaling group's desired and max size by the larger of up to twice the number of
    Availability Zones the group is deployed in and the update's maxUnavailable, before it drains any
    old node (EKS User Guide, "Understand each phase of node updates", Scale up phase step 1:
    https://docs.aws.amazon.com/eks/latest/userguide/managed-node-update-behavior.html). An upper bound:
    the subnets count as zones, and a percentage is taken of the group's maxSize (the autoscaler may run
    that many), rounded up, at most the 100 nodes EKS allows."""
    update = _inputs(group).get("updateConfig") or {}
    size = _count((_inputs(group).get("scalingConfig") or {}).get("maxSize"))
    if "maxUnavailablePercentage" in update:
        unavailable = math.ceil(_count(update["maxUnavailablePercentage"]) * size / 100)
    else:
        unavailable = _count(update.get("maxUnavailable", 1))
    return max(2 * zones(group), min(unavailable, 100))


# P-family instances (p4d, p5, p6-b200...): their On-Demand vCPUs count against an account quota of
# their own ("Running On-Demand P instances", per region), often well below a surge's spare nodes.
_P_FAMILY = re.compile(r"^p\d")


def _p_family_on_demand(group: dict[str, Any]) -> str:
    """The group's instance type if it is P-family On-Demand capacity, else ""."""
    types = _inputs(group).get("instanceTypes") or []
    instance = types[0] if isinstance(types, list) and types and isinstance(types[0], str) else ""
    on_demand = _inputs(group).get("capacityType", "ON_DEMAND") == "ON_DEMAND"
    return instance if on_demand and _P_FAMILY.match(instance) else ""


def _reasons(change: changes.Changed | None) -> list[str]:
    """The node group's changed keys that replace or roll its nodes, with what caused a cascaded one."""
    if change is None:
        return []
    return [
        f"NodeGroup {e.key}" + (f" ({e.because})" if e.because else "")
        for e in change.entries
        if not e.ignored and e.effect.kind in _REPLACING
    ]


def _gates(resources: dict[str, dict[str, Any]]) -> dict[str, str]:
    found = {}
    for r in resources.values():
        labels = (_inputs(r).get("metadata") or {}).get("labels") or {}
        if (
            r.get("type") in GATE_KINDS
            and isinstance(labels, dict)
            and labels.get("app.kubernetes.io/name") == GATE_NAME
        ):
            found[labels.get(contract.POOL_LABEL)] = r["name"]
    return found


def _notes(
    pool: str,
    old_group: dict,
    new_group: dict,
    rolls: bool,
    replaced: bool,
    template_change: changes.Changed | None,
    new_template: dict | None,
) -> list[str]:
    notes = []
    old_rollout, new_rollout = _tags(old_group).get(contract.ROLLOUT_TAG), _tags(new_group).get(contract.ROLLOUT_TAG)
    if rolls and not replaced and old_rollout and new_rollout and old_rollout != new_rollout:
        # The AWS provider applies a version change before the config change of the same update
        # (tf-aws v5.42.0 internal/service/eks/node_group.go resourceNodeGroupUpdate: UpdateNodegroupVersion
        # at lines 461-509, then UpdateNodegroupConfig with updateConfig at 511-546).
        notes.append(
            f"rollout changes from {old_rollout} to {new_rollout} in the same update: EKS rolls these nodes with the "
            f"old updateConfig ({old_rollout}) first, and the new one applies from the next roll; change rollout "
            "in an update of its own first"
        )
    source = _tags(new_group).get(contract.IMAGE_SOURCE_TAG)
    if (
        rolls
        and source == "ami"
        and template_change is not None
        and new_template is not None
        and not any(e.key == "imageId" for e in template_change.entries)
    ):
        image = _inputs(new_template).get("imageId", "?")
        notes.append(
            f"every node rolls onto the same AMI {image}: the launch template changes only in "
            f"{', '.join(sorted({e.key.split('[')[0].split('.')[0] for e in template_change.entries}))}; a new "
            "nodeImage.driverVersion needs a new amiId of an AMI that has that driver "
            "(python -m preview verify-ami checks its tags)"
        )
    instance = _p_family_on_demand(new_group)
    if rolls and not replaced and instance and (_tags(new_group).get(contract.ROLLOUT_TAG) or "surge") == "surge":
        notes.append(
            f"the surge may launch up to {_plural(surge_nodes(new_group), f'extra {instance} On-Demand instance')} "
            "beside the pool's running nodes: P-family On-Demand capacity counts against the account's "
            '"Running On-Demand P instances" vCPU quota in the region, which must hold them too (Service Quotas), '
            "or they do not launch and the roll cannot go on; check the quota first, or use rollout: in-place"
        )
    return notes


def compare(old_report: dict[str, Any], new_report: dict[str, Any]) -> list[PoolRollout]:
    old, new = _by_identity(old_report), _by_identity(new_report)
    old_groups, new_groups = _pool_resources(old, NODE_GROUP), _pool_resources(new, NODE_GROUP)
    new_templates = _pool_resources(new, LAUNCH_TEMPLATE)
    changed = {identity(c.resource.urn): c for c in changes.compare(old_report, new_report).changed}
    gates = _gates(new)
    found = []
    for pool in sorted(set(old_groups) | set(new_groups)):
        if pool not in new_groups:
            _, old_group = old_groups[pool]
            nodes = _desired(old_group)
            found.append(
                PoolRollout(
                    pool,
                    str(_tags(old_group).get(contract.ROLLOUT_TAG) or "surge"),
                    nodes,
                    nodes * _count(_tags(old_group).get(contract.GPU_COUNT_TAG)),
                    (),
                    removed=True,
                )
            )
            continue
        if pool not in old_groups:
            continue  # a new pool replaces no node
        (old_key, old_group), (new_key, new_group) = old_groups[pool], new_groups[pool]
        change = changed.get(new_key)
        replaced = old_key != new_key or (
            change is not None and change.verdict in (replacements.REPLACES, replacements.MAY_REPLACE)
        )
        why = ["the node group itself (a new resource)"] if old_key != new_key else _reasons(change)
        nodes = _desired(old_group) if why else 0
        gpus = nodes * _count(_tags(old_group).get(contract.GPU_COUNT_TAG))  # the GPUs of the nodes that go
        strategy = str(_tags(new_group).get(contract.ROLLOUT_TAG) or "surge")
        template_key, template = new_templates.get(pool, (None, None))
        notes = _notes(
            pool,
            old_group,
            new_group,
            bool(why),
            replaced,
            changed.get(template_key) if template_key else None,
            template,
        )
        found.append(
            PoolRollout(
                pool,
                strategy,
                nodes,
                gpus,
                tuple(why),
                gates.get(pool),
                max_unavailable(new_group),
                group_replaced=replaced and bool(why),
                new_nodes=_desired(new_group),
                notes=tuple(notes),
                surge_nodes=surge_nodes(new_group),
                zones=zones(new_group),
            )
        )
    return found


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _how(r: PoolRollout) -> str:
    if r.group_replaced:
        start = (
            f"by a new node group created beside the old one (create-before-delete) with {_plural(r.new_nodes, 'node')} "
            f"(the pool's desiredSize, whatever the autoscaler runs now), then the old group deleted with all its nodes: "
            f"room for {_plural(r.new_nodes, 'more node')} while both run (instance quotas; a capacity block must hold both)"
        )
        if r.strategy == "blue-green":
            gate = f"its readiness gate ({r.gate})" if r.gate else "its readiness gate"
            if r.new_nodes == 0:
                return start + f"; {gate} has no node to check in a group of 0 and passes at once"
            return start + f"; the old group is deleted only after {gate} has seen every new node serve GPUs"
        return start + f"; no GPU check in between (rollout {r.strategy}: only blue-green has a readiness gate)"
    if r.strategy == "in-place":
        return (
            f"inside the node group, old nodes terminated before new ones launch (EKS MINIMAL), "
            f"{r.max_unavailable} at a time: the pool runs short while it rolls; EKS waits for each new node to be Ready, "
            "no GPU check"
        )
    return (
        f"inside the node group, new nodes launched first (EKS DEFAULT), at most {r.max_unavailable} unavailable at a time, "
        f"on spare capacity: EKS may launch up to {_plural(r.surge_nodes, 'extra node')} beside the pool's (an upper bound: EKS "
        f"raises the group by up to twice its Availability Zones, at most {r.zones} for its {_plural(r.zones, 'subnet')}, "
        "or by maxUnavailable if larger); "
        "EKS waits for each new node to be Ready, no GPU check"
    )


def _grouped(why: tuple[str, ...]) -> list[str]:
    """`NodeGroup launchTemplate.version (lt gets a new version)`, `NodeGroup instanceTypes[0]` ... ->
    one entry per top-level key, with its cause, in order."""
    found: list[str] = []
    for reason in why:
        head, _, cause = reason.partition(" (")
        kind, _, key = head.partition(" ")
        top = key.split(".", 1)[0].split("[", 1)[0] if kind == "NodeGroup" else key
        short = (f"{kind} {top}" if top else head) + (f" ({cause}" if cause else "")
        if short not in found:
            found.append(short)
    return found


def describe(rollouts: list[PoolRollout]) -> str:
    if not rollouts:
        return ""
    lines = [
        "",
        "GPU node rollouts (per pool; node counts are the old report's desiredSize, not what the autoscaler runs):",
    ]
    width = max(len(r.pool) for r in rollouts)
    for r in rollouts:
        if r.removed:
            lines.append(
                f"  {r.pool:<{width}}  removed (or renamed): its node group is deleted with its nodes, "
                f"{_plural(r.nodes, 'GPU node')} ({_plural(r.gpus, 'GPU')}), and no gate waits for anything"
            )
            continue
        if not r.nodes and not r.why:
            lines.append(f"  {r.pool:<{width}}  {r.strategy}: no GPU node replaced")
            continue
        lines.append(
            f"  {r.pool:<{width}}  {r.strategy}: replaces {_plural(r.nodes, 'GPU node')} ({_plural(r.gpus, 'GPU')}) {_how(r)}"
        )
        lines.append(f"  {'':<{width}}  because of: {', '.join(_grouped(r.why))}")
        lines += [f"  {'':<{width}}  warning: {note}" for note in r.notes]
    return "\n".join(lines) + "\n"
