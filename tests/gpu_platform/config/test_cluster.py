"""gpu-platform:cluster: its admins, the Kubernetes minors it accepts, and its public endpoint."""

from __future__ import annotations

import pytest

from gpu_platform import config as config_model
from preview.offline import engine


def test_cluster_admins_and_a_pinned_base_release_are_read_as_written():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"]["admins"] = [
        "arn:aws:iam::123456789012:role/ops/platform-admins",
        "arn:aws-us-gov:iam::123456789012:user/alice",
    ]
    raw["gpu-platform:nodeImage"]["baseImageRelease"] = "v20260625"
    parsed = config_model.parse(raw)
    assert parsed.cluster.admins == (
        "arn:aws:iam::123456789012:role/ops/platform-admins",
        "arn:aws-us-gov:iam::123456789012:user/alice",
    )
    assert parsed.node_image.base_image_release == "v20260625"


def test_without_them_no_admins_and_the_default_base_release():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"] = {**raw["gpu-platform:cluster"], "create": False}
    raw["gpu-platform:cluster"].pop("admins")
    parsed = config_model.parse(raw)
    assert parsed.cluster.admins == ()
    assert parsed.node_image.base_image_release is None  # the minor's row of gpu_platform/catalog/eks_ami_releases.yaml


@pytest.mark.parametrize("minor", ["1.25", "1.36"])
def test_the_config_model_accepts_every_minor_from_1_25(minor):
    # 1.24 is refused (tests/fixtures/bad_stacks.yaml, kubernetes-1-24); 1.25 is the first the model accepts (what
    # a release supports is the policies' question, not the model's).
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"]["kubernetesVersion"] = minor
    assert config_model.parse(raw).cluster.kubernetes_version == minor


def test_the_quota_of_public_access_cidrs_is_accepted_whole():
    # 40 blocks is EKS's quota L-93A74D60 (one more: bad_stacks.yaml, public-access-cidrs-above-quota).
    raw = engine.read_stack_file(engine.stack_file("dev"))
    blocks = [f"203.0.{i}.0/24" for i in range(40)]
    raw["gpu-platform:cluster"] = {
        **raw["gpu-platform:cluster"],
        "endpointPublicAccess": True,
        "publicAccessCidrs": blocks,
    }
    assert len(config_model.parse(raw).cluster.public_access_cidrs) == 40


def test_an_adopted_cluster_takes_no_endpoint_keys_but_a_private_endpoint_is_no_claim():
    # endpointPublicAccess: false is the default the stack would not act on either way: not refused.
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:cluster"] = {**raw["gpu-platform:cluster"], "create": False, "endpointPublicAccess": False}
    assert config_model.parse(raw).cluster.endpoint_public_access is False
