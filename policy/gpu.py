"""GPU-model policies: each pool's GPU gets a driver it supports and only MIG configurations that
exist for it. Checked on each GPU node group before it launches a node, on the GPU its instance
types really carry (the matrix's families), not on the model it declares."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_platform.catalog import aws_limits, matrix, versions
from gpu_platform.interface import contract
from gpu_platform.interface.props import mapping
from policy import facts
from policy.declare import resource_policy, types


def _pool_gpus(args):
    """(the pool, [(instance type, GPU)]) for a GPU node group; GPUs the matrix lacks are left to
    privileged-software-tagged, which reports them."""
    if not facts.is_gpu_resource(args.resource_type, args.props):
        return None, []
    pool = facts.of(args)
    return pool, [(t, gpu) for t, gpu in pool.gpus().items() if gpu is not None]


def _where(pool, instance_type: str) -> str:
    return pool.describe() if instance_type.startswith("(") else f"{pool.describe()}, instance type {instance_type},"


def _image_too_old(args, report_violation) -> None:
    """The node image (or a pinned one's launch template) and the GPUs it is built for: checked
    before the bake, so a driver too old for a pool's GPU stops `pulumi up` before 30-60 minutes."""
    image = facts.of(args)
    if not image.brings_node_image or not versions.is_version(image.driver):
        return
    gpus = matrix.load().gpus
    for model in image.gpu_models:
        gpu = gpus.get(model)
        if gpu is None or versions.at_least(image.driver, gpu.min_driver):
            continue
        report_violation(
            f"{image.describe()} is built with NVIDIA driver {image.driver} for {gpu.key} GPUs, which need >= "
            f"{gpu.min_driver} ({gpu.min_driver_basis}); bake a driver >= {gpu.min_driver}, or move the pool to a "
            f"GPU that this driver supports"
        )


@resource_policy(
    "driver-supports-gpu",
    EnforcementLevel.MANDATORY,
    "Every GPU pool's driver is at least its GPU model's minimum driver.",
    types(facts.NODE_GROUP, facts.IMAGE, facts.LAUNCH_TEMPLATE),
    fix="gpu-platform:nodeImage.driverVersion, or the pool's gpu-platform:nodePools[].instanceType",
)
def driver_supports_gpu(args, report_violation) -> None:
    if args.resource_type != facts.NODE_GROUP:
        _image_too_old(args, report_violation)
        return
    pool, found = _pool_gpus(args)
    if pool is None or not versions.is_version(pool.driver):
        return
    for instance_type, gpu in found:
        if versions.at_least(pool.driver, gpu.min_driver):
            continue
        report_violation(
            f"{_where(pool, instance_type)} has {gpu.key} GPUs, which need NVIDIA driver >= {gpu.min_driver} "
            f"({gpu.min_driver_basis}), but its node image runs driver {pool.driver}; bake a driver "
            f">= {gpu.min_driver}, or move the pool to a GPU that this driver supports"
        )


@resource_policy(
    "mig-config-fits-gpu",
    EnforcementLevel.MANDATORY,
    "MIG configurations only on MIG-capable GPUs, and only configurations that exist for that GPU and carve instances.",
    types(facts.NODE_GROUP),
    fix="the pool's gpu-platform:nodePools[].mig.config (or its instanceType)",
)
def mig_config_fits_gpu(args, report_violation) -> None:
    pool, found = _pool_gpus(args)
    config = pool.mig_config if pool is not None else None
    if not config:
        return
    gpus = matrix.load().gpus
    for instance_type, gpu in found:
        if gpu.mig is None:
            capable = ", ".join(k for k, g in gpus.items() if g.mig)
            report_violation(
                f"{_where(pool, instance_type)} asks for MIG configuration {config!r}, but its GPU {gpu.key} is not "
                f"MIG-capable; remove the pool's mig setting, or use a MIG-capable GPU ({capable})"
            )
            continue
        valid = gpu.mig.serving_configs()
        if config in valid:
            continue
        if config == "all-enabled":
            report_violation(
                f"{_where(pool, instance_type)} asks for MIG configuration 'all-enabled', which turns MIG on and "
                f"carves no instance: its nodes would offer no GPU at all; use one of {', '.join(sorted(valid))}"
            )
            continue
        owners = [k for k, g in gpus.items() if g.mig and config in g.mig.configs()]
        belongs = f" (a configuration of {', '.join(owners)})" if owners else ""
        report_violation(
            f"{_where(pool, instance_type)} asks for MIG configuration {config!r}{belongs}, but its GPU {gpu.key} "
            f"has profiles {', '.join(f'{p} x{n}' for p, n in gpu.mig.profiles.items())}; use one of "
            f"{', '.join(sorted(valid))}"
        )


@resource_policy(
    "multi-node-pools-use-efa",
    EnforcementLevel.ADVISORY,
    "A pool of a multi-node training family that can grow past one node has EFA: without it NCCL across nodes "
    "falls back to TCP sockets at a fraction of the bandwidth, with no error.",
    types(facts.NODE_GROUP),
    fix="gpu-platform:nodePools[].efa",
)
def multi_node_pools_use_efa(args, report_violation) -> None:
    if not facts.is_gpu_resource(args.resource_type, args.props):
        return
    tags = facts.tags(args.props)
    if tags.get(contract.EFA_INTERFACES_TAG, "0") != "0":
        return
    count = tags.get(contract.GPU_COUNT_TAG, "")
    if not count.isdigit():
        return
    scaling = mapping(args.props.get("scalingConfig"))
    most = scaling.get("maxSize")
    if not isinstance(most, (int, float)) or most <= 1:
        return
    for instance_type in facts.instance_types(args.resource_type, args.props):
        if aws_limits.efa_by_default(instance_type, int(count)):
            report_violation(
                f"node group {args.name!r} ({args.urn}) runs {instance_type} on up to {int(most)} nodes without EFA "
                f"(its launch template declares {contract.EFA_INTERFACES_TAG}=0): NCCL between its nodes falls back to TCP "
                f"sockets; remove `efa: false` from the gpu-platform:nodePools entry named {facts.of(args).pool!r} (EFA is "
                f"on by default for this family), or keep each job on one node"
            )
            return
