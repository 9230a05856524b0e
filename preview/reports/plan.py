"""The plan a platform engineer reads first: what the stack is (cluster, operator release, node
image, CUDA), one line per GPU pool, the operands in rollout order with what each waits for and
which are left out and why, and the long steps. Read from the recording (what the program
registered) and the stack's config, never from the program's objects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from components.aws.node_image import kernel_module_declared
from components.kubernetes.operands import sharing, stages
from gpu_platform.catalog import matrix
from gpu_platform.config import StackConfig, parse
from gpu_platform.config.node_pool import NodePool
from gpu_platform.interface import admission, contract, workloads
from gpu_platform.interface.resource_types import (
    ADMISSION_BINDING as _BINDING,
    ADMISSION_POLICY as _POLICY,
    ASG_TAG as _ASG_TAG,
    DAEMONSET as _DAEMONSET,
    EKS_NODE_GROUP as _NODE_GROUP,
    IMAGE as _IMAGE,
)
from preview.lifecycle import scenarios, stack as lifecycle_stack
from preview.offline.requests import seconds
from preview.recording import Recording, Registration
from preview.reports import rollouts

_OPERAND_PREFIX = "gpu-platform:operands:"


def _minutes(duration: str) -> str:
    return f"{seconds(duration) / 60:.0f} min" if duration else "Pulumi's default"


def _header(config: StackConfig, recording: Recording) -> list[str]:
    cluster, image = config.cluster, config.node_image
    # An adopted cluster's endpoint is whatever its owner set (the config refuses endpoint keys for it).
    endpoint = (
        "endpoint not managed by this stack"
        if not cluster.create
        else ("public endpoint" if cluster.endpoint_public_access else "private endpoint")
        + (", deletion protection on" if cluster.deletion_protection else ", deletion protection off")
    )
    made = "new (this stack creates it)" if cluster.create else "adopted (exists already)"
    overrides = ", ".join(f"{k}={v}" for k, v in config.operator.overrides.items()) or "none"
    if image.source == "bake":
        built = next((r for r in recording.resources if r.type == _IMAGE), None)
        release = (built.inputs.get("tags") or {}).get("gpu-platform.io/base-image-release", "?") if built else "?"
        source = f"baked by EC2 Image Builder on the EKS AL2023 image of release {release}"
    elif image.source == "eks-nvidia":
        source = f"AWS's accelerated (nvidia) EKS AL2023 AMI of release {image.release} (nothing to bake)"
    else:
        source = f"pinned AMI {image.ami_id}"
    toolkit = (
        "baked into the image (it registers the nvidia runtime)"
        if image.toolkit_baked
        else "the container-toolkit DaemonSet installs it on each node"
    )
    admins = ", ".join(cluster.admins) or "none named"
    return [
        f"  Cluster     {cluster.name} in {config.region}: {made}, Kubernetes {cluster.kubernetes_version}, {endpoint}",
        f"  Admins      {admins}",
        f"  Operator    GPU Operator {config.operator.release} (image overrides: {overrides})",
        f"  Node image  NVIDIA driver {image.driver_version}, {source}",
        f"  Toolkit     {toolkit}",
        f"  Workloads   CUDA {', '.join(config.workloads.cuda_versions)}; {_admission(recording)}",
    ]


def _admission(recording: Recording) -> str:
    """What the GPU-privilege policy does, and where it does not apply, as the program registered it."""
    actions = [
        b.inputs.get("spec", {}).get("validationActions")
        for b in recording.of_type(_BINDING)
        if b.inputs.get("spec", {}).get("policyName") == admission.GPU_PRIVILEGE
    ]
    policy = [
        p.inputs.get("spec", {})
        for p in recording.of_type(_POLICY)
        if p.inputs.get("metadata", {}).get("name") == admission.GPU_PRIVILEGE
    ]
    if not actions or not policy:
        return "no admission policy on privileged pods (Kubernetes before 1.30)"
    outside = policy[0]["matchConstraints"]["namespaceSelector"]["matchExpressions"][0]["values"]
    if "Deny" in actions[0]:
        return f"privileged pods on GPU nodes: refused outside {', '.join(outside)}"
    return f"privileged pods on GPU nodes: only WARNED outside {', '.join(outside)} (privilegeAdmission: warn)"


def _groups(recording: Recording) -> dict[str, Registration]:
    """pool -> its node group, by the pool tag the program puts on it."""
    return {((r.inputs.get("tags") or {}).get(contract.POOL_LABEL)): r for r in recording.of_type(_NODE_GROUP)}


def _gates(recording: Recording) -> dict[str, Registration]:
    """pool -> its readiness gate (a blue-green pool's), by the gate's labels."""
    found = {}
    for r in recording.resources:
        labels = (r.inputs.get("metadata") or {}).get("labels") or {} if r.type in rollouts.GATE_KINDS else {}
        if isinstance(labels, dict) and labels.get("app.kubernetes.io/name") == rollouts.GATE_NAME:
            found[labels.get(contract.POOL_LABEL)] = r
    return found


def _fabric_manager(tags: dict[str, Any]) -> str:
    """Whether the fabric manager runs on the pool's nodes: the image has it when some pool has NVSwitch,
    and it starts at boot only on NVSwitch hardware (components/aws/scripts/nvswitch-fabric.sh)."""
    gpu = matrix.load().gpus.get(tags.get(contract.GPU_MODEL_TAG, ""))
    try:
        count = int(float(tags.get(contract.GPU_COUNT_TAG, 0)))
    except (TypeError, ValueError):
        count = 0
    return "fabric manager runs (NVSwitch)" if gpu and gpu.nvswitch_in(count) else "no fabric manager (no NVSwitch)"


def _kernel_modules(config: StackConfig, tags: dict[str, Any]) -> str:
    if config.node_image.source == "eks-nvidia":
        return "kernel modules chosen per node at boot by AWS's AMI"
    flavour = kernel_module_declared(tags.get(contract.AUDIT_TAG_SOFTWARE))
    return f"{flavour} kernel modules" if flavour else "kernel modules as the pinned AMI was baked"


def _efa_devices(tags: dict[str, Any]) -> int:
    """The EFA interfaces the pool's launch template gives each node (its declared count)."""
    return int(tags.get(contract.EFA_INTERFACES_TAG, "0") or 0)


def _efa(pool: NodePool, tags: dict[str, Any]) -> str:
    count = _efa_devices(tags)
    if not count:
        return "no EFA"
    subnet = pool.subnet_ids[0] if pool.subnet_ids else "the first cluster subnet"
    where = (
        f"its capacity block's placement, in {subnet}"
        if pool.capacity_type == "CAPACITY_BLOCK"
        else f"a cluster placement group in {subnet}"
    )
    return f"EFA x{count} per node ({where})"


def _pool_facts(config: StackConfig, pool: NodePool, tags: dict[str, Any], gate: Registration | None) -> str:
    guard = (
        f"guarded by the readiness gate {gate.name}"
        if gate
        else "no readiness gate" + (" (missing: a bug)" if pool.rollout == "blue-green" else "")
    )
    facts = [
        f"rollout {pool.rollout}, {guard}",
        f"nodeRepair {'on' if pool.node_repair else 'off'}",
        _kernel_modules(config, tags),
        _fabric_manager(tags),
        _efa(pool, tags),
    ]
    if config.node_image.source == "ami":
        facts.append(f"AMI {config.node_image.ami_id} declared, not verified: run python -m preview verify-ami")
    return ", ".join(facts)


def _autoscaler(recording: Recording, group: Registration | None) -> str:
    """What the cluster autoscaler's template node of the pool's empty group offers, from the ASG tags
    beside its node group (gpu_platform/interface/contract.py CA_RESOURCE_TAG): a pod that asks for more stays
    pending at zero nodes."""
    tags = (
        [(r.inputs.get("tag") or {}) for r in recording.children(group.parent) if r.type == _ASG_TAG] if group else []
    )
    offered = [
        f"{t.get('key', '').removeprefix(contract.CA_RESOURCE_TAG)} x{t.get('value')}"
        for t in tags
        if str(t.get("key", "")).startswith(contract.CA_RESOURCE_TAG)
    ]
    return ", ".join(sorted(offered)) or "nothing tagged (only the instance type's GPU count)"


def _pools(config: StackConfig, recording: Recording, requests: dict[str, dict[str, int]]) -> list[str]:
    groups, gates = _groups(recording), _gates(recording)
    lines = ["GPU pools:"]
    for pool in config.node_pools:
        tags = (groups[pool.name].inputs.get("tags") or {}) if pool.name in groups else {}
        gpu = f"{tags.get(contract.GPU_MODEL_TAG, '?')} x{tags.get(contract.GPU_COUNT_TAG, '?')}"
        shared = (
            f"MIG {pool.mig.config}"
            if pool.mig
            else f"time-sliced x{pool.time_slicing.replicas}"
            if pool.time_slicing
            else "whole GPUs"
        )
        lines.append(
            f"  {pool.name:<12} {pool.instance_type} -> {gpu}, {pool.min_size}/{pool.desired_size}/{pool.max_size} "
            f"nodes (min/desired/max), {pool.capacity_type}, {shared}"
        )
        lines.append(f"  {'':<12} {_pool_facts(config, pool, tags, gates.get(pool.name))}")
        # The EFA device plugin's resources beside the GPUs', as the pool's autoscaler tags count them.
        offered = {**requests.get(pool.name, {}), **sharing.efa_resources(_efa_devices(tags))}
        offers = ", ".join(f"{name} x{count}" for name, count in offered.items()) or "nothing"
        lines.append(f"  {'':<12} workloads can request per node: {offers}")
        autoscaler = _autoscaler(recording, groups.get(pool.name))
        lines.append(f"  {'':<12} cluster autoscaler from zero nodes (ASG tags): {autoscaler}")
    return lines


def _waits(daemonset: dict[str, Any]) -> str:
    """What a DaemonSet's pods wait for on their node, from its init containers: a `wait-for-<marker>`
    waits for the marker file; a validator's `<what>-validation` with WITH_WAIT=true retries until
    <what> works, and one without checks once (a failure restarts the pod)."""
    spec = daemonset.get("spec", {}).get("template", {}).get("spec", {})
    waits, checks = [], []
    for container in spec.get("initContainers", []):
        name = container.get("name", "")
        env = {e.get("name"): e.get("value") for e in container.get("env", []) if isinstance(e, dict)}
        if name.startswith("wait-for-"):
            waits.append(name.removeprefix("wait-for-"))
        elif name.endswith("-validation"):
            (waits if env.get("WITH_WAIT") == "true" else checks).append(name.removesuffix("-validation"))
    text = ", ".join(waits) or "nothing"
    return text + (f", then checks {', '.join(checks)}" if checks else "")


def _mig_pools(ds: Registration) -> tuple[bool, list[str]]:
    """An operand's DaemonSet for its MIG pools (operands/mig_access.py): whether it runs privileged, and
    what its required affinity waits for beyond the MIG config label."""
    pod = ds.inputs["spec"]["template"]["spec"]
    waits = [
        f"{e['key']} is {'|'.join(e.get('values') or ())}"
        for term in workloads.required_node_terms(pod)
        for e in term
        if e.get("operator") == "In"
    ]
    return any((c.get("securityContext") or {}).get("privileged") for c in pod["containers"]), waits


def _operands(config: StackConfig, recording: Recording, order: list[Registration]) -> list[str]:
    # One row, so the summary keeps a row for each operand a later stack adds (tests/preview/test_cli.py).
    lines = [
        "Operands, in rollout order (each after the one before; Pulumi waits for each DaemonSet's controller only):"
    ]
    mig_pools: list[tuple[str, bool, list[str]]] = []
    for number, operand in enumerate(order, 1):
        daemonsets = sorted(
            (r for r in recording.children(operand.urn) if r.type == _DAEMONSET),
            key=lambda r: r.inputs["metadata"]["name"],
        )
        ds = daemonsets[0] if daemonsets else None
        selector = (
            ((ds.inputs.get("spec") or {}).get("template", {}).get("spec", {}).get("nodeSelector") or {}) if ds else {}
        )
        where = ", ".join(f"{k}={v}" for k, v in selector.items()) or "every node"
        waits = _waits(ds.inputs) if ds else "nothing"
        lines.append(
            f"  {number}. {operand.type.removeprefix(_OPERAND_PREFIX):<20} on {where}; on each node waits for {waits}"
        )
        mig_pools += [(operand.type.removeprefix(_OPERAND_PREFIX), *_mig_pools(d)) for d in daemonsets[1:]]
    if mig_pools:
        privileged = " (privileged)" if all(p for _, p, _ in mig_pools) else ""
        waiting = "".join(f", {name}'s once {' and '.join(w)}" for name, _, w in mig_pools if w)
        lines.append(f"  MIG pools: own -mig DaemonSets{privileged}{waiting}")
    present = {o.type.removeprefix(_OPERAND_PREFIX) for o in order}
    any_mig = any(p.mig for p in config.node_pools)
    for stage in stages.STAGES:
        if stage.component.__name__ in present:
            continue
        # Why, from the registry's placements (gpu_platform/catalog/operands.py); else not carried by the release.
        placement = stage.row.left_out(config.node_image.toolkit_baked, any_mig, config.dra)
        if placement is not None and placement.opt_in:
            continue  # not something the stack leaves out: it did not turn it on
        lines.append(f"  left out: {stage.operand} ({placement.why if placement else 'not in this stack'})")
    return lines


def _roll(pool: NodePool, group: Registration, gate: Registration | None) -> str:
    """How a new node image reaches one pool, and how long Pulumi waits for it."""
    if pool.rollout == "blue-green":
        wait = f"up to {_minutes(gate.custom_timeouts[1] or gate.custom_timeouts[0])}" if gate else "no gate (a bug)"
        return (
            f"blue-green: a new node group beside the old one (both run at once), then its readiness gate "
            f"({wait}) before the old group and its nodes are deleted"
        )
    at_once = rollouts.max_unavailable({"inputs": group.inputs})
    every = (
        f"old nodes first, {at_once} at a time"
        if pool.rollout == "in-place"
        else f"new nodes first, at most {at_once} unavailable"
    )
    return f"{pool.rollout}: rolls inside the group, {every}, no GPU check; Pulumi waits up to {_minutes(group.custom_timeouts[1])}"


def _long_steps(config: StackConfig, recording: Recording) -> list[str]:
    lines = []
    for r in recording.of_type(_IMAGE):
        lines.append(
            f"  the node image bake (EC2 Image Builder, 30-60 min; Pulumi waits up to {_minutes(r.custom_timeouts[0])})"
        )
    groups, gates = _groups(recording), _gates(recording)
    rolled = [pool for pool in config.node_pools if pool.name in groups]
    if rolled:
        lines.append("  a new node image (driver, base release, pinned AMI) replaces every GPU node, per pool:")
        lines += [f"    {pool.name:<12} {_roll(pool, groups[pool.name], gates.get(pool.name))}" for pool in rolled]
    return ["Long steps:", *lines] if lines else []


def _requests(view: lifecycle_stack.StackView) -> dict[str, dict[str, int]]:
    """pool -> the GPU resources workloads can ask for on one of its nodes: the lifecycle model's end state
    of a node (preview/lifecycle/scenarios.py `expected`)."""
    return {pool.name: scenarios.expected(view, pool) for pool in view.pools}


def _lifecycle(outcomes: Sequence[scenarios.Outcome]) -> list[str]:
    """The node-lifecycle scenarios' verdict: every pod that would wait forever, by pool and scenario
    (the verdict line fails on them: report.fails)."""
    stuck = [o for o in outcomes if not o.live]
    lines = [
        f"  node lifecycle: {len(scenarios.SCENARIOS)} scenarios per pool (preview/lifecycle), "
        + ("every operand runs, every node offers what it should" if not stuck else f"{len(stuck)} end stuck")
    ]
    lines += [f"    STUCK {o.pool} / {o.scenario}: {problem}" for o in stuck for problem in o.problems]
    return lines


def plan(
    recording: Recording, order: list[Registration], lifecycle: Sequence[scenarios.Outcome] | None = None
) -> list[str]:
    """The plan's lines (no trailing blank); `lifecycle`: the scenarios' outcomes (run here when not given)."""
    config = parse(recording.config)
    view = lifecycle_stack.view(recording)
    if lifecycle is None:
        lifecycle = scenarios.run(view)
    return [
        *_header(config, recording),
        "",
        *_pools(config, recording, _requests(view)),
        "",
        *_operands(config, recording, order),
        *_lifecycle(lifecycle),
        "",
        *_long_steps(config, recording),
    ]
