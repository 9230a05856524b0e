"""Node security of GPU launch templates, and the advisory on a public cluster endpoint."""

from __future__ import annotations

import pytest

from policy.node_security import cluster_endpoint_not_open, cluster_endpoint_private, gpu_launch_templates_hardened
from tests.policy.resources import launch_template, resource
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("gpu-launch-templates-hardened", "resource", "mandatory"),
    ("cluster-endpoint-not-open", "resource", "mandatory"),
    ("cluster-endpoint-private", "resource", "advisory"),
]


def test_the_programs_launch_template_passes():
    assert violations(gpu_launch_templates_hardened, [launch_template()]) == []


def test_a_launch_template_that_is_not_a_gpu_nodes_is_not_checked():
    assert (
        violations(
            gpu_launch_templates_hardened, [resource("aws:ec2/launchTemplate:LaunchTemplate", "other", {"tags": {}})]
        )
        == []
    )


@pytest.mark.parametrize(
    "overrides, fact",
    [
        (
            {
                "metadataOptions": {
                    "httpTokens": "optional",
                    "httpPutResponseHopLimit": 1,
                    "instanceMetadataTags": "disabled",
                }
            },
            "httpTokens",
        ),
        (
            {
                "metadataOptions": {
                    "httpTokens": "required",
                    "httpPutResponseHopLimit": 2,
                    "instanceMetadataTags": "disabled",
                }
            },
            "httpPutResponseHopLimit",
        ),
        (
            {
                "metadataOptions": {
                    "httpTokens": "required",
                    "httpPutResponseHopLimit": 1,
                    "instanceMetadataTags": "enabled",
                }
            },
            "instanceMetadataTags",
        ),
        ({"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1}}, "instanceMetadataTags"),
        ({"blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "false"}}]}, "encrypted"),
        ({"blockDeviceMappings": []}, "blockDeviceMappings"),
        ({"networkInterfaces": [{"associatePublicIpAddress": "true"}]}, "associatePublicIpAddress"),
    ],
)
def test_an_unhardened_gpu_launch_template_fails(overrides, fact):
    found = violations(gpu_launch_templates_hardened, [launch_template(props=overrides)])
    assert len(found) == 1 and fact in found[0][0] and "gpu-pool-l4-lt" in found[0][0]


def _cluster(vpc: dict):
    return resource("aws:eks/cluster:Cluster", "gpu-cluster", {"version": "1.33", "vpcConfig": vpc})


# (vpcConfig, open: mandatory violation, limited: advisory). EKS's defaults: public on, open to 0.0.0.0/0.
ENDPOINTS = [
    ({"endpointPublicAccess": False}, 0, 0),
    ({"endpointPublicAccess": "false"}, 0, 0),
    ({"endpointPublicAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]}, 0, 0),  # nothing public to open
    ({"endpointPublicAccess": True}, 1, 0),
    ({}, 1, 0),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]}, 1, 0),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24", "::/0"]}, 1, 0),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]}, 0, 1),
    ({"endpointPublicAccess": "true", "publicAccessCidrs": ["10.0.0.0/8", "2001:db8::/32"]}, 0, 1),
    # The internet split in halves is still the internet, in either family.
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}, 1, 0),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/2", "64.0.0.0/2", "128.0.0.0/1"]}, 1, 0),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["::/1", "8000::/1"]}, 1, 0),
    # One half leaves the other out, but is far wider than a /8: refused as well.
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/1"]}, 1, 0),
    # Two /8s are twice the widest block one holder has; one /8 (and a /9 beside it) is reviewed only.
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/8", "11.0.0.0/8"]}, 1, 0),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/9", "10.128.0.0/9"]}, 0, 1),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/9", "11.0.0.0/9"]}, 0, 1),
    ({"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/8", "11.0.0.0/32"]}, 1, 0),
]


@pytest.mark.parametrize("vpc, open_, limited", ENDPOINTS)
def test_an_open_endpoint_is_refused_and_a_limited_one_reported(vpc, open_, limited):
    assert len(violations(cluster_endpoint_not_open, [_cluster(vpc)])) == open_
    assert len(violations(cluster_endpoint_private, [_cluster(vpc)])) == limited


def test_the_open_endpoint_rule_is_mandatory_and_names_the_open_block():
    assert cluster_endpoint_not_open.enforcement_level.value == "mandatory"
    assert cluster_endpoint_private.enforcement_level.value == "advisory"
    ((message, _),) = violations(
        cluster_endpoint_not_open, [_cluster({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/0"]})]
    )
    assert "0.0.0.0/0" in message and "publicAccessCidrs" in message


def test_halves_of_the_internet_are_named_as_the_whole_of_it():
    vpc = {"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.0/1", "128.0.0.0/1"]}
    ((message, _),) = violations(cluster_endpoint_not_open, [_cluster(vpc)])
    assert "0.0.0.0/1, 128.0.0.0/1, which together are 0.0.0.0/0, the whole internet" in message


def test_blocks_wider_than_a_slash_8_are_named_with_the_addresses_they_cover():
    vpc = {"endpointPublicAccess": True, "publicAccessCidrs": ["10.0.0.0/8", "11.0.0.0/8"]}
    ((message, _),) = violations(cluster_endpoint_not_open, [_cluster(vpc)])
    assert (
        "10.0.0.0/8, 11.0.0.0/8, together 33554432 IPv4 addresses" in message
        and "large part of the internet" in message
    )


def test_a_block_written_with_host_bits_is_judged_as_the_network_it_names():
    # "0.0.0.1/0" is the whole internet with a host bit set: EKS would take it as such, so must the policy.
    found = violations(
        cluster_endpoint_not_open, [_cluster({"endpointPublicAccess": True, "publicAccessCidrs": ["0.0.0.1/0"]})]
    )
    assert len(found) == 1 and "0.0.0.1/0" in found[0][0]
