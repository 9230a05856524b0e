"""Who may administer the cluster, as the privilege ledger (gpu_platform/privileges/ledger.py) reads it from
resource properties alone. The pack sees no stack config, so the program writes the whole
`cluster.admins` list on the operands' namespace (contract.CLUSTER_ADMINS_KEY), including the admins
whose existing access entry the stack leaves as it is (components/aws/cluster_access.py principals):
their entries are no resource of the stack, so the access resources alone would not name them.

Rows, subject SUBJECT, part the principal (`principal`):

- one per admin the namespace names: `AmazonEKSClusterAdminPolicy (cluster scope)`, what
  `cluster.admins` grants. For an admin whose existing entry the stack leaves as it is, that is the
  most the principal may hold (EKS has no broader access policy), not what its entry grants, which
  is not read: only the real preview sees the entry, and a row from it would make the offline and
  the real hash differ (components/aws/cluster.py warns about such an admin instead);
- one per access policy association, from its own properties: the policy by name (the full ARN for a
  policy that is not an EKS access policy) and its scope, so another policy or a namespace scope shows
  as itself. The program's associations give the same row as the annotation, so the hash does not
  depend on which admins discovery found with an entry already (offline and the real preview agree);
- per access entry, each Kubernetes group it puts the principal in (RBAC bindings to the group apply
  to it) and a type other than STANDARD (a node identity EKS grants node permissions);
- per created cluster, the creator's bootstrap admin entry, when not turned off, and an
  authentication mode that also reads the aws-auth ConfigMap.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from gpu_platform.interface import contract
from gpu_platform.interface.props import dig, mapping, sequence, text
from gpu_platform.interface.resource_types import (
    EKS_ACCESS_ASSOCIATION as ASSOCIATION_TYPE,
    EKS_ACCESS_ENTRY as ENTRY_TYPE,
    EKS_CLUSTER as CLUSTER_TYPE,
    NAMESPACE as NAMESPACE_TYPE,
)

Row = tuple[str, str, str]
SUBJECT = "EKS cluster access"
TYPES = (NAMESPACE_TYPE, ASSOCIATION_TYPE, ENTRY_TYPE, CLUSTER_TYPE)
# EKS User Guide, "Review access policy permissions": `arn:<partition>:eks::aws:cluster-access-policy/<name>`.
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
_ACCESS_POLICY = re.compile(r"arn:aws(?:-cn|-us-gov)?:eks::aws:cluster-access-policy/(?P<name>[A-Za-z0-9]+)")
# An IAM role or user ARN, path optional (EKS User Guide, "Create access entries": a role's ARN may carry one).
_PRINCIPAL = re.compile(
    r"arn:(?P<partition>aws(?:-cn|-us-gov)?):iam::(?P<account>\d{12}):(?P<kind>role|user)/"
    r"(?:[^/]+/)*(?P<name>[^/]+)",
    re.ASCII,
)
ADMIN_GRANT = f"{CLUSTER_ADMIN_POLICY} (cluster scope)"
CREATOR = "(cluster creator)"


def annotation(admins: Iterable[str]) -> str:
    """The namespace annotation's value: the admins' ARNs as configured, distinct, sorted, separated by
    spaces (contract.join_values, like the namespace's other lists; an ARN holds no space)."""
    return contract.join_values(sorted(set(admins)))


def declared(props: Mapping[str, Any]) -> list[str] | None:
    """The admins a namespace names, None when it names none (no annotation)."""
    notes = dig(props, "metadata", "annotations")
    if contract.CLUSTER_ADMINS_KEY not in notes:
        return None
    return contract.split_values(text(notes.get(contract.CLUSTER_ADMINS_KEY)))


def principal(arn: str) -> str:
    """An IAM principal as IAM tells principals apart: `arn:<partition>:iam::<account>:<role|user>/<name>`,
    the path left out and the name in lower case (IAM names are unique per account whatever the path,
    and not case-sensitive: IAM User Guide, "IAM identifiers"; gpu_platform/config/cluster.py refuses two admins
    that differ only there). So one principal is one part however an ARN spells it; anything else as it is."""
    found = _PRINCIPAL.fullmatch(arn)
    if not found:
        return arn
    return f"arn:{found['partition']}:iam::{found['account']}:{found['kind']}/{found['name'].lower()}"


def grant(policy_arn: str, scope: Mapping[str, Any]) -> str:
    """`<policy> (cluster scope)` or `<policy> (namespaces a, b)` (EKS API AccessScope: type
    `cluster` or `namespace`, with namespaces for the latter)."""
    found = _ACCESS_POLICY.fullmatch(policy_arn)
    policy = found["name"] if found else (policy_arn or "(no policy)")
    kind = text(scope.get("type"))
    if kind == "cluster":
        where = "cluster scope"
    elif kind == "namespace":
        where = "namespaces " + (", ".join(sorted({text(n) for n in sequence(scope.get("namespaces"))})) or "(none)")
    else:
        where = f"scope {kind or '(none)'}"
    return f"{policy} ({where})"


def _cluster_rows(props: Mapping[str, Any]) -> list[Row]:
    access = dig(props, "accessConfig")
    found = []
    # botocore 1.44.8 data/eks/2017-11-01/service-2.json.gz, shapes.CreateAccessConfigRequest: the
    # creator's admin entry is made unless bootstrapClusterCreatorAdminPermissions is false ("The
    # default value is true"); authenticationMode defaults to CONFIG_MAP through the API.
    if access.get("bootstrapClusterCreatorAdminPermissions") is not False:
        found.append((SUBJECT, CREATOR, f"{ADMIN_GRANT}, bootstrapClusterCreatorAdminPermissions"))
    # Who may reach the API server: public unless turned off (CreateCluster's endpointPublicAccess
    # "default true", botocore 1.44.8 eks service-2.json VpcConfigRequest). EKS returns
    # publicAccessCidrs (0.0.0.0/0) for a private endpoint too, so the CIDRs are read only when public.
    vpc = dig(props, "vpcConfig")
    if vpc.get("endpointPublicAccess") is not False:
        cidrs = ", ".join(sorted(text(c) for c in sequence(vpc.get("publicAccessCidrs")))) or "0.0.0.0/0 (none given)"
        found.append((SUBJECT, "(endpoint)", f"public endpoint, reachable from {cidrs}"))
    else:
        found.append((SUBJECT, "(endpoint)", "private endpoint only"))
    mode = text(access.get("authenticationMode")) or "CONFIG_MAP"
    if mode != "API":
        found.append(
            (
                SUBJECT,
                "(aws-auth ConfigMap)",
                f"authenticationMode {mode}: IAM principals the kube-system aws-auth ConfigMap maps are admitted too",
            )
        )
    return found


def _stack_rows(props: Mapping[str, Any]) -> list[Row]:
    """What the namespace declares of the stack as a whole: the cluster, the node image every GPU
    node boots as root, the AWS provider's settings, and the approval record (contract.CLUSTER_KEY,
    NODE_IMAGE_KEY, AWS_PROVIDER_KEY, AUDIT_*)."""
    notes = dig(props, "metadata", "annotations")
    found = []
    if contract.CLUSTER_KEY in notes:
        found.append((SUBJECT, "(cluster)", f"cluster {text(notes.get(contract.CLUSTER_KEY))}"))
    if contract.NODE_IMAGE_KEY in notes:
        found.append(("GPU node image", "(boots as root)", text(notes.get(contract.NODE_IMAGE_KEY))))
    found += [
        ("AWS provider", "(where its calls go, as whom)", f"aws:{line}")
        for line in text(notes.get(contract.AWS_PROVIDER_KEY)).splitlines()
        if line
    ]
    if contract.AUDIT_APPROVAL in notes or contract.AUDIT_OWNER in notes:
        found.append(
            (
                "Approval record",
                "(gpu-platform:audit)",
                f"approval {text(notes.get(contract.AUDIT_APPROVAL))}, owner {text(notes.get(contract.AUDIT_OWNER))}",
            )
        )
    return found


def rows(resource_type: str, props: Mapping[str, Any]) -> list[Row]:
    """The cluster access rows of one resource (of TYPES); none for anything else."""
    if resource_type == NAMESPACE_TYPE:
        return [(SUBJECT, principal(arn), ADMIN_GRANT) for arn in declared(props) or ()] + _stack_rows(props)
    who = principal(text(props.get("principalArn")))
    if resource_type == ASSOCIATION_TYPE:
        return [(SUBJECT, who, grant(text(props.get("policyArn")), mapping(props.get("accessScope"))))]
    if resource_type == ENTRY_TYPE:
        # botocore 1.44.8 shapes.CreateAccessEntryRequest: kubernetesGroups are the Group subjects of
        # RoleBindings and ClusterRoleBindings that apply to the principal; a type other than STANDARD
        # (EC2_LINUX, FARGATE_LINUX, ...) makes it a node identity EKS grants permissions to.
        found = [(SUBJECT, who, f"Kubernetes group {text(g)}") for g in sequence(props.get("kubernetesGroups"))]
        kind = text(props.get("type")) or "STANDARD"
        return found + ([(SUBJECT, who, f"access entry type {kind}")] if kind != "STANDARD" else [])
    if resource_type == CLUSTER_TYPE:
        return _cluster_rows(props)
    return []
