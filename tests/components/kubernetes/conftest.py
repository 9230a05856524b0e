"""Readers of the recorded graph that the operand tests share: which operand owns what, and the
pools' kubelet labels and taints as the node groups declare them."""

from __future__ import annotations

from preview.recording import Recording, Registration

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
DEPLOYMENT = "kubernetes:apps/v1:Deployment"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
OPERAND_PREFIX = "gpu-platform:operands:"


def operands(rec: Recording) -> list[Registration]:
    return [r for r in rec.resources if r.type.startswith(OPERAND_PREFIX)]


def daemonsets(rec: Recording) -> list[Registration]:
    return rec.of_type(DAEMONSET)


def daemonset_of(rec: Recording, operand_name: str) -> Registration | None:
    found = [r for r in daemonsets(rec) if r.name == f"gpu-{operand_name}-ds"]
    return found[0] if found else None


def gpu_node_groups(rec: Recording) -> list[Registration]:
    return [r for r in rec.of_type(NODE_GROUP) if r.name.endswith("-ng")]


def pod_spec(workload: Registration) -> dict:
    return workload.inputs["spec"]["template"]["spec"]
