"""How an operand container that reads MIG devices through NVML gets MIG's capability devices.

On a GPU in MIG mode NVML answers about the GPU's instances only to a process that can open the MIG
capability device nodes, /dev/nvidia-caps/nvidia-cap1 (config) and nvidia-cap2 (monitor). Without
them the device plugin with a MIG strategy exits at start: with `mixed`, its default resources walk
the GPU's MIG profiles and the parent GPU's memory info comes back "Insufficient Permissions"
(k8s-device-plugin v0.18.1 cmd/nvidia-device-plugin/main.go:353-355, internal/rm/rm.go:107-135,
vendor/github.com/NVIDIA/go-nvlib/pkg/nvlib/device/device.go:332-335; exit 1 at main.go:180-183);
with `single`, the device map fails the same way on each MIG device (internal/rm/device_map.go:135-141,
go-nvlib mig_device.go:71-73). No plugin-ready marker, so GFD and the exporter wait in Init forever.

Which container gets them is the node's container toolkit's doing, by version (`TOOLKITS`). A
privileged container gets every host device from containerd whatever the toolkit does, and every
capability (containerd v2.2.4 internal/cri/server/container_create.go:834-844: WithHostDevices and
WithAllDevicesAllowed unless the runtime sets privileged_without_host_devices, which no runtime of
ours does; pkg/oci/spec_opts.go:1423-1434), so a privileged container lists no SYS_ADMIN. The GPU
Operator runs all three privileged at v25.10.1 (assets/state-device-plugin/0500_daemonset.yaml:70-71,
assets/gpu-feature-discovery/0500_daemonset.yaml:88-89, assets/state-dcgm-exporter/0800_daemonset.yaml:59-60).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import OperandSpec
from components.kubernetes.operands.version_table import row_for
from gpu_platform.interface import contract


@dataclass(frozen=True)
class Toolkit:
    since: str  # first nvidia-container-toolkit version this row describes
    # The runtime hands the MIG capability devices to a container that holds CAP_SYS_ADMIN and sets
    # NVIDIA_MIG_MONITOR_DEVICES=all; if not, only a privileged container has them.
    monitor_devices_by_env: bool
    source: str


TOOLKITS: tuple[Toolkit, ...] = (
    Toolkit(
        "1.14.0",
        True,
        "NVIDIA/nvidia-container-toolkit: mode `auto` resolves to legacy (internal/info/auto.go:64-89 at "
        "v1.14.3, :49-55 at v1.17.8), whose hook passes --mig-monitor for NVIDIA_MIG_MONITOR_DEVICES to a "
        "CAP_SYS_ADMIN container (cmd/nvidia-container-runtime-hook/container_config.go:319-324, main.go:127 "
        "at v1.14.3)",
    ),
    # The fix (toolkit PR #1947, closing issue #1740) is documented for 1.20.1, which no mirror tag
    # holds yet: its row is added once read at its tag.
    Toolkit(
        "1.18.0",
        False,
        "NVIDIA/nvidia-container-toolkit v1.18.0..v1.20.0: mode `auto` (internal/config/config.go:120 at "
        "v1.18.1, api/config/v1/config.go:120 at v1.20.0) resolves to jit-cdi (internal/info/auto.go:89); "
        "the CDI modes remove the hook (internal/runtime/runtime_factory.go:163-167 at v1.18.1, "
        "internal/modifier/mode.go:24-28 at v1.20.0) and build the devices from CDI names "
        "(internal/modifier/cdi.go:43-81 at v1.18.1), reading no NVIDIA_MIG_MONITOR_DEVICES: issue #1740",
    ),
)


def any_pool(ctx: OperandContext) -> bool:
    """Some pool of the stack uses MIG (its nodes carry nvidia.com/mig.config, contract.pool_labels)."""
    return any(s.mig_strategy != "none" for s in ctx.sharing)


def privileged(ctx: OperandContext) -> bool:
    """Whether a container that reads MIG devices runs privileged on a MIG pool of this stack: some pool
    uses MIG and the nodes' toolkit hands the capability devices to no unprivileged container."""
    return any_pool(ctx) and not row_for(ctx.toolkit_version, TOOLKITS, "container toolkit").monitor_devices_by_env


# Which DaemonSet of a MIG reader runs on a node: the MIG pools' carry the MIG config label, the others not.
MIG_POOLS = {"key": contract.MIG_CONFIG_LABEL, "operator": "Exists"}
OTHER_POOLS = {"key": contract.MIG_CONFIG_LABEL, "operator": "DoesNotExist"}
# The MIG manager has run once on the node. Until then a joining MIG node's GPUs boot with MIG off, and
# a device plugin would advertise them whole: a pending pod could take one, and the manager's first
# change then fails on a GPU in use and is not tried again until the label changes (mig-parted v0.13.1
# pkg/mig/reconfigure/reconfigure.go:137-141, 164-202; cmd/nvidia-mig-manager/main.go:304-316). `failed`
# keeps the plugin where a later change failed, as upstream brings it back then (setState, :522-555).
# The label stays on the Node: after a reboot MIG mode is still on and the plugin offers nothing until
# the carve, but a node whose GPUs come back with MIG off (a stop and start onto another host) is not held.
# Upstream gates the plugin on no such label (gpu-operator v25.10.1): a manager that never writes it
# (its gate false, a failed label patch) leaves the node with no plugin (docs/operations.md).
# The DaemonSet controller removes its pod from a node its required affinity no longer matches, as for
# a paused gate while `pending` (kubernetes commit 0033f658 pkg/controller/daemon/daemon_controller.go
# NodeShouldRunDaemonPod: no shouldContinueRunning when predicates' GetRequiredNodeAffinity fails).
LAYOUT_SETTLED = {"key": contract.MIG_CONFIG_STATE_LABEL, "operator": "In", "values": ["success", "failed"]}


def by_pool(ctx: OperandContext, build: Callable[[bool], OperandSpec], advertises: bool = False) -> OperandSpec:
    """A MIG reader's DaemonSets: `build(False)` for the pools without MIG and, when a pool uses MIG,
    `build(True)` for the MIG pools as the variant `mig`, so the privilege the MIG pools need reaches
    no other node. `advertises`: the operand serves the GPUs to the kubelet (the device plugin), and
    starts on a MIG node only once its manager has carved the layout."""
    if not any_pool(ctx):
        return build(False)
    mig = (MIG_POOLS, LAYOUT_SETTLED) if advertises else (MIG_POOLS,)
    return replace(
        build(False),
        node_affinity=((OTHER_POOLS,),),
        variants=(replace(build(True), variant="mig", node_affinity=(mig,)),),
    )


def reason(ctx: OperandContext, use: str) -> str:
    """The audit reason of that privilege, `use` saying what the container reads."""
    return (
        f"privileged {use}: the nodes' container toolkit {ctx.toolkit_version} builds a container's devices "
        "from CDI (jit-cdi, its default mode from 1.18.0) and hands it no MIG capability device "
        "(/dev/nvidia-caps/nvidia-cap1, -cap2) for NVIDIA_MIG_MONITOR_DEVICES (nvidia-container-toolkit "
        "issue #1740, fixed in 1.20.1); a privileged container gets every host device, as the GPU Operator runs it"
    )
