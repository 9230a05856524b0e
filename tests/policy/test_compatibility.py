"""Version-matrix policies, called directly with resource inputs as the engine hands them over."""

from __future__ import annotations

import pytest

from policy.compatibility import (
    driver_branch_supported_by_release,
    driver_serves_cuda_major,
    driver_serves_cuda_toolkit,
    driver_version_tested_by_release,
    release_supports_kubernetes,
)
from tests.policy.resources import cluster, launch_template, namespace, node_group, node_image
from tests.policy.verdict import violations


def test_release_that_supports_the_kubernetes_minor_passes():
    for release, minor in (("v25.10.1", "1.33"), ("v24.3.0", "1.30"), ("v23.9.2", "1.29")):
        assert violations(release_supports_kubernetes, [cluster(minor), namespace(release)]) == []


def test_release_older_than_the_kubernetes_minor_fails_naming_both_sides():
    found = violations(release_supports_kubernetes, [cluster("1.33"), namespace("v24.3.0")])
    assert len(found) == 1
    message, urn = found[0]
    assert "v24.3.0" in message and "1.22-1.30" in message and "1.33" in message
    assert "v25.10.1" in message or "v26" in message  # a fix that exists
    assert urn == namespace("v24.3.0").urn


def test_release_newer_than_the_kubernetes_minor_fails():
    # v25.3.0 raised the minimum to 1.29.
    assert len(violations(release_supports_kubernetes, [cluster("1.28"), namespace("v25.3.0")])) == 1


def test_adopted_cluster_version_is_read_from_launch_template_tags():
    found = violations(release_supports_kubernetes, [launch_template(kubernetes="1.36"), namespace("v25.10.1")])
    assert len(found) == 1 and "1.36" in found[0][0]


@pytest.mark.parametrize("release, driver", [("v25.10.1", "580.105.08"), ("v26.7.0", "595.91.07"), ("v23.9.0", "470.223.02")])
def test_driver_of_a_branch_the_release_supports_passes(release, driver):
    assert violations(driver_branch_supported_by_release, [namespace(release), node_group(driver=driver)]) == []


@pytest.mark.parametrize("release, driver, branch", [("v26.7.0", "570.211.01", "570"), ("v23.9.0", "550.54.14", "550")])
def test_driver_of_a_branch_the_release_never_supported_fails_naming_both(release, driver, branch):
    found = violations(driver_branch_supported_by_release, [namespace(release), node_group(driver=driver)])
    assert len(found) == 1
    message, urn = found[0]
    assert driver in message and f"branch {branch}" in message and release in message
    assert "gpu-pool-l4-ng" in message and "gpu-namespace" in message and urn == node_group().urn


def test_driver_is_read_from_the_image_when_no_pool_declares_one():
    found = violations(driver_branch_supported_by_release, [namespace("v26.7.0"), node_image(driver="570.211.01")])
    assert len(found) == 1 and "gpu-node-image-image" in found[0][0]


@pytest.mark.parametrize("release, driver", [("v25.10.1", "580.105.08"), ("v24.3.0", "550.54.15")])
def test_driver_the_release_was_tested_with_passes_the_advisory(release, driver):
    assert violations(driver_version_tested_by_release, [namespace(release), node_group(driver=driver)]) == []


@pytest.mark.parametrize("release, driver, tested", [("v25.10.1", "580.65.06", "580.178.04"), ("v26.7.0", "580.105.08", "580.173.02")])
def test_untested_driver_of_a_supported_branch_is_advisory(release, driver, tested):
    found = violations(driver_version_tested_by_release, [namespace(release), node_group(driver=driver)])
    assert len(found) == 1 and driver in found[0][0] and tested in found[0][0] and release in found[0][0]
    assert driver_version_tested_by_release.enforcement_level.value == "advisory"


def test_unsupported_branch_is_not_reported_twice_by_the_advisory():
    assert violations(driver_version_tested_by_release, [namespace("v26.7.0"), node_group(driver="570.211.01")]) == []


@pytest.mark.parametrize("driver, cuda", [("580.105.08", "12.8,13.0"), ("570.26", "12.8"), ("525.60.13", "12.4")])
def test_driver_at_or_above_the_cuda_major_floor_passes(driver, cuda):
    assert violations(driver_serves_cuda_major, [namespace("v25.10.1", cuda), node_group(driver=driver)]) == []


@pytest.mark.parametrize("driver, cuda, floor", [("570.211.01", "13.0", "580"), ("520.61.05", "12.0", "525")])
def test_driver_below_the_cuda_major_floor_fails_naming_both(driver, cuda, floor):
    found = violations(driver_serves_cuda_major, [namespace("v25.10.1", cuda), node_group(driver=driver)])
    assert len(found) == 1
    message, _ = found[0]
    assert f"CUDA {cuda}" in message and f">= {floor}" in message and driver in message
    assert "gpu-namespace" in message and "gpu-pool-l4-ng" in message


@pytest.mark.parametrize("driver, cuda", [("580.105.08", "13.0"), ("570.124.06", "12.8.1")])
def test_driver_at_or_above_the_toolkit_minimum_passes_the_advisory(driver, cuda):
    assert violations(driver_serves_cuda_toolkit, [namespace("v25.10.1", cuda), node_group(driver=driver)]) == []


@pytest.mark.parametrize("driver, cuda, need", [("570.124.06", "12.9", "575.51.03"), ("580.65.06", "13.1", "590.44.01")])
def test_driver_below_the_toolkit_minimum_but_above_the_floor_is_advisory(driver, cuda, need):
    found = violations(driver_serves_cuda_toolkit, [namespace("v25.10.1", cuda), node_group(driver=driver)])
    assert len(found) == 1 and need in found[0][0] and driver in found[0][0]
    assert violations(driver_serves_cuda_major, [namespace("v25.10.1", cuda), node_group(driver=driver)]) == []
