"""Version-matrix policies: combinations of known versions that do not work together (operator
release and Kubernetes, driver and release, driver and CUDA). Each is checked on the resource that
declares both versions, before it is created: the namespace (release and Kubernetes, before any
operand), the node image (driver, release and CUDA, before a 30-60 minute bake, or each launch
template that boots a pinned AMI)."""

from __future__ import annotations

import re

from pulumi_policy import EnforcementLevel

from gpu_platform.catalog import matrix, versions
from gpu_platform.interface import contract
from policy import facts
from policy.declare import resource_policy, types


def _fitting(releases, fits) -> list[str]:
    return [r.name for r in releases if fits(r)][-3:]


def _release_fits(what: str, name: str, minor: str, report_violation) -> None:
    table = matrix.load()
    release = table.releases.get(name)
    if release is None or not re.fullmatch(r"1\.\d{1,2}", minor) or release.supports_kubernetes(minor):
        return
    fitting = _fitting(table.releases.values(), lambda r: r.supports_kubernetes(minor))
    fix = (
        f"use a release that supports {minor} ({', '.join(fitting)})"
        if fitting
        else f"no release in the matrix supports {minor}"
    )
    report_violation(
        f"GPU Operator {release.name} (declared by {what}) supports Kubernetes {release.kubernetes_range}, but the "
        f"cluster runs {minor}; {fix}, or run a Kubernetes version in {release.kubernetes_range}"
    )


@resource_policy(
    "release-supports-kubernetes",
    EnforcementLevel.MANDATORY,
    "The GPU Operator release whose versions the operands follow supports the cluster's Kubernetes minor.",
    types(facts.NAMESPACE, facts.IMAGE, facts.LAUNCH_TEMPLATE),
    fix="gpu-platform:operator.release or gpu-platform:cluster.kubernetesVersion",
)
def release_supports_kubernetes(args, report_violation) -> None:
    # On the namespace, before any operand; and on the node image (or the launch templates of a
    # pinned one), so that `pulumi up --skip-preview` stops before a 30-60 minute bake too.
    if args.resource_type != facts.NAMESPACE:
        image = facts.of(args)
        if image.brings_node_image:  # malformed facts: privileged-software-tagged reports them
            _release_fits(image.describe(), image.release, image.kubernetes, report_violation)
        return
    notes = facts.annotations(args.props)
    name, minor = notes.get(contract.OPERATOR_RELEASE_KEY, ""), notes.get(contract.KUBERNETES_VERSION_TAG, "")
    what = f"namespace {args.name!r}, {args.urn}"
    if not name:
        return  # not the operands' namespace
    if not minor:
        report_violation(
            f"namespace {args.name!r} ({args.urn}) declares GPU Operator release {name} but no "
            f"{contract.KUBERNETES_VERSION_TAG} annotation, so the pair cannot be checked"
        )
    elif name not in matrix.load().releases:
        report_violation(
            f"namespace {args.name!r} ({args.urn}) declares GPU Operator release {name!r}, which is not in the version matrix"
        )
    elif not re.fullmatch(r"1\.\d{1,2}", minor):
        report_violation(
            f"namespace {args.name!r} ({args.urn}) declares Kubernetes {minor!r}, which is not a minor "
            f"version (e.g. 1.33), so the release cannot be checked against it"
        )
    else:
        _release_fits(what, name, minor, report_violation)


def _image_facts(args):
    """(the resource, its release row, its driver) when it brings the node image and declares both."""
    found = facts.of(args)
    if not found.brings_node_image or not versions.is_version(found.driver):
        return None
    release = matrix.load().releases.get(found.release)
    return (found, release, found.driver) if release is not None else None


_NODE_IMAGES = types(facts.IMAGE, facts.LAUNCH_TEMPLATE)


@resource_policy(
    "driver-branch-supported-by-release",
    EnforcementLevel.MANDATORY,
    "The baked NVIDIA driver's branch (major) is one the GPU Operator release supports.",
    _NODE_IMAGES,
    fix="gpu-platform:nodeImage.driverVersion or gpu-platform:operator.release",
)
def driver_branch_supported_by_release(args, report_violation) -> None:
    found = _image_facts(args)
    if found is None:
        return
    image, release, driver = found
    branch = versions.major(driver)
    if branch in release.driver_branches:
        return
    fitting = _fitting(matrix.load().releases.values(), lambda r: branch in r.driver_branches)
    other = f", or a release that supports branch {branch} ({', '.join(fitting)})" if fitting else ""
    report_violation(
        f"{image.describe()} runs NVIDIA driver {driver} (branch {branch}), but GPU Operator {release.name} "
        f"supports driver branches {', '.join(map(str, release.driver_branches))}; bake a driver of a "
        f"supported branch (the release's default is {release.driver_default}){other}"
    )


@resource_policy(
    "driver-version-tested-by-release",
    EnforcementLevel.ADVISORY,
    "The baked NVIDIA driver is one of the exact versions the GPU Operator release was tested with.",
    _NODE_IMAGES,
    fix="gpu-platform:nodeImage.driverVersion",
)
def driver_version_tested_by_release(args, report_violation) -> None:
    found = _image_facts(args)
    if found is None:
        return
    image, release, driver = found
    branch = versions.major(driver)
    if branch not in release.driver_branches or driver in release.driver_versions:
        return
    tested = [v for v in release.driver_versions if versions.major(v) == branch]
    report_violation(
        f"{image.describe()} runs NVIDIA driver {driver}, which is not among the versions GPU Operator "
        f"{release.name} was tested with on branch {branch} ({', '.join(tested) or 'none'}); bake a tested "
        f"version (e.g. {tested[0] if tested else release.driver_default})"
    )


def _or_build_with(driver: str, suffix: str = "") -> str:
    """`, or build the workloads with CUDA <the newest toolkit whose exact minimum this driver
    meets><suffix>`, or nothing when the driver meets no toolkit's minimum."""
    served = [c for c, need in matrix.load().cuda.toolkits.items() if versions.at_least(driver, need)]
    return f", or build the workloads with CUDA {max(served, key=versions.parse)}{suffix}" if served else ""


def _cuda_pairs(args):
    found = facts.of(args)
    if not found.brings_node_image or not versions.is_version(found.driver):
        return
    cuda = matrix.load().cuda
    for declared in found.cuda_versions:
        if declared in cuda.toolkits:
            yield found, declared, cuda


@resource_policy(
    "driver-serves-cuda-major",
    EnforcementLevel.MANDATORY,
    "The baked driver reaches the minor-version-compatibility floor of every workload CUDA major.",
    _NODE_IMAGES,
    fix="gpu-platform:nodeImage.driverVersion or gpu-platform:workloads.cudaVersions",
)
def driver_serves_cuda_major(args, report_violation) -> None:
    for image, declared, cuda in _cuda_pairs(args):
        major = versions.major(declared)
        floor = cuda.major_minimum.get(major)
        if floor is None or versions.at_least(image.driver, floor):
            continue
        report_violation(
            f"workloads built with CUDA {declared} need an NVIDIA driver >= {floor} (the CUDA {major} "
            f"minor-version-compatibility floor), but {image.describe()} runs {image.driver}; bake a driver "
            f">= {cuda.minimum_driver(declared)}{_or_build_with(image.driver, ' or older')}"
        )


@resource_policy(
    "driver-serves-cuda-toolkit",
    EnforcementLevel.ADVISORY,
    "The baked driver reaches the exact minimum of every workload CUDA toolkit (below it, only minor-version compatibility).",
    _NODE_IMAGES,
    fix="gpu-platform:nodeImage.driverVersion or gpu-platform:workloads.cudaVersions",
)
def driver_serves_cuda_toolkit(args, report_violation) -> None:
    for image, declared, cuda in _cuda_pairs(args):
        need = cuda.minimum_driver(declared)
        floor = cuda.major_minimum.get(versions.major(declared))
        if versions.at_least(image.driver, need) or floor is None or not versions.at_least(image.driver, floor):
            continue
        report_violation(
            f"workloads built with CUDA {declared} want an NVIDIA driver >= {need}, but {image.describe()} runs "
            f"{image.driver}: they run only through minor-version compatibility (no PTX JIT of newer code, no "
            f"features of the newer driver); bake a driver >= {need}{_or_build_with(image.driver)}"
        )
