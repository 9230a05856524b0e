"""Node security of GPU launch templates, and the advisory on a public cluster endpoint."""

from __future__ import annotations

import pytest

from policy.node_security import cluster_endpoint_private, gpu_launch_templates_hardened
from tests.policy.resources import launch_template, resource
from tests.policy.verdict import violations


def test_the_programs_launch_template_passes():
    assert violations(gpu_launch_templates_hardened, [launch_template()]) == []


def test_a_launch_template_that_is_not_a_gpu_nodes_is_not_checked():
    assert violations(gpu_launch_templates_hardened, [resource("aws:ec2/launchTemplate:LaunchTemplate", "other", {"tags": {}})]) == []


@pytest.mark.parametrize("overrides, fact", [
    ({"metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 1, "instanceMetadataTags": "disabled"}}, "httpTokens"),
    ({"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 2, "instanceMetadataTags": "disabled"}}, "httpPutResponseHopLimit"),
    ({"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1, "instanceMetadataTags": "enabled"}}, "instanceMetadataTags"),
    ({"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1}}, "instanceMetadataTags"),
    ({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}]}, "encrypted"),
    ({"blockDeviceMappings": []}, "blockDeviceMappings"),
    ({"networkInterfaces": [{"associatePublicIpAddress": "true"}]}, "associatePublicIpAddress"),
])
def test_an_unhardened_gpu_launch_template_fails(overrides, fact):
    found = violations(gpu_launch_templates_hardened, [launch_template(props=overrides)])
    assert len(found) == 1 and fact in found[0][0] and "gpu-pool-l4-lt" in found[0][0]


@pytest.mark.parametrize("public, count", [(False, 0), ("false", 0), (True, 1), (None, 1)])
def test_a_public_endpoint_is_reported(public, count):
    vpc = {} if public is None else {"endpointPublicAccess": public}
    cluster = resource("aws:eks/cluster:Cluster", "gpu-cluster", {"version": "1.33", "vpcConfig": vpc})
    assert len(violations(cluster_endpoint_private, [cluster])) == count
    assert cluster_endpoint_private.enforcement_level.value == "advisory"
