"""EFA for multi-node GPU pools (components/aws/efa.py): the interface layout against the per-card
facts of AWS's catalogue (moto's copy, which the provider does not return), and the prod H100 pool
wired end to end: EFA interfaces in the EFA security group, one placement group, one subnet."""

from __future__ import annotations

import re

import pytest

from components.aws import efa
from gpu_platform.config import ConfigError
from preview.offline import engine
from preview.offline.aws_answers import instance_catalogue
from tests.conftest import stack_config, write_stack

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
EFA_TAG = "gpu-platform.io/efa-interfaces"
SECURITY_GROUP = "aws:ec2/securityGroup:SecurityGroup"


def _efa_groups(rec):
    """The stack's EFA security groups (the node image build has a group of its own)."""
    return [r for r in rec.of_type(SECURITY_GROUP) if r.name == "gpu-efa-sg"]


def _nvidia_efa_types():
    for name, row in sorted(instance_catalogue().items()):
        network = row["NetworkInfo"]
        if network.get("EfaSupported") and any(
            g.get("Manufacturer") == "NVIDIA" for g in (row.get("GpuInfo") or {}).get("Gpus", [])
        ):
            yield name, network


def test_every_interface_goes_on_a_card_that_takes_its_type_for_every_nvidia_efa_type():
    # The provider returns the card and EFA counts only; the catalogue's per-card InterfaceTypes are
    # the truth the derived layout must fit (a wrong type on a card fails the launch).
    checked = 0
    for name, network in _nvidia_efa_types():
        interfaces = efa.layout(network["MaximumNetworkCards"], network["EfaInfo"]["MaximumEfaInterfaces"])
        takes = {card["NetworkCardIndex"]: card["InterfaceTypes"] for card in network["NetworkCards"]}
        for interface in interfaces:
            assert interface.kind in takes[interface.card], (name, interface)
        assert sum(i.kind != "interface" for i in interfaces) == network["EfaInfo"]["MaximumEfaInterfaces"], name
        assert len({i.card for i in interfaces}) == len(interfaces), name  # one interface per card
        checked += 1
    assert checked >= 30


@pytest.mark.parametrize(
    "cards, efa_count, kinds",
    [
        (32, 32, ["efa"] + ["efa-only"] * 31),  # p5.48xlarge
        (17, 16, ["interface"] + ["efa-only"] * 16),  # p6-b300.48xlarge: card 0 takes no EFA
        (1, 1, ["efa"]),  # g5.48xlarge
    ],
)
def test_the_primary_interface_carries_the_ip_and_the_others_are_efa_only(cards, efa_count, kinds):
    interfaces = efa.layout(cards, efa_count)
    assert [i.kind for i in interfaces] == kinds
    assert [(i.card, i.device_index) for i in interfaces] == [(0, 0)] + [(c, 1) for c in range(1, cards)]


@pytest.mark.parametrize("cards, efa_count", [(4, 0), (4, 2), (2, 3), (0, 0)])
def test_counts_no_layout_fits_are_refused(cards, efa_count):
    with pytest.raises(ValueError, match="no EFA layout"):
        efa.layout(cards, efa_count)


def _h100(rec):
    (lt,) = [r for r in rec.of_type(LAUNCH_TEMPLATE) if r.name == "gpu-pool-h100-mig-lt"]
    (group,) = [r for r in rec.of_type(NODE_GROUP) if r.name == "gpu-pool-h100-mig-ng"]
    return lt, group


def test_the_prod_h100_pool_has_efa_wired_end_to_end(prod):
    lt, group = _h100(prod)
    nics = lt.inputs["networkInterfaces"]
    # p5.48xlarge: 32 network cards, 32 EFA interfaces (AWS's catalogue).
    assert len(nics) == 32
    assert [n["interfaceType"] for n in nics] == ["efa"] + ["efa-only"] * 31
    assert [int(n["networkCardIndex"]) for n in nics] == list(range(32))
    (efa_group,) = _efa_groups(prod)
    for nic in nics:
        assert len(nic["securityGroups"]) == 2 and nic["securityGroups"][1].startswith("sg-")
        assert "associatePublicIpAddress" not in nic
    # The EFA group admits all traffic from and to itself, and has no other rule.
    rules = [
        *prod.of_type("aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule"),
        *prod.of_type("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule"),
    ]
    assert len(rules) == 2
    for rule in rules:
        assert rule.inputs["ipProtocol"] == "-1"
        assert rule.inputs["securityGroupId"] == rule.inputs["referencedSecurityGroupId"]
    assert {r.inputs["securityGroupId"] for r in rules} == {nics[0]["securityGroups"][1]}
    assert efa_group.inputs["vpcId"].startswith("vpc-")
    # One cluster placement group, named in the template; the group launches in one subnet (one zone).
    (placement,) = prod.of_type("aws:ec2/placementGroup:PlacementGroup")
    assert placement.inputs["strategy"] == "cluster"
    # Its name is Pulumi's autoname (the logical name, "-", 7 hex digits), as the provider's Check sets it.
    assert re.fullmatch(rf"{placement.name}-[0-9a-f]{{7}}", lt.inputs["placement"]["groupName"])
    assert group.inputs["subnetIds"] == [prod.config["gpu-platform:cluster"]["subnetIds"][0]]
    assert lt.inputs["tags"][EFA_TAG] == group.inputs["tags"][EFA_TAG] == "32"


def test_the_l40s_pool_keeps_one_plain_interface_and_all_subnets(prod):
    (lt,) = [r for r in prod.of_type(LAUNCH_TEMPLATE) if r.name == "gpu-pool-l40s-lt"]
    (group,) = [r for r in prod.of_type(NODE_GROUP) if r.name == "gpu-pool-l40s-ng"]
    (nic,) = lt.inputs["networkInterfaces"]
    assert "interfaceType" not in nic and nic["associatePublicIpAddress"] == "false"
    assert "placement" not in lt.inputs
    assert group.inputs["subnetIds"] == prod.config["gpu-platform:cluster"]["subnetIds"]
    assert group.inputs["tags"][EFA_TAG] == "0"


def test_a_pool_launches_in_the_subnets_it_names(tmp_path):
    # The EFA pool picks its zone (the second cluster subnet here, not the first), and a pool
    # without EFA may name subnets outside cluster.subnetIds; the others keep the cluster's.
    config = stack_config("prod")
    cluster_subnets = config["gpu-platform:cluster"]["subnetIds"]
    config["gpu-platform:nodePools"][0]["subnetIds"] = [cluster_subnets[1]]
    config["gpu-platform:nodePools"][1]["subnetIds"] = ["subnet-0feedface0000001", "subnet-0feedface0000002"]
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    groups = {r.name: r.inputs["subnetIds"] for r in rec.of_type(NODE_GROUP) if r.name.startswith("gpu-pool-")}
    assert groups["gpu-pool-h100-mig-ng"] == [cluster_subnets[1]]
    assert groups["gpu-pool-l40s-ng"] == ["subnet-0feedface0000001", "subnet-0feedface0000002"]


def test_efa_false_turns_it_off_and_a_dev_stack_has_none(dev, tmp_path):
    config = stack_config("prod")
    config["gpu-platform:nodePools"][0]["efa"] = False
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    lt, group = _h100(rec)
    assert len(lt.inputs["networkInterfaces"]) == 1 and group.inputs["tags"][EFA_TAG] == "0"
    assert not rec.of_type("aws:ec2/placementGroup:PlacementGroup") and not _efa_groups(rec)
    assert not _efa_groups(dev)


def test_efa_true_on_a_type_without_efa_is_an_error_naming_the_key(tmp_path):
    config = stack_config("dev")  # l4: g6.2xlarge, no EFA in AWS's catalogue
    config["gpu-platform:nodePools"][0]["efa"] = True
    with pytest.raises(ConfigError) as error:
        engine.run(write_stack(tmp_path, config))
    assert str(error.value).startswith("gpu-platform:nodePools[0].efa: 'g6.2xlarge' has no Elastic Fabric Adapter")


def test_efa_true_on_another_efa_type_gets_its_layout(tmp_path):
    config = stack_config("prod")
    config["gpu-platform:nodePools"][1]["efa"] = True  # l40s: g6e.12xlarge, one card, one EFA
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    (lt,) = [r for r in rec.of_type(LAUNCH_TEMPLATE) if r.name == "gpu-pool-l40s-lt"]
    assert [n["interfaceType"] for n in lt.inputs["networkInterfaces"]] == ["efa"]
    assert len(rec.of_type("aws:ec2/placementGroup:PlacementGroup")) == 2
    assert len(_efa_groups(rec)) == 1  # one EFA group for the stack


def test_a_base_release_older_than_efa_in_the_standard_image_is_refused_before_the_bake(tmp_path):
    # amazon-eks-ami set enable_efa "true" for every AL2023 variant in v20260505 (v20260318: "false").
    config = stack_config("prod")
    config["gpu-platform:nodeImage"]["baseImageRelease"] = "v20260318"
    with pytest.raises(ConfigError) as error:
        engine.run(write_stack(tmp_path, config, name="prod"))
    assert str(error.value) == (
        "gpu-platform:nodeImage.baseImageRelease: 'v20260318' predates the EFA driver in the standard AL2023 image "
        "(amazon-eks-ami builds it in from v20260505), and nodePools[0] has EFA; pin gpu-platform:nodeImage.baseImageRelease "
        "to v20260505 or later, or set gpu-platform:nodePools[0].efa: false"
    )
    config["gpu-platform:nodePools"][0]["efa"] = False
    assert engine.run(write_stack(tmp_path, config, name="prod")).of_type(LAUNCH_TEMPLATE)


def test_an_adopted_cluster_with_efa_pools_is_warned_about_its_vpc_cni(tmp_path):
    config = stack_config("prod")
    config["gpu-platform:cluster"].update({"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False})
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    (warning,) = [w for w in rec.warnings if "efa-only" in w]
    assert "the adopted cluster 'gpu-shared' must run the VPC CNI 1.18.5 or later" in warning
    assert not [w for w in engine.run(engine.stack_file("prod")).warnings if "VPC CNI" in w]


def test_turning_a_pools_efa_off_leaves_the_node_image_as_it_is(prod, tmp_path):
    config = stack_config("prod")
    config["gpu-platform:nodePools"][0]["efa"] = False
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    component = ("aws:imagebuilder/component:Component", "gpu-node-image-driver")
    assert rec.one(*component).inputs == prod.one(*component).inputs


def test_an_image_on_a_base_before_efa_does_not_check_for_it(tmp_path):
    config = stack_config("dev")  # no EFA pool
    config["gpu-platform:nodeImage"]["baseImageRelease"] = "v20260318"
    rec = engine.run(write_stack(tmp_path, config))
    assert (
        "the EFA kernel driver"
        not in rec.one("aws:imagebuilder/component:Component", "gpu-node-image-driver").inputs["data"]
    )


def test_a_one_interface_efa_pool_still_says_no_public_address(tmp_path):
    config = stack_config("prod")
    config["gpu-platform:nodePools"][1]["efa"] = True  # g6e.12xlarge: one card, one EFA interface
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    (lt,) = [r for r in rec.of_type(LAUNCH_TEMPLATE) if r.name == "gpu-pool-l40s-lt"]
    (nic,) = lt.inputs["networkInterfaces"]
    assert nic["interfaceType"] == "efa" and nic["associatePublicIpAddress"] == "false"


def test_a_one_gpu_size_of_the_family_gets_no_efa_by_default(tmp_path):
    config = stack_config("prod")
    config["gpu-platform:nodePools"][1]["instanceType"] = "p5.4xlarge"  # one H100, one EFA interface
    assert "efa" not in config["gpu-platform:nodePools"][1]
    rec = engine.run(write_stack(tmp_path, config, name="prod"))
    (group,) = [r for r in rec.of_type(NODE_GROUP) if r.name == "gpu-pool-l40s-ng"]
    assert group.inputs["tags"][EFA_TAG] == "0"
