"""The operand order, declared once (like the GPU Operator's list of states): the rows of the
operand registry, gpu_platform/catalog/operands.yaml, each resolved to its module's `spec` and component.

Each row is one stage: the operand, the gating label that puts it on a node
(`nvidia.com/gpu.deploy.<gate>`), and the readiness marker its pods wait for on their node. The
platform creates the stages in this order, each `depends_on` the previous one (the first on the GPU
node pools); the gate and the marker replay the same order on a node that joins next week.

The marker chain (files in /run/nvidia/validations, written by the validator image's checks):

    NFD            no marker (every node, every taint)
    toolkit        init: driver check -> driver-ready; ready once its installer runs (the proof that
                   containerd has the nvidia handler is the validator's toolkit check, next stage)
    validator      init: driver check, toolkit check -> toolkit-ready, CUDA workload -> cuda-ready;
                   its running container waits for the device plugin to advertise GPUs and writes
                   plugin-ready (read by the blue-green readiness gate only)
    MIG manager    waits for toolkit-ready
    DRA driver     waits for driver-ready (allocation mode dra only; upstream checks the driver only)
    DRA validator  no marker (allocation mode dra only): its pod claims one GPU, which the kubelet has
                   the DRA driver prepare before any container starts; its init container lists the
                   claimed GPU with nvidia-smi, so the pod is ready only where the DRA driver allocates
                   and injects GPUs. It writes no marker: nothing later waits for it
    device plugin  waits for toolkit-ready (allocation mode device-plugin only)
    GFD, DCGM      wait for toolkit-ready, as the GPU Operator's assets do (GFD in allocation mode
                   device-plugin only, as upstream's DRA mode runs none; in mode dra the validator
                   leaves out its plugin check)
    DCGM (dra)     no marker: its pod takes the GPUs through a ResourceClaim, as the DRA validator's
                   does (operands.yaml)

No marker may hang on a free GPU. /run is a tmpfs and the validator's preStop hook deletes the
markers, so they are written again after every reboot and every roll of the validator (a release
bump, a changed privilege), on nodes whose GPUs workloads hold. None of
the checks behind them asks for a GPU: the cuda workload pod requests no nvidia.com/gpu (it is
privileged with every GPU visible), and the plugin check runs without its workload (WITH_WORKLOAD=false,
validator/), which would take one GPU from the device plugin and never get it on a full node.

Per node, a stage waits only for what it needs, and nothing waits for a later stage. The one check
that needs a later stage (the plugin's, which needs the device plugin's advertised GPUs) runs in the
validator's main container, not in an init container, and the validator is ready on `cuda-ready`.
The MIG manager waits for `toolkit-ready` only (as the GPU Operator's own asset does): a node whose GPUs boot in MIG
mode with no instances advertises nothing until the MIG manager has carved them, so a MIG manager
that waited for `plugin-ready` would never start there, and the node would hold every later stage
forever. On a MIG node the device plugin starts after it: the MIG pools' plugin DaemonSet
(operands/mig_access.py) selects a node only once nvidia.com/mig.config.state says the manager has
run, so a joining node never serves its GPUs whole before they are carved. At every later change
the MIG manager orders them itself: it pauses the clients' gates (nvidia.com/gpu.deploy.{device-plugin,gpu-feature-discovery,
dcgm-exporter} set to paused-for-mig-change), waits for their pods, found by the GPU Operator's `app=`
labels, to leave, carves the layout and sets the gates back (mig-parted v0.13.1
pkg/mig/reconfigure/reconfigure.go 364-413), and the device plugin then advertises the instances.
It comes before the device plugin in the creation order so that a new MIG pool's first `pulumi up`
creates it before the operands that read the layout. When its validator pod stops (a MIG change
restarts it, an update rolls it), the validator removes the node's markers (a preStop hook, as the
GPU Operator's asset has it), so no stage starts on a marker the layout before left behind.

What `pulumi up` waits for. The pulumi-kubernetes DaemonSet await (v4.32.0
provider/pkg/await/daemonset.go, kstatus `Current`) completes only when every selected node runs a
ready pod; one sick node (a GPU with a fatal XID, a node that lost its driver) would then stop every
`pulumi up` at that stage for the whole cluster, and on the first deployment leave the later stages
uncreated on every healthy node. So each operand DaemonSet carries `pulumi.com/waitFor` with
`jsonpath={.status.observedGeneration}` (operands/manifests.py): Pulumi waits until the DaemonSet
controller has seen the new spec (the JSONPath condition also requires observedGeneration >=
generation, v4.32.0 provider/pkg/await/condition/jsonpath.go), so the stages are created in this
order and an update is accepted before the next stage changes, but no node's health holds the stack.
A custom waitFor replaces the DaemonSet awaiter for create and update only (provider/pkg/await/
await.go, "Use our built-in await logic only if the user hasn't specified any await overrides"), so
deletes still wait, unlike `pulumi.com/skipAwait`, which a DaemonSet's delete honours too
(provider/pkg/metadata/overrides.go allowsSkipAwaitWithDelete). Whether GPUs work is proven per node,
where it holds for nodes that join later too: the markers above, the validator's readiness, and for
blue-green pools the readiness gate that must pass before an old node group goes
(components/kubernetes/readiness_gate.py). `kubectl -n gpu-operator rollout status ds/<name>` shows
a stage's progress across nodes. One cost: `pulumi refresh` (and `up --refresh`) reads a DaemonSet
through the awaiter that only skipAwait bypasses (provider/pkg/await/await.go 404-421, daemonset.go
117-121), so with a sick node a refresh reports that DaemonSet as not initialised and the next `up`
updates it again; nothing is recreated. (Sources: pulumi-kubernetes v4.32.0, the newest tag read;
the pinned SDK 4.34.2 runs provider 4.34.2, and the mirror's newest code has the same logic.)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Collection
from dataclasses import dataclass, replace

from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import OperandSpec
from gpu_platform.catalog import operands


@dataclass(frozen=True)
class Stage:
    operand: str
    component: type[Operand]
    spec: Callable[[OperandContext], OperandSpec]
    gate: str | None  # None: every node (NFD must see a node to discover its GPU)
    waits_for: str | None  # in the allocation mode `active` was asked for (device-plugin in STAGES)
    row: operands.OperandRow  # the registry row (gpu_platform/catalog/operands.yaml)

    def deployed(self, toolkit_baked: bool, mig: bool, dra: bool = False) -> bool:
        return self.row.deployed(toolkit_baked, mig, dra)


def _stage(row: operands.OperandRow) -> Stage:
    module = importlib.import_module(f"components.kubernetes.operands.{row.module}")
    return Stage(row.operand, getattr(module, row.component), module.spec, row.gate, row.waits_for, row)


# The order and the gates are the registry's: gpu_platform/catalog/operands.yaml.
STAGES: tuple[Stage, ...] = tuple(_stage(row) for row in operands.rows())


def active(
    toolkit_baked: bool, any_mig: bool, carried: Collection[str] | None = None, dra: bool = False
) -> tuple[Stage, ...]:
    """The stages a stack deploys; `carried`: the operands its release carries (Release.carried_operands,
    by the registry's `since`: not by the images it pins, which an operand may borrow; all when None); `dra`: the stack allocates GPUs through the DRA driver, not the device plugin."""
    return tuple(
        replace(s, waits_for=s.row.marker(dra))
        for s in STAGES
        if s.deployed(toolkit_baked, any_mig, dra) and (carried is None or s.operand in carried)
    )


def gates_for_pool(
    mig: bool, toolkit_baked: bool, carried: Collection[str] | None = None, dra: bool = False
) -> tuple[str, ...]:
    """The gating labels a pool's nodes carry: every active stage's, the MIG manager's only on MIG
    pools, the toolkit's not when the image owns the runtime, the device plugin's or the DRA
    driver's by the stack's allocation mode (never both on one node)."""
    return tuple(s.gate for s in active(toolkit_baked, mig, carried, dra) if s.gate)
