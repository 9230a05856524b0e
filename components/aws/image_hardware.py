"""What one GPU node image must carry for every pool it serves, decided from the pools' instance types
and GPUs before anything is registered: the kernel module flavour, whether the GSP firmware is off,
and the instance types that have NVSwitch (the fabric manager) or fourth-generation NVSwitch (the
NVLink subnet manager and ib_umad).

One image serves every pool of a stack. A baked image (source: bake), and a pinned AMI (source: ami,
an image this program baked for some stack), carry one flavour and one set of module options for all
of them, so pools that need different ones are a config error naming both. AWS's own AMI (source:
eks-nvidia) carries both flavours and chooses per node at boot (amazon-eks-ami v20260714,
templates/al2023/runtime/gpu/nvidia-kmod-load.sh lines 63-98): nothing to refuse there.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_platform.catalog import matrix
from gpu_platform.config import ConfigError

FLAVOURS = ("open", "proprietary")


@dataclass(frozen=True)
class PoolHardware:
    """One pool as the image sees it (by its index in nodePools)."""

    index: int
    instance_type: str
    gpu: matrix.Gpu
    gpu_count: int


@dataclass(frozen=True)
class ImageHardware:
    """What one image must carry for every GPU of the pools it serves."""

    kernel_module: str | None  # open | proprietary; None for an image the stack does not bake
    fabric_manager: bool  # some pool's instance type has NVSwitch
    nvlink_subnet_manager: bool  # some pool's instance type has fourth-generation NVSwitch (p6-b200)
    gsp_firmware_off: bool = False  # the image turns the GSP firmware off (g5's A10G, as AWS does)
    # The instance types whose boot waits for NVSwitch hardware and starts the fabric manager
    # (scripts/nvswitch-fabric.sh), and those of them with fourth-generation NVSwitch.
    nvswitch_instance_types: tuple[str, ...] = ()
    nvlink5_instance_types: tuple[str, ...] = ()
    # The base image carries the EFA kernel driver, which the test phase then proves (set from the base
    # release, not from the pools: turning a pool's EFA on or off must not rebuild the image).
    efa: bool = False


def _pool(p: PoolHardware) -> str:
    return f"nodePools[{p.index}] {p.instance_type!r} ({p.gpu.key})"


def _flavour(pools: list[PoolHardware], source: str) -> str:
    """The flavour every GPU accepts, the open one when both do (NVIDIA's default from the 560 series)."""
    common = [m for m in FLAVOURS if all(m in p.gpu.kernel_modules for p in pools)]
    if common:
        return common[0]
    # With two flavours, no common one means one pool takes only one and another only the other.
    only = [p for p in pools if len(p.gpu.kernel_modules) == 1]
    first = only[0]
    other = next(p for p in only if p.gpu.kernel_modules != first.gpu.kernel_modules)
    pinned = (
        "; a pinned AMI (source: ami) is an image this program baked, with one flavour: for AWS's "
        "accelerated AMI, which chooses per node at boot, use source: eks-nvidia"
        if source == "ami"
        else ""
    )
    raise ConfigError(
        f"gpu-platform:nodePools[{other.index}].instanceType: {other.instance_type!r} ({other.gpu.key}) needs the "
        f"{other.gpu.kernel_modules[0]} NVIDIA kernel modules, but {_pool(first)} needs the {first.gpu.kernel_modules[0]} "
        f"ones; the stack's one node image carries one flavour (valid: pools whose GPUs share one; put the others in "
        f"a stack of their own){pinned}"
    )


def _gsp(pools: list[PoolHardware]) -> bool:
    """GSP off is a module option of the whole image: only GPUs AWS turns it off for may share it."""
    off = [p for p in pools if p.gpu.gsp_firmware_off]
    on = [p for p in pools if not p.gpu.gsp_firmware_off]
    if off and on:
        raise ConfigError(
            f"gpu-platform:nodePools[{on[0].index}].instanceType: {on[0].instance_type!r} ({on[0].gpu.key}) would boot "
            f"the image of {_pool(off[0])}, which runs the proprietary kernel modules with the GSP firmware off "
            "(NVreg_EnableGpuFirmware=0, for every GPU it boots on); AWS turns it off on g4dn, g5 and g5g only "
            "(amazon-eks-ami nvidia-kmod-load.sh), so the stack's one image cannot serve both (valid: the g5 pools in "
            "a stack of their own, or source: eks-nvidia, whose AMI decides per node at boot)"
        )
    return bool(off)


def image_hardware(pools: list[PoolHardware], source: str) -> ImageHardware:
    """The image's needs from its pools (config errors when one image cannot serve them all)."""
    one_image = source in ("bake", "ami")
    flavour = _flavour(pools, source) if one_image else None
    gsp_off = _gsp(pools) if one_image else False
    nvswitch = sorted({p.instance_type for p in pools if p.gpu.nvswitch_in(p.gpu_count)})
    nvlink5 = sorted({p.instance_type for p in pools if p.gpu.nvlink_subnet_manager and p.gpu.nvswitch_in(p.gpu_count)})
    return ImageHardware(
        kernel_module=flavour if source == "bake" else None,
        fabric_manager=bool(nvswitch),
        nvlink_subnet_manager=bool(nvlink5),
        gsp_firmware_off=gsp_off and source == "bake",
        nvswitch_instance_types=tuple(nvswitch),
        nvlink5_instance_types=tuple(nvlink5),
    )
