"""The node image is baked on a pinned EKS AMI release: AWS publishing a newer EKS AMI changes
nothing, and only a change of the pinned release (the stack's, or the per-minor default) rebuilds the
image, which `--against` shows."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from components.aws import base_image
from preview.offline import aws_answers, eks_ami_answers, engine
from preview.reports import changes
from preview.reports.report import as_json, clean
from tests.conftest import published_ami, stack_config, write_stack

RECIPE = "aws:imagebuilder/imageRecipe:ImageRecipe"
IMAGE = "aws:imagebuilder/image:Image"
BASE_RELEASE_TAG = "gpu-platform.io/base-image-release"
NEWER_AMI = "ami-0fedcba9876543210"


def _report(recording: engine.Recording) -> dict:
    return json.loads(as_json(recording, []))


def _inputs_by_urn(recording: engine.Recording) -> dict[str, dict]:
    return {r.urn: clean(r.inputs) for r in recording.resources}


@pytest.fixture
def aws_published_a_newer_ami(monkeypatch):
    """The offline answers as they are the day after AWS released a new EKS AMI: every
    `recommended` parameter points at it."""
    answers = {
        path: NEWER_AMI if path.endswith("/recommended/image_id") else ami
        for path, ami in eks_ami_answers.answers().items()
    }
    assert sum(ami == NEWER_AMI for ami in answers.values()) >= 8  # one per minor and flavour at least
    monkeypatch.setattr(eks_ami_answers, "answers", lambda: answers)


def test_a_newer_eks_ami_from_aws_changes_no_input_of_any_resource(dev, prod, aws_published_a_newer_ami):
    for before in (dev, prod):
        after = engine.run(engine.stack_file(before.stack))
        assert _inputs_by_urn(after) == _inputs_by_urn(before)


def test_the_default_base_is_the_minors_release_in_the_data_file(dev):
    recipe = dev.one(RECIPE, "gpu-node-image-recipe")
    # dev runs 1.33; gpu_platform/catalog/eks_ami_releases.yaml pins 1.33 to v20260714.
    assert recipe.inputs["parentImage"] == published_ami("1.33", "v20260714")
    assert "-v20260714-" in recipe.inputs["name"]
    image = dev.one(IMAGE, "gpu-node-image-image")
    assert image.inputs["tags"][BASE_RELEASE_TAG] == "v20260714"
    distribution = dev.one(
        "aws:imagebuilder/distributionConfiguration:DistributionConfiguration", "gpu-node-image-distribution"
    )
    assert (
        distribution.inputs["distributions"][0]["amiDistributionConfiguration"]["amiTags"][BASE_RELEASE_TAG]
        == "v20260714"
    )


@pytest.fixture(scope="module")
def pinned_older(dev, tmp_path_factory) -> tuple[engine.Recording, changes.Changes]:
    """dev with only `nodeImage.baseImageRelease: v20260625` (an older 1.33 release), and what
    `--against` reports between the two."""
    config = stack_config("dev")
    config["gpu-platform:nodeImage"]["baseImageRelease"] = "v20260625"
    pinned = engine.run(write_stack(tmp_path_factory.mktemp("pinned"), config, name="dev"))
    return pinned, changes.compare(_report(dev), _report(pinned))


def test_pinning_another_release_changes_the_recipes_parent_image(pinned_older):
    pinned, _ = pinned_older
    recipe = pinned.one(RECIPE, "gpu-node-image-recipe")
    assert recipe.inputs["parentImage"] == published_ami("1.33", "v20260625")
    assert recipe.inputs["parentImage"] != published_ami("1.33", "v20260714")
    assert "-v20260625-" in recipe.inputs["name"]


def test_against_reports_the_recipe_and_the_image_as_changed(pinned_older):
    _, diff = pinned_older
    assert not diff.added and not diff.removed
    changed = {c.resource.name: c.keys for c in diff.changed}
    # A new name: recipes are immutable, the replacement must not collide with the old one.
    assert {"name", "parentImage"} <= set(changed["gpu-node-image-recipe"])
    assert f"tags.{BASE_RELEASE_TAG}" in changed["gpu-node-image-image"]
    assert "gpu-node-image-driver" not in changed  # the install script did not change


def test_the_ssm_parameter_of_a_release_is_the_release_specific_name():
    assert base_image.parameter("1.33", "v20260714") == (
        "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/standard/"
        "amazon-eks-node-al2023-x86_64-standard-1.33-v20260714/image_id"
    )


def test_every_default_release_is_sourced_and_answered_offline():
    rows = yaml.safe_load(base_image.RELEASES.read_text())["defaults"]
    assert set(rows) >= {"1.33"}
    for minor, row in rows.items():
        release = row["release"]
        assert re.fullmatch(r"v20\d{6}", release), minor
        # The release version amazon-eks-ami prints for that minor: <minor>.<patch>-<date of the tag>.
        assert re.fullmatch(rf"{re.escape(minor)}\.\d+-{release[1:]}", row["releaseVersion"]), minor
        assert f"github.com/awslabs/amazon-eks-ami/releases/tag/{release}" in row["source"], minor
        answer, failures = aws_answers.answer(
            "aws:ssm/getParameter:getParameter", {"name": base_image.parameter(minor, release)}, {}
        )
        assert failures == [] and answer["value"].startswith("ami-"), minor


def test_a_release_aws_never_published_is_parameter_not_found():
    _, failures = aws_answers.answer(
        "aws:ssm/getParameter:getParameter", {"name": base_image.parameter("1.33", "v20990101")}, {}
    )
    assert failures and "ParameterNotFound" in failures[0][1]


def test_a_minor_without_a_default_release_is_an_error_naming_the_key(tmp_path, monkeypatch):
    # Every minor the config accepts has a default today; one added to the matrix before the data
    # file has a row must still be a clear error, not a lookup failure.
    from gpu_platform.config import ConfigError

    defaults = {minor: release for minor, release in base_image.default_releases().items() if minor != "1.33"}
    monkeypatch.setattr(base_image, "default_releases", lambda: defaults)
    with pytest.raises(ConfigError) as error:
        engine.run(write_stack(tmp_path, stack_config("dev")))
    assert str(error.value).startswith(
        "gpu-platform:nodeImage.baseImageRelease: no default EKS AMI release for Kubernetes '1.33'"
    )
