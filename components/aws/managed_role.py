"""An IAM role with AWS-managed policies, each attached by its own RolePolicyAttachment, and the
ARNs of AWS-owned policies built from the stack's partition.

`aws.iam.Role(managed_policy_arns=...)` is deprecated (pulumi_aws iam/role.py: "The
`managed_policy_arns` argument is deprecated. Use the `iam.RolePolicyAttachment` resource instead.
If Pulumi should exclusively manage all managed policy attachments (the current behavior of this
argument), use the `iam.RolePolicyAttachmentsExclusive` resource as well"). Exclusive it stays: a
policy attached to these roles outside the stack is detached on the next update, so the audit
report's list of a role's policies is the whole list. An attachment is a resource of its own,
created after the role: whatever needs the role's permissions (a node group joining, a control
plane, an image build) must wait for the attachments, not only for the role, so callers get them
back to depend on."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws


def policy_arn(partition: str, name: str) -> str:
    """An AWS-managed IAM policy: `arn:<partition>:iam::aws:policy/<name>` (aws, aws-cn, aws-us-gov)."""
    return f"arn:{partition}:iam::aws:policy/{name}"


def trust(service: str, *actions: str) -> str:
    """A trust policy letting one AWS service principal assume the role. One action is written as a
    string, several as a list: the documents the roles were first created with, so none shows a diff."""
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions) if len(actions) > 1 else actions[0]}],
        }
    )


@dataclass(frozen=True)
class ManagedRole:
    role: aws.iam.Role
    attachments: tuple[aws.iam.RolePolicyAttachment, ...]


def managed_role(name: str, assume_role_policy: str, policies: tuple[str, ...], partition: str,
                 tags: dict[str, str], parent: pulumi.Resource) -> ManagedRole:
    """The role `name` and one attachment per policy name, named `<name>-<policy>` so a partition
    change or a reordering replaces nothing."""
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(name, assume_role_policy=assume_role_policy, tags=tags, opts=child)
    attachments = tuple(
        aws.iam.RolePolicyAttachment(f"{name}-{policy}", role=role.name, policy_arn=policy_arn(partition, policy), opts=child)
        for policy in policies
    )
    aws.iam.RolePolicyAttachmentsExclusive(
        f"{name}-exclusive", role_name=role.name, policy_arns=[policy_arn(partition, p) for p in policies],
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(attachments)),
    )
    return ManagedRole(role, attachments)
