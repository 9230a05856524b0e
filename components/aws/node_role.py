"""The IAM role every node (system and GPU) runs as: only what a kubelet needs. EKS creates the
access entry for a managed node group's role itself, so no aws-auth edits."""

from __future__ import annotations

import pulumi
import pulumi_aws as aws

from components.aws.managed_role import managed_role, trust

# Least privilege for a node: join the cluster, pull images (pull-only, not the broader
# ReadOnly policy). No SSM, no S3: nothing on a GPU node needs them. Not the VPC CNI's
# AmazonEKS_CNI_Policy (network interfaces on any resource), which anything on the node could use
# through the instance profile: the CNI has its own role (components/aws/vpc_cni.py).
NODE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEC2ContainerRegistryPullOnly",
)


class NodeRole(pulumi.ComponentResource):
    arn: pulumi.Output[str]
    role_name: pulumi.Output[str]
    # A node group whose role has no policies yet creates instances that cannot join: node groups
    # depend on these, not only on the role.
    attachments: tuple[aws.iam.RolePolicyAttachment, ...]

    def __init__(self, name: str, tags: dict[str, str], partition: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:NodeRole", name, None, opts)
        made = managed_role(name, trust("ec2.amazonaws.com", "sts:AssumeRole"), NODE_POLICIES, partition, tags, self)
        self.arn = made.role.arn
        self.role_name = made.role.name
        self.attachments = made.attachments
        self.register_outputs({"arn": self.arn})
