"""Who may administer the cluster: one EKS access entry per IAM principal (the identity running the
stack and the named admins), each with AmazonEKSClusterAdminPolicy over the whole cluster. Explicit
entries instead of the creator's bootstrap permission: they are visible in the stack, survive a
change of who runs it, and can be reviewed and removed like any other resource."""

from __future__ import annotations

import re

import pulumi
import pulumi_aws as aws

# EKS User Guide, "Review access policy permissions": `arn:<partition>:eks::aws:cluster-access-policy/<name>`;
# AmazonEKSClusterAdminPolicy grants every verb on every resource, like Kubernetes' cluster-admin.
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"


def access_policy_arn(partition: str, name: str) -> str:
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def principal_label(arn: str) -> str:
    """`<account>-<role|user>-<name>` for `arn:<p>:iam::<account>:<role|user>/<path/><name>`: unique
    per principal (IAM names are unique per account, whatever the path), and stable when a
    principal moves between the runner and the admins list, so its entry is not replaced."""
    _, _, _, _, account, resource = arn.split(":", 5)
    kind, _, path = resource.partition("/")
    return re.sub(r"[^A-Za-z0-9_.@=,+-]", "-", f"{account}-{kind}-{path.rsplit('/', 1)[-1]}")


def principals(runner: str | None, admins: tuple[str, ...], create: bool) -> list[str]:
    """Who gets an entry. A stack that names its admins gets exactly those: were the runner added
    too, every update by another identity (a CI role after a person, a preview role) would replace
    the entry of the one before and lock it out. A created cluster without named admins gives the
    entry to whoever runs the stack, as the creator's bootstrap permission would; an adopted one
    already admits its runner. Each principal once: one access entry per IAM principal (EKS User
    Guide, "Create access entries")."""
    if admins:
        return list(dict.fromkeys(admins))
    return [runner] if create and runner else []


def runner_without_access(runner: str | None, admins: tuple[str, ...]) -> bool:
    """The stack names its admins, and whoever runs it now is not one of them: its Kubernetes calls
    will be refused unless it has access to the cluster some other way."""
    return bool(admins and runner and runner not in admins)


def cluster_admins(name: str, cluster_name: pulumi.Input[str], arns: list[str], partition: str,
                   tags: dict[str, str], parent: pulumi.Resource) -> list[aws.eks.AccessPolicyAssociation]:
    """An access entry and a cluster-scoped admin association per principal; the associations are
    what a Kubernetes client has to wait for."""
    child = pulumi.ResourceOptions(parent=parent)
    associations = []
    for arn in arns:
        label = principal_label(arn)
        entry = aws.eks.AccessEntry(
            f"{name}-access-{label}", cluster_name=cluster_name, principal_arn=arn, type="STANDARD", tags=tags, opts=child
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
