"""Two stacks of the project deploy side by side in one account and region: no AWS name that must be
unique there is the same in dev and prod, and a stack name Image Builder cannot spell still gets
names of its own."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from components.aws import node_image
from preview.offline import engine
from tests.conftest import stack_config, write_stack

# What AWS requires to be unique, and where: type -> the unique names a resource's inputs claim.
# Names AWS derives itself (Pulumi's auto-names, `namePrefix` + a random suffix) cannot collide.
UNIQUE_NAMES: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    # Per account and region.
    "aws:eks/cluster:Cluster": lambda i: [f"eks cluster {i['name']}"],
    "aws:imagebuilder/component:Component": lambda i: [f"image builder component {i['name']}"],
    "aws:imagebuilder/imageRecipe:ImageRecipe": lambda i: [f"image builder recipe {i['name']}"],
    "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration": lambda i: [
        f"image builder infrastructure {i['name']}"
    ],
    "aws:imagebuilder/distributionConfiguration:DistributionConfiguration": lambda i: [
        f"image builder distribution {i['name']}",
        # The AMIs it names are unique per account and region too (a build date is only seconds).
        *(f"ami {d['amiDistributionConfiguration']['name']}" for d in i["distributions"]),
    ],
    "aws:ec2/launchTemplate:LaunchTemplate": lambda i: [f"launch template {i['name']}"] if "name" in i else [],
    # Per account (IAM is global): the build role's own policy.
    "aws:iam/policy:Policy": lambda i: [f"iam policy {i['name']}"],
    # Per cluster.
    "aws:eks/nodeGroup:NodeGroup": lambda i: (
        [f"node group {i['clusterName']}/{i['nodeGroupName']}"] if "nodeGroupName" in i else []
    ),
}
NAME_INPUTS = ("name", "nodeGroupName")
IMAGE_BUILDER_NAME = re.compile(r"^[-_A-Za-z0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z0-9]$")  # botocore ResourceName


def unique_names(recording: engine.Recording) -> set[str]:
    return {name for r in recording.resources if r.type in UNIQUE_NAMES for name in UNIQUE_NAMES[r.type](r.inputs)}


def test_dev_and_prod_share_no_name_aws_requires_to_be_unique(dev, prod):
    names_dev, names_prod = unique_names(dev), unique_names(prod)
    assert names_dev and names_prod
    assert names_dev & names_prod == set()


def test_every_explicitly_named_aws_resource_is_classified(dev, prod):
    # A new resource with an explicit name must say here how AWS scopes that name.
    for recording in (dev, prod):
        named = {
            r.type for r in recording.resources if r.type.startswith("aws:") and any(k in r.inputs for k in NAME_INPUTS)
        }
        assert named <= set(UNIQUE_NAMES), named - set(UNIQUE_NAMES)


def test_image_builder_names_start_with_the_project_and_the_stack(dev, prod):
    for recording, stack in ((dev, "dev"), (prod, "prod")):
        for r in recording.resources:
            if r.type.startswith("aws:imagebuilder/") and "name" in r.inputs:
                assert r.inputs["name"].startswith(f"gpu-platform-{stack}-"), r.inputs["name"]


def test_the_eks_cluster_name_comes_from_the_stack_file(dev, prod):
    # Not derived from the stack: two stack files naming the same cluster would collide, which is
    # why docs/stack-file.md ("cluster") says cluster.name is unique per account and region.
    assert dev.one("aws:eks/cluster:Cluster", "gpu-cluster").inputs["name"] == "gpu-dev"
    assert prod.one("aws:eks/cluster:Cluster", "gpu-cluster").inputs["name"] == "gpu-prod"


@pytest.fixture(scope="module")
def dotted_and_dashed(tmp_path_factory) -> tuple[engine.Recording, engine.Recording]:
    """dev recorded as the stacks `team.dev` and `team-dev`: Pulumi allows both names, Image Builder
    spells neither dot."""
    path = write_stack(tmp_path_factory.mktemp("stacks"), stack_config("dev"), name="dev")
    return engine.run(path, stack="team.dev"), engine.run(path, stack="team-dev")


def test_a_stack_name_with_a_dot_gives_valid_names_of_its_own(dotted_and_dashed):
    dotted, dashed = dotted_and_dashed
    for recording in (dotted, dashed):
        for r in recording.resources:
            if r.type.startswith("aws:imagebuilder/") and "name" in r.inputs:
                assert IMAGE_BUILDER_NAME.match(r.inputs["name"]), r.inputs["name"]
    image_builder = {n for n in unique_names(dotted) if n.startswith("image builder")}
    assert image_builder and image_builder.isdisjoint(unique_names(dashed))


@pytest.mark.parametrize(
    "stacks", [("team_dev", "team-dev"), ("Dev", "dev"), ("team dev", "team-dev"), ("team.dev", "team-dev")]
)
def test_stack_names_image_builder_would_hold_the_same_get_different_scopes(stacks):
    # Image Builder: names that differ only in case, spaces or underscores are the same name.
    def canonical(text):
        return text.lower().replace("_", "-").replace(" ", "-")

    first, second = (node_image.stack_scope("gpu-platform", s) for s in stacks)
    assert canonical(first) != canonical(second)
    assert all(re.fullmatch(r"[a-z0-9-]+", scope) for scope in (first, second))


def test_the_ami_name_stays_within_awss_limit_with_the_build_date():
    prefix = node_image.ami_name_prefix(
        node_image.stack_scope("gpu-platform", "x" * 200), "gpu-node-image", "1.33", "580.105.08"
    )
    # An AMI name is at most 128 characters; the build date adds about 24 and a dash.
    assert len(prefix) + 1 + len("2026-11-30T10-11-12.123Z") <= 128
