"""How each pool shares its GPUs: time-slicing replicas and the MIG strategy its configuration
implies. The device plugin and GFD read the same per-pool config by the node label."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from gpu_platform.catalog import matrix
from gpu_platform.config.node_pool import NodePool


@dataclass(frozen=True)
class PoolSharing:
    config_name: str  # the value of the pool's nvidia.com/device-plugin.config label
    replicas: Optional[int]
    mig_strategy: str  # none | single | mixed
    mig_config: Optional[str]


def mig_strategy(mig_config: Optional[str], gpu: matrix.Gpu) -> str:
    """`single` when the configuration carves one profile (the resource stays nvidia.com/gpu),
    `mixed` when it carves several (nvidia.com/mig-<profile> resources), `none` otherwise."""
    if not mig_config or gpu.mig is None:
        return "none"
    profiles = gpu.mig.configs().get(mig_config, {})
    if not profiles:
        return "none"
    return "single" if len(profiles) == 1 else "mixed"


def for_pool(pool: NodePool, gpu: matrix.Gpu) -> PoolSharing:
    config = pool.mig.config if pool.mig else None
    return PoolSharing(
        config_name=pool.name,
        replicas=pool.time_slicing.replicas if pool.time_slicing else None,
        mig_strategy=mig_strategy(config, gpu),
        mig_config=config,
    )
