"""How an unprivileged operand container reaches every GPU of its node.

Every GPU node refuses NVIDIA_VISIBLE_DEVICES from unprivileged containers
(accept-nvidia-visible-devices-envvar-when-unprivileged = false, so that a pod that got no GPU from the
device plugin gets none, though its image sets NVIDIA_VISIBLE_DEVICES=all as every CUDA base image does),
and accepts a device list given as volume mounts under /var/run/nvidia-container-devices instead
(accept-nvidia-visible-devices-as-volume-mounts = true), whoever configured its runtime: a baked image
sets both at bake time (components/aws/scripts/install-nvidia-driver.sh, proven by the image's test
phase); AWS's accelerated AMI or a pinned one, whose toolkit keeps the opposite defaults, gets them from
the node's user data before the kubelet first starts (components/aws/user_data.py, gpu_access_script);
and the toolkit DaemonSet (`toolkitBaked: false`) writes them into the runtime config it installs
(container_toolkit/, GPU_ACCESS). The runtime reads both in its legacy hook and in CDI mode alike
(nvidia-container-toolkit cmd/nvidia-container-runtime-hook/container_config.go lines 236-258 at
v1.14.3; internal/config/image/cuda_image.go lines 258-292, read by internal/modifier/cdi.go line 107,
at v1.18.1).

An operand that must see all GPUs without CAP_SYS_ADMIN (which the runtime counts as privileged:
internal/config/image/privileged.go lines 36-61 at v1.18.1; container_config.go lines 130-170 at
v1.14.3) asks that way: /dev/null mounted at /var/run/nvidia-container-devices/all, a hostPath only a
pod admitted with host paths can have (mounts are read before the variable). Where the runtime resolves
it as CDI, `all` is the `all` device of its default kind: management.nvidia.com/gpu=all, every
/dev/nvidia* node, from the spec the toolkit DaemonSet writes with CDI on (pkg/nvcdi/management.go
lines 41-60 at v1.18.1), or runtime.nvidia.com/gpu=all, generated per container, in the jit-cdi mode
that `auto` resolves to from v1.18.0 (internal/info/auto.go line 89, internal/modifier/cdi.go lines 43-47).
"""

from __future__ import annotations

from components.kubernetes.operands.spec import HostPath

ALL_DEVICES = HostPath("nvidia-devices-all", "/dev/null", "/var/run/nvidia-container-devices/all", True, "CharDevice")


def host_paths() -> tuple[HostPath, ...]:
    return (ALL_DEVICES,)


def volumes() -> tuple[str, ...]:
    """The host path volumes a container that needs every GPU mounts."""
    return (ALL_DEVICES.volume,)
