"""The NVIDIA container toolkit: registers the `nvidia` runtime handler in the host's containerd
through a config drop-in and restarts containerd through its socket. Its first init step is the
validator's driver check, which proves the baked driver is loaded and writes `driver-ready`.

Env and host paths are the GPU Operator's for v25.10.x (gpu-operator-facts.yaml, operand_manifests
container_toolkit_containerd and per_component.container-toolkit.v25.10.1, from
assets/state-container-toolkit/0500_daemonset.yaml and controllers/object_controls.go), except the
CRI-O hooks directory: these nodes run containerd only.
"""

from __future__ import annotations

from components.kubernetes.operands import validator
from components.kubernetes.operands.base import VALIDATIONS_DIR, Container, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.namespace import RUNTIME_CLASS

PID_FILE = "/run/nvidia/toolkit/toolkit.pid"
# Not the operator's default /etc/containerd/conf.d: on EKS AL2023 nodeadm rewrites config.toml at
# every boot with `imports = ["/etc/containerd/config.d/*.toml"]` (its containerd template), so a
# drop-in there survives reboots without the toolkit editing config.toml. The baked image
# (scripts/install-nvidia-driver.sh) writes the same file.
DROP_IN_DIR = "/etc/containerd/config.d"


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["container-toolkit"]
    containerd = (
        ("RUNTIME", "containerd"),
        ("CONTAINERD_RUNTIME_CLASS", RUNTIME_CLASS),
        ("RUNTIME_CONFIG", "/runtime/config-dir/config.toml"),
        ("CONTAINERD_CONFIG", "/runtime/config-dir/config.toml"),
        ("RUNTIME_DROP_IN_CONFIG", "/runtime/config-dir.d/99-nvidia.toml"),
        ("RUNTIME_DROP_IN_CONFIG_HOST_PATH", f"{DROP_IN_DIR}/99-nvidia.toml"),
        ("RUNTIME_SOCKET", "/runtime/sock-dir/containerd.sock"),
        ("CONTAINERD_SOCKET", "/runtime/sock-dir/containerd.sock"),
    )
    cdi = (
        ("CDI_ENABLED", "true"),
        ("NVIDIA_RUNTIME_SET_AS_DEFAULT", "false"),
        ("NVIDIA_CONTAINER_RUNTIME_MODE", "cdi"),
        ("CRIO_CONFIG_MODE", "config"),
    ) if ctx.cdi else ()
    toolkit = Container(
        name="nvidia-container-toolkit-ctr",
        image=image,
        env=(
            ("ROOT", "/usr/local/nvidia"),
            ("NVIDIA_CONTAINER_RUNTIME_MODES_CDI_DEFAULT_KIND", "management.nvidia.com/gpu"),
            ("NVIDIA_VISIBLE_DEVICES", "void"),
            ("TOOLKIT_PID_FILE", PID_FILE),
            # The driver is the host's (baked into the image), not a driver container's under
            # /run/nvidia/driver: the operator sets the same pair when its driver is disabled.
            ("NVIDIA_DRIVER_ROOT", "/"),
            ("DRIVER_ROOT_CTR_PATH", "/host"),
            *containerd,
            *cdi,
        ),
        host_paths=("containerd-config", "containerd-drop-in-config", "containerd-socket", "toolkit-root",
                    "toolkit-install-dir", "host-root", "cdi-root", "host-dev-char", "run-nvidia-validations"),
        privileged=True,
        read_only_root=False,
        requests=("50m", "64Mi"),
        # The installer writes its pid file once the runtime is configured and containerd restarted.
        readiness={"exec": {"command": ["test", "-f", PID_FILE]}, "periodSeconds": 10},
    )
    return OperandSpec(
        operand="container-toolkit",
        reason=(
            "installs the NVIDIA runtime under /usr/local/nvidia, writes the containerd drop-in "
            f"{DROP_IN_DIR}/99-nvidia.toml and restarts containerd (privileged, hostPID); "
            "generates CDI specs in /var/run/cdi and /dev/char links; its driver check chroots into /"
        ),
        init_containers=(validator.driver_check(ctx.images["validator"]),),
        containers=(toolkit,),
        host_paths=(
            HostPath("containerd-config", "/etc/containerd", "/runtime/config-dir/", False, "DirectoryOrCreate"),
            HostPath("containerd-drop-in-config", DROP_IN_DIR, "/runtime/config-dir.d/", False, "DirectoryOrCreate"),
            HostPath("containerd-socket", "/run/containerd", "/runtime/sock-dir/", False),
            HostPath("toolkit-root", "/run/nvidia/toolkit", "/run/nvidia/toolkit", False, "DirectoryOrCreate"),
            HostPath("toolkit-install-dir", "/usr/local/nvidia", "/usr/local/nvidia", False),
            validator.HOST_ROOT,
            HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"),
            validator.HOST_DEV_CHAR,
            HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, False, "DirectoryOrCreate"),
        ),
        host_pid=True,
    )


class ContainerToolkit(Operand):
    """`gpu-platform:operands:ContainerToolkit`."""
