"""Image references: split into repository, tag and digest whatever a manifest holds; a reference the
matrix or an override may hold is `repository:tag` with an optional `@sha256:<64 lowercase hex>`."""

from __future__ import annotations

import pytest

from gpu_platform.catalog import image_refs
from gpu_platform.catalog.image_refs import ImageRef

HEX = "0123456789abcdef" * 4  # 64 lowercase hex digits


@pytest.mark.parametrize(
    "ref, parts",
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.18.1", ("nvcr.io/nvidia/k8s-device-plugin", "v0.18.1", "")),
        (
            f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{HEX}",
            ("nvcr.io/nvidia/k8s-device-plugin", "v0.18.1", f"sha256:{HEX}"),
        ),
        (
            f"registry.example.com:5000/nfd:v0.18.2@sha256:{HEX}",
            ("registry.example.com:5000/nfd", "v0.18.2", f"sha256:{HEX}"),
        ),
        (f"registry.example.com:5000/nfd@sha256:{HEX}", ("registry.example.com:5000/nfd", "", f"sha256:{HEX}")),
        ("busybox", ("busybox", "", "")),
    ],
)
def test_a_reference_splits_into_repository_tag_and_digest(ref, parts):
    found = image_refs.parse(ref)
    assert (found.repository, found.tag, found.digest) == parts
    assert str(found) == ref


def test_an_override_replaces_the_tag_and_the_digest_together():
    pinned = ImageRef("nvcr.io/nvidia/k8s-device-plugin", "v0.18.1", f"sha256:{HEX}")
    assert str(pinned.with_version("v0.18.2")) == "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    assert (
        str(pinned.with_version(f"v0.18.2@sha256:{'f' * 64}"))
        == f"nvcr.io/nvidia/k8s-device-plugin:v0.18.2@sha256:{'f' * 64}"
    )
    assert pinned.pinned and not pinned.with_version("v0.18.2").pinned


@pytest.mark.parametrize(
    "ref",
    [
        "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
        f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{HEX}",
        f"registry.k8s.io/nfd/node-feature-discovery:v0.18.2@sha256:{HEX}",
    ],
)
def test_well_formed_references_have_no_problem(ref):
    assert image_refs.problem(ref) is None


@pytest.mark.parametrize(
    "ref, says",
    [
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{HEX[:-1]}", "(this one has 63 characters after 'sha256:')"),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{HEX.upper()}", "is malformed"),  # the spec forbids A-F
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{HEX}0", "(this one has 65 characters after 'sha256:')"),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha512:{HEX}{HEX}", "is not a sha256 digest"),
        # The algorithm pasted twice is a sha256 digest with 71 characters after the first 'sha256:', not
        # another algorithm called "sha256:sha256".
        (
            f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:sha256:{HEX}",
            "(this one has 71 characters after 'sha256:')",
        ),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@{HEX}", "is malformed"),
        ("nvcr.io/nvidia/k8s-device-plugin:v0.18.1@", "is malformed"),
        (f"nvcr.io/nvidia/k8s-device-plugin@sha256:{HEX}", "is not repository:tag"),
        ("nvcr.io/nvidia/k8s-device-plugin", "is not repository:tag"),
        ("nvcr.io/nvidia/k8s-device-plugin:-v1", "is not an image tag"),
    ],
)
def test_a_malformed_reference_says_what_is_wrong(ref, says):
    problem = image_refs.problem(ref)
    assert problem is not None and says in problem, problem
