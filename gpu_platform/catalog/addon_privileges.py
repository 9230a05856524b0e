"""The EKS add-on the stack pins (components/aws/node_health.py installs it) and what its DaemonSets
run with on every node. EKS creates those DaemonSets, so no stack resource shows them: they are
written down here, at the add-on's pinned version, for the privilege ledger (gpu_platform/privileges/ledger.py),
which the audit report and the policy pack both compute."""

from __future__ import annotations

ADDON = "eks-node-monitoring-agent"
# The chart at tag v1.7.0 ships the agent image v1.7.0-eksbuild.1 (charts/eks-node-monitoring-agent/
# values.yaml line 32); EKS names add-on versions the same way (vX.Y.Z-eksbuild.N). NOT VERIFIED
# offline: that EKS publishes this version for the cluster's Kubernetes version (`aws eks
# describe-addon-versions --addon-name eks-node-monitoring-agent` says; a version EKS does not offer
# fails the add-on's create).
ADDON_VERSION = "v1.7.0-eksbuild.1"
# The tag an add-on the program does not pin carries (components/aws/vpc_cni.py), value UNPINNED. An
# add-on's addonVersion is Optional and Computed (terraform-provider-aws internal/service/eks/addon.go,
# addon_version): left out, it is unknown in a first preview and, once deployed, the version EKS chose,
# so the ledger cannot tell "left to EKS" from "pinned" by the version; the tag, an input that reads
# back as written, says which. Approving an unpinned add-on approves whatever version EKS installs.
VERSION_TAG = "gpu-platform.io/addon-version"
UNPINNED = "eks-default"
# EKS installs add-ons into kube-system unless told otherwise (the chart uses its release namespace).
NAMESPACE = "kube-system"
# What the add-on's two DaemonSets run with on every node, from the chart at v1.7.0: the node agent
# (templates/daemonset.yaml lines 41-42 hostNetwork and hostPID, 75-79 the securityContext of
# values.yaml lines 88-92, privileged with NET_ADMIN, and the host's / mounted at /host, lines 79 and
# 86-88, writable), and the DCGM server (templates/dcgm-daemonset.yaml lines 1-4 and 75-76:
# privileged). The ledger's vocabulary (gpu_platform/privileges/ledger.py).
_AGENT = f"DaemonSet {NAMESPACE}/eks-node-monitoring-agent (EKS add-on {ADDON} {ADDON_VERSION})"
_DCGM = f"DaemonSet {NAMESPACE}/dcgm-server (EKS add-on {ADDON} {ADDON_VERSION})"
WORKLOADS: tuple[tuple[str, str, str], ...] = (
    (_AGENT, "(pod)", "hostNetwork"),
    (_AGENT, "(pod)", "hostPID"),
    (_AGENT, ADDON, "privileged"),
    (_AGENT, ADDON, "capability NET_ADMIN"),
    (_AGENT, ADDON, "hostPath / rw"),
    (_DCGM, f"{ADDON}-dcgm", "privileged"),
)


def workloads(addon: str, version: str) -> tuple[tuple[str, str, str], ...] | None:
    """The ledger rows of an add-on at a version, or None when they are not written down here."""
    return WORKLOADS if (addon, version) == (ADDON, ADDON_VERSION) else None
