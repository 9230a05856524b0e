"""The validator: proves on each node that the driver, the runtime, a CUDA workload and the device
plugin work, and leaves the readiness markers (`/run/nvidia/validations/<check>-ready`) the later
stages wait for.

The checks are the validator image's own (`nvidia-validator` with `COMPONENT`), as in the GPU
Operator's state-operator-validation asset (github.com/NVIDIA/gpu-operator
assets/state-operator-validation/0500_daemonset.yaml). Unlike there, the plugin check is not an init
container: the device plugin is a later stage, so a validator pod that waited for it in an init
container would never become ready and `pulumi up` would wait for it forever (see `stages.py`).

Checked at every image the matrix ships (gpu-operator-validator v23.9.0..v25.3.4 from validator/,
the gpu-operator image v25.10.0..v26.7.0 from cmd/nvidia-validator/): the env names used here
(COMPONENT, WITH_WAIT, WITH_WORKLOAD, MIG_STRATEGY, NODE_NAME, OPERATOR_NAMESPACE, VALIDATOR_IMAGE,
VALIDATOR_RUNTIME_CLASS), the marker files, the host driver check (`/host/usr/bin/nvidia-smi`, then
`chroot /host nvidia-smi`) and /host-dev-char are the same at all of them, so nothing here is
chosen by version. Two things every image needs, as the operator's asset has them at every tag:
the toolkit check runs `nvidia-smi` through the nvidia runtime, and every image sets
`NVIDIA_VISIBLE_DEVICES=void` (validator/Dockerfile, docker/Dockerfile), so the check asks for
`all` itself; and from v25.10.0 the image is distroless with busybox, where the asset stopped
using `sleep infinity` (upstream commit f989a4c8d), so the idle loop sleeps in finite steps.
"""

from __future__ import annotations

from components.kubernetes.operands import gpu_access
from components.kubernetes.operands.base import VALIDATIONS_DIR, Container, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext

# Flags and env names: cmd/nvidia-validator/main.go (github.com/NVIDIA/gpu-operator, commit 05da5d17):
# status files in /run/nvidia/validations, host /dev/char expected at /host-dev-char (the driver
# check creates the char-device symlinks runc needs with the systemd cgroup driver), workload pods
# created in OPERATOR_NAMESPACE from VALIDATOR_IMAGE under VALIDATOR_RUNTIME_CLASS.
HOST_ROOT = HostPath("host-root", "/", "/host", True)
HOST_DEV_CHAR = HostPath("host-dev-char", "/dev/char", "/host-dev-char", False)
VALIDATIONS_RW = HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, False, "DirectoryOrCreate")


def check(image: str, component: str, *, wait: bool = False, extra_env: tuple = (), **kwargs) -> Container:
    return Container(
        name=f"{component}-validation",
        image=image,
        command=("sh", "-c"),
        args=("nvidia-validator",),
        env=(("WITH_WAIT", "true" if wait else "false"), ("COMPONENT", component), *extra_env),
        field_env=(("NODE_NAME", "spec.nodeName"), ("OPERATOR_NAMESPACE", "metadata.namespace")),
        run_as_root=True,
        **{"host_paths": ("run-nvidia-validations",), **kwargs},
    )


def driver_check(image: str) -> Container:
    """The baked driver is loaded: `chroot /host nvidia-smi` (validateHostDriver in
    cmd/nvidia-validator/main.go), which needs the host root and the GPU device nodes, so privileged."""
    return check(image, "driver", wait=True, host_paths=("host-root", "host-dev-char", "run-nvidia-validations"), privileged=True)


def _workload_env(image: str) -> tuple:
    return (("VALIDATOR_IMAGE", image), ("VALIDATOR_RUNTIME_CLASS", "nvidia"))


def mig_strategy(ctx: OperandContext) -> str:
    strategies = {s.mig_strategy for s in ctx.sharing}
    return "mixed" if "mixed" in strategies else "single"


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["validator"]
    # Runs until the device plugin (a later stage) advertises GPUs, then keeps the pod alive; the
    # pod is ready once the checks that precede the plugin have passed (readiness below).
    plugin = check(image, "plugin", wait=True, extra_env=(("WITH_WORKLOAD", "true"), ("MIG_STRATEGY", mig_strategy(ctx)), *_workload_env(image)))
    plugin = Container(
        **{**plugin.__dict__,
           "name": "plugin-validation",
           "args": ("until nvidia-validator; do sleep 10; done; echo all validations are successful; "
                    "while true; do sleep 86400; done",),
           "readiness": {"exec": {"command": ["test", "-f", f"{VALIDATIONS_DIR}/cuda-ready"]}, "periodSeconds": 10}}
    )
    return OperandSpec(
        operand="validator",
        reason=(
            "driver-validation runs the host's nvidia-smi in a chroot of the host root (privileged, "
            "/ read-only) and links the GPU char devices in /dev/char; every check writes its readiness marker under /run/nvidia/validations"
        ),
        init_containers=(
            driver_check(image),
            check(image, "toolkit", extra_env=(("NVIDIA_VISIBLE_DEVICES", "all"),),
                  host_paths=("run-nvidia-validations", *gpu_access.volumes(ctx))),
            check(image, "cuda", extra_env=_workload_env(image)),
        ),
        containers=(plugin,),
        host_paths=(HOST_ROOT, HOST_DEV_CHAR, VALIDATIONS_RW, *gpu_access.host_paths(ctx)),
        # The CUDA and plugin checks run workload pods in the namespace and read the node's resources.
        namespace_rules=({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "create", "delete"]},),
        cluster_rules=({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},),
        runtime_class="nvidia",
    )


class Validator(Operand):
    """`gpu-platform:operands:Validator`."""
