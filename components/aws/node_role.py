"""The IAM role every node (system and GPU) runs as: only what a kubelet needs. EKS creates the
access entry for a managed node group's role itself, so no aws-auth edits."""

from __future__ import annotations

import json

import pulumi
import pulumi_aws as aws

# Least privilege for a node: join the cluster, pull images (pull-only, not the broader
# ReadOnly policy), run the VPC CNI. No SSM, no S3: nothing on a GPU node needs them.
NODE_POLICIES = (
    "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",
    "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
)


class NodeRole(pulumi.ComponentResource):
    arn: pulumi.Output[str]
    role_name: pulumi.Output[str]

    def __init__(self, name: str, tags: dict[str, str], opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:NodeRole", name, None, opts)
        role = aws.iam.Role(
            name,
            assume_role_policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}],
                }
            ),
            managed_policy_arns=list(NODE_POLICIES),
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.arn = role.arn
        self.role_name = role.name
        self.register_outputs({"arn": self.arn})
