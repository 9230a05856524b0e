"""What a change does to the GPU nodes, per pool, for `--against`: how many GPU nodes (and GPUs) it
replaces, and by which rollout strategy, read from two `--json` reports alone.

A pool's nodes are replaced when its node group is replaced, or when its launch template gets a new
version (a change of the template's content: image, user data, instance tags, volumes...; not its
own `tags`), which EKS rolls out with UpdateNodegroupVersion. Which of these a change is comes from
one place, preview/reports/changes.py's verdict per resource (with its cascades), read from
preview/reports/replacements.yaml. How they are replaced is the pool's `rollout`, which its node
group declares (contract.ROLLOUT_TAG; components/aws/node_pool.py):

- surge: inside the group, new nodes first, at most maxUnavailable at a time;
- in-place: inside the group, old nodes terminated before new ones launch (EKS's MINIMAL strategy):
  the pool runs short by up to maxUnavailable nodes during the roll;
- blue-green: a new node group beside the old, twice the nodes for the time of the gate; the old
  group is deleted after its readiness gate has passed.

The node count is the old report's desired size (the pool as it runs; the cluster autoscaler may
have moved it since, and `desiredSize` is ignored on update), the GPUs that count times the node
group's `gpu-platform.io/gpu-count`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from gpu_platform import contract
from preview.reports import changes, replacements
from preview.reports.changes import identity

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
JOB = "kubernetes:batch/v1:Job"
_REPLACING = (replacements.REPLACES, replacements.MAY_REPLACE, replacements.ROLLS_NODES)


@dataclass(frozen=True)
class PoolRollout:
    pool: str
    strategy: str
    nodes: int  # GPU nodes replaced
    gpus: int
    why: tuple[str, ...]  # the changed keys that replace them
    gate: Optional[str] = None  # the readiness gate's Job, for blue-green
    max_unavailable: str = ""


def _by_identity(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {identity(r["urn"]): r for r in report.get("resources", [])}


def _tags(resource: dict[str, Any]) -> dict[str, Any]:
    tags = (resource.get("inputs") or {}).get("tags")
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


def _max_unavailable(group: dict[str, Any]) -> str:
    update = (group.get("inputs") or {}).get("updateConfig") or {}
    if "maxUnavailablePercentage" in update:
        return f"{_count(update['maxUnavailablePercentage'])}%"
    if "maxUnavailable" in update:
        return str(_count(update["maxUnavailable"]))
    return "1"  # EKS's default (managed-node-update-behavior.adoc line 22)


def _reasons(change: Optional[changes.Changed]) -> list[str]:
    """The node group's changed keys that replace or roll its nodes, with what caused a cascaded one."""
    if change is None:
        return []
    return [f"NodeGroup {e.key}" + (f" ({e.because})" if e.because else "")
            for e in change.entries if not e.ignored and e.effect.kind in _REPLACING]


def compare(old_report: dict[str, Any], new_report: dict[str, Any]) -> list[PoolRollout]:
    old, new = _by_identity(old_report), _by_identity(new_report)
    old_groups, new_groups = _pool_resources(old, NODE_GROUP), _pool_resources(new, NODE_GROUP)
    changed = {identity(c.resource.urn): c for c in changes.compare(old_report, new_report).changed}
    gates = {}
    for r in new.values():
        labels = ((r.get("inputs") or {}).get("metadata") or {}).get("labels") or {}
        if r.get("type") == JOB and isinstance(labels, dict) and labels.get(contract.POOL_LABEL):
            gates[labels[contract.POOL_LABEL]] = r["name"]
    found = []
    for pool in sorted(set(old_groups) & set(new_groups)):
        (old_key, old_group), (new_key, new_group) = old_groups[pool], new_groups[pool]
        why = ["the node group itself (a new resource)"] if old_key != new_key else _reasons(changed.get(new_key))
        nodes = _count(((old_group.get("inputs") or {}).get("scalingConfig") or {}).get("desiredSize")) if why else 0
        gpus = nodes * _count(_tags(new_group).get(contract.GPU_COUNT_TAG))
        strategy = str(_tags(new_group).get(contract.ROLLOUT_TAG) or "surge")
        found.append(PoolRollout(pool, strategy, nodes, gpus, tuple(why), gates.get(pool), _max_unavailable(new_group)))
    return found


def _how(r: PoolRollout) -> str:
    if r.strategy == "blue-green":
        gate = f"its readiness gate ({r.gate})" if r.gate else "its readiness gate"
        return (f"by a new node group beside the old one ({r.nodes} more nodes while it runs); the old group is deleted "
                f"only after {gate} has seen every new node serve GPUs")
    if r.strategy == "in-place":
        return (f"inside the node group, old nodes terminated before new ones launch (EKS MINIMAL), "
                f"{r.max_unavailable} at a time: the pool runs short while it rolls")
    return f"inside the node group, new nodes launched first (EKS DEFAULT), at most {r.max_unavailable} unavailable at a time"


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
    lines = ["", "GPU node rollouts (per pool present in both reports):"]
    width = max(len(r.pool) for r in rollouts)
    for r in rollouts:
        if not r.nodes and not r.why:
            lines.append(f"  {r.pool:<{width}}  {r.strategy}: no GPU node replaced")
            continue
        lines.append(f"  {r.pool:<{width}}  {r.strategy}: replaces {r.nodes} GPU node{'s' if r.nodes != 1 else ''} "
                     f"({r.gpus} GPUs) {_how(r)}")
        lines.append(f"  {'':<{width}}  because of: {', '.join(_grouped(r.why))}")
    return "\n".join(lines) + "\n"
