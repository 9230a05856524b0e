"""Version-matrix policies, through the real analyzer, on the resources that declare both versions:
the namespace (release and Kubernetes), the node image (driver, release, CUDA), or each launch
template that boots a pinned AMI."""

from __future__ import annotations

import dataclasses
import re

import pytest

from gpu_platform.catalog import matrix, versions
from policy.compatibility import (
    driver_branch_supported_by_release,
    driver_serves_cuda_major,
    driver_serves_cuda_toolkit,
    driver_version_tested_by_release,
    release_supports_kubernetes,
)
from tests.policy.resources import launch_template, namespace, node_group, node_image
from tests.policy.verdict import violations

MATRIX = matrix.load()

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("release-supports-kubernetes", "resource", "mandatory"),
    ("driver-branch-supported-by-release", "resource", "mandatory"),
    ("driver-version-tested-by-release", "resource", "advisory"),
    ("driver-serves-cuda-major", "resource", "mandatory"),
    ("driver-serves-cuda-toolkit", "resource", "advisory"),
]


@pytest.mark.parametrize(
    "release, minor", [("v25.10.1", "1.33"), ("v24.3.0", "1.30"), ("v23.9.2", "1.29"), ("v25.3.0", "1.29")]
)
def test_release_that_supports_the_kubernetes_minor_passes(release, minor):
    assert violations(release_supports_kubernetes, [namespace(release, kubernetes=minor)]) == []


def test_release_older_than_the_kubernetes_minor_fails_on_the_namespace_naming_both_sides():
    found = violations(release_supports_kubernetes, [namespace("v24.3.0", kubernetes="1.33")])
    assert len(found) == 1
    message, urn = found[0]
    # v24.3.0 supports 1.22-1.30 (matrix.yaml, its release notes); a release that fits is named.
    assert "v24.3.0" in message and "1.22-1.30" in message and "1.33" in message
    # The three newest releases that support 1.33, oldest first, read off the matrix's data (a new
    # release row moves them; it should not rewrite this test).
    named = re.search(r"use a release that supports 1\.33 \(([^)]*)\)", message)
    assert named, message
    fitting = [
        r.name
        for r in sorted(MATRIX.releases.values(), key=lambda r: versions.parse(r.name))
        if versions.at_least("1.33", r.kubernetes_min) and versions.at_least(r.kubernetes_max, "1.33")
    ]
    assert named.group(1).split(", ") == fitting[-3:]
    assert len(fitting) > 3 and "v26.3.1" in fitting  # today's matrix: v26.3.1 is a fourth, left out
    assert urn == namespace().urn


@pytest.mark.parametrize("release, minor", [("v25.3.0", "1.28"), ("v24.3.0", "1.31"), ("v23.9.0", "1.30")])
def test_the_kubernetes_range_is_inclusive_at_both_ends_and_no_wider(release, minor):
    # v25.3.0 raised the minimum to 1.29; v24.3.0 ends at 1.30; v23.9.0 at 1.29 (matrix.yaml).
    assert len(violations(release_supports_kubernetes, [namespace(release, kubernetes=minor)])) == 1


def test_a_namespace_declaring_no_release_is_not_the_operands_and_is_not_checked():
    other = namespace(release="", kubernetes="1.33")
    assert violations(release_supports_kubernetes, [other]) == []


def test_a_namespace_with_a_release_but_no_kubernetes_version_cannot_be_checked_and_fails():
    found = violations(release_supports_kubernetes, [namespace("v25.10.1", kubernetes="")])
    assert len(found) == 1 and "kubernetes-version" in found[0][0]


@pytest.mark.parametrize(
    "release, driver", [("v25.10.1", "580.105.08"), ("v26.7.0", "595.91.07"), ("v23.9.0", "470.223.02")]
)
def test_driver_of_a_branch_the_release_supports_passes(release, driver):
    assert violations(driver_branch_supported_by_release, [node_image(driver=driver, release=release)]) == []


@pytest.mark.parametrize("release, driver, branch", [("v26.7.0", "570.211.01", "570"), ("v23.9.0", "550.54.14", "550")])
def test_a_baked_driver_of_a_branch_the_release_never_supported_fails_on_the_image(release, driver, branch):
    resources = [
        node_image(driver=driver, release=release),
        launch_template(driver=driver, release=release),
        node_group(driver=driver, release=release),
    ]
    found = violations(driver_branch_supported_by_release, resources)
    # Once, on the image (the bake), before anything is built: not again on each pool.
    assert len(found) == 1
    message, urn = found[0]
    assert driver in message and f"branch {branch}" in message and release in message
    assert "gpu-node-image-image" in message and urn == node_image().urn


def test_a_pinned_ami_is_checked_on_each_launch_template_that_boots_it():
    resources = [launch_template(driver="570.211.01", release="v26.7.0", source="ami", pool=p) for p in ("a", "b")]
    found = violations(driver_branch_supported_by_release, resources)
    assert sorted(urn for _, urn in found) == sorted(r.urn for r in resources)


def test_a_launch_template_of_a_baked_image_is_not_checked_again():
    assert (
        violations(driver_branch_supported_by_release, [launch_template(driver="570.211.01", release="v26.7.0")]) == []
    )


@pytest.mark.parametrize("release, driver", [("v25.10.1", "580.105.08"), ("v24.3.0", "550.54.15")])
def test_driver_the_release_was_tested_with_passes_the_advisory(release, driver):
    assert violations(driver_version_tested_by_release, [node_image(driver=driver, release=release)]) == []


@pytest.mark.parametrize(
    "release, driver, tested", [("v25.10.1", "580.65.06", "580.178.04"), ("v26.7.0", "580.105.08", "580.173.02")]
)
def test_untested_driver_of_a_supported_branch_is_advisory(release, driver, tested):
    found = violations(driver_version_tested_by_release, [node_image(driver=driver, release=release)])
    assert len(found) == 1 and driver in found[0][0] and tested in found[0][0] and release in found[0][0]
    assert driver_version_tested_by_release.enforcement_level.value == "advisory"


def test_unsupported_branch_is_not_reported_twice_by_the_advisory():
    assert violations(driver_version_tested_by_release, [node_image(driver="570.211.01", release="v26.7.0")]) == []


@pytest.mark.parametrize("driver, cuda", [("580.105.08", "12.8 13.0"), ("570.26", "12.8"), ("525.60.13", "12.4")])
def test_driver_at_or_above_the_cuda_major_floor_passes(driver, cuda):
    assert violations(driver_serves_cuda_major, [node_image(driver=driver, cuda=cuda)]) == []


# The fix's CUDA is the newest toolkit whose exact minimum the driver meets (matrix.yaml, written out:
# 12.8.1 needs 570.124.06, 12.9.1 575.57.08, 11.8 520.61.05).
@pytest.mark.parametrize(
    "driver, cuda, floor, served",
    [
        ("570.211.01", "13.0", "580", "12.8.1"),
        ("520.61.05", "12.0", "525", "11.8"),
        ("579.99.99", "12.8 13.0", "580", "12.9.1"),
    ],
)
def test_driver_below_the_cuda_major_floor_fails_naming_both(driver, cuda, floor, served):
    # CUDA 12.x needs >= 525.60.13, 13.x >= 580 (matrix.yaml, CUDA's minor-version compatibility).
    found = violations(driver_serves_cuda_major, [node_image(driver=driver, cuda=cuda)])
    assert len(found) == 1
    message, urn = found[0]
    assert "CUDA 13.0" in message or "CUDA 12.0" in message
    assert f">= {floor}" in message and driver in message and urn == node_image().urn
    assert message.endswith(f", or build the workloads with CUDA {served} or older")


def test_the_cuda_to_build_with_is_the_newest_by_number_not_by_text(monkeypatch):
    # A two-digit minor (13.10, as 12.x went past 12.9 in the driver branches' naming) is newer than 13.9:
    # compared as text it would sort first, and the fix would offer an older toolkit than the driver serves.
    from gpu_platform.catalog import matrix

    loaded = matrix.load()
    toolkits = {"13.9": "580.65.06", "13.10": "580.65.06"}
    changed = dataclasses.replace(
        loaded, cuda=dataclasses.replace(loaded.cuda, toolkits={**loaded.cuda.toolkits, **toolkits})
    )
    monkeypatch.setattr(matrix, "load", lambda *a, **k: changed)
    found = violations(driver_serves_cuda_toolkit, [node_image(driver="580.65.06", cuda="13.1")])
    assert len(found) == 1 and found[0][0].endswith("or build the workloads with CUDA 13.10"), found


def test_a_driver_older_than_every_toolkit_offers_no_cuda_to_build_with():
    found = violations(driver_serves_cuda_major, [node_image(driver="470.256.02", cuda="12.8")])
    assert len(found) == 1 and "build the workloads with" not in found[0][0]
    assert found[0][0].endswith("bake a driver >= 570.26")


@pytest.mark.parametrize("driver, cuda", [("580.105.08", "13.0"), ("570.124.06", "12.8.1")])
def test_driver_at_or_above_the_toolkit_minimum_passes_the_advisory(driver, cuda):
    assert violations(driver_serves_cuda_toolkit, [node_image(driver=driver, cuda=cuda)]) == []


@pytest.mark.parametrize(
    "driver, cuda, need, served",
    [("570.124.06", "12.9", "575.51.03", "12.8.1"), ("580.65.06", "13.1", "590.44.01", "13.0")],
)
def test_driver_below_the_toolkit_minimum_but_above_the_floor_is_advisory(driver, cuda, need, served):
    found = violations(driver_serves_cuda_toolkit, [node_image(driver=driver, cuda=cuda)])
    assert len(found) == 1 and need in found[0][0] and driver in found[0][0]
    assert found[0][0].endswith(f"bake a driver >= {need}, or build the workloads with CUDA {served}")
    assert violations(driver_serves_cuda_major, [node_image(driver=driver, cuda=cuda)]) == []


def test_the_node_image_is_checked_for_release_and_kubernetes_too_so_no_bake_starts():
    found = violations(release_supports_kubernetes, [node_image(release="v24.3.0", kubernetes="1.33")])
    assert len(found) == 1 and "v24.3.0" in found[0][0] and "1.33" in found[0][0] and found[0][1] == node_image().urn


def test_a_pinned_amis_launch_template_is_checked_for_release_and_kubernetes():
    template = launch_template(release="v24.3.0", kubernetes="1.33", source="ami")
    assert [urn for _, urn in violations(release_supports_kubernetes, [template])] == [template.urn]
    assert violations(release_supports_kubernetes, [launch_template(release="v24.3.0", kubernetes="1.33")]) == []
