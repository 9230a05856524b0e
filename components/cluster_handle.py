"""What the Kubernetes half of the platform needs from the cloud half, and nothing more: the cluster
handle. The cloud layer (components/aws/gpu_cluster.py for EKS) builds the cluster, the node image and
the GPU pools and hands this back; the namespace, the operands and the readiness gates read only it.
A second cloud, or EKS Auto Mode, is a new builder returning the same handle, not edits across the
Kubernetes layer."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s


@dataclass(frozen=True)
class GpuPoolHandle:
    name: str
    labels: dict[str, str]  # the kubelet labels its nodes register with (gates, sharing config, image generation)
    taints: tuple[dict[str, str], ...]  # in Kubernetes spelling
    rollout: str  # surge | in-place | blue-green
    # The labels that pick the nodes of the pool's current node group, and only those (what a
    # readiness gate proves): a replaced group's nodes never match its successor's.
    node_selector: dict[str, pulumi.Input[str]]
    # What must exist before its nodes can run anything (its node group), and what a blue-green
    # readiness gate must follow (the group replaced create-before-delete).
    ready: pulumi.Resource
    efa: bool = False  # its nodes have EFA interfaces (components/aws/efa.py)


@dataclass(frozen=True)
class ClusterHandle:
    name: pulumi.Output[str]
    provider: k8s.Provider  # every Kubernetes object goes through it
    pools: dict[str, GpuPoolHandle]
    # What the first operand stage waits for: the GPU nodes (a DaemonSet that matches no node is
    # "ready" at once, which would make every later wait meaningless).
    first_stage_waits_on: tuple[pulumi.Resource, ...]
