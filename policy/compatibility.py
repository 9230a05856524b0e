"""Version-matrix policies: combinations of known versions that do not work together (operator
release and Kubernetes, driver and release, driver and CUDA)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from gpu_platform import matrix, versions
from policy.facts import gather


def _release_supports_kubernetes(args: StackValidationArgs, report_violation) -> None:
    facts = gather(args.resources)
    if facts.release is None or facts.kubernetes is None:
        return
    table = matrix.load()
    release = table.releases.get(facts.release.value)
    minor = facts.kubernetes.value
    if release is None:
        report_violation(f"GPU Operator release {facts.release.value!r} is not in the version matrix", facts.release.urn)
        return
    if not versions.is_version(minor) or release.supports_kubernetes(minor):
        return
    fitting = [r.name for r in table.releases.values() if r.supports_kubernetes(minor)]
    fix = f"use a release that supports {minor} ({', '.join(fitting[-3:])})" if fitting else f"no release in the matrix supports {minor}"
    report_violation(
        f"GPU Operator {release.name} (declared by {facts.release.urn}) supports Kubernetes "
        f"{release.kubernetes_range}, but the cluster ({facts.kubernetes.urn}) runs {minor}; {fix}, "
        f"or run a Kubernetes version in {release.kubernetes_range}",
        facts.release.urn,
    )


def _release_and_drivers(args: StackValidationArgs):
    facts = gather(args.resources)
    release = matrix.load().releases.get(facts.release.value) if facts.release else None
    if release is None:
        return facts, None, []
    drivers = [(d, who) for d, who in facts.drivers() if versions.is_version(d.value)]
    return facts, release, drivers


def _driver_branch_supported(args: StackValidationArgs, report_violation) -> None:
    facts, release, drivers = _release_and_drivers(args)
    for driver, who in drivers:
        branch = versions.major(driver.value)
        if branch in release.driver_branches:
            continue
        fitting = [r.name for r in matrix.load().releases.values() if branch in r.driver_branches]
        other = f", or a release that supports branch {branch} ({', '.join(fitting[-3:])})" if fitting else ""
        report_violation(
            f"{who} runs NVIDIA driver {driver.value} (branch {branch}), but GPU Operator {release.name} "
            f"(declared by {facts.release.urn}) supports driver branches "
            f"{', '.join(map(str, release.driver_branches))}; bake a driver of a supported branch "
            f"(the release's default is {release.driver_default}){other}",
            driver.urn,
        )


def _driver_version_listed(args: StackValidationArgs, report_violation) -> None:
    facts, release, drivers = _release_and_drivers(args)
    for driver, who in drivers:
        branch = versions.major(driver.value)
        if branch not in release.driver_branches or driver.value in release.driver_versions:
            continue
        tested = [v for v in release.driver_versions if versions.major(v) == branch]
        report_violation(
            f"{who} runs NVIDIA driver {driver.value}, which is not among the versions GPU Operator "
            f"{release.name} (declared by {facts.release.urn}) was tested with on branch {branch} "
            f"({', '.join(tested) or 'none'}); bake a tested version (e.g. {tested[0] if tested else release.driver_default})",
            driver.urn,
        )


def _cuda_served(driver: str) -> str:
    """The newest CUDA toolkit whose exact minimum this driver meets (for a fix that exists)."""
    served = [c for c, need in matrix.load().cuda.toolkits.items() if versions.at_least(driver, need)]
    return max(served, key=versions.parse) if served else "none"


def _cuda_pairs(args: StackValidationArgs):
    facts = gather(args.resources)
    cuda = matrix.load().cuda
    for declared in facts.cuda_versions:
        if declared.value not in cuda.toolkits:
            continue
        for driver, who in facts.drivers():
            if versions.is_version(driver.value):
                yield declared, driver, who, cuda


def _driver_serves_cuda_major(args: StackValidationArgs, report_violation) -> None:
    for declared, driver, who, cuda in _cuda_pairs(args):
        major = versions.major(declared.value)
        floor = cuda.major_minimum.get(major)
        if floor is None or versions.at_least(driver.value, floor):
            continue
        report_violation(
            f"workloads built with CUDA {declared.value} (declared by {declared.urn}) need an NVIDIA driver "
            f">= {floor} (the CUDA {major} minor-version-compatibility floor), but {who} runs "
            f"{driver.value}; bake a driver >= {cuda.minimum_driver(declared.value)}, or build the "
            f"workloads with CUDA {_cuda_served(driver.value)} or older",
            driver.urn,
        )


def _driver_serves_cuda_toolkit(args: StackValidationArgs, report_violation) -> None:
    for declared, driver, who, cuda in _cuda_pairs(args):
        need = cuda.minimum_driver(declared.value)
        floor = cuda.major_minimum.get(versions.major(declared.value))
        if versions.at_least(driver.value, need) or floor is None or not versions.at_least(driver.value, floor):
            continue
        report_violation(
            f"workloads built with CUDA {declared.value} (declared by {declared.urn}) want an NVIDIA driver "
            f">= {need}, but {who} runs {driver.value}: they run only through minor-version "
            f"compatibility (no PTX JIT of newer code, no features of the newer driver); bake a driver "
            f">= {need}, or build with CUDA {_cuda_served(driver.value)}",
            driver.urn,
        )


release_supports_kubernetes = StackValidationPolicy(
    name="release-supports-kubernetes",
    description="The GPU Operator release whose versions the operands follow supports the cluster's Kubernetes minor.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_release_supports_kubernetes,
)

driver_branch_supported_by_release = StackValidationPolicy(
    name="driver-branch-supported-by-release",
    description="The baked NVIDIA driver's branch (major) is one the GPU Operator release supports.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_driver_branch_supported,
)

driver_version_tested_by_release = StackValidationPolicy(
    name="driver-version-tested-by-release",
    description="The baked NVIDIA driver is one of the exact versions the GPU Operator release was tested with.",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_driver_version_listed,
)

driver_serves_cuda_major = StackValidationPolicy(
    name="driver-serves-cuda-major",
    description="The baked driver reaches the minor-version-compatibility floor of every workload CUDA major.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_driver_serves_cuda_major,
)

driver_serves_cuda_toolkit = StackValidationPolicy(
    name="driver-serves-cuda-toolkit",
    description="The baked driver reaches the exact minimum of every workload CUDA toolkit (below it, only minor-version compatibility).",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_driver_serves_cuda_toolkit,
)
