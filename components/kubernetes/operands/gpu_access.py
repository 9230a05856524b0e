"""How an unprivileged operand container reaches every GPU of its node.

Every node whose image carries the container toolkit (`toolkitBaked`) refuses NVIDIA_VISIBLE_DEVICES
from unprivileged containers (accept-nvidia-visible-devices-envvar-when-unprivileged = false, so that a
pod that got no GPU from the device plugin gets none), and accepts a device list given as volume
mounts under /var/run/nvidia-container-devices instead (accept-nvidia-visible-devices-as-volume-mounts
= true), whatever the image's source: a baked image sets both at bake time
(components/aws/scripts/install-nvidia-driver.sh, proven by the image's test phase), and AWS's
accelerated AMI or a pinned one, whose toolkit keeps the opposite defaults, gets them from the node's
user data before the kubelet first starts (components/aws/user_data.py, gpu_access_script). An operand that must see all GPUs without
CAP_SYS_ADMIN (which the runtime counts as privileged: internal/config/image/privileged.go lines
36-61 at nvidia-container-toolkit v1.18.1) asks that way: /dev/null mounted at
/var/run/nvidia-container-devices/all, a hostPath only a pod admitted with host paths can have
(internal/config/image/cuda_image.go lines 258-292 at v1.18.1: mounts are read before the variable).
With the toolkit DaemonSet the operator's runtime config accepts the variable, and nothing changes.
"""

from __future__ import annotations

from components.kubernetes.operands.base import HostPath
from components.kubernetes.operands.context import OperandContext

ALL_DEVICES = HostPath("nvidia-devices-all", "/dev/null", "/var/run/nvidia-container-devices/all", True, "CharDevice")


def host_paths(ctx: OperandContext) -> tuple[HostPath, ...]:
    return (ALL_DEVICES,) if ctx.toolkit_baked else ()


def volumes(ctx: OperandContext) -> tuple[str, ...]:
    """The host path volumes a container that needs every GPU mounts."""
    return (ALL_DEVICES.volume,) if ctx.toolkit_baked else ()
