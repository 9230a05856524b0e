"""How each pool shares its GPUs: time-slicing replicas and the MIG strategy its configuration
implies. The device plugin and GFD read the same per-pool config by the node label."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpu_platform.catalog import aws_limits, matrix
from gpu_platform.config.node_pool import NodePool


@dataclass(frozen=True)
class PoolSharing:
    config_name: str  # the value of the pool's nvidia.com/device-plugin.config label
    replicas: int | None
    mig_strategy: str  # none | single | mixed
    mig_config: str | None


def mig_strategy(mig_config: str | None, gpu: matrix.Gpu) -> str:
    """`mixed` on every MIG pool, whatever its layout: each profile is nvidia.com/mig-<profile>, a GPU
    with MIG off is nvidia.com/gpu. A layout change reaches a node later than the plugin's config (a
    node roll, or the MIG manager on a busy node), and `mixed` is the one strategy that accepts every
    layout: `single` refuses a node with two profiles or MIG off on some GPUs, and the plugin exits
    (k8s-device-plugin v0.18.1 internal/rm/device_map.go:88-101, 155-197); `none` hands out a
    MIG-enabled GPU whole (:118-120), where CUDA finds no device."""
    return "mixed" if mig_config and gpu.mig is not None else "none"


def for_pool(pool: NodePool, gpu: matrix.Gpu) -> PoolSharing:
    config = pool.mig.config if pool.mig else None
    return PoolSharing(
        config_name=pool.name,
        replicas=pool.time_slicing.replicas if pool.time_slicing else None,
        mig_strategy=mig_strategy(config, gpu),
        mig_config=config,
    )


def advertised(gpus: int, replicas: int, strategy: str, layout: Mapping[str, int]) -> dict[str, int]:
    """The extended resources the device plugin advertises on a node of `gpus` GPUs, `layout` the MIG
    profile counts carved on each GPU ({}: MIG off): each profile as nvidia.com/mig-<profile> under the
    mixed strategy (mig_strategy: every MIG pool's), else whole GPUs times the time-slicing
    replicas (k8s-device-plugin v0.18.1 internal/rm/device_map.go lines 120-122: a MIG-enabled GPU is
    no nvidia.com/gpu once a MIG strategy is on)."""
    if layout and strategy == "mixed":
        # A `+` of a profile (1g.10gb+me) is a `.` in the resource name (internal/rm/rm.go:134).
        return {
            f"nvidia.com/mig-{profile.replace('+', '.')}": count * gpus for profile, count in sorted(layout.items())
        }
    return {"nvidia.com/gpu": gpus * replicas}


def efa_resources(devices: int) -> dict[str, int]:
    """What the EFA device plugin advertises on a node of `devices` EFA devices (components/aws/efa.py
    `devices`): each as one vpc.amazonaws.com/efa (EKS User Guide 4d52b4d0 latest/ug/ml/node-efa.adoc:138;
    its p5.48xlarge job asks for all 32 a node has, lines 260 and 265). {}: no EFA, no plugin there."""
    return {aws_limits.efa_device_plugin()["resource"]: devices} if devices else {}


def node_resources(pool: NodePool, gpu: matrix.Gpu, gpus: int, dra: bool, efa_devices: int) -> dict[str, int]:
    """What a node of the pool advertises once its MIG configuration is applied, its EFA devices included.
    Under DRA no GPU resource: the DRA driver publishes devices in ResourceSlices, not extended resources
    (operands/dra_driver/); the EFA device plugin runs there all the same."""
    efa = efa_resources(efa_devices)
    if dra:
        return efa
    sharing = for_pool(pool, gpu)
    layout = gpu.mig.configs().get(sharing.mig_config or "", {}) if gpu.mig else {}
    return {**advertised(gpus, sharing.replicas or 1, sharing.mig_strategy, layout), **efa}
