"""gpu-platform:cluster: the EKS cluster the stack creates or adopts, its endpoint and its admins."""

from __future__ import annotations

import contextlib
import ipaddress
import re
from typing import Any

from pydantic import Field, StrictBool, field_validator, model_validator

from gpu_platform.catalog import aws_limits
from gpu_platform.config.errors import ConfigProblem, shown
from gpu_platform.config.iam_principals import IamPrincipal, principal_key
from gpu_platform.config.quoted_version import quoted_version
from gpu_platform.config.section import Section, pattern

# EKS sets no number; past a few dozen, a role the people assume is the reviewable way.
MAX_ADMINS = 50

_ADOPTED_ENDPOINT = (
    "set with create: false: the stack does not manage an adopted cluster's endpoint; remove the key "
    "(or change the endpoint with `aws eks update-cluster-config`)"
)


def subnet_ids(value: tuple[str, ...], why_distinct: str) -> tuple[str, ...]:
    for i, subnet in enumerate(value):
        if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
            raise ConfigProblem(f"{shown(subnet)} is not a subnet id (subnet- and 8 to 17 hex digits)", path=(i,))
    if len(set(value)) != len(value):
        raise ConfigProblem(f"subnet ids repeat; {why_distinct}")
    return value


class Cluster(Section):
    name: str = Field(
        pattern=pattern(
            r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$",
            "not an EKS cluster name (1 to 100 letters, digits, '-' or '_', starting with a letter or digit)",
        ),
        description="The EKS cluster's name: 1 to 100 letters, digits, '-' or '_'.",
    )
    kubernetes_version: str = Field(
        alias="kubernetesVersion", description='The Kubernetes minor version, quoted (e.g. "1.33"). 1.25 or later.'
    )
    create: StrictBool = Field(
        default=True,
        description="true: the stack creates the cluster. false: it adopts an existing cluster of that name.",
    )
    subnet_ids: tuple[str, ...] = Field(
        alias="subnetIds",
        min_length=2,
        description="The cluster's subnets (subnet-...), in two zones or more. Node pools launch in them by default.",
    )
    endpoint_public_access: StrictBool = Field(
        default=False,
        alias="endpointPublicAccess",
        description="Whether the Kubernetes API endpoint is reachable from the internet. Only with create: true.",
    )
    # EKS API VpcConfigRequest.publicAccessCidrs: EKS's default is 0.0.0.0/0. Judged by the policy
    # pack (cluster-endpoint-not-open); checked here: the form, the quota of blocks, and IPv4 only (the
    # stack creates IPv4 clusters: no kubernetesNetworkConfig.ipFamily, whose default is ipv4; botocore
    # 1.44.8 data/eks/2017-11-01/service-2.json.gz
    # shapes.VpcConfigRequest.members.publicAccessCidrs.documentation: "You can't add IPv6 CIDR blocks
    # to IPv4 clusters").
    public_access_cidrs: tuple[str, ...] = Field(
        default=(),
        alias="publicAccessCidrs",
        description="The IPv4 CIDR blocks a public endpoint admits (unset: EKS admits 0.0.0.0/0). "
        "Needs endpointPublicAccess: true; at most EKS's quota of blocks per cluster.",
    )
    # components/aws/cluster_access.py: a created cluster's only way in.
    admins: tuple[IamPrincipal, ...] = Field(
        default=(),
        description="IAM role or user ARNs that get cluster-admin access entries. Required with create: true; "
        "the identity that runs `pulumi up` must be one of them.",
    )
    # EKS API CreateClusterRequest/UpdateClusterConfigRequest.deletionProtection (botocore 1.44.8
    # data/eks/2017-11-01/service-2.json.gz): EKS's default is false; it changes in place.
    deletion_protection: StrictBool = Field(
        default=True,
        alias="deletionProtection",
        description="Whether the cluster is protected from deletion: by EKS, and by Pulumi's `protect` (so "
        "`pulumi destroy` stops before deleting anything). To destroy the stack, set false and run `pulumi up` first. "
        "Only with create: true.",
    )

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _minor(cls, value: Any) -> Any:
        value = quoted_version(value, r"1\.\d{2}", "a Kubernetes minor version", "1.33")
        # EKS runs nothing older, and NFD before 0.18 needs gRPC probes (on by default from 1.24).
        if int(value.split(".")[1]) < 25:
            raise ConfigProblem(f"{shown(value)} is older than any Kubernetes EKS runs (1.25 or later)")
        return value

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return subnet_ids(value, "EKS needs subnets in at least two zones")

    @field_validator("public_access_cidrs", mode="before")
    @classmethod
    def _cidrs(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise ConfigProblem(f"{shown(value)} is not a list of CIDR blocks (e.g. [203.0.113.0/24])")
        for i, cidr in enumerate(value):
            try:
                # A bare address is a network to ipaddress (a /32), not to EKS: the prefix must be written.
                if not isinstance(cidr, str) or "/" not in cidr:
                    raise ValueError
                ipaddress.ip_network(cidr, strict=True)
            except ValueError:
                network = None
                if isinstance(cidr, str):
                    with contextlib.suppress(ValueError):
                        network = ipaddress.ip_network(cidr, strict=False)
                hint = (
                    f"; its host bits are set: the block is {network}"
                    if network is not None and "/" in cidr
                    else " (an address and a prefix length, e.g. 203.0.113.0/24)"
                )
                raise ConfigProblem(f"{shown(cidr)} is not a CIDR block{hint}", path=(i,)) from None
        if len(set(value)) != len(value):
            raise ConfigProblem("CIDR blocks repeat; list each once")
        for i, cidr in enumerate(value):
            if ipaddress.ip_network(cidr).version == 6:
                raise ConfigProblem(
                    f"{shown(cidr)} is an IPv6 block: the stack creates IPv4 clusters, whose endpoint "
                    "EKS "
                    "opens to IPv4 blocks only; list IPv4 blocks (e.g. 203.0.113.0/24)",
                    path=(i,),
                )
        quota, code = aws_limits.public_access_cidrs_per_cluster()
        if len(value) > quota:
            raise ConfigProblem(
                f"{len(value)} CIDR blocks; EKS takes at most {quota} per cluster (quota {code}, not "
                f"adjustable): list at most {quota}, merging neighbouring blocks"
            )
        return value

    @field_validator("admins")
    @classmethod
    def _one_entry_each(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        # IAM names are unique per account whatever the path, and not case-sensitive (IAM User
        # Guide, "IAM identifiers"): two ARNs that differ only there name one principal.
        seen: dict[str, int] = {}
        for i, arn in enumerate(value):
            key = principal_key(arn)
            if key in seen:
                first = value[seen[key]]
                what = (
                    f"{arn!r} is listed twice (admins[{seen[key]}] and admins[{i}])"
                    if first == arn
                    else f"admins[{seen[key]}] {first!r} and admins[{i}] {arn!r} name the same IAM principal (IAM "
                    "names are "
                    "unique per account whatever the path, and not case-sensitive)"
                )
                raise ConfigProblem(f"{what}; an IAM principal can have one access entry only")
            seen[key] = i
        if len(value) > MAX_ADMINS:
            raise ConfigProblem(f"{len(value)} admins; at most {MAX_ADMINS}: give a team an IAM role its people assume")
        return value

    @model_validator(mode="after")
    def _cidrs_for_a_public_endpoint(self) -> Cluster:
        if self.public_access_cidrs and not self.create:
            raise ConfigProblem(_ADOPTED_ENDPOINT, path=("publicAccessCidrs",))
        if self.endpoint_public_access and not self.create:
            raise ConfigProblem(_ADOPTED_ENDPOINT, path=("endpointPublicAccess",))
        if "deletion_protection" in self.model_fields_set and not self.create:
            flag = "--deletion-protection" if self.deletion_protection else "--no-deletion-protection"
            raise ConfigProblem(
                "set with create: false: the stack does not manage an adopted cluster's deletion protection; remove "
                f"the key (or change it with `aws eks update-cluster-config --name {self.name} {flag}`)",
                path=("deletionProtection",),
            )
        if self.public_access_cidrs and not self.endpoint_public_access:
            raise ConfigProblem(
                "set with endpointPublicAccess: false, where it limits nothing; remove it, or set "
                "endpointPublicAccess: true to open the endpoint to these blocks",
                path=("publicAccessCidrs",),
            )
        return self

    @model_validator(mode="after")
    def _admins_for_a_created_cluster(self) -> Cluster:
        if self.create and not self.admins:
            raise ConfigProblem(
                "admins is required with create: true: the cluster admits IAM principals through access entries only, "
                "so "
                "name the roles or users that administer it, the one that runs `pulumi up` among them "
                "(e.g. admins: [arn:aws:iam::123456789012:role/gpu-platform-deployer])"
            )
        return self
