"""Operand images and the release: the release's image, or a patch bump through operator.overrides;
checked on each operand workload (which declares its release) and on the namespace (the overrides)."""

from __future__ import annotations

import pytest

from gpu_platform import matrix
from policy.images import is_patch_bump, operand_images_match_release, split
from tests.policy.resources import namespace, workload
from tests.policy.verdict import violations


def release_workload(release: str, operand: str = "device-plugin", **kwargs):
    images = matrix.load().release(release).images
    return workload(operand=operand, image=images[operand], wait_image=images["validator"], release=release, **kwargs)


@pytest.mark.parametrize("release, operand", [("v25.10.1", "device-plugin"), ("v26.3.3", "dcgm-exporter"), ("v24.3.0", "gpu-feature-discovery")])
def test_the_releases_own_images_pass(release, operand):
    assert violations(operand_images_match_release, [namespace(release), release_workload(release, operand)]) == []


@pytest.mark.parametrize("operand, tag, image", [
    ("device-plugin", "v0.18.2", "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"),
    ("dcgm-exporter", "4.4.2-4.7.1-distroless", "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.1-distroless"),
])
def test_a_patch_bump_through_overrides_passes(operand, tag, image):
    resources = [namespace("v25.10.1", overrides=f"{operand}={tag}"), workload(operand=operand, image=image, overrides=f"{operand}={tag}")]
    assert violations(operand_images_match_release, resources) == []


def test_a_foreign_repository_fails_naming_both_images():
    found = violations(operand_images_match_release, [namespace("v25.10.1"), workload(image="docker.io/someone/k8s-device-plugin:v0.18.1")])
    assert len(found) == 1
    message, urn = found[0]
    assert "docker.io/someone/k8s-device-plugin:v0.18.1" in message and "nvcr.io/nvidia/k8s-device-plugin:v0.18.1" in message
    assert "v25.10.1" in message and urn == workload().urn


def test_another_tag_without_an_override_fails_pointing_at_overrides():
    found = violations(operand_images_match_release, [namespace("v25.10.1"), workload(image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2")])
    assert len(found) == 1 and "operator.overrides.device-plugin" in found[0][0] and "v0.18.1" in found[0][0]


def test_a_wait_container_of_another_release_fails():
    # v25.3.0's validator in a v25.10.1 stack.
    found = violations(operand_images_match_release, [namespace("v25.10.1"), workload(wait_image="nvcr.io/nvidia/gpu-operator:v25.3.0")])
    assert len(found) == 1 and "wait-for-toolkit-ready" in found[0][0] and "v25.3.0" in found[0][0]


@pytest.mark.parametrize("operand, tag", [("device-plugin", "v0.19.0"), ("mig-manager", "v0.13.0"), ("dcgm-exporter", "4.5.1-4.8.0-distroless")])
def test_an_override_that_is_not_a_patch_bump_fails_naming_both_tags(operand, tag):
    images = matrix.load().release("v25.10.1").images
    override = f"{operand}={tag}"
    resources = [namespace("v25.10.1", overrides=override),
                 workload(operand=operand, image=images[operand].rsplit(":", 1)[0] + ":" + tag, overrides=override)]
    found = violations(operand_images_match_release, resources)
    assert len(found) == 1
    message, urn = found[0]
    assert tag in message and images[operand].rsplit(":", 1)[1] in message and urn == namespace("v25.10.1").urn


@pytest.mark.parametrize("release_tag, tag, bump", [
    ("v1.18.1", "v1.18.2", True),
    ("v0.14.2-ubi8", "v0.14.5-ubi8", True),
    ("v1.18.1", "v1.18.1", True),  # the release's own tag, restated as an override
    ("4.4.2-4.7.0-distroless", "4.4.3-4.7.1-distroless", True),  # DCGM and its exporter, each a patch
    ("v1.18.1", "v1.19.0", False),
    ("v1.18.1", "latest", False),
    ("v1.18.1", "v1.18.0", False),  # older
    ("4.4.2-4.7.0-distroless", "4.4.3-distroless", False),  # one version where the release has two
    ("4.4.2-4.7.0-distroless", "4.4.3-4.8.0-distroless", False),  # the exporter's minor moved
    ("latest", "latest", False),  # no version to compare: never a bump
])
def test_patch_bump_reads_versions_inside_tags(release_tag, tag, bump):
    assert is_patch_bump(release_tag, tag) is bump


def test_an_operand_workload_that_declares_no_release_fails_instead_of_passing_unchecked():
    found = violations(operand_images_match_release, [workload(release=None)])
    assert len(found) == 1 and "declares no" in found[0][0] and found[0][1] == workload().urn


def test_a_workload_that_is_no_operand_is_not_checked():
    assert violations(operand_images_match_release, [workload(operand=None, image="docker.io/library/busybox:1.36")]) == []


def test_an_override_on_the_workload_lets_only_that_operands_tag_through():
    # The validator's override does not admit a device-plugin tag.
    found = violations(operand_images_match_release, [
        workload(image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2", wait_image="nvcr.io/nvidia/gpu-operator:v25.10.2",
                 overrides="validator=v25.10.2")])
    assert len(found) == 1 and "v0.18.2" in found[0][0]


def test_an_override_of_another_line_names_the_newest_releases_that_ship_that_line():
    # From gpu_platform/matrix.yaml, written out: device-plugin v0.17.x ships with v24.9.0 through
    # v25.3.4; the message names the three newest of them.
    override = "device-plugin=v0.17.2"
    found = violations(operand_images_match_release, [namespace("v25.10.1", overrides=override)])
    assert len(found) == 1
    assert "or move to a release that ships that line (v25.3.2, v25.3.3, v25.3.4)" in found[0][0]


def test_an_override_of_a_line_no_release_ships_offers_no_release():
    found = violations(operand_images_match_release, [namespace("v25.10.1", overrides="device-plugin=v0.12.0")])
    assert len(found) == 1
    assert "move to a release" not in found[0][0] and "use a v0.18.x tag" in found[0][0]


@pytest.mark.parametrize("ref, parts", [
    ("nvcr.io/nvidia/k8s-device-plugin:v0.18.1", ("nvcr.io/nvidia/k8s-device-plugin", "v0.18.1")),
    ("registry.example.com:5000/nvidia/k8s-device-plugin:v0.18.1", ("registry.example.com:5000/nvidia/k8s-device-plugin", "v0.18.1")),
    ("registry.example.com:5000/nvidia/k8s-device-plugin", ("registry.example.com:5000/nvidia/k8s-device-plugin", "")),
    ("nvcr.io/nvidia/k8s-device-plugin", ("nvcr.io/nvidia/k8s-device-plugin", "")),
])
def test_an_image_reference_splits_at_its_tag_and_never_at_a_registry_port(ref, parts):
    assert split(ref) == parts
