"""GPU node health: the EKS node monitoring agent add-on, which reads node logs and the GPUs' state
(NVIDIA XID, double-bit and NVLink errors among them) and reports them as node conditions, for the
managed node groups' node auto repair to reboot or replace the node (EKS User Guide, node-health.adoc
lines 20-36 and 228-250; add-on name `eks-node-monitoring-agent`, eks-add-ons.adoc lines 419-439: it
needs no IAM permissions).

The add-on's own agent tolerates every taint, but its DCGM server (the GPU half) tolerates none by
default (aws/eks-node-monitoring-agent v1.7.0, charts/eks-node-monitoring-agent/values.yaml lines
93-95 and 157-158; aws/containers-roadmap#2567), so it would never run on GPU nodes tainted
`nvidia.com/gpu`: the add-on is configured to tolerate that taint (`dcgmAgent.tolerations`).

The add-on is pinned (ADDON_VERSION), so that what runs privileged on every node is what was approved,
not whatever EKS makes its default later; its configuration is checked against the add-on's own
schema (eks-node-monitoring-agent.schema.json: charts/configuration.schema.json at v1.7.0, what
`aws eks describe-addon-configuration` answers), and its privileged DaemonSets, which EKS creates and
no stack resource shows, are written down here (WORKLOADS) for the audit report and its ledger.
"""

from __future__ import annotations

import json
from pathlib import Path

import pulumi
import pulumi_aws as aws

# The add-on, its pinned version and what its DaemonSets run with: plain data in gpu_platform, which
# the policy pack reads too (the privilege ledger's add-on rows).
from gpu_platform.catalog.addon_privileges import ADDON, ADDON_VERSION, NAMESPACE, WORKLOADS  # noqa: F401 (re-exported)
from gpu_platform.interface import contract

SCHEMA = Path(__file__).with_name("eks-node-monitoring-agent.schema.json")
# The audit tag of the privileged software the add-on runs (aws_tags.audit_tags).
SOFTWARE = f"{ADDON} {ADDON_VERSION} (privileged DaemonSets eks-node-monitoring-agent, dcgm-server)"


# Where the DCGM server runs: our GPU pools' nodes that are not MIG nodes. Its nv-hostengine holds every
# GPU (NVIDIA_VISIBLE_DEVICES=all, templates/dcgm-daemonset.yaml:47-59 at v1.7.0), and the MIG manager
# neither pauses nor waits for it: it waits only for pods of DEFAULT_GPU_CLIENTS_NAMESPACE by the
# operator's app labels (mig-parted v0.13.1 pkg/mig/reconfigure/reconfigure.go:379-400, 591-602); this
# pod runs in kube-system labelled k8s-app=dcgm-server. A MIG mode change fails while a process holds the
# GPU (NVML nvmlDeviceSetMigMode: NVML_ERROR_IN_USE), so it stays off MIG pools: an affinity on the
# paused gate alone would race the change, as nothing waits for the pod to be gone. The DaemonSet
# controller deletes a daemon pod from a node that stops matching (kubernetes v1.32.0
# pkg/controller/daemon/daemon_controller.go:1275-1306 NodeShouldRunDaemonPod). The term replaces the
# chart's (values.yaml:127-152; Helm replaces lists): our pools' presence label for its instance-type
# list; its amd64 clause holds already, every GPU node image here is x86_64 (node_image.ARCHITECTURE).
DCGM_NODE_TERM = (
    {"key": contract.GPU_PRESENT_LABEL, "operator": "In", "values": ["true"]},
    {"key": contract.MIG_CONFIG_LABEL, "operator": "DoesNotExist"},
)


def configuration() -> str:
    required = {"nodeSelectorTerms": [{"matchExpressions": list(DCGM_NODE_TERM)}]}
    return json.dumps(
        {
            "dcgmAgent": {
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}},
                "tolerations": [
                    {"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": contract.GPU_TAINT_EFFECT}
                ],
            }
        },
        sort_keys=True,
    )


class NodeMonitoringAgent(pulumi.ComponentResource):
    def __init__(
        self,
        name: str,
        cluster_name: pulumi.Input[str],
        tags: dict[str, str],
        depends_on: list[pulumi.Resource],
        opts: pulumi.ResourceOptions | None = None,
    ):
        super().__init__("gpu-platform:aws:NodeMonitoringAgent", name, None, opts)
        self.addon = aws.eks.Addon(
            f"{name}-addon",
            cluster_name=cluster_name,
            addon_name=ADDON,
            addon_version=ADDON_VERSION,
            configuration_values=configuration(),
            # A setting someone changed by hand is overwritten by the stack's, on create and update.
            resolve_conflicts_on_create="OVERWRITE",
            resolve_conflicts_on_update="OVERWRITE",
            tags=tags,
            # After the nodes: the provider waits for ACTIVE, and the add-on is DEGRADED while its
            # DaemonSets have nowhere to run (tf-aws internal/service/eks/addon.go waitAddonCreated:
            # CREATING and DEGRADED are pending states).
            opts=pulumi.ResourceOptions(parent=self, depends_on=depends_on),
        )
        self.register_outputs({})
