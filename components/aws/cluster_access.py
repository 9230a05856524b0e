"""Who may administer the cluster: one EKS access entry per named admin (`cluster.admins`), each
with AmazonEKSClusterAdminPolicy over the whole cluster. Explicit entries instead of the creator's
bootstrap permission: they are in the reviewed stack file and the audit report, do not change with
whoever runs an update, and can be removed like any other resource."""

from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws

from gpu_platform.config.iam_principals import principal_key

STACK_TAG = "gpu-platform.io/stack"  # components/aws/tags.py stack_tags
# EKS User Guide, "Review access policy permissions": `arn:<partition>:eks::aws:cluster-access-policy/<name>`;
# AmazonEKSClusterAdminPolicy grants every verb on every resource, like Kubernetes' cluster-admin.
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def access_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def principal_label(arn: str) -> str:
    """`<account>-<role|user>-<name>` for `arn:<p>:iam::<account>:<role|user>/<path/><name>`: unique
    per principal, as IAM names are unique per account whatever the path and not case-sensitive
    (the config refuses two ARNs that name one principal)."""
    _, _, _, _, account, resource = arn.split(":", 5)
    kind, _, path = resource.partition("/")
    return re.sub(r"[^a-z0-9_.@=,+-]", "-", f"{account}-{kind}-{path.rsplit('/', 1)[-1].lower()}")


def principals(admins: tuple[str, ...], existing: dict[str, dict[str, str]], stack: str) -> tuple[list[str], list[str]]:
    """(the admins that get an entry from this stack, the admins left as they are). An IAM principal
    has one access entry per cluster (EKS User Guide, "Create access entries"): one that already has
    an entry this stack did not make (the creator's bootstrap entry, one made by hand) keeps it, or
    creating ours would fail with ResourceInUseException. The stack's own entries carry its stack
    tag, so a later update keeps managing them."""
    ours, kept = [], []
    for arn in admins:
        tags = existing.get(arn)
        (kept if tags is not None and tags.get(STACK_TAG) != stack else ours).append(arn)
    return ours, kept


def runner_without_access(runner: str | None, admins: tuple[str, ...]) -> bool:
    """Whoever runs the update is not a named admin: its Kubernetes calls will be refused unless it
    has access to the cluster some other way."""
    return bool(runner) and principal_key(runner) not in {principal_key(a) for a in admins}


def cluster_admins(
    name: str,
    cluster_name: pulumi.Input[str],
    arns: list[str],
    partition: str,
    tags: dict[str, str],
    parent: pulumi.Resource,
) -> list[aws.eks.AccessPolicyAssociation]:
    """An access entry and a cluster-scoped admin association per principal; the associations are
    what a Kubernetes client has to wait for."""
    child = pulumi.ResourceOptions(parent=parent)
    associations = []
    for arn in arns:
        label = principal_label(arn)
        entry = aws.eks.AccessEntry(
            f"{name}-access-{label}",
            cluster_name=cluster_name,
            principal_arn=arn,
            type="STANDARD",
            tags=tags,
            opts=child,
        )
        associations.append(
            aws.eks.AccessPolicyAssociation(
                f"{name}-admin-{label}",
                cluster_name=entry.cluster_name,
                principal_arn=entry.principal_arn,
                policy_arn=access_policy_arn(partition, CLUSTER_ADMIN_POLICY),
                access_scope={"type": "cluster"},
                opts=child,
            )
        )
    return associations
