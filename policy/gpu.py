"""GPU-model policies: each pool's GPU gets a driver it supports and only MIG configurations that
exist for it."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from gpu_platform import matrix, versions
from policy.facts import gather


def _pools_with_gpu(args: StackValidationArgs):
    gpus = matrix.load().gpus
    for pool in gather(args.resources).pools:
        gpu = gpus.get(pool.gpu_model or "")
        if gpu is not None:
            yield pool, gpu


def _driver_supports_gpu(args: StackValidationArgs, report_violation) -> None:
    for pool, gpu in _pools_with_gpu(args):
        if not pool.driver or not versions.is_version(pool.driver) or versions.at_least(pool.driver, gpu.min_driver):
            continue
        report_violation(
            f"{pool.describe()} has {gpu.key} GPUs, which need NVIDIA driver >= {gpu.min_driver} "
            f"({gpu.min_driver_basis}), but its node image runs driver {pool.driver}; bake a driver "
            f">= {gpu.min_driver}, or move the pool to a GPU that this driver supports",
            pool.urn,
        )


def _mig_config_fits_gpu(args: StackValidationArgs, report_violation) -> None:
    for pool, gpu in _pools_with_gpu(args):
        config = pool.mig_config
        if not config:
            continue
        if gpu.mig is None:
            capable = ", ".join(k for k, g in matrix.load().gpus.items() if g.mig)
            report_violation(
                f"{pool.describe()} asks for MIG configuration {config!r}, but its GPU {gpu.key} is not "
                f"MIG-capable; remove the pool's mig setting, or use a MIG-capable GPU ({capable})",
                pool.urn,
            )
            continue
        valid = gpu.mig.configs()
        if config in valid:
            continue
        owners = [k for k, g in matrix.load().gpus.items() if g.mig and config in g.mig.configs()]
        belongs = f" (a configuration of {', '.join(owners)})" if owners else ""
        report_violation(
            f"{pool.describe()} asks for MIG configuration {config!r}{belongs}, but its GPU {gpu.key} "
            f"has profiles {', '.join(f'{p} x{n}' for p, n in gpu.mig.profiles.items())}; use one of "
            f"{', '.join(sorted(valid))}",
            pool.urn,
        )


driver_supports_gpu = StackValidationPolicy(
    name="driver-supports-gpu",
    description="Every GPU pool's driver is at least its GPU model's minimum driver.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_driver_supports_gpu,
)

mig_config_fits_gpu = StackValidationPolicy(
    name="mig-config-fits-gpu",
    description="MIG configurations only on MIG-capable GPUs, and only configurations that exist for that GPU.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_mig_config_fits_gpu,
)
