"""What an operand may know about the stack: plain data, built once by the platform."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.kubernetes.operands.sharing import PoolSharing


@dataclass(frozen=True)
class MigPool:
    pool: str
    gpu: str  # matrix GPU key
    config: str  # named MIG configuration
    profiles: dict[str, int]  # what the configuration carves per GPU
    exists: bool = True  # the configuration is one of this GPU's (else it never reaches a node)


@dataclass(frozen=True)
class OperandContext:
    # image key (gpu_platform/catalog/operands.yaml's `image`, the operand's name unless it borrows one) -> image
    # reference (release row, overrides applied)
    images: dict[str, str]
    sharing: tuple[PoolSharing, ...]
    mig_pools: tuple[MigPool, ...]
    toolkit_baked: bool
    # The nvidia-container-toolkit version on the GPU nodes: AWS's in its AMI (source eks-nvidia), else
    # the release's container-toolkit image's, baked or run as the toolkit DaemonSet (overrides applied).
    toolkit_version: str
    cdi: bool
    # GPUs are allocated through the DRA driver (gpu-platform:allocation mode dra), not the device plugin.
    dra: bool = False
    # The DRA driver's feature gates the stack sets (gpu-platform:allocation.featureGates); unset: its defaults.
    dra_feature_gates: dict[str, bool] = field(default_factory=dict)
    # The ServiceMonitor's labels (what the Prometheus operator selects), or None for no ServiceMonitor.
    service_monitor: dict[str, str] | None = None
