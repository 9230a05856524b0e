"""Operand images and the release: the release's image, or a patch bump through operator.overrides;
checked on each operand workload (which declares its release) and on the namespace (the overrides)."""

from __future__ import annotations

import pytest

from gpu_platform.catalog import matrix
from policy.images import is_patch_bump, operand_images_match_release, privileged_images_pinned_by_digest, split
from tests.policy.resources import namespace, workload
from tests.policy.verdict import violations

# Made-up digests, well-formed (sha256: and 64 lowercase hex digits); no registry is asked here.
# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("operand-images-match-release", "resource", "mandatory"),
    ("privileged-images-pinned-by-digest", "stack", "advisory"),
]


DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64
PLUGIN = "nvcr.io/nvidia/k8s-device-plugin"
VALIDATOR = "nvcr.io/nvidia/gpu-operator"


def release_workload(release: str, operand: str = "device-plugin", **kwargs):
    images = matrix.load().release(release).images
    return workload(operand=operand, image=images[operand], wait_image=images["validator"], release=release, **kwargs)


@pytest.mark.parametrize(
    "release, operand",
    [("v25.10.1", "device-plugin"), ("v26.3.3", "dcgm-exporter"), ("v24.3.0", "gpu-feature-discovery")],
)
def test_the_releases_own_images_pass(release, operand):
    assert violations(operand_images_match_release, [namespace(release), release_workload(release, operand)]) == []


@pytest.mark.parametrize(
    "operand, tag, image",
    [
        ("device-plugin", "v0.18.2", "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"),
        ("dcgm-exporter", "4.4.2-4.7.1-distroless", "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.1-distroless"),
    ],
)
def test_a_patch_bump_through_overrides_passes(operand, tag, image):
    resources = [
        namespace("v25.10.1", overrides=f"{operand}={tag}"),
        workload(operand=operand, image=image, overrides=f"{operand}={tag}"),
    ]
    assert violations(operand_images_match_release, resources) == []


def test_a_foreign_repository_fails_naming_both_images():
    found = violations(
        operand_images_match_release,
        [namespace("v25.10.1"), workload(image="docker.io/someone/k8s-device-plugin:v0.18.1")],
    )
    assert len(found) == 1
    message, urn = found[0]
    assert (
        "docker.io/someone/k8s-device-plugin:v0.18.1" in message
        and "nvcr.io/nvidia/k8s-device-plugin:v0.18.1" in message
    )
    assert "v25.10.1" in message and urn == workload().urn


def test_another_tag_without_an_override_fails_pointing_at_overrides():
    found = violations(
        operand_images_match_release,
        [namespace("v25.10.1"), workload(image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2")],
    )
    assert len(found) == 1 and "operator.overrides.device-plugin" in found[0][0] and "v0.18.1" in found[0][0]


def test_a_wait_container_of_another_release_fails():
    # v25.3.0's validator in a v25.10.1 stack.
    found = violations(
        operand_images_match_release,
        [namespace("v25.10.1"), workload(wait_image="nvcr.io/nvidia/gpu-operator:v25.3.0")],
    )
    assert len(found) == 1 and "wait-for-toolkit-ready" in found[0][0] and "v25.3.0" in found[0][0]


@pytest.mark.parametrize(
    "operand, tag",
    [("device-plugin", "v0.19.0"), ("mig-manager", "v0.13.0"), ("dcgm-exporter", "4.5.1-4.8.0-distroless")],
)
def test_an_override_that_is_not_a_patch_bump_fails_naming_both_tags(operand, tag):
    images = matrix.load().release("v25.10.1").images
    override = f"{operand}={tag}"
    resources = [
        namespace("v25.10.1", overrides=override),
        workload(operand=operand, image=images[operand].rsplit(":", 1)[0] + ":" + tag, overrides=override),
    ]
    found = violations(operand_images_match_release, resources)
    assert len(found) == 1
    message, urn = found[0]
    assert tag in message and images[operand].rsplit(":", 1)[1] in message and urn == namespace("v25.10.1").urn


@pytest.mark.parametrize(
    "release_tag, tag, bump",
    [
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
    ],
)
def test_patch_bump_reads_versions_inside_tags(release_tag, tag, bump):
    assert is_patch_bump(release_tag, tag) is bump


def test_an_operand_workload_that_declares_no_release_fails_instead_of_passing_unchecked():
    found = violations(operand_images_match_release, [workload(release=None)])
    assert len(found) == 1 and "declares no" in found[0][0] and found[0][1] == workload().urn


def test_a_workload_that_is_no_operand_is_not_checked():
    assert (
        violations(operand_images_match_release, [workload(operand=None, image="docker.io/library/busybox:1.36")]) == []
    )


def test_an_override_on_the_workload_lets_only_that_operands_tag_through():
    # The validator's override does not admit a device-plugin tag.
    found = violations(
        operand_images_match_release,
        [
            workload(
                image="nvcr.io/nvidia/k8s-device-plugin:v0.18.2",
                wait_image="nvcr.io/nvidia/gpu-operator:v25.10.2",
                overrides="validator=v25.10.2",
            )
        ],
    )
    assert len(found) == 1 and "v0.18.2" in found[0][0]


def test_an_override_of_another_line_names_the_newest_releases_that_ship_that_line():
    # From gpu_platform/catalog/matrix.yaml, written out: device-plugin v0.17.x ships with v24.9.0 through
    # v25.3.4; the message names the three newest of them.
    override = "device-plugin=v0.17.2"
    found = violations(operand_images_match_release, [namespace("v25.10.1", overrides=override)])
    assert len(found) == 1
    assert "or move to a release that ships that line (v25.3.2, v25.3.3, v25.3.4)" in found[0][0]


def test_an_override_of_a_line_no_release_ships_offers_no_release():
    found = violations(operand_images_match_release, [namespace("v25.10.1", overrides="device-plugin=v0.12.0")])
    assert len(found) == 1
    assert "move to a release" not in found[0][0] and "use a v0.18.x tag" in found[0][0]


@pytest.mark.parametrize(
    "ref, parts",
    [
        ("nvcr.io/nvidia/k8s-device-plugin:v0.18.1", ("nvcr.io/nvidia/k8s-device-plugin", "v0.18.1")),
        (
            "nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:" + "a" * 64,
            ("nvcr.io/nvidia/k8s-device-plugin", "v0.18.1"),
        ),
        (
            "registry.example.com:5000/nvidia/k8s-device-plugin:v0.18.1",
            ("registry.example.com:5000/nvidia/k8s-device-plugin", "v0.18.1"),
        ),
        (
            "registry.example.com:5000/nvidia/k8s-device-plugin",
            ("registry.example.com:5000/nvidia/k8s-device-plugin", ""),
        ),
        ("nvcr.io/nvidia/k8s-device-plugin", ("nvcr.io/nvidia/k8s-device-plugin", "")),
    ],
)
def test_an_image_reference_splits_at_its_tag_and_never_at_a_registry_port(ref, parts):
    assert split(ref) == parts


# -- digests ---------------------------------------------------------------------------------------


def test_a_digest_pinned_image_of_the_releases_tag_matches():
    resources = [
        namespace("v25.10.1"),
        workload(image=f"{PLUGIN}:v0.18.1@{DIGEST_A}", wait_image=f"{VALIDATOR}:v25.10.1@{DIGEST_B}"),
    ]
    assert violations(operand_images_match_release, resources) == []


def test_a_digest_does_not_make_a_wrong_tag_right():
    found = violations(
        operand_images_match_release, [namespace("v25.10.1"), workload(image=f"{PLUGIN}:v0.18.2@{DIGEST_A}")]
    )
    assert len(found) == 1
    assert (
        "tag v0.18.2 is not the release's v0.18.1" in found[0][0] and "operator.overrides.device-plugin" in found[0][0]
    )


def test_an_override_with_a_digest_passes_when_its_tag_is_a_patch_bump():
    override = f"device-plugin=v0.18.2@{DIGEST_A}"
    resources = [
        namespace("v25.10.1", overrides=override),
        workload(image=f"{PLUGIN}:v0.18.2@{DIGEST_A}", overrides=override),
    ]
    assert violations(operand_images_match_release, resources) == []


def test_an_override_with_a_digest_is_still_judged_by_its_tag():
    found = violations(
        operand_images_match_release, [namespace("v25.10.1", overrides=f"device-plugin=v0.19.0@{DIGEST_A}")]
    )
    assert len(found) == 1 and "sets tag v0.19.0," in found[0][0] and "v0.18.1" in found[0][0]


@pytest.mark.parametrize("runs, shown", [(f"{PLUGIN}:v0.18.2", "(none)"), (f"{PLUGIN}:v0.18.2@{DIGEST_B}", DIGEST_B)])
def test_a_workload_without_the_digest_the_override_pins_fails_naming_it(runs, shown):
    override = f"device-plugin=v0.18.2@{DIGEST_A}"
    found = violations(operand_images_match_release, [workload(image=runs, overrides=override)])
    assert len(found) == 1
    assert f"the digest {shown} is not {DIGEST_A}, which operator.overrides.device-plugin pins" in found[0][0]


# -- privileged-images-pinned-by-digest (advisory) ---------------------------------------------------


def _unprivileged(**kwargs):
    return workload(
        main_container={"securityContext": {"capabilities": {"drop": ["ALL"]}}, "volumeMounts": []},
        pod={"volumes": []},
        wait_image=None,
        **kwargs,
    )


def test_every_privileged_image_without_a_digest_is_named_once_with_the_override_that_pins_it():
    # workload(): the plugin container adds SYS_ADMIN and mounts the device-plugin socket directory;
    # the wait container mounts /run/nvidia/validations. Two such workloads: each image named once.
    other = workload(name="gpu-other-ds")
    found = violations(privileged_images_pinned_by_digest, [workload(), other])
    assert len(found) == 1
    message = found[0][0]
    assert message.startswith("2 image(s) run with privileges by tag only")
    assert (
        f"{PLUGIN}:v0.18.1 (DaemonSet gpu-device-plugin-ds, DaemonSet gpu-other-ds; pin: "
        f"operator.overrides.device-plugin: v0.18.1@sha256:<digest>)"
    ) in message
    assert (
        f"{VALIDATOR}:v25.10.1 (DaemonSet gpu-device-plugin-ds, DaemonSet gpu-other-ds; pin: operator.overrides.validator: v25.10.1@sha256:<digest>)"
        in message
    )


def test_privileged_images_pinned_by_digest_pass():
    assert (
        violations(
            privileged_images_pinned_by_digest,
            [workload(image=f"{PLUGIN}:v0.18.1@{DIGEST_A}", wait_image=f"{VALIDATOR}:v25.10.1@{DIGEST_B}")],
        )
        == []
    )


def test_an_unprivileged_image_needs_no_digest():
    assert violations(privileged_images_pinned_by_digest, [_unprivileged()]) == []


@pytest.mark.parametrize("namespace_key", ["hostNetwork", "hostPID", "hostIPC"])
def test_a_host_namespace_makes_every_container_of_the_pod_privileged(namespace_key):
    pod = workload(
        main_container={"securityContext": {}, "volumeMounts": []},
        wait_image=None,
        pod={"volumes": [], namespace_key: True},
    )
    found = violations(privileged_images_pinned_by_digest, [pod])
    assert len(found) == 1 and f"{PLUGIN}:v0.18.1 (DaemonSet gpu-device-plugin-ds;" in found[0][0]


def test_an_image_outside_the_operands_is_named_with_where_to_pin_it():
    efa = "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.6"
    found = violations(
        privileged_images_pinned_by_digest,
        [
            workload(
                operand=None,
                release=None,
                image=efa,
                wait_image=None,
                main_container={"securityContext": {"privileged": True}},
            )
        ],
    )
    assert len(found) == 1
    assert (
        f"{efa} (DaemonSet gpu-device-plugin-ds; pin: not an operator operand: where the program sets its image, "
        "e.g. the EFA device plugin's efa_device_plugin.tag in gpu_platform/catalog/aws_limits.yaml)"
    ) in found[0][0]


# -- through the offline preview -----------------------------------------------------------------------
# The dev stack's privileged images (GPU Operator v25.10.1's, gpu_platform/catalog/matrix.yaml), written out.
DEV_IMAGES = {
    "node-feature-discovery": "registry.k8s.io/nfd/node-feature-discovery:v0.18.2",
    "validator": "nvcr.io/nvidia/gpu-operator:v25.10.1",
    "device-plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
    "gpu-feature-discovery": "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
    "dcgm-exporter": "nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.0-distroless",
}


def _preview(tmp_path, config, name: str = "test"):
    import json

    from preview.__main__ import main
    from tests.conftest import write_stack

    report, manifests = tmp_path / "report.json", tmp_path / "manifests"
    code = main(
        ["--config", str(write_stack(tmp_path, config, name)), "--json", str(report), "--manifests", str(manifests)]
    )
    images = sorted(
        {
            line.split("image:", 1)[1].strip()
            for f in manifests.rglob("*.yaml")
            for line in f.read_text().splitlines()
            if line.strip().startswith("image:")
        }
    )
    return code, json.loads(report.read_text())["violations"], images


def test_the_dev_stack_passes_with_one_advisory_naming_each_privileged_image_without_a_digest(tmp_path):
    from tests.conftest import stack_config

    # Named dev: the stack's name is in its IAM policy's name, which its approved ledger covers.
    code, found, images = _preview(tmp_path, stack_config("dev"), "dev")
    assert code == 0
    [advisory] = [v for v in found if v["policy"] == "privileged-images-pinned-by-digest"]
    assert advisory["enforcementLevel"] == "advisory"
    assert advisory["message"].startswith(f"{len(set(DEV_IMAGES.values()))} image(s) run with privileges by tag only")
    assert all(f"{image} (" in advisory["message"] for image in DEV_IMAGES.values())
    assert images == sorted(set(DEV_IMAGES.values()))


def test_the_dev_stack_with_every_operand_pinned_by_digest_renders_the_digests_and_has_no_such_advisory(tmp_path):
    from tests.conftest import stack_config, unapproved

    config = unapproved(stack_config("dev"))  # the digests are in the privilege ledger
    digests = {operand: "sha256:" + f"{n:x}" * 64 for n, operand in enumerate(sorted(DEV_IMAGES), 1)}
    config["gpu-platform:operator"]["overrides"] = {
        op: DEV_IMAGES[op].rsplit(":", 1)[1] + "@" + digests[op] for op in DEV_IMAGES
    }
    code, found, images = _preview(tmp_path, config)
    assert code == 0
    assert [
        v for v in found if v["policy"] in ("privileged-images-pinned-by-digest", "operand-images-match-release")
    ] == []
    # GFD runs its own override's digest of the shared repository; the device plugin its own.
    assert images == sorted({f"{DEV_IMAGES[op]}@{digests[op]}" for op in DEV_IMAGES})


def test_the_dra_validator_is_held_to_the_validators_image_and_its_override():
    # It runs the validator's image (gpu_platform/catalog/operands.yaml `image: validator`), not any image of
    # the release: the DRA driver's image in its place is a violation naming the validator's key.
    def validator(image: str, overrides: str = ""):
        return workload(
            name="gpu-dra-validator-ds",
            operand="dra-validator",
            image=image,
            wait_image=None,
            gate="dra-validator",
            release="v26.7.0",
            overrides=overrides,
        )

    assert violations(operand_images_match_release, [namespace("v26.7.0"), validator(f"{VALIDATOR}:v26.7.0")]) == []
    found = violations(
        operand_images_match_release, [namespace("v26.7.0"), validator("nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0")]
    )
    assert len(found) == 1 and f"runs dra-validator as {VALIDATOR}:v26.7.0" in found[0][0]
    found = violations(operand_images_match_release, [namespace("v26.7.0"), validator(f"{VALIDATOR}:v26.7.1")])
    assert len(found) == 1 and "operator.overrides.validator: v26.7.1" in found[0][0]
    overridden = [
        namespace("v26.7.0", overrides="validator=v26.7.1"),
        validator(f"{VALIDATOR}:v26.7.1", overrides="validator=v26.7.1"),
    ]
    assert violations(operand_images_match_release, overridden) == []


def test_an_override_of_an_operand_older_releases_do_not_carry_is_a_violation_not_a_crash():
    # Only v26.7.0 ships the DRA driver (v0.5.0): an override of another line is judged like any other
    # operand's, though no other release has a dra-driver image to compare with.
    found = violations(operand_images_match_release, [namespace("v26.7.0", overrides="dra-driver=v0.4.1")])
    assert len(found) == 1
    assert "operator.overrides.dra-driver" in found[0][0] and "use a v0.5.x tag" in found[0][0]
    assert "move to a release" not in found[0][0]
