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


def trust(service: str, *actions: str, condition: dict | None = None) -> str:
    """A trust policy letting one AWS service principal assume the role, under `condition` if given
    (IAM's `Condition` block: operator -> key -> value). One action is written as a string, several as
    a list: the documents the roles were first created with, so none shows a diff.

    An EC2-trusted role (nodes, the image build) carries no confused-deputy condition: EC2 assumes it
    for an instance profile, a request in which AWS documents no aws:SourceArn/aws:SourceAccount
    (IAM User Guide, "AWS global condition context keys": present only when a service calls another on
    behalf of a resource), so such a condition would lock the instances out. What guards those roles
    is the instance profile (iam:PassRole) and IMDSv2 with one hop."""
    statement = {
        "Effect": "Allow",
        "Principal": {"Service": service},
        "Action": list(actions) if len(actions) > 1 else actions[0],
    }
    if condition:
        statement["Condition"] = condition
    return json.dumps({"Version": "2012-10-17", "Statement": [statement]})


def document(*statements: dict) -> str:
    """An identity or key policy document of these statements, written as IAM stores it."""
    return json.dumps({"Version": "2012-10-17", "Statement": list(statements)}, sort_keys=True)


@dataclass(frozen=True)
class ManagedRole:
    role: aws.iam.Role
    attachments: tuple[aws.iam.RolePolicyAttachment, ...]


@dataclass(frozen=True)
class OwnPolicy:
    """A customer-managed policy the stack writes for one role, where no AWS-managed policy is narrow
    enough. Named (unique per account: the name carries the stack's scope), so its ARN is known before
    it exists: `arn:<partition>:iam::<account>:policy/<name>` (IAM User Guide, "IAM identifiers"; the
    default path /), and the role's exclusive list and the policy pack can read it at preview."""

    key: str  # the resources' logical names: <role>-<key>
    name: str
    description: str
    document: str
    account: str

    def arn(self, partition: str) -> str:
        return f"arn:{partition}:iam::{self.account}:policy/{self.name}"


def managed_role(
    name: str,
    assume_role_policy: pulumi.Input[str],
    policies: tuple[str, ...],
    partition: str,
    tags: dict[str, str],
    parent: pulumi.Resource,
    own_policies: tuple[OwnPolicy, ...] = (),
) -> ManagedRole:
    """The role `name` and one attachment per policy name, named `<name>-<policy>` so a partition
    change or a reordering replaces nothing; each of `own_policies` is an `aws.iam.Policy`
    `<name>-<key>`, attached the same way."""
    child = pulumi.ResourceOptions(parent=parent)
    role = aws.iam.Role(name, assume_role_policy=assume_role_policy, tags=tags, opts=child)
    arns = [policy_arn(partition, p) for p in policies]
    attachments = [
        aws.iam.RolePolicyAttachment(f"{name}-{policy}", role=role.name, policy_arn=arn, opts=child)
        for policy, arn in zip(policies, arns, strict=True)
    ]
    for own in own_policies:
        made = aws.iam.Policy(
            f"{name}-{own.key}", name=own.name, description=own.description, policy=own.document, tags=tags, opts=child
        )
        arns.append(own.arn(partition))
        # The ARN is written, not taken from the policy: the attachment waits for the policy itself.
        attachments.append(
            aws.iam.RolePolicyAttachment(
                f"{name}-{own.key}",
                role=role.name,
                policy_arn=own.arn(partition),
                opts=pulumi.ResourceOptions(parent=parent, depends_on=[made]),
            )
        )
    aws.iam.RolePolicyAttachmentsExclusive(
        f"{name}-exclusive",
        role_name=role.name,
        policy_arns=arns,
        opts=pulumi.ResourceOptions(parent=parent, depends_on=list(attachments)),
    )
    return ManagedRole(role, tuple(attachments))
