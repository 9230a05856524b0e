"""GPU node pools, for both shipped stacks and one pool of every GPU family in AWS's catalogue."""

from __future__ import annotations

import re

import pytest

from gpu_platform.interface import contract
from preview.offline.aws_answers import instance_catalogue
from tests.components.aws.conftest import (
    FAMILIES,
    IMAGE,
    LAUNCH_TEMPLATE,
    launch_template,
    node_group,
    pool_names,
    record_family,
)
from tests.conftest import unapproved

AUDIT_SOFTWARE = contract.AUDIT_TAG_SOFTWARE


def _pools(rec):
    return [(p, launch_template(rec, p), node_group(rec, p)) for p in pool_names(rec)]


def _catalogue_gpu(instance_type: str) -> dict:
    return instance_catalogue()[instance_type]["GpuInfo"]["Gpus"][0]


def test_gpu_model_and_count_tags_come_from_the_catalogue(family):
    name, rec = family
    gpu = _catalogue_gpu(FAMILIES[name])
    for _, lt, ng in _pools(rec):
        for tags in (lt.inputs["tags"], ng.inputs["tags"]):
            # The matrix key starts with AWS's own name (A100-40GB, H200-141GB, L4 ...).
            assert tags[contract.GPU_MODEL_TAG].startswith(gpu["Name"]), tags[contract.GPU_MODEL_TAG]
            assert tags[contract.GPU_COUNT_TAG] == str(gpu["Count"])


@pytest.mark.parametrize("name, model", [("p4d", "A100-40GB"), ("p4de", "A100-80GB")])
def test_a100_variants_are_told_apart_by_the_catalogues_memory(record_variant, name, model):
    rec = record_family(record_variant, name)
    assert launch_template(rec, name).inputs["tags"][contract.GPU_MODEL_TAG] == model


def test_shipped_pools_carry_their_catalogue_gpus(shipped):
    for pool in shipped.config["gpu-platform:nodePools"]:
        gpu = _catalogue_gpu(pool["instanceType"])
        tags = node_group(shipped, pool["name"]).inputs["tags"]
        assert tags[contract.GPU_COUNT_TAG] == str(gpu["Count"])
        assert tags[contract.GPU_MODEL_TAG].startswith(gpu["Name"])


def test_the_baked_ami_flows_from_image_to_launch_template_to_node_group(shipped):
    image = shipped.one(IMAGE, "gpu-node-image-image")
    for _, lt, ng in _pools(shipped):
        assert image.urn in lt.dependencies
        assert lt.inputs["imageId"].startswith("ami-")
        assert lt.urn in ng.dependencies
        assert ng.inputs["launchTemplate"]["id"].startswith("lt-")
        # The group follows the template's latest version, so a new AMI rolls the group.
        assert ng.inputs["launchTemplate"]["version"] == "1"
        assert lt.inputs["updateDefaultVersion"] is True


def test_every_gpu_pool_is_tainted_and_labelled_present(shipped, family):
    for rec in (shipped, family[1]):
        for pool, _, ng in _pools(rec):
            assert ng.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
            labels = ng.inputs["labels"]
            assert labels["nvidia.com/gpu.present"] == "true"
            assert labels[contract.POOL_LABEL] == pool
            assert labels[contract.DEVICE_PLUGIN_CONFIG_LABEL] == pool
            assert labels[contract.gate_label("device-plugin")] == "true"


def test_only_mig_pools_carry_a_mig_configuration_label(prod):
    assert node_group(prod, "h100-mig").inputs["labels"][contract.MIG_CONFIG_LABEL] == "all-balanced"
    assert contract.MIG_CONFIG_LABEL not in node_group(prod, "l40s").inputs["labels"]


def test_launch_templates_require_imdsv2_with_one_hop_and_no_tags_in_metadata(shipped, family):
    # instanceMetadataTags explicitly disabled: an account-level IMDS default could turn tags in
    # metadata on, and our tag keys (gpu-platform.io/...) contain '/', which then fails every launch.
    for rec in (shipped, family[1]):
        templates = [lt for _, lt, _ in _pools(rec)] + [rec.one(LAUNCH_TEMPLATE, "gpu-cluster-system")]
        for lt in templates:
            assert lt.inputs["metadataOptions"] == {
                "httpEndpoint": "enabled",
                "httpTokens": "required",
                "httpPutResponseHopLimit": 1,
                "instanceMetadataTags": "disabled",
            }, lt.name


def test_root_volume_is_encrypted_gp3_sized_from_the_pool(shipped):
    for pool in shipped.config["gpu-platform:nodePools"]:
        (mapping,) = launch_template(shipped, pool["name"]).inputs["blockDeviceMappings"]
        assert mapping["deviceName"] == "/dev/xvda"
        assert mapping["ebs"]["volumeType"] == "gp3"
        assert mapping["ebs"]["encrypted"] == "true"
        assert mapping["ebs"]["volumeSize"] == pool.get("rootVolumeGiB", 200)


def test_root_volume_size_follows_root_volume_gib(record_variant):
    def bigger(config):
        config["gpu-platform:nodePools"][0]["rootVolumeGiB"] = 500

    rec = record_variant("root-500", bigger)
    assert launch_template(rec, "l4").inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 500


def test_nodes_get_no_public_ip(shipped):
    for _, lt, _ in _pools(shipped):
        nics = lt.inputs["networkInterfaces"]
        if len(nics) == 1:
            assert nics[0]["associatePublicIpAddress"] == "false"
        else:
            # EC2 refuses AssociatePublicIpAddress with more than one interface, and assigns no public
            # address then (botocore ec2 service-2.json, InstanceNetworkInterfaceSpecification).
            assert all("associatePublicIpAddress" not in nic for nic in nics)
        for nic in nics:
            assert nic["securityGroups"] and all(sg.startswith("sg-") for sg in nic["securityGroups"])


def test_node_groups_follow_the_custom_ami_rules(shipped, family):
    for rec in (shipped, family[1]):
        for _, _, ng in _pools(rec):
            for forbidden in ("amiType", "version", "releaseVersion", "diskSize", "remoteAccess"):
                assert forbidden not in ng.inputs, forbidden


def test_node_groups_roll_with_a_budget_and_scale_from_the_pool(shipped):
    for pool in shipped.config["gpu-platform:nodePools"]:
        ng = node_group(shipped, pool["name"])
        assert ng.inputs["updateConfig"] == {"maxUnavailablePercentage": 25, "updateStrategy": "DEFAULT"}
        assert ng.inputs["scalingConfig"] == {
            "minSize": pool["minSize"],
            "desiredSize": pool["desiredSize"],
            "maxSize": pool["maxSize"],
        }
        assert ng.inputs["capacityType"] == pool.get("capacityType", "ON_DEMAND")
        assert ng.inputs["instanceTypes"] == [pool["instanceType"]]
        assert "scalingConfig.desiredSize" in ng.ignore_changes


def test_node_groups_run_as_the_node_role(shipped):
    role = shipped.one("aws:iam/role:Role", "gpu-node-role")
    for _, _, ng in _pools(shipped):
        assert role.urn in ng.dependencies
        # pulumi-aws names the role: its logical name, "-" and 7 random hex digits.
        assert re.search(r":role/gpu-node-role-[0-9a-f]{7}$", ng.inputs["nodeRoleArn"]), ng.inputs["nodeRoleArn"]


def test_launch_templates_and_node_groups_carry_the_driver_and_audit_tags(shipped):
    node_image = shipped.config["gpu-platform:nodeImage"]
    audit = shipped.config["gpu-platform:audit"]
    for _, lt, ng in _pools(shipped):
        for tags in (lt.inputs["tags"], *(s["tags"] for s in lt.inputs["tagSpecifications"]), ng.inputs["tags"]):
            assert tags[contract.DRIVER_VERSION_TAG] == node_image["driverVersion"]
            assert tags[contract.AUDIT_TAG_OWNER] == audit["owner"]
            assert f"nvidia-driver {node_image['driverVersion']}" in tags[AUDIT_SOFTWARE]
            assert tags["gpu-platform.io/stack"] == shipped.stack
        # The approval id on the template's and group's own tags, which change in place; not on the
        # instances, whose tags are template content (a new approval would roll every node).
        assert (
            lt.inputs["tags"][contract.AUDIT_TAG_APPROVAL]
            == ng.inputs["tags"][contract.AUDIT_TAG_APPROVAL]
            == audit["approval"]
        )
        assert [contract.AUDIT_TAG_APPROVAL in s["tags"] for s in lt.inputs["tagSpecifications"]] == [False, False]


def test_a_capacity_block_pool_launches_into_its_reservation(variant):
    def capacity_block(config):
        pool = config["gpu-platform:nodePools"][0]
        pool.update(
            {
                "instanceType": "p5.48xlarge",
                "capacityType": "CAPACITY_BLOCK",
                "capacityReservationId": "cr-0a1b2c3d4e5f60718",
                "subnetIds": ["subnet-0a1b2c3d4e5f60002"],
            }
        )
        pool.pop("timeSlicing", None)

    recording = variant(capacity_block)
    template = recording.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt")
    assert template.inputs["instanceMarketOptions"] == {"marketType": "capacity-block"}
    target = template.inputs["capacityReservationSpecification"]["capacityReservationTarget"]
    assert target == {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}
    group = recording.one("aws:eks/nodeGroup:NodeGroup", "gpu-pool-l4-ng")
    assert group.inputs["capacityType"] == "CAPACITY_BLOCK"
    # Only the reservation's zone (a Capacity Block is zonal; EKS guide capacity-blocks-mng.adoc:64).
    assert group.inputs["subnetIds"] == ["subnet-0a1b2c3d4e5f60002"]


def test_an_on_demand_pool_has_no_market_options(dev):
    template = dev.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt")
    assert "instanceMarketOptions" not in template.inputs
    assert "capacityReservationSpecification" not in template.inputs


# The cluster autoscaler's template node of an empty pool: one ASG tag per resource
# (cluster-autoscaler-1.33.6 cloudprovider/aws/aws_manager.go lines 285-289 and 436-456).
ASG_TAG = "aws:autoscaling/tag:Tag"
CA_PREFIX = "k8s.io/cluster-autoscaler/node-template/resources/"


def _autoscaler_tags(rec, pool: str) -> dict[str, str]:
    parent = node_group(rec, pool).parent
    tags = [r.inputs["tag"] for r in rec.children(parent) if r.type == ASG_TAG]
    return {t["key"].removeprefix(CA_PREFIX): t["value"] for t in tags}


def test_the_mig_pools_asg_offers_each_profile_and_no_whole_gpu(prod):
    # p5.48xlarge: 8 H100 80GB (AWS's instance catalogue). all-balanced on an H100 80GB carves
    # 2 x 1g.10gb, 1 x 2g.20gb and 1 x 3g.40gb (gpu-operator v25.10.1
    # assets/state-mig-manager/0400_configmap.yaml lines 412-419); under the mixed strategy a MIG GPU is
    # no nvidia.com/gpu (k8s-device-plugin v0.18.1 internal/rm/device_map.go lines 120-122).
    gpu_tags = {k: v for k, v in _autoscaler_tags(prod, "h100-mig").items() if k.startswith("nvidia.com/")}
    assert gpu_tags == {
        "nvidia.com/gpu": "0",
        "nvidia.com/mig-1g.10gb": "16",
        "nvidia.com/mig-2g.20gb": "8",
        "nvidia.com/mig-3g.40gb": "8",
    }


def test_an_efa_pools_asg_offers_its_efa_devices(prod):
    # p5.48xlarge: 32 EFA interfaces, one per network card (AWS's instance catalogue), which the EFA device
    # plugin advertises as vpc.amazonaws.com/efa (EKS User Guide 4d52b4d0 latest/ug/ml/node-efa.adoc:138,
    # its p5.48xlarge job asks for 32: line 260). Without the tag an empty pool never scales up for such a pod.
    assert _autoscaler_tags(prod, "h100-mig")["vpc.amazonaws.com/efa"] == "32"


def test_a_dra_efa_pools_asg_offers_its_efa_devices(dra):
    # The EFA device plugin runs on a DRA pool too: only the GPUs leave the extended resources.
    assert _autoscaler_tags(dra, "h100")["vpc.amazonaws.com/efa"] == "32"


def test_the_time_sliced_pools_asg_offers_its_gpu_times_the_replicas(dev):
    # g6.2xlarge: one L4; timeSlicing replicas 4 (stacks/Pulumi.dev.yaml).
    assert _autoscaler_tags(dev, "l4") == {"nvidia.com/gpu": "4"}


def test_a_whole_gpu_pools_asg_offers_its_gpus(prod):
    # g6e.12xlarge: four L40S, neither shared nor partitioned.
    assert _autoscaler_tags(prod, "l40s") == {"nvidia.com/gpu": "4"}


def test_a_dra_pools_asg_offers_no_whole_gpu(dra):
    # No device plugin under DRA: the instance table's 8 GPUs would scale the pool up for a pod it cannot run.
    assert _autoscaler_tags(dra, "h100")["nvidia.com/gpu"] == "0"


def test_the_autoscaler_tags_go_on_the_node_groups_asg_not_on_its_instances(shipped):
    for pool in pool_names(shipped):
        ng = node_group(shipped, pool)
        asg = dict(ng.state)["resources"][0]["autoscalingGroups"][0]["name"]
        tags = [r for r in shipped.children(ng.parent) if r.type == ASG_TAG]
        assert tags, pool
        for tag in tags:
            assert tag.inputs["autoscalingGroupName"] == asg
            assert tag.inputs["tag"]["propagateAtLaunch"] is False
            assert ng.urn in tag.dependencies


# The cluster autoscaler holds a Ready node with k8s.amazonaws.com/accelerator but no allocatable
# nvidia.com/gpu as unready (cluster-autoscaler-1.33.6 cloudprovider/aws/aws_cloud_provider.go:38,
# processors/customresources/gpu_processor.go:44-57): on pools that advertise nvidia.com/gpu, so a node whose
# device plugin has not registered yet is not taken for room it lacks; on no other pool, whose nodes would
# stay unready for it. Its value is the GPU model (cloudprovider/aws/README.md lines 278-286).
ACCELERATOR = "k8s.amazonaws.com/accelerator"


def test_a_whole_gpu_pools_nodes_carry_the_autoscalers_gpu_label(prod):
    assert node_group(prod, "l40s").inputs["labels"][ACCELERATOR] == "L40S"


def test_a_time_sliced_pools_nodes_carry_the_autoscalers_gpu_label(dev):
    assert node_group(dev, "l4").inputs["labels"][ACCELERATOR] == "L4"


def _mig_layout(record_variant, layout: str):
    def change(config):
        unapproved(config)
        next(p for p in config["gpu-platform:nodePools"] if p["name"] == "h100-mig")["mig"] = {"config": layout}

    return record_variant(f"mig-{layout}", change, stack="prod")


def test_a_mig_pool_with_mig_off_carries_the_autoscalers_gpu_label(record_variant):
    # all-disabled: whole GPUs, nvidia.com/gpu x8 under the mixed strategy.
    rec = _mig_layout(record_variant, "all-disabled")
    assert node_group(rec, "h100-mig").inputs["labels"][ACCELERATOR] == "H100-80GB"


def test_a_one_profile_mig_pools_nodes_lack_the_autoscalers_gpu_label(record_variant):
    # all-1g.10gb: one profile, still the mixed strategy (sharing.mig_strategy), so nvidia.com/mig-1g.10gb only.
    assert ACCELERATOR not in node_group(_mig_layout(record_variant, "all-1g.10gb"), "h100-mig").inputs["labels"]


def test_a_mixed_strategy_mig_pools_nodes_lack_the_autoscalers_gpu_label(prod):
    # all-balanced: three profiles, the mixed strategy, no nvidia.com/gpu at all.
    assert ACCELERATOR not in node_group(prod, "h100-mig").inputs["labels"]


def test_a_dra_pools_nodes_lack_the_autoscalers_gpu_label(dra):
    # Under DRA the GPUs are ResourceSlice devices, never nvidia.com/gpu.
    assert ACCELERATOR not in node_group(dra, "h100").inputs["labels"]
