"""The node image: baked with Image Builder (driver, fabric manager only for NVSwitch families), or a
pinned AMI; either way its facts are tags a policy can read."""

from __future__ import annotations

import re

import pytest
import yaml

from components.aws.node_image import ARCHITECTURE_TAG, BUILD_TIMEOUT, TOOLKIT_VERSION_TAG
from gpu_platform.catalog import matrix
from gpu_platform.interface import contract
from tests.components.aws.conftest import IMAGE, LAUNCH_TEMPLATE, NVSWITCH_FAMILIES, launch_template, pool_names
from tests.conftest import published_ami

COMPONENT = "aws:imagebuilder/component:Component"
IMAGE_BUILDER = "aws:imagebuilder/"
PINNED = "ami-0123456789abcdef0"


def _document(rec) -> dict:
    return yaml.safe_load(rec.one(COMPONENT, "gpu-node-image-driver").inputs["data"])


def _build_commands(rec) -> str:
    (build,) = [p for p in _document(rec)["phases"] if p["name"] == "build"]
    return "\n".join(c for step in build["steps"] for c in step["inputs"]["commands"])


def _pinned(config):
    config["gpu-platform:nodeImage"] = {"source": "ami", "amiId": PINNED, "driverVersion": "580.105.08"}


def test_fabric_manager_is_baked_only_for_nvswitch_families(family):
    name, rec = family
    commands = _build_commands(rec)
    nvswitch = name in NVSWITCH_FAMILIES
    assert ("export FABRIC_MANAGER=true" in commands) is nvswitch
    assert ("export FABRIC_MANAGER=false" in commands) is not nvswitch
    software = launch_template(rec, name).inputs["tags"][contract.AUDIT_TAG_SOFTWARE]
    assert ("nvidia-fabricmanager" in software) is nvswitch


def test_the_component_installs_the_pinned_driver_and_proves_it_loads(shipped):
    driver = shipped.config["gpu-platform:nodeImage"]["driverVersion"]
    commands = _build_commands(shipped)
    assert f"export DRIVER_VERSION={driver}" in commands
    # Both shipped stacks bake the toolkit of their release (v25.10.1: container-toolkit v1.18.1).
    assert shipped.config["gpu-platform:nodeImage"]["toolkitBaked"] is True
    assert "export TOOLKIT_VERSION=1.18.1\n" in commands
    (test,) = [p for p in _document(shipped)["phases"] if p["name"] == "test"]
    tests = "\n".join(c for step in test["steps"] for c in step["inputs"]["commands"])
    assert "nvidia-smi" in tests and driver in tests


def test_a_baked_toolkit_is_installed_and_declared(dev):
    rec = dev
    toolkit = matrix.load().release(rec.config["gpu-platform:operator"]["release"]).toolkit_version
    assert f"export TOOLKIT_VERSION={toolkit}" in _build_commands(rec)
    tags = rec.one(IMAGE, "gpu-node-image-image").inputs["tags"]
    assert tags[contract.TOOLKIT_BAKED_TAG] == "true"
    assert tags[TOOLKIT_VERSION_TAG] == toolkit


def test_the_recipe_starts_from_the_eks_optimized_image_of_the_clusters_version(shipped):
    recipe = shipped.one("aws:imagebuilder/imageRecipe:ImageRecipe", "gpu-node-image-recipe")
    # Both shipped stacks run 1.33, whose default release is v20260714; offline its AMI is this one.
    assert shipped.config["gpu-platform:cluster"]["kubernetesVersion"] == "1.33"
    assert recipe.inputs["parentImage"] == published_ami("1.33", "v20260714")
    (mapping,) = recipe.inputs["blockDeviceMappings"]
    assert mapping["ebs"]["encrypted"] == "true" and mapping["ebs"]["volumeType"] == "gp3"


def test_the_build_runs_on_a_gpu_with_imdsv2_and_a_long_timeout(shipped):
    infra = shipped.one(
        "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", "gpu-node-image-infrastructure"
    )
    assert infra.inputs["instanceTypes"][0].startswith(("g", "p"))
    assert infra.inputs["instanceMetadataOptions"] == {"httpTokens": "required", "httpPutResponseHopLimit": 1}
    assert infra.inputs["terminateInstanceOnFailure"] is True
    assert int(BUILD_TIMEOUT.rstrip("m")) > 60  # Image Builder's default leaves no margin for a driver build


def test_the_build_instance_profile_is_image_builders_minimum(shipped):
    role = shipped.one("aws:iam/role:Role", "gpu-node-image-builder")
    attached = [
        a for a in shipped.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment") if role.urn in a.dependencies
    ]
    # Not AmazonSSMManagedInstanceCore (every SSM parameter of the account): the stack's own policy.
    assert sorted(a.inputs["policyArn"] for a in attached) == [
        f"arn:aws:iam::123456789012:policy/gpu-platform-{shipped.stack}-gpu-node-image-ssm-agent",
        "arn:aws:iam::aws:policy/EC2InstanceProfileForImageBuilder",
    ]


def test_the_build_instance_may_run_the_ssm_agent_and_read_no_parameter(shipped):
    import json

    policy = shipped.one("aws:iam/policy:Policy", "gpu-node-image-builder-ssm-agent")
    actions = {a for s in json.loads(policy.inputs["policy"])["Statement"] for a in s["Action"]}
    # The agent registers, takes Run Command's messages and opens its channels (AmazonSSMManagedInstanceCore v2).
    assert {
        "ssm:UpdateInstanceInformation",
        "ec2messages:GetMessages",
        "ec2messages:SendReply",
        "ssmmessages:CreateControlChannel",
        "ssmmessages:OpenControlChannel",
    } <= actions
    assert not any(a.startswith(("ssm:GetParameter", "ssm:PutParameter", "ssm:*", "*")) for a in actions), actions
    assert all(a.startswith(("ssm:UpdateInstanceInformation", "ec2messages:", "ssmmessages:")) for a in actions), (
        actions
    )


def test_the_build_waits_for_its_own_policy(shipped):
    attachment = shipped.one("aws:iam/rolePolicyAttachment:RolePolicyAttachment", "gpu-node-image-builder-ssm-agent")
    policy = shipped.one("aws:iam/policy:Policy", "gpu-node-image-builder-ssm-agent")
    assert policy.urn in shipped.waits_for(attachment.urn)
    assert attachment.urn in shipped.waits_for(shipped.one(IMAGE, "gpu-node-image-image").urn)


def test_image_and_its_ami_declare_driver_kubernetes_architecture_and_audit(shipped):
    node_image = shipped.config["gpu-platform:nodeImage"]
    image = shipped.one(IMAGE, "gpu-node-image-image")
    distribution = shipped.one(
        "aws:imagebuilder/distributionConfiguration:DistributionConfiguration", "gpu-node-image-distribution"
    )
    ami_tags = distribution.inputs["distributions"][0]["amiDistributionConfiguration"]["amiTags"]
    for tags in (image.inputs["tags"], ami_tags):
        assert tags[contract.DRIVER_VERSION_TAG] == node_image["driverVersion"]
        assert tags[contract.KUBERNETES_VERSION_TAG] == shipped.config["gpu-platform:cluster"]["kubernetesVersion"]
        assert tags[ARCHITECTURE_TAG] == "x86_64"
        assert tags[contract.AUDIT_TAG_APPROVAL] == shipped.config["gpu-platform:audit"]["approval"]
        assert node_image["driverVersion"] in tags[contract.AUDIT_TAG_SOFTWARE]


def test_component_and_recipe_names_change_with_what_they_build(dev, record_variant):
    def newer(config):
        config["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"

    other = record_variant("driver-580.95.05", newer)
    for type_, name in (
        (COMPONENT, "gpu-node-image-driver"),
        ("aws:imagebuilder/imageRecipe:ImageRecipe", "gpu-node-image-recipe"),
    ):
        # Same name and version would collide with the old one during create-before-delete.
        assert dev.one(type_, name).inputs["name"] != other.one(type_, name).inputs["name"]


def test_a_pinned_ami_has_no_image_builder_and_is_used_by_id(record_variant):
    rec = record_variant("pinned-ami", _pinned)
    assert not [r for r in rec.resources if r.type.startswith(IMAGE_BUILDER)]
    assert not [r for r in rec.resources if r.type == "aws:iam/role:Role" and r.name == "gpu-node-image-builder"]
    for pool in pool_names(rec):
        lt = launch_template(rec, pool)
        assert lt.inputs["imageId"] == PINNED
        assert lt.inputs["tags"][contract.DRIVER_VERSION_TAG] == "580.105.08"
        assert lt.inputs["tags"][contract.KUBERNETES_VERSION_TAG] == "1.33"
        assert lt.inputs["tags"][ARCHITECTURE_TAG] == "x86_64"
    assert rec.of_type(LAUNCH_TEMPLATE)


IMAGE_BUILDER_NAME = re.compile(r"^[-_A-Za-z0-9][-_A-Za-z0-9 ]{1,126}[-_A-Za-z0-9]$")  # botocore ResourceName


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_image_builder_names_are_names_image_builder_accepts(stack, dev, prod):
    recording = {"dev": dev, "prod": prod}[stack]
    named = [r for r in recording.resources if r.type.startswith("aws:imagebuilder/") and "name" in r.inputs]
    assert len(named) == 4  # component, recipe, infrastructure and distribution configurations
    for r in named:
        assert IMAGE_BUILDER_NAME.match(r.inputs["name"]), (r.type, r.inputs["name"])


def test_the_image_builds_in_the_clusters_first_subnet_behind_an_egress_only_group(dev):
    infrastructure = dev.one(
        "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", "gpu-node-image-infrastructure"
    )
    group = dev.one("aws:ec2/securityGroup:SecurityGroup", "gpu-node-image-build")
    assert infrastructure.inputs["subnetId"] == dev.config["gpu-platform:cluster"]["subnetIds"][0]
    assert group.urn in infrastructure.dependencies
    assert not group.inputs.get("ingress")
    assert sorted(rule["fromPort"] for rule in group.inputs["egress"]) == [80, 443]
    assert group.inputs["vpcId"].startswith("vpc-")


def test_the_build_waits_for_the_builder_roles_policies(shipped):
    # The build instance reports to Image Builder and is driven through SSM with these policies.
    role = shipped.one("aws:iam/role:Role", "gpu-node-image-builder")
    policies = {
        a.urn
        for a in shipped.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if role.urn in a.dependencies
    }
    assert len(policies) == 2
    assert policies <= shipped.waits_for(shipped.one(IMAGE, "gpu-node-image-image").urn)


def test_the_component_document_fits_what_image_builder_takes(family):
    # InlineComponentData is at most 16000 characters (botocore imagebuilder/2019-12-02/service-2.json;
    # terraform-provider-aws v5.42.0 internal/service/imagebuilder/component.go line 54): longer, and
    # the real `pulumi up` fails before any bake. Every family, the NVSwitch ones carrying both scripts.
    name, rec = family
    data = rec.one(COMPONENT, "gpu-node-image-driver").inputs["data"]
    assert len(data) <= 16000, (name, len(data))


def test_the_scripts_unpack_to_exactly_the_files_in_the_repository(family, tmp_path):
    import subprocess

    from components.aws.image_component import INSTALL_SCRIPT, NVSWITCH_SCRIPT

    name, rec = family
    commands = _build_commands(rec)
    for marker, script in (("GPU_PLATFORM_INSTALL", INSTALL_SCRIPT), ("GPU_PLATFORM_NVSWITCH", NVSWITCH_SCRIPT)):
        if f"<<'{marker}'" not in commands:
            assert script is NVSWITCH_SCRIPT and name not in NVSWITCH_FAMILIES
            continue
        body = commands.split(f"<<'{marker}'", 1)[1].split("\n", 1)[1].split(f"\n{marker}\n", 1)[0]
        unpacked = subprocess.run(
            ["bash", "-c", "base64 -d | gunzip"], input=body.encode(), capture_output=True, check=True
        ).stdout
        assert unpacked == script.read_bytes(), (name, marker)
