"""The taint and label contract between GPU node pools and the operands, defined once.

Node pools set these labels and the taint through the kubelet (so a node that joins next week
carries them from its first heartbeat); operands tolerate the taint and select on the gating labels;
tests and policies check both sides against this module.
"""

from __future__ import annotations

# Every GPU node is tainted so that only pods that asked for a GPU (and the operands) land there.
GPU_TAINT_KEY = "nvidia.com/gpu"
GPU_TAINT_VALUE = "present"
GPU_TAINT_EFFECT = "NoSchedule"

GPU_PRESENT_LABEL = "nvidia.com/gpu.present"

# Gating labels: `nvidia.com/gpu.deploy.<operand>=true` puts an operand's DaemonSet on a node. The
# suffixes are the GPU Operator's own (controllers/state_manager.go), so nodes stay readable by the
# operator's tooling; the validator's is `operator-validator` there too.
GATE_PREFIX = "nvidia.com/gpu.deploy."

# The device plugin and GFD read their sharing config by this node label (config-manager NODE_LABEL).
DEVICE_PLUGIN_CONFIG_LABEL = "nvidia.com/device-plugin.config"
# The MIG manager applies the configuration this label names (mig-parted config key).
MIG_CONFIG_LABEL = "nvidia.com/mig.config"
# What the MIG manager reports of it on the node: pending while it repartitions (rebooting with
# WITH_REBOOT), then success or failed, after it sets the paused gates back (mig-parted v0.13.1
# pkg/mig/reconfigure/reconfigure.go:137-141, 154, 522-555; v0.5.5 deployments/gpu-operator/
# reconfigure-mig.sh:148-195, 422-425). A node that joins has none until its manager's first run.
MIG_CONFIG_STATE_LABEL = "nvidia.com/mig.config.state"

# The `nvidia` runtime handler (our RuntimeClass's) and, on a node without a baked toolkit, the runtime
# the toolkit DaemonSet installs under its ROOT on the host's disk (ROOT/toolkit/nvidia-container-runtime:
# tools/container/toolkit/runtime.go:32-56 at v1.14.3, cmd/nvidia-ctk-installer/toolkit/installer/
# executables.go:53-61, 98-108 and main.go:65-67 at v1.20.0). The pool's user data registers it with
# containerd at every boot (components/aws/user_data.py); the operand installs it there.
# The namespace the operands run in (components/kubernetes/namespace.py creates it).
OPERATOR_NAMESPACE = "gpu-operator"
NVIDIA_RUNTIME_HANDLER = "nvidia"
TOOLKIT_INSTALL_ROOT = "/usr/local/nvidia"
TOOLKIT_RUNTIME = f"{TOOLKIT_INSTALL_ROOT}/toolkit/nvidia-container-runtime"

# Our own labels and tags: the pool a node belongs to, and the GPU model the matrix knows it as.
POOL_LABEL = "gpu-platform.io/pool"
GPU_MODEL_LABEL = "gpu-platform.io/gpu-model"
# The cluster autoscaler's GPU label on AWS (cluster-autoscaler-1.33.6 cloudprovider/aws/aws_cloud_provider.go:38):
# a Ready node with it but no allocatable nvidia.com/gpu counts as unready, not as room for a pending pod
# (processors/customresources/gpu_processor.go:44-57), until the device plugin has registered. Only its presence
# matters there; the value (the matrix's GPU model) names the type for --gpu-total and the GPU metrics.
# Only on pools whose nodes advertise nvidia.com/gpu: any other node would count as unready for ever.
AUTOSCALER_GPU_LABEL = "k8s.amazonaws.com/accelerator"

# Facts recorded on resources so that policies can read them from resource inputs alone. Each
# resource declares the facts its own rules need (the node image: driver, release, CUDA versions;
# a node group: also its GPU model), so a rule is checked before that resource is created.
DRIVER_VERSION_TAG = "gpu-platform.io/driver-version"
TOOLKIT_BAKED_TAG = "gpu-platform.io/toolkit-baked"
KUBERNETES_VERSION_TAG = "gpu-platform.io/kubernetes-version"
GPU_MODEL_TAG = GPU_MODEL_LABEL
GPU_COUNT_TAG = "gpu-platform.io/gpu-count"

# What the cluster autoscaler (run by the cluster's users) reads to build a node of a group with no nodes
# (cluster-autoscaler-1.33.6 and 1.34.5, cloudprovider/aws/aws_manager.go): the node group's labels and
# taints from eks:DescribeNodegroup (lines 302-320), but nvidia.com/gpu from its instance type table
# (line 280) and any other resource only from this tag prefix, on the ASG (lines 285-289, 436-456) or on the
# node group through DescribeNodegroup (lines 322-332). EKS copies no node group tag to its ASG (botocore
# 1.43.11 eks service-2.json, CreateNodegroupRequest.tags; aws/containers-roadmap#608, open); the pool tags the ASG.
CA_RESOURCE_TAG = "k8s.io/cluster-autoscaler/node-template/resources/"
# How many EFA interfaces each node of a GPU pool's launch template has ("0": none), declared on the
# template and its node group, where policy/gpu.py judges a multi-node pool without EFA.
EFA_INTERFACES_TAG = "gpu-platform.io/efa-interfaces"
# On the node image: the GPU models of the pools it is built for, so a driver too old for one of
# them stops the bake.
GPU_MODELS_TAG = "gpu-platform.io/gpu-models"
# bake (EC2 Image Builder in the stack), ami (a pinned AMI the launch templates boot) or eks-nvidia
# (AWS's accelerated AMI of a pinned amazon-eks-ami release, booted the same way).
IMAGE_SOURCE_TAG = "gpu-platform.io/image-source"
IMAGE_SOURCES = ("bake", "ami", "eks-nvidia")
OPERATOR_RELEASE_KEY = "gpu-platform.io/operator-release"
# On a GPU node group: how a new node image reaches its nodes (surge | in-place | blue-green).
ROLLOUT_TAG = "gpu-platform.io/rollout"
# A kubelet label of every GPU node: a digest of what its node image is (source, release or AMI,
# driver, toolkit, Kubernetes version, kernel module flavour), for people reading nodes
# (`kubectl get nodes -L gpu-platform.io/image-generation`). Not what a readiness gate selects on: a
# node group replaced for another reason (instance type, volume size) keeps the digest, and a
# rollback brings an old one back; the gate selects the node group's own EKS label instead
# (components/aws/node_pool.py NODE_GROUP_LABEL).
GENERATION_LABEL = "gpu-platform.io/image-generation"
CUDA_VERSIONS_KEY = "gpu-platform.io/cuda-versions"
OVERRIDES_KEY = "gpu-platform.io/image-overrides"
OPERAND_KEY = "gpu-platform.io/operand"
# On the operands' namespace: the privilege ledger hash the stack's approval covered
# (gpu-platform:audit.approvedLedger), for the policy pack, which sees no stack config. The namespace
# because every stack creates it exactly once and it already carries the stack's declared facts, and
# because recording a new approval must restart nothing: on a pod template it would roll every
# privileged DaemonSet, on the node image's tags it would touch the AMI's.
APPROVED_LEDGER_KEY = "gpu-platform.io/approved-ledger"
# On the same namespace: every `cluster.admins` ARN (gpu_platform/privileges/cluster_admins.py annotation), for
# the privilege ledger, which must name the admins whose existing access entry the stack leaves alone
# (no resource of the stack shows them). The namespace for the same reasons as above.
CLUSTER_ADMINS_KEY = "gpu-platform.io/cluster-admins"
# On the operands' namespace of a stack in gpu-platform:allocation mode dra (absent: device-plugin,
# the default): how the cluster allocates GPUs, for the policy pack, which sees no stack config.
ALLOCATION_MODE_KEY = "gpu-platform.io/allocation-mode"
# On the same namespace: the DRA driver's alpha feature gates the stack acknowledges
# (gpu-platform:allocation.acknowledgeAlpha), space-separated, for policy/dra.py; absent when none.
ACKNOWLEDGED_ALPHA_KEY = "gpu-platform.io/acknowledged-alpha"
# On the same namespace: the AWS account the stack deploys into (the caller identity the program
# looks up), so the privilege ledger can tell the stack's own account from any other in the IAM and
# KMS documents without guessing (gpu_platform/privileges/grants.py own_account).
AWS_ACCOUNT_KEY = "gpu-platform.io/aws-account"
# On the same namespace, for the privilege ledger (neither is otherwise the same offline and in a
# real preview: the AMI a launch template boots is an output, the cluster an adopted stack joins is
# no resource of it): the node image every GPU node boots, as the stack pins it ("ami ami-...",
# "eks-nvidia release v...", "bake from EKS AMI release v..."), and the cluster the operands run in
# ("NAME in REGION, created" or ", adopted").
NODE_IMAGE_KEY = "gpu-platform.io/node-image"
CLUSTER_KEY = "gpu-platform.io/cluster"
# On the same namespace: the stack's aws:* provider settings beyond the region, one per line
# (config.StackConfig.aws_provider), absent when there are none. The default AWS provider is no
# resource the offline preview records, and its settings decide where every AWS call goes (an SSM
# endpoint answers which AMI the GPU nodes boot) and as whom (assumeRoles).
AWS_PROVIDER_KEY = "gpu-platform.io/aws-provider"

# Audit annotations on every workload that keeps a privilege, and audit tags on every AWS resource
# that runs the privileged software.
AUDIT_PREFIX = "audit.gpu-platform.io/"
AUDIT_REASON = AUDIT_PREFIX + "reason"
AUDIT_HOST_PATHS = AUDIT_PREFIX + "host-paths"
AUDIT_OWNER = AUDIT_PREFIX + "owner"
AUDIT_APPROVAL = AUDIT_PREFIX + "approval"
AUDIT_ANNOTATIONS = (AUDIT_REASON, AUDIT_HOST_PATHS, AUDIT_OWNER, AUDIT_APPROVAL)
AUDIT_TAG_SOFTWARE = AUDIT_PREFIX + "privileged-software"
AUDIT_TAG_OWNER = AUDIT_OWNER
AUDIT_TAG_APPROVAL = AUDIT_APPROVAL
AUDIT_TAGS = (AUDIT_TAG_SOFTWARE, AUDIT_TAG_OWNER, AUDIT_TAG_APPROVAL)


def join_values(values) -> str:
    """A list as one tag or annotation value: separated by spaces (AWS tag values allow no comma)."""
    return " ".join(values)


def split_values(text: str) -> list[str]:
    return text.split()


def format_overrides(overrides) -> str:
    """{operand: tag} -> `device-plugin=v0.18.2 validator=v25.10.2`, sorted."""
    return join_values(f"{k}={v}" for k, v in sorted(overrides.items()))


def parse_overrides(text: str) -> dict[str, str]:
    pairs = (item.split("=", 1) for item in split_values(text) if "=" in item)
    return dict(pairs)


def gate_label(gate: str) -> str:
    return GATE_PREFIX + gate


def gpu_taint() -> dict[str, str]:
    return {"key": GPU_TAINT_KEY, "value": GPU_TAINT_VALUE, "effect": GPU_TAINT_EFFECT}


def tolerates(tolerations: list[dict], taint: dict) -> bool:
    """Whether any toleration tolerates the taint, as the scheduler decides it (k8s.io/api
    core/v1/toleration.go, ToleratesTaint): an empty effect matches every effect, an empty key every
    key, `Exists` every value, an absent operator means `Equal`; any other operator (the numeric
    `Lt`/`Gt` behind a feature gate) never matches here, since nothing we deploy uses one."""
    return any(_tolerates_one(toleration, taint) for toleration in tolerations or ())


def _tolerates_one(toleration: dict, taint: dict) -> bool:
    if toleration.get("effect") and toleration["effect"] != taint.get("effect"):
        return False
    if toleration.get("key") and toleration["key"] != taint.get("key"):
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return toleration.get("value", "") == taint.get("value", "")
    return operator == "Exists"


def pool_labels(
    pool: str, gpu_model: str, gates: tuple[str, ...], mig_config: str | None, whole_gpus: bool
) -> dict[str, str]:
    """The kubelet labels of a GPU pool's nodes: presence, one gate per operand that belongs there,
    the device plugin config named after the pool, the MIG configuration on MIG pools, and the
    autoscaler's GPU label where the nodes advertise nvidia.com/gpu (`whole_gpus`)."""
    labels = {
        GPU_PRESENT_LABEL: "true",
        POOL_LABEL: pool,
        GPU_MODEL_LABEL: gpu_model,
        DEVICE_PLUGIN_CONFIG_LABEL: pool,
        **{gate_label(gate): "true" for gate in gates},
        **({AUTOSCALER_GPU_LABEL: gpu_model} if whole_gpus else {}),
    }
    if mig_config:
        labels[MIG_CONFIG_LABEL] = mig_config
    return dict(sorted(labels.items()))
