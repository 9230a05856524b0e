"""The DRA validator (gpu-platform:allocation mode dra): proves on each node that the DRA driver can
allocate a GPU to a pod and inject it, which nothing else in mode dra proves (the validator's checks
run through the nvidia runtime class, not through a claim). Without it `pulumi up` succeeds on nodes
where no pod could ever get a GPU.

As the GPU Operator v26.7.0 does it (NVIDIA/gpu-operator commit 10ee5b36,
manifests/state-dra-validation/, rendered by internal/state/dra_validation.go): the pod claims ONE GPU
of class gpu.nvidia.com with admin access through the ResourceClaimTemplate nvidia-dra-validator-gpu
(0400_resourceclaimtemplate.yaml:13-25), so the kubelet starts none of its containers before the DRA
driver on the node has prepared the claim; its init container gpu-validation lists the claim and runs
`nvidia-smi -L`, a binary the image does not carry: the claim's CDI devices inject it with the GPU
(0500_daemonset.yaml:89-105), so the pod gets past init only if the driver allocated and injected a
working GPU; its main container only keeps the pod alive, in finite sleeps, as the image's busybox has
no `sleep infinity` (:106-115). Admin access takes the GPU from no workload and waits for none that
holds it (0400_resourceclaimtemplate.yaml:1-9); the API server admits it only in a namespace labelled
resource.kubernetes.io/admin-access=true, which the namespace gets in mode dra
(components/kubernetes/namespace.py).

What differs from upstream, and why:
- A securityContext: upstream sets none (the image's user, the runtime's default capabilities). Here
  every capability is dropped, no privilege escalation, a read-only root filesystem, and not root
  (upstream runs as the image's root): `nvidia-smi -L` only opens the injected device nodes and reads
  the injected libraries. A non-root user can open the device nodes because the CDI spec names no
  owner for them: the DRA driver builds the GPU's edits with the toolkit's nvcdi library, which copies
  the host node's mode and group but leaves the owner out on purpose "to allow the UID of the
  container user to be applied" (kubernetes-sigs/dra-driver-nvidia-gpu 95932046, vendored
  nvidia-container-toolkit v1.19.1 internal/edits/device.go:94-108), and the CDI library that applies
  the edits then gives each such node the container process's UID, so the owner's bits of the host's
  mode are the container user's (vendored tags.cncf.io/container-device-interface v1.1.0
  pkg/cdi/container-edits.go:93-97). The runtime on the node (containerd 2.x on AL2023) applies its
  own copy of that library, whose version was not read.
- No service account token and no RBAC: it makes no API call. No host path, no runtime class.
- No `app: nvidia-operator-validator` pod label: upstream puts it there for its upgrade controller,
  which this platform does not run, and this platform's own validator DaemonSet, in the same
  namespace, carries that label on its pods (the MIG manager restarts those by it). The two DaemonSets
  select their pods by app.kubernetes.io/name (validator, dra-validator), never each other's.
- No node affinity on nvidia.com/gpu.present (0500_daemonset.yaml:74-82): the gating label
  nvidia.com/gpu.deploy.dra-validator is set only on the GPU pools of a dra stack.

What the image and the claim need from the DaemonSet, clause by clause:
components/kubernetes/operands/dra_validator/contract.yaml.
"""

from __future__ import annotations

from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.dra_driver import GPU_CLASS
from components.kubernetes.operands.spec import ClaimTemplate, Container, OperandSpec
from gpu_platform.catalog import operands

NAME = "nvidia-dra-validator"  # 0500_daemonset.yaml:18, its service account 0100_serviceaccount.yaml:4
# The pod's claim and its request are both validation-gpu (0500_daemonset.yaml:90, 105;
# 0400_resourceclaimtemplate.yaml:19), the template nvidia-dra-validator-gpu (:13, the pod's
# resourceClaimTemplateName 0500_daemonset.yaml:91): exactly one GPU, admin access (:21-25).
CLAIM = ClaimTemplate(
    claim="validation-gpu",
    suffix="gpu",
    request="validation-gpu",
    device_class=GPU_CLASS,
    allocation_mode="ExactCount",
    count=1,
    admin_access=True,
)
# The image key it runs (gpu_platform/catalog/operands.yaml: the validator's).
IMAGE_KEY = next(r.image for r in operands.rows() if r.operand == "dra-validator")


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images[IMAGE_KEY]
    # Not root: the injected device nodes are the container user's (module docstring).
    # A CPU limit costs nothing here (one nvidia-smi call, then a sleep loop) and bounds what the
    # pod on every GPU node may take.
    check = Container(
        name="gpu-validation",
        image=image,
        command=("sh", "-c"),
        args=("nvidia-smi -L",),
        claims=(CLAIM.claim,),
        cpu_limit="500m",
    )
    idle = Container(
        name=NAME,
        image=image,
        command=("sh", "-c"),
        cpu_limit="10m",
        args=("echo all validations are successful; while true; do sleep 86400; done",),
    )
    return OperandSpec(
        operand="dra-validator",
        reason=(
            "no host access, no API rights, not root, every capability dropped; takes admin access to one GPU of its "
            "node through a ResourceClaim (class gpu.nvidia.com) and lists it with nvidia-smi -L"
        ),
        init_containers=(check,),
        containers=(idle,),
        claim_templates=(CLAIM,),
        object_name=NAME,
    )


class DraValidator(Operand):
    """`gpu-platform:operands:DraValidator`."""
