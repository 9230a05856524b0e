"""The IAM principals an EKS access entry takes: a role or user ARN, never an assumed-role session
or a service-linked role."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator

from gpu_platform.config.errors import ConfigProblem, shown

# IAM role or user ARNs, with an optional path (IAM User Guide, "IAM identifiers": names and paths
# are ASCII); an access entry for a role may carry the path (EKS User Guide, "Create access entries").
_IAM_PRINCIPAL = re.compile(r"arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}", re.ASCII)
_ASSUMED_ROLE = re.compile(
    r"arn:(?P<partition>aws(-cn|-us-gov)?):sts::(?P<account>\d{12}):assumed-role/(?P<role>[\w+=,.@-]+)/[^/]+", re.ASCII
)


def principal_key(arn: str) -> str:
    """`arn:aws:iam::1:role/a/Admins` -> `aws 1 role admins`: what IAM tells principals apart by."""
    _, partition, _, _, account, resource = arn.split(":", 5)
    kind, _, path = resource.partition("/")
    return f"{partition} {account} {kind} {path.rsplit('/', 1)[-1].lower()}"


def _iam_principal(value: Any) -> Any:
    role = _ASSUMED_ROLE.fullmatch(value) if isinstance(value, str) else None
    if role:
        raise ConfigProblem(
            f"{shown(value)} is an assumed-role session, which EKS access entries do not take; "
            f"give the role: arn:{role['partition']}:iam::{role['account']}:role/{role['role']}"
        )
    if not isinstance(value, str) or not _IAM_PRINCIPAL.fullmatch(value):
        raise ConfigProblem(
            f"{shown(value)} is not an IAM role or user ARN (e.g. arn:aws:iam::123456789012:role/platform-admins "
            "or arn:aws:iam::123456789012:user/alice); EKS access entries take only those"
        )
    if ":role/aws-service-role/" in value:
        raise ConfigProblem(f"{shown(value)} is a service-linked role, which EKS access entries refuse")
    # The path between role/ (or user/) and the name, both slashes included: at most 512 characters
    # (IAM User Guide, "IAM object quotas": "Path: 512 characters").
    prefix = value.split(":", 5)[5].split("/", 1)[1].rpartition("/")[0]
    path = f"/{prefix}/" if prefix else "/"
    if len(path) > 512:
        raise ConfigProblem(f"{shown(value)} has an IAM path of {len(path)} characters; IAM allows 512 at most")
    return value


IamPrincipal = Annotated[str, BeforeValidator(_iam_principal)]
