"""The hardening every node's launch template shares, GPU or system: IMDSv2 only, no instance tags
in metadata, an encrypted gp3 root volume, no public IP. One definition, so the two kinds of node
cannot drift apart."""

from __future__ import annotations

import pulumi

ROOT_DEVICE = "/dev/xvda"  # the root device of the EKS-optimized AL2023 images


def metadata_options() -> dict:
    return {
        "http_endpoint": "enabled",
        "http_tokens": "required",
        # Hop limit 1: pods cannot reach the node's instance credentials.
        "http_put_response_hop_limit": 1,
        # Explicit, not left to defaults: an account-level IMDS default (ModifyInstanceMetadataDefaults,
        # InstanceMetadataTags) can turn instance tags in metadata on, and then every instance tag key
        # must be free of '/' or the launch fails (EC2 User Guide, "View tags for your EC2 instances
        # using instance metadata": keys "can't contain spaces or /"). Ours (gpu-platform.io/...) and
        # the ones EKS adds (kubernetes.io/cluster/...) all contain '/'.
        "instance_metadata_tags": "disabled",
    }


def encrypted_root(size_gib: int) -> list[dict]:
    return [
        {
            "device_name": ROOT_DEVICE,
            "ebs": {
                "volume_size": size_gib,
                "volume_type": "gp3",
                "encrypted": "true",
                "delete_on_termination": "true",
            },
        }
    ]


def private_interface(security_group_id: pulumi.Input[str]) -> list[dict]:
    # Security groups go on the interface: EKS adds the cluster security group only when the
    # template names none, and an interface that names none would have only the VPC default.
    return [
        {
            "associate_public_ip_address": "false",
            "delete_on_termination": "true",
            "security_groups": [security_group_id],
        }
    ]
