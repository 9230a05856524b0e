"""`nodeImage.source: eks-nvidia`: AWS's own accelerated AL2023 AMI of a pinned amazon-eks-ami release,
read from that release's SSM parameter of the nvidia flavour; its driver, toolkit and kernel are what
the release's CHANGELOG records, declared like a baked image's so that every policy checks them."""

from __future__ import annotations

import pytest

from gpu_platform.config.node_image import NodeImage
from preview.offline import analyze, aws_answers, engine
from tests.components.aws.conftest import IMAGE, LAUNCH_TEMPLATE, NODE_GROUP, launch_template, node_group
from tests.conftest import FIXTURES, record_mode

STACK = FIXTURES / "passing" / "eks-nvidia.yaml"
# amazon-eks-ami CHANGELOG.md at 15822511, "AMI Release v20260714", Kubernetes 1.33, AL2023_x86_64_NVIDIA:
# kmod-nvidia-latest-dkms 580.159.03-1.amzn2023 (line 363), nvidia-container-toolkit 1.19.1-1 (line 370).
DRIVER, TOOLKIT = "580.159.03", "1.19.1"
PARAMETER = (
    "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/"
    "amazon-eks-node-al2023-x86_64-nvidia-1.33-v20260714/image_id"
)


@pytest.fixture(scope="module")
def rec() -> engine.Recording:
    return record_mode(STACK, engine.UP)


@pytest.mark.parametrize("mode", engine.MODES)
def test_the_stack_previews_and_passes_every_policy(mode):
    # But the advisory that every stack has while the matrix pins no image digest (tests/policy/test_images.py).
    assert [
        v for v in analyze.analyze(record_mode(STACK, mode)) if v.policy != "privileged-images-pinned-by-digest"
    ] == []


def test_the_nodes_boot_the_ami_of_the_release_specific_nvidia_parameter(rec):
    ami, failures = aws_answers.answer("aws:ssm/getParameter:getParameter", {"name": PARAMETER}, rec.config)
    assert not failures
    for pool in ("l4", "h100"):
        assert launch_template(rec, pool).inputs["imageId"] == ami["value"]
    # Nothing is built, and nothing asks for `recommended`.
    assert not [r for r in rec.resources if r.type.startswith("aws:imagebuilder/")]


def test_launch_templates_and_node_groups_declare_awss_driver_and_toolkit(rec):
    for pool in ("l4", "h100"):
        for resource in (launch_template(rec, pool), node_group(rec, pool)):
            tags = resource.inputs["tags"]
            assert tags["gpu-platform.io/driver-version"] == DRIVER
            assert tags["gpu-platform.io/toolkit-baked"] == "true"
            assert tags["gpu-platform.io/toolkit-version"] == TOOLKIT
            assert tags["gpu-platform.io/base-image-release"] == "v20260714"
        assert launch_template(rec, pool).inputs["tags"]["gpu-platform.io/image-source"] == "eks-nvidia"
    assert not rec.of_type(IMAGE)
    # AWS's AMI carries the toolkit and nodeadm makes nvidia the default runtime: no toolkit DaemonSet.
    assert not [r for r in rec.of_type("kubernetes:apps/v1:DaemonSet") if "toolkit" in r.name]


def test_the_policies_check_awss_driver_as_they_check_a_baked_one(tmp_path):
    # v24.9.1 supports driver branches 565, 560, 550 and 535 (matrix.yaml), not AWS's 580.
    text = STACK.read_text().replace("release: v25.10.1", "release: v24.9.1").replace('"1.33"', '"1.31"')
    path = tmp_path / "Pulumi.old-release.yaml"
    path.write_text(text)
    found = analyze.analyze(engine.run(path))
    flagged = {(v.policy, v.urn.rsplit("::", 1)[1]) for v in found}
    assert ("driver-branch-supported-by-release", "gpu-pool-l4-lt") in flagged
    assert ("driver-branch-supported-by-release", "gpu-pool-h100-lt") in flagged


def test_the_driver_of_the_release_is_the_default_and_another_is_refused():
    base = {"source": "eks-nvidia", "release": "v20260714"}
    assert NodeImage.model_validate(base).driver_version == DRIVER
    assert NodeImage.model_validate(base).toolkit_baked is True
    with pytest.raises(ValueError, match="not the driver of the v20260714 nvidia AMI"):
        NodeImage.model_validate({**base, "driverVersion": "580.105.08"})


def test_every_recorded_release_names_its_ami_as_the_changelog_does():
    from gpu_platform.catalog import matrix

    for release, amis in matrix.load().eks_nvidia_amis.items():
        for minor, ami in amis.items():
            assert ami.ami_name == f"amazon-eks-node-al2023-x86_64-nvidia-{minor}-{release}"
            assert ami.release_version.startswith(f"{minor}.") and ami.release_version.endswith(release[1:])
            assert ami.kernel.startswith("kernel") and ami.driver.count(".") == 2
            assert "CHANGELOG.md lines" in ami.source


def test_a_node_group_of_an_eks_nvidia_stack_launches_from_its_template(rec):
    for pool in ("l4", "h100"):
        assert launch_template(rec, pool).urn in rec.waits_for(node_group(rec, pool).urn)
    assert rec.of_type(LAUNCH_TEMPLATE) and rec.of_type(NODE_GROUP)
