"""Who may do what: IAM roles, their trust, and the secrets key's policy, as the stack's resources
declare them. Each rule is written for what the program builds, and holds for any role of the stack:

- the VPC CNI's network-interface permissions never ride on a role EC2 instances assume (anything on
  a node could use them through the instance profile): the CNI has its own role;
- the Image Builder instance role cannot read the account's SSM parameters (the bake runs downloaded
  installers as root on that host);
- a role EKS assumes is bound to this account and cluster (confused-deputy conditions);
- a KMS key has an explicit policy that keeps the account in charge of it.

All mandatory: each is a permission or a guard the program sets itself, so a violation is a
regression in the program or a hand-edited resource, never a choice a stack file makes, and each
opens a path to credentials or data beyond the job. Documents are read as the provider receives them
(JSON text; an object is read too), through gpu_platform.interface.props, never as dicts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel

from gpu_platform.interface.props import mapping, sequence, text
from gpu_platform.interface.resource_types import (
    IAM_ATTACHMENT as ATTACHMENT,
    IAM_EXCLUSIVE as EXCLUSIVE,
    IAM_INLINE as INLINE,
    IAM_INSTANCE_PROFILE as INSTANCE_PROFILE,
    IAM_POLICY as POLICY,
    IAM_ROLE as ROLE,
    IMAGE_INFRASTRUCTURE as INFRASTRUCTURE,
    KMS_KEY as KEY,
)
from gpu_platform.privileges.iam_document import statements, values
from policy.declare import resource_policy, stack_policy, types

EC2 = "ec2.amazonaws.com"
EKS = "eks.amazonaws.com"
POD_IDENTITY = "pods.eks.amazonaws.com"
# AWS-managed policies by name, in any partition (arn:aws:, arn:aws-cn:, arn:aws-us-gov:).
CNI_POLICY = "AmazonEKS_CNI_Policy"
SSM_CORE = "AmazonSSMManagedInstanceCore"
# What AmazonEKS_CNI_Policy grants on every resource that a node role must not (AWS Managed Policy
# Reference, AmazonEKS_CNI_Policy: network interfaces created, attached, deleted, modified, addresses
# assigned): one of these on "*" is the CNI's power, whatever the policy is called.
CNI_ACTIONS = (
    "ec2:CreateNetworkInterface",
    "ec2:AttachNetworkInterface",
    "ec2:DeleteNetworkInterface",
    "ec2:DetachNetworkInterface",
    "ec2:ModifyNetworkInterfaceAttribute",
    "ec2:AssignPrivateIpAddresses",
    "ec2:UnassignPrivateIpAddresses",
    "ec2:AssignIpv6Addresses",
)
# Reading the account's SSM parameters (what AmazonSSMManagedInstanceCore v2 grants on "*").
PARAMETER_READS = ("ssm:GetParameter", "ssm:GetParameters", "ssm:GetParametersByPath")
_ROOT = re.compile(r"arn:aws(-cn|-us-gov)?:iam::\d{12}:root")


def _managed(arn: Any, name: str) -> bool:
    return (
        re.fullmatch(rf"arn:aws(-cn|-us-gov)?:iam::aws:policy/(service-role/)?{re.escape(name)}", text(arn)) is not None
    )


def _grants(document: Any, actions: Iterable[str]) -> list[str]:
    """The actions of `actions` the document allows on every resource ("*"), wildcards included."""
    found = []
    for s in statements(document):
        if s.get("Effect") != "Allow" or "*" not in values(s.get("Resource")):
            continue
        for allowed in values(s.get("Action")):
            pattern = re.compile(re.escape(allowed).replace(r"\*", ".*"), re.IGNORECASE)
            found += [a for a in actions if pattern.fullmatch(a) and a not in found]
    return found


def trusted(role_props: Mapping[str, Any]) -> set[str]:
    """The service principals a role's trust policy lets assume it."""
    found = set()
    for s in statements(role_props.get("assumeRolePolicy")):
        if s.get("Effect") == "Allow":
            found.update(values(mapping(s.get("Principal")).get("Service")))
    return found


def _deps(r, key: str) -> list:
    return list(sequence((r.property_dependencies or {}).get(key)))


class _Grants:
    """What is attached to each role of the stack, found through the resources' property
    dependencies as the engine hands them over: managed policy ARNs and policy documents, each with
    every route that attaches it (an attachment and the exclusive list name the same policy)."""

    def __init__(self, resources):
        self.resources = list(resources)
        self.arns: dict[str, dict[str, list[str]]] = {}  # role URN -> policy ARN -> through what
        self.documents: dict[
            str, dict[str, tuple[Any, list[str]]]
        ] = {}  # role URN -> policy -> (document, through what)
        policies = {r.urn: r for r in self.resources if r.resource_type == POLICY}
        # A customer-managed policy attached by an ARN the program wrote (not an Output): found by name.
        by_name = {text(p.props.get("name")): p for p in policies.values() if p.props.get("name")}
        for r in self.resources:
            what = f"{r.resource_type.rsplit(':', 1)[-1]} {r.name!r} ({r.urn})"
            if r.resource_type == ROLE:
                for arn in sequence(r.props.get("managedPolicyArns")):
                    self._arn(r.urn, text(arn), "its managedPolicyArns", by_name)
                for inline in map(mapping, sequence(r.props.get("inlinePolicies"))):
                    self._document(
                        r.urn,
                        f"inline {text(inline.get('name'))}",
                        inline.get("policy"),
                        f"its inline policy {text(inline.get('name'))!r}",
                    )
            elif r.resource_type in (ATTACHMENT, EXCLUSIVE, INLINE):
                for role in _deps(r, "roleName" if r.resource_type == EXCLUSIVE else "role"):
                    if r.resource_type == INLINE:
                        self._document(role.urn, r.urn, r.props.get("policy"), what)
                        continue
                    arns = (
                        sequence(r.props.get("policyArns"))
                        if r.resource_type == EXCLUSIVE
                        else [r.props.get("policyArn")]
                    )
                    for arn in arns:
                        self._arn(role.urn, text(arn), what, by_name)
                    for source in _deps(r, "policyArn"):
                        if source.urn in policies:
                            self._document(
                                role.urn, source.urn, source.props.get("policy"), f"{what}, policy {source.name!r}"
                            )

    def _arn(self, role: str, arn: str, what: str, by_name) -> None:
        self.arns.setdefault(role, {}).setdefault(arn, []).append(what)
        own = by_name.get(arn.rsplit("/", 1)[-1]) if ":policy/" in arn and ":iam::aws:" not in arn else None
        if own is not None:
            self._document(role, own.urn, own.props.get("policy"), f"{what}, policy {own.name!r}")

    def _document(self, role: str, key: str, document: Any, what: str) -> None:
        self.documents.setdefault(role, {}).setdefault(key, (document, []))[1].append(what)

    def problems(self, role_urn: str, managed: str, actions: tuple[str, ...]) -> Iterator[str]:
        """How the role gets `managed` (the AWS policy) or any of `actions` on every resource."""
        for arn, routes in sorted(self.arns.get(role_urn, {}).items()):
            if _managed(arn, managed):
                yield f"{managed} through {' and '.join(routes)}"
        for _, (document, routes) in sorted(self.documents.get(role_urn, {}).items()):
            granted = _grants(document, actions)
            if granted:
                yield f"{', '.join(granted)} on every resource through {' and '.join(routes)}"


def _roles(resources) -> list:
    return [r for r in resources if r.resource_type == ROLE]


@stack_policy(
    "cni-permissions-not-on-node-roles",
    EnforcementLevel.MANDATORY,
    "No role EC2 instances assume carries AmazonEKS_CNI_Policy or the VPC CNI's network-interface actions on every "
    "resource: anything on the instance could use them; the CNI has its own role (EKS Pod Identity).",
    fix="no stack key: the program gives the VPC CNI its own role (components/aws/vpc_cni.py) and the nodes theirs (components/aws/node_role.py); report it",
)
def cni_permissions_not_on_node_roles(args, report_violation) -> None:
    grants = _Grants(args.resources)
    for role in _roles(args.resources):
        if EC2 not in trusted(role.props):
            continue
        for problem in grants.problems(role.urn, CNI_POLICY, CNI_ACTIONS):
            report_violation(
                f"role {role.name!r} ({role.urn}) is assumed by EC2 instances and carries {problem}; give "
                f"the VPC CNI its own role (Pod Identity for kube-system/aws-node) instead",
                role.urn,
            )


def _build_roles(resources) -> list:
    """The roles Image Builder's build and test instances run as: infrastructure configuration ->
    instance profile -> role, through property dependencies."""
    found = []
    for infra in resources:
        if infra.resource_type != INFRASTRUCTURE:
            continue
        for profile in _deps(infra, "instanceProfileName"):
            if profile.resource_type == INSTANCE_PROFILE:
                found += [(infra, role) for role in _deps(profile, "role") if role.resource_type == ROLE]
    return found


@stack_policy(
    "image-build-role-reads-no-parameters",
    EnforcementLevel.MANDATORY,
    "The Image Builder instance role carries no AmazonSSMManagedInstanceCore and reads no SSM parameter on every "
    "resource: the bake runs downloaded installers as root on that instance.",
    fix="no stack key: the program writes the build role's policies (components/aws/image_build_role.py); report it",
)
def image_build_role_reads_no_parameters(args, report_violation) -> None:
    grants = _Grants(args.resources)
    for infra, role in _build_roles(args.resources):
        for problem in grants.problems(role.urn, SSM_CORE, PARAMETER_READS):
            report_violation(
                f"role {role.name!r} ({role.urn}) runs the image builds of {infra.name!r} and carries {problem}; the build "
                f"needs only the SSM agent's own actions (a parameter it must read is granted by its ARN)",
                role.urn,
            )


def _condition_keys(statement: Mapping[str, Any]) -> dict[str, list[str]]:
    """condition key (lowercase, as IAM compares them) -> its values, whatever the operator."""
    found: dict[str, list[str]] = {}
    for _, block in mapping(statement.get("Condition")).items():
        for key, value in mapping(block).items():
            found.setdefault(str(key).lower(), []).extend(values(value))
    return found


# What binds each service's assumption of a role to this account or cluster: EKS's cluster role takes
# aws:SourceAccount and aws:SourceArn (EKS User Guide, "Cross-service confused deputy prevention in
# Amazon EKS"); Pod Identity sets session tags naming the cluster (EKS User Guide, service-accounts.adoc
# "List of session tags added by EKS Pod Identity": eks-cluster-arn among them).
_GUARDS = {
    EKS: (("aws:sourceaccount", "aws:sourcearn"), "aws:SourceAccount and aws:SourceArn (the cluster's ARN)"),
    POD_IDENTITY: (("aws:requesttag/eks-cluster-arn",), "aws:RequestTag/eks-cluster-arn (the cluster's ARN)"),
}


@resource_policy(
    "eks-role-trust-bound-to-cluster",
    EnforcementLevel.MANDATORY,
    "A role EKS assumes (the cluster role, a Pod Identity role) is bound to this account and cluster by its trust "
    "policy's conditions, against the confused deputy.",
    types(ROLE),
    fix="no stack key: the program writes the trust policies (components/aws/cluster.py) and (components/aws/vpc_cni.py); report it",
)
def eks_role_trust_bound_to_cluster(args, report_violation) -> None:
    for s in statements(args.props.get("assumeRolePolicy")):
        if s.get("Effect") != "Allow":
            continue
        keys = _condition_keys(s)
        for service in values(mapping(s.get("Principal")).get("Service")):
            guard = _GUARDS.get(service)
            if guard is None:
                continue
            needed, said = guard
            missing = [k for k in needed if not any(v and v != "*" for v in keys.get(k, []))]
            if missing:
                report_violation(
                    f"role {args.name!r} ({args.urn}) lets {service} assume it without the condition "
                    f"{', '.join(missing)}: condition its trust on {said}"
                )


@resource_policy(
    "kms-keys-have-explicit-policy",
    EnforcementLevel.MANDATORY,
    "Every KMS key has an explicit key policy that lets the account administer it (so it never becomes "
    "unmanageable) and grants nothing to everyone.",
    types(KEY),
    fix="no stack key: the program writes the key policy (components/aws/cluster.py); report it",
)
def kms_keys_have_explicit_policy(args, report_violation) -> None:
    where = f"KMS key {args.name!r} ({args.urn})"
    if not text(args.props.get("policy")).strip():
        report_violation(
            f"{where} has no key policy: KMS gives it a default one the stack does not show; write it "
            f"out (the account administers the key, the cluster role uses it)"
        )
        return
    written = statements(args.props.get("policy"))
    administered = any(
        s.get("Effect") == "Allow"
        and "kms:*" in values(s.get("Action"))
        and any(_ROOT.fullmatch(p) for p in values(mapping(s.get("Principal")).get("AWS")))
        for s in written
    )
    if not administered:
        report_violation(
            f"{where}: no statement lets the account (arn:<partition>:iam::<account>:root) administer the "
            f"key with kms:*; without it the key can become unmanageable"
        )
    for s in written:
        principal = s.get("Principal")
        everyone = text(principal) == "*" or "*" in values(mapping(principal).get("AWS"))
        if s.get("Effect") == "Allow" and everyone and not mapping(s.get("Condition")):
            report_violation(
                f"{where}: statement {text(s.get('Sid')) or '(no Sid)'} allows everyone (Principal *) "
                f"without a condition"
            )
