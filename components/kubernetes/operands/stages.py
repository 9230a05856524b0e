"""The operand order, declared once (like the GPU Operator's list of states).

Each row is one stage: the operand, the gating label that puts it on a node
(`nvidia.com/gpu.deploy.<gate>`), and the readiness marker its pods wait for on their node. The
platform creates the stages in this order, each `depends_on` the previous one (the first on the GPU
node pools), so `pulumi up` waits for each rollout; the gate and the marker replay the same order on
a node that joins next week.

The marker chain (files in /run/nvidia/validations, written by the validator image's checks):

    NFD            no marker (every node, every taint)
    toolkit        init: driver check -> driver-ready; ready once its installer runs (the proof that
                   containerd has the nvidia handler is the validator's toolkit check, next stage)
    validator      init: driver check, toolkit check -> toolkit-ready, CUDA workload -> cuda-ready;
                   its running container waits for the plugin and writes plugin-ready
    device plugin  waits for toolkit-ready
    GFD, DCGM      wait for plugin-ready
    MIG manager    waits for toolkit-ready

Why every creation-time wait completes: Pulumi waits for each DaemonSet's rollout, so a stage may
only wait for markers that earlier stages write. The one check that needs a later stage (the
plugin's, which needs the device plugin) therefore runs in the validator's main container, not in
an init container, and the validator is ready on `cuda-ready`; `plugin-ready` appears once the
device plugin (the next stage) advertises GPUs, before GFD and DCGM are created. The MIG manager
waits for `toolkit-ready`, not `plugin-ready`: on a node whose GPUs come up in MIG mode without
instances the plugin advertises nothing until the MIG manager has carved them, so waiting for the
plugin would deadlock that node. With the toolkit baked into the image, the validator's own driver
check is the first. No stage needs `pulumi.com/skipAwait`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

from components.kubernetes.operands import (
    container_toolkit,
    dcgm_exporter,
    device_plugin,
    gpu_feature_discovery,
    mig_manager,
    node_feature_discovery,
    validator,
)
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


# Gates are the GPU Operator's own suffixes (the validator's is `operator-validator` there too).
STAGES: tuple[Stage, ...] = (
    Stage("node-feature-discovery", node_feature_discovery.NodeFeatureDiscovery, node_feature_discovery.spec, gate=None),
    Stage("container-toolkit", container_toolkit.ContainerToolkit, container_toolkit.spec, gate="container-toolkit", runtime_owner=True),
    Stage("validator", validator.Validator, validator.spec, gate="operator-validator"),
    Stage("device-plugin", device_plugin.DevicePlugin, device_plugin.spec, gate="device-plugin", waits_for="toolkit-ready"),
    Stage("gpu-feature-discovery", gpu_feature_discovery.GpuFeatureDiscovery, gpu_feature_discovery.spec, gate="gpu-feature-discovery", waits_for="plugin-ready"),
    Stage("dcgm-exporter", dcgm_exporter.DcgmExporter, dcgm_exporter.spec, gate="dcgm-exporter", waits_for="plugin-ready"),
    Stage("mig-manager", mig_manager.MigManager, mig_manager.spec, gate="mig-manager", waits_for="toolkit-ready", mig_only=True),
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
