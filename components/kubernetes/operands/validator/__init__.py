"""The validator: proves on each node that the driver, the runtime and a CUDA workload work and that
the device plugin advertises the node's GPUs, and leaves the readiness markers
(`/run/nvidia/validations/<check>-ready`) the later stages wait for.

Which checks need a free GPU: none of ours. The driver and toolkit checks run nvidia-smi on the host
and through the nvidia runtime; the cuda check's workload pod requests no GPU resource; the plugin
check, run without a workload, reads the node's advertised capacity (see `spec`). So every marker comes
back on a node whose GPUs are all allocated, after a reboot or a validator roll deletes them.

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

What the image looks up by name (components/kubernetes/operands/validator/contract.yaml): the cuda check (the
plugin check too, but ours runs without a workload) GETs the DaemonSet `nvidia-operator-validator` in
its namespace before it creates a workload pod (validator/main.go:1030-1053 at v23.9.0,
cmd/nvidia-validator/main.go:1330, 1594 at v26.7.0), and the workload pods baked into the image run as the service account of that name
(validator/cuda-workload-validation.yaml:14 at v23.9.0, validator/manifests/*-workload-validation.yaml
at v26.7.0), so the DaemonSet, its service account and its RBAC carry the upstream name. The pods
keep the upstream label app=nvidia-operator-validator, by which the MIG manager restarts them after
repartitioning (deployments/container/reconfigure-mig.sh:640 at NVIDIA/mig-parted v0.9.1).

The driver marker is not the same at every tag: up to v24.3.0 a host driver gets `host-driver-ready`
(validator/main.go:141-144, 677-681 at v23.9.0 and v24.3.0) and `driver-ready` is written only for a
driver container; from v24.6.0 `driver-ready` is written for both (validator/main.go:150, 773-820 at
v24.6.0). No stage may wait for either (stages.py: the stages wait for toolkit-ready, which every
tag writes; plugin-ready is read by the blue-green readiness gate only).
"""

from __future__ import annotations

from components.kubernetes.operands import gpu_access
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import VALIDATIONS_DIR, Container, HostPath, OperandSpec

# Flags and env names: cmd/nvidia-validator/main.go (github.com/NVIDIA/gpu-operator, commit 05da5d17):
# status files in /run/nvidia/validations, host /dev/char expected at /host-dev-char (the driver
# check creates the char-device symlinks runc needs with the systemd cgroup driver), workload pods
# created in OPERATOR_NAMESPACE from VALIDATOR_IMAGE under VALIDATOR_RUNTIME_CLASS.
HOST_ROOT = HostPath("host-root", "/", "/host", True)
HOST_DEV_CHAR = HostPath("host-dev-char", "/dev/char", "/host-dev-char", False)
# The name the image looks itself up by, and the name of the service account its workload pods run as.
NAME = "nvidia-operator-validator"
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
    return check(
        image,
        "driver",
        wait=True,
        host_paths=("host-root", "host-dev-char", "run-nvidia-validations"),
        privileged=True,
        read_only_root=False,
    )


def _workload_env(image: str) -> tuple:
    return (("VALIDATOR_IMAGE", image), ("VALIDATOR_RUNTIME_CLASS", "nvidia"))


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["validator"]
    # Runs until the device plugin (a later stage) advertises GPUs, then keeps the pod alive; the
    # pod is ready once the checks that precede the plugin have passed (readiness below). In
    # allocation mode dra no device plugin runs and no node advertises nvidia.com/gpu, so the plugin
    # check (which looks for one, cmd/nvidia-validator/main.go:1447-1467 at v26.7.0) would wait
    # forever: the container only keeps the pod alive. The DRA path itself (a GPU allocated through a
    # claim and injected) is proven per node by the DRA validator (dra_validator/), as the GPU
    # Operator's DRA mode does (manifests/state-dra-validation/ at v26.7.0).
    # No workload: its pod asks the device plugin for one free GPU (plugin-workload-validation.yaml and
    # Plugin.runWorkload: 1 of the node's allocatable nvidia.com/gpu), which a node whose GPUs are all
    # held never has, so after a reboot or a validator roll plugin-ready would never come back there.
    # Without it the check reads the node's capacity only (Plugin.validate skips runWorkload unless
    # WITH_WORKLOAD, validateGPUResource looks for nvidia.com/gpu* or nvidia.com/mig-* >= 1 in
    # status.capacity: validator/main.go:813-855, 1115-1135 at v23.9.0, the same bodies through
    # v25.3.4 (972-1014, 1247-1267); cmd/nvidia-validator/main.go:1021-1063, 1296-1316 at v25.10.0,
    # 1172-1214, 1447-1467 at v26.7.0), as the GPU Operator runs it from v25.3.3
    # (assets/state-operator-validation/0500_daemonset.yaml:129-130 at v25.3.3, 150-151 at v25.10.1).
    # So it needs neither VALIDATOR_IMAGE nor the runtime class the workload pod would take.
    plugin = check(image, "plugin", wait=True, extra_env=(("WITH_WORKLOAD", "false"),))
    run = (
        "echo all validations are successful; while true; do sleep 86400; done"
        if ctx.dra
        else "until nvidia-validator; do sleep 10; done; echo all validations are successful; while true; do sleep 86400; done"
    )
    plugin = Container(
        **{
            **plugin.__dict__,
            "name": "idle" if ctx.dra else "plugin-validation",
            "args": (run,),
            **({"env": (), "field_env": ()} if ctx.dra else {}),
            "readiness": {"exec": {"command": ["test", "-f", f"{VALIDATIONS_DIR}/cuda-ready"]}, "periodSeconds": 10},
            # The image never removes its markers; when the pod stops (a MIG change restarts it, an
            # update rolls it) the node must not keep markers of what was checked before.
            "pre_stop": ("sh", "-c", f"rm -f {VALIDATIONS_DIR}/*-ready"),
        }
    )
    return OperandSpec(
        operand="validator",
        reason=(
            "driver-validation runs the host's nvidia-smi in a chroot of the host root (privileged, "
            "/ read-only) and links the GPU char devices in /dev/char; every check writes its readiness marker under /run/nvidia/validations"
        ),
        init_containers=(
            driver_check(image),
            check(
                image,
                "toolkit",
                extra_env=(("NVIDIA_VISIBLE_DEVICES", "all"),),
                host_paths=("run-nvidia-validations", *gpu_access.volumes()),
            ),
            check(image, "cuda", extra_env=_workload_env(image)),
        ),
        containers=(plugin,),
        host_paths=(HOST_ROOT, HOST_DEV_CHAR, VALIDATIONS_RW, *gpu_access.host_paths()),
        # The cuda check lists and deletes the node's earlier workload pod, creates a new one and gets it
        # until it succeeds, after a get of its own DaemonSet (for its tolerations); the plugin check
        # (no workload, above) gets its Node for the advertised GPUs only. The cuda pod asks for no GPU
        # (no resources in cuda-workload-validation.yaml at any tag, CUDA.runWorkload sets none): it is
        # privileged with NVIDIA_VISIBLE_DEVICES=all, so it runs on a node whose GPUs are all held. No watch, update or list of DaemonSets: the
        # driver check lists driver DaemonSets (v24.6.0+) only when `chroot /host nvidia-smi` fails, and
        # then a refusal is what we want: the check exits and the kubelet restarts it, so it tries the
        # host driver again, where a granted list that finds no driver DaemonSet would wait for a
        # driver container's /run/nvidia/driver forever (validateDriverContainer, validator/main.go:709-771
        # at v24.6.0, cmd/nvidia-validator/main.go:800-873 at v26.7.0).
        namespace_rules=(
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["create", "get", "list", "delete"]},
            {"apiGroups": ["apps"], "resources": ["daemonsets"], "verbs": ["get"], "resourceNames": [NAME]},
        ),
        cluster_rules=() if ctx.dra else ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},),
        runtime_class="nvidia",
        object_name=NAME,
        app_label=NAME,
    )


class Validator(Operand):
    """`gpu-platform:operands:Validator`."""
