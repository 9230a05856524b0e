"""The operand order, declared once (like the GPU Operator's list of states).

Each row is one stage: the operand, the gating label that puts it on a node
(`nvidia.com/gpu.deploy.<gate>`), and the readiness marker its pods wait for on their node. The
platform creates the stages in this order, each `depends_on` the previous one (the first on the GPU
node pools), so `pulumi up` waits for each rollout; the gate and the marker replay the same order on
a node that joins next week.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from components.kubernetes.operands import device_plugin
from components.kubernetes.operands.base import Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext


@dataclass(frozen=True)
class Stage:
    operand: str
    component: type[Operand]
    spec: Callable[[OperandContext], OperandSpec]
    gate: Optional[str]  # None: every node (NFD must see a node to discover its GPU)
    waits_for: Optional[str] = None
    mig_only: bool = False  # deployed, and gated, only where a pool uses MIG
    runtime_owner: bool = False  # left out when the node image already configures the runtime


STAGES: tuple[Stage, ...] = (
    Stage("device-plugin", device_plugin.DevicePlugin, device_plugin.spec, gate="device-plugin", waits_for="toolkit-ready"),
)


def active(toolkit_baked: bool, any_mig: bool) -> tuple[Stage, ...]:
    return tuple(
        s for s in STAGES
        if not (s.runtime_owner and toolkit_baked) and not (s.mig_only and not any_mig)
    )


def gates_for_pool(mig: bool, toolkit_baked: bool) -> tuple[str, ...]:
    """The gating labels a pool's nodes carry: every active stage's, the MIG manager's only on MIG
    pools, the toolkit's not when the image owns the runtime."""
    return tuple(
        s.gate for s in STAGES
        if s.gate and not (s.runtime_owner and toolkit_baked) and not (s.mig_only and not mig)
    )
