"""The stack configuration model: the one place that reads raw config.

Shape errors and unknown names (a release, a CUDA version, a MIG configuration that exists for no
GPU) are config errors, raised before anything is registered. Combinations of known things that do
not work together (release and Kubernetes, driver and CUDA, MIG profile and GPU) are left to the
policy pack, which sees the whole stack; except what allocation mode dra cannot render at all (a
release without the DRA driver, a Kubernetes without resource.k8s.io/v1, a pool setting only the
device plugin reads): the program would otherwise deploy a cluster whose GPUs nothing allocates; and
a DCGM exporter too old to name the pods of DRA-allocated GPUs, whose metrics would silently lose them.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
import ipaddress
import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal, Mapping, Optional

import pulumi
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, ValidationError, field_validator, model_validator

from gpu_platform import admission, aws_limits, contract, dra, image_refs, ledger, matrix, operands, versions
from gpu_platform.canonical_form import canonical, sha256

PROJECT = "gpu-platform"


class ConfigError(pulumi.RunError):
    """A user mistake in the stack configuration. A RunError, so `pulumi up` prints the message
    without a traceback; the offline preview prints it and exits 2."""


def _shown(value: Any) -> str:
    """A value in a message, short: text quoted as the other messages quote it, anything else spelt
    as in the stack file (true, null, 3), not as Python (True, None)."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


# A validator's problem with one item of the value it checks: `_at("[1]", "...")` puts the item's
# index or key on the key path, as pydantic does for its own item errors.
def _at(sub: str, message: str) -> str:
    return f"@{sub}: {message}"


# What the fields' patterns mean, for people: a regular expression is not an explanation.
_PATTERNS = {
    r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$": "not an EKS cluster name (1 to 100 letters, digits, '-' or '_', starting with a letter or digit)",
    r"^ami-[0-9a-f]{8,17}$": "not an AMI id (ami- and 8 to 17 lowercase hex digits, e.g. ami-0123456789abcdef0)",
    r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$": "not a pool name (1 to 32 lowercase letters, digits or '-', starting and ending with a letter or digit)",
    r"^[a-z][a-z0-9-]*\.[a-z0-9]+$": "not an EC2 instance type (family.size, e.g. g6.2xlarge)",
    r"^cr-[0-9a-f]{17}$": "not a capacity reservation id (cr- and 17 lowercase hex digits)",
}


def _valid(options) -> str:
    return ", ".join(sorted(options))


def _not_a_version(value: Any, pattern: str, what: str, example: str, valid: str = "") -> Optional[str]:
    """What is wrong with a version as the stack file gave it, or None. YAML reads 1.30 unquoted as
    the number 1.3, so a version must arrive as text; only a number is told to quote itself (a quoted
    version that is unknown is unknown, and a mapping or list is not a version however it is written:
    a `<<` merge entry in a list makes a mapping)."""
    if isinstance(value, str) and re.fullmatch(pattern, value):
        return None
    listed = f" (valid: {valid})" if valid else ""
    if value is None or value == "":
        return f"has no value (null or empty): give {what}, quoted, e.g. \"{example}\"{listed}"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = json.dumps(value)
        quoted = text if re.fullmatch(pattern, text) else example
        return f"the value was read as a number ({text}), not text: a version must be quoted, e.g. \"{quoted}\"{listed}"
    if isinstance(value, (dict, list, tuple)):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        return f"{_shown(value)} is {kind}, not {what} (one quoted version, e.g. \"{example}\"){listed}"
    return f"{_shown(value)} is not {what}" + (listed or f" (e.g. \"{example}\")")


def _quoted_version(value: Any, pattern: str, what: str, example: str) -> Any:
    problem = _not_a_version(value, pattern, what, example)
    if problem:
        raise ValueError(problem)
    return value


# What to give for a key whose meaning differs by model (a pool's subnets are not the cluster's).
_GIVE_IN = {("NodePool", "subnetIds"): "a list of one or more subnet ids (exactly one with EFA or a Capacity Block)"}

# Optional keys whose own validator answers a null, with the key's default in the message.
_NULL_SAID_BY_VALIDATOR = ("rollout", "nodeRepair", "efa")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=False, frozen=True)

    @model_validator(mode="before")
    @classmethod
    def _null_is_not_absent(cls, data: Any) -> Any:
        # `timeSlicing:` with nothing after it is a YAML null. An optional key given null is refused as
        # a required one is, never read as the key left out (its default), which the file does not say.
        if isinstance(data, dict):
            for name, field in cls.model_fields.items():
                key = field.alias or name
                if (key in data and (data[key] is None or data[key] == "") and not field.is_required()
                        and field.default is None and key not in _NULL_SAID_BY_VALIDATOR):
                    give = _GIVE_IN.get((cls.__name__, key)) or _GIVE.get(key, 'a value')
                    raise ValueError(_at(f".{key}", f"has no value (null or empty): give {give}, "
                                                    "or remove the key for the default"))
        return data


# IAM role or user ARNs, with an optional path (IAM User Guide, "IAM identifiers": names and paths
# are ASCII); an access entry for a role may carry the path (EKS User Guide, "Create access entries").
_IAM_PRINCIPAL = re.compile(r"arn:aws(-cn|-us-gov)?:iam::\d{12}:(role|user)/([\w+=,.@-]+/)*[\w+=,.@-]{1,64}", re.ASCII)
_ASSUMED_ROLE = re.compile(
    r"arn:(?P<partition>aws(-cn|-us-gov)?):sts::(?P<account>\d{12}):assumed-role/(?P<role>[\w+=,.@-]+)/[^/]+", re.ASCII)
# EKS sets no number; past a few dozen, a role the people assume is the reviewable way.
MAX_ADMINS = 50


def principal_key(arn: str) -> str:
    """`arn:aws:iam::1:role/a/Admins` -> `aws 1 role admins`: what IAM tells principals apart by."""
    _, partition, _, _, account, resource = arn.split(":", 5)
    kind, _, path = resource.partition("/")
    return f"{partition} {account} {kind} {path.rsplit('/', 1)[-1].lower()}"


def _iam_principal(value: Any) -> Any:
    role = _ASSUMED_ROLE.fullmatch(value) if isinstance(value, str) else None
    if role:
        raise ValueError(
            f"{_shown(value)} is an assumed-role session, which EKS access entries do not take; "
            f"give the role: arn:{role['partition']}:iam::{role['account']}:role/{role['role']}"
        )
    if not isinstance(value, str) or not _IAM_PRINCIPAL.fullmatch(value):
        raise ValueError(
            f"{_shown(value)} is not an IAM role or user ARN (e.g. arn:aws:iam::123456789012:role/platform-admins "
            "or arn:aws:iam::123456789012:user/alice); EKS access entries take only those"
        )
    if ":role/aws-service-role/" in value:
        raise ValueError(f"{_shown(value)} is a service-linked role, which EKS access entries refuse")
    # The path between role/ (or user/) and the name, both slashes included: at most 512 characters
    # (IAM User Guide, "IAM object quotas": "Path: 512 characters").
    prefix = value.split(":", 5)[5].split("/", 1)[1].rpartition("/")[0]
    path = f"/{prefix}/" if prefix else "/"
    if len(path) > 512:
        raise ValueError(f"{_shown(value)} has an IAM path of {len(path)} characters; IAM allows 512 at most")
    return value


IamPrincipal = Annotated[str, BeforeValidator(_iam_principal)]


def _subnet_ids(value: tuple[str, ...], why_distinct: str) -> tuple[str, ...]:
    for i, subnet in enumerate(value):
        if not re.fullmatch(r"subnet-[0-9a-f]{8,17}", subnet):
            raise ValueError(_at(f"[{i}]", f"{_shown(subnet)} is not a subnet id (subnet- and 8 to 17 hex digits)"))
    if len(set(value)) != len(value):
        raise ValueError(f"subnet ids repeat; {why_distinct}")
    return value


class Cluster(_Model):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,99}$")
    kubernetes_version: str = Field(alias="kubernetesVersion")
    create: StrictBool = True
    subnet_ids: tuple[str, ...] = Field(alias="subnetIds", min_length=2)
    endpoint_public_access: StrictBool = Field(default=False, alias="endpointPublicAccess")
    # Who may reach a public endpoint (EKS API VpcConfigRequest.publicAccessCidrs: EKS's default is
    # 0.0.0.0/0). Judged by the policy pack (cluster-endpoint-not-open); checked here: the form, the
    # quota of blocks, and IPv4 only (the stack creates IPv4 clusters: no kubernetesNetworkConfig.ipFamily,
    # whose default is ipv4; botocore 1.44.8 data/eks/2017-11-01/service-2.json.gz
    # shapes.VpcConfigRequest.members.publicAccessCidrs.documentation: "You can't add IPv6 CIDR blocks
    # to IPv4 clusters").
    public_access_cidrs: tuple[str, ...] = Field(default=(), alias="publicAccessCidrs")
    # The IAM roles or users with cluster-admin access entries (components/aws/cluster_access.py):
    # required for a cluster the stack creates, whose only way in they are; the identity that runs
    # `pulumi up` must be one of them.
    admins: tuple[IamPrincipal, ...] = ()

    @field_validator("kubernetes_version", mode="before")
    @classmethod
    def _minor(cls, value: Any) -> Any:
        value = _quoted_version(value, r"1\.\d{2}", "a Kubernetes minor version", "1.33")
        # EKS runs nothing older, and NFD before 0.18 needs gRPC probes (on by default from 1.24).
        if int(value.split(".")[1]) < 25:
            raise ValueError(f"{_shown(value)} is older than any Kubernetes EKS runs (1.25 or later)")
        return value

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        return _subnet_ids(value, "EKS needs subnets in at least two zones")

    @field_validator("public_access_cidrs", mode="before")
    @classmethod
    def _cidrs(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            raise ValueError(f"{_shown(value)} is not a list of CIDR blocks (e.g. [203.0.113.0/24])")
        for i, cidr in enumerate(value):
            try:
                # A bare address is a network to ipaddress (a /32), not to EKS: the prefix must be written.
                if not isinstance(cidr, str) or "/" not in cidr:
                    raise ValueError
                ipaddress.ip_network(cidr, strict=True)
            except ValueError:
                network = None
                if isinstance(cidr, str):
                    try:
                        network = ipaddress.ip_network(cidr, strict=False)
                    except ValueError:
                        pass
                hint = (f"; its host bits are set: the block is {network}" if network is not None and "/" in cidr
                        else " (an address and a prefix length, e.g. 203.0.113.0/24)")
                raise ValueError(_at(f"[{i}]", f"{_shown(cidr)} is not a CIDR block{hint}"))
        if len(set(value)) != len(value):
            raise ValueError("CIDR blocks repeat; list each once")
        for i, cidr in enumerate(value):
            if ipaddress.ip_network(cidr).version == 6:
                raise ValueError(_at(f"[{i}]", f"{_shown(cidr)} is an IPv6 block: the stack creates IPv4 clusters, whose "
                                               "endpoint EKS opens to IPv4 blocks only; list IPv4 blocks (e.g. 203.0.113.0/24)"))
        quota, code = aws_limits.public_access_cidrs_per_cluster()
        if len(value) > quota:
            raise ValueError(f"{len(value)} CIDR blocks; EKS takes at most {quota} per cluster (quota {code}, not "
                             f"adjustable): list at most {quota}, merging neighbouring blocks")
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
                what = (f"{arn!r} is listed twice (admins[{seen[key]}] and admins[{i}])" if first == arn else
                        f"admins[{seen[key]}] {first!r} and admins[{i}] {arn!r} name the same IAM principal (IAM names are "
                        "unique per account whatever the path, and not case-sensitive)")
                raise ValueError(f"{what}; an IAM principal can have one access entry only")
            seen[key] = i
        if len(value) > MAX_ADMINS:
            raise ValueError(f"{len(value)} admins; at most {MAX_ADMINS}: give a team an IAM role its people assume")
        return value

    @model_validator(mode="after")
    def _cidrs_for_a_public_endpoint(self) -> "Cluster":
        if self.public_access_cidrs and not self.create:
            raise ValueError(_at(".publicAccessCidrs", "set with create: false: the stack does not manage an adopted "
                                                      "cluster's endpoint; remove the key (or change the endpoint with `aws eks update-cluster-config`)"))
        if self.endpoint_public_access and not self.create:
            raise ValueError(_at(".endpointPublicAccess", "set with create: false: the stack does not manage an adopted "
                                                         "cluster's endpoint; remove the key (or change the endpoint with `aws eks update-cluster-config`)"))
        if self.public_access_cidrs and not self.endpoint_public_access:
            raise ValueError(_at(".publicAccessCidrs", "set with endpointPublicAccess: false, where it limits nothing; remove "
                                                      "it, or set endpointPublicAccess: true to open the endpoint to these blocks"))
        return self

    @model_validator(mode="after")
    def _admins_for_a_created_cluster(self) -> "Cluster":
        if self.create and not self.admins:
            raise ValueError(
                "admins is required with create: true: the cluster admits IAM principals through access entries only, so "
                "name the roles or users that administer it, the one that runs `pulumi up` among them "
                "(e.g. admins: [arn:aws:iam::123456789012:role/gpu-platform-deployer])"
            )
        return self


class Operator(_Model):
    release: str
    overrides: Mapping[str, str] = Field(default_factory=dict)

    @field_validator("release")
    @classmethod
    def _known_release(cls, value: str) -> str:
        releases = matrix.load().releases
        if value not in releases:
            raise ValueError(
                f"{_shown(value)} is not a GPU Operator release of the version matrix "
                f"(valid: {', '.join(releases)})"
            )
        return value

    @field_validator("overrides")
    @classmethod
    def _known_operands(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for operand, tag in value.items():
            if operand not in matrix.OPERAND_IMAGES:
                borrowed = operands.image_key(operand)
                if borrowed != operand:  # an operand that runs another's image is overridden through it
                    raise ValueError(_at(f".{operand}", f"runs the {borrowed} image, which an override of {borrowed} "
                                                        f"sets for both (valid: {_valid(matrix.OPERAND_IMAGES)})"))
                raise ValueError(_at(f".{operand}", f"not an operand (valid: {_valid(matrix.OPERAND_IMAGES)})"))
            # A version first: operands choose flags and paths by the image's version. A digest may
            # follow (tag@sha256:...), pinning the bytes the tag named when it was taken.
            given, at, digest = tag.partition("@") if isinstance(tag, str) else (tag, "", "")
            if not isinstance(given, str) or not re.fullmatch(r"v?\d+(\.\d+)+[A-Za-z0-9_.-]{0,100}", given):
                raise ValueError(_at(f".{operand}", f"{_shown(tag)} is not an image tag (a version tag only, e.g. v0.18.2; "
                                                    "the repository stays the release's); a digest may follow the tag: "
                                                    f"v0.18.2@{image_refs.DIGEST_EXAMPLE}"))
            problem = image_refs.digest_problem(digest) if at else None
            if problem:
                raise ValueError(_at(f".{operand}", f"{_shown(tag)}: after the tag, the {problem}; `crane digest "
                                                    "<repository>:<tag>` prints the digest a tag names now"))
        return dict(sorted(value.items()))


class NodeImage(_Model):
    # bake: EC2 Image Builder in the stack; ami: a pinned, already baked AMI; eks-nvidia: AWS's own
    # accelerated AL2023 AMI of one amazon-eks-ami release (`release`), its driver AWS's.
    source: Literal["bake", "ami", "eks-nvidia"]
    # Required with bake and ami; with eks-nvidia the release's driver (matrix.yaml eksNvidiaAmis).
    driver_version: Optional[str] = Field(default=None, alias="driverVersion")
    # With eks-nvidia: the amazon-eks-ami release whose nvidia AMI the nodes boot.
    release: Optional[str] = None
    ami_id: Optional[str] = Field(default=None, alias="amiId", pattern=r"^ami-[0-9a-f]{8,17}$")
    # Whether the image registers the NVIDIA runtime itself: a baked image does (the bake installs the
    # toolkit), a pinned AMI says so itself (default false: the toolkit DaemonSet registers it).
    toolkit_baked: Optional[StrictBool] = Field(default=None, alias="toolkitBaked")
    # The EKS AMI release the bake starts from (default per Kubernetes minor:
    # gpu_platform/eks_ami_releases.yaml); pinned so that AWS publishing a newer one rebuilds nothing.
    base_image_release: Optional[str] = Field(default=None, alias="baseImageRelease")

    @field_validator("release", mode="before")
    @classmethod
    def _eks_release(cls, value: Any) -> Any:
        # Before the type check: `release: 20260714` is a number in YAML, and its message must still
        # list the releases (written with the v, as the tags are).
        known = matrix.load().eks_nvidia_amis
        if value is not None and value not in known:
            raise ValueError(
                f"{_shown(value)} is not an amazon-eks-ami release the matrix records the nvidia AMI of "
                f"(valid: {_valid(known)}; a newer one is added to gpu_platform/matrix.yaml eksNvidiaAmis from its CHANGELOG entry)"
            )
        return value

    @field_validator("base_image_release", mode="before")
    @classmethod
    def _release(cls, value: Any) -> Any:
        # Release tags of awslabs/amazon-eks-ami are "v" and the build date (v20260714).
        if value is not None and (not isinstance(value, str) or not re.fullmatch(r"v20\d{6}", value)):
            raise ValueError(
                f"{_shown(value)} is not an EKS AMI release (a release tag of github.com/awslabs/amazon-eks-ami, "
                "v and the release date, e.g. v20260714)"
            )
        return value

    @field_validator("driver_version", mode="before")
    @classmethod
    def _driver(cls, value: Any) -> Any:
        return _quoted_version(value, r"\d{3}\.\d{1,3}(\.\d{1,3})?", "an NVIDIA driver version", "580.105.08")

    @model_validator(mode="after")
    def _toolkit_default(self) -> "NodeImage":
        if self.toolkit_baked is None:
            object.__setattr__(self, "toolkit_baked", self.source in ("bake", "eks-nvidia"))
        return self

    @model_validator(mode="after")
    def _eks_nvidia(self) -> "NodeImage":
        if self.source != "eks-nvidia":
            if self.release:
                raise ValueError(f"release is only for source: eks-nvidia (this image is source: {self.source})")
            if self.driver_version is None:
                raise ValueError(f"driverVersion is required with source: {self.source} (e.g. \"580.105.08\")")
            return self
        if not self.release:
            raise ValueError(_at(".release", "required with source: eks-nvidia (an amazon-eks-ami release, e.g. v20260714; "
                                             f"valid: {_valid(matrix.load().eks_nvidia_amis)})"))
        for key, value in (("amiId", self.ami_id), ("baseImageRelease", self.base_image_release)):
            if value:
                raise ValueError(_at(f".{key}", f"not for source: eks-nvidia (AWS's AMI of release {self.release} is the image); remove it"))
        drivers = {ami.driver for ami in matrix.load().eks_nvidia_amis[self.release].values()}
        if self.driver_version is None and len(drivers) == 1:
            object.__setattr__(self, "driver_version", drivers.pop())
        elif self.driver_version not in drivers:
            raise ValueError(_at(".driverVersion", f"{_shown(self.driver_version)} is not the driver of the {self.release} nvidia AMI "
                                                   f"(valid: {_valid(drivers)}, or leave it out); with source: eks-nvidia the driver is AWS's"))
        if not self.toolkit_baked:
            raise ValueError(_at(".toolkitBaked", "false does not fit source: eks-nvidia: AWS's AMI carries the container toolkit and "
                                                  "nodeadm makes nvidia containerd's default runtime, so a toolkit DaemonSet would be a second "
                                                  "owner (valid: true, or leave it out)"))
        return self

    @model_validator(mode="after")
    def _ami_with_source(self) -> "NodeImage":
        if self.source == "ami" and not self.ami_id:
            raise ValueError("amiId is required with source: ami (a pinned, already baked AMI)")
        if self.source == "bake" and self.ami_id:
            raise ValueError("amiId is only for source: ami; source: bake builds the AMI in the stack")
        if self.source == "ami" and self.base_image_release:
            raise ValueError("baseImageRelease is only for source: bake; a pinned AMI (source: ami) is already built")
        return self


class Workloads(_Model):
    cuda_versions: tuple[str, ...] = Field(alias="cudaVersions", min_length=1)
    # Namespaces whose pods may run privileged or with SYS_ADMIN on GPU nodes (e.g. your own GPU monitoring
    # agent's), besides kube-system and the operator namespace: written into the GPU-access admission
    # policy, whose spec the privilege ledger hashes, so listing one is a new approval.
    privileged_namespaces: tuple[str, ...] = Field(default=(), alias="privilegedNamespaces")
    # deny: the GPU-privilege admission policy refuses such pods; warn: admits them with a warning and an
    # audit-log entry, so an adopted cluster's own privileged agents (a CNI, a security agent) keep
    # running while you list their namespaces. Unset: deny on a cluster the stack creates, warn on an
    # adopted one (StackConfig.privilege_actions).
    privilege_admission: Optional[Literal["deny", "warn"]] = Field(default=None, alias="privilegeAdmission")

    @field_validator("privileged_namespaces", mode="before")
    @classmethod
    def _namespaces(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        for i, name in enumerate(value):
            if not isinstance(name, str) or not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", name):
                raise ValueError(_at(f"[{i}]", f"{_shown(name)} is not a Kubernetes namespace name "
                                               f"({_NAMESPACE_FORM})"))
            if name in (*admission.PRIVILEGED_NAMESPACES, contract.OPERATOR_NAMESPACE):
                raise ValueError(_at(f"[{i}]", f"{_shown(name)} is exempt already (the operator namespace, or "
                                               "gpu_platform/admission.py PRIVILEGED_NAMESPACES); list only your own namespaces"))
            if name == "default":
                raise ValueError(_at(f"[{i}]", "'default' is where pods without a namespace land: trusting it would let "
                                               "any pod take every GPU of a node; run your agent in a namespace of its own "
                                               "and list that"))
            if name in value[:i]:
                raise ValueError(_at(f"[{i}]", f"{_shown(name)} is listed twice"))
        return tuple(value)

    @field_validator("cuda_versions", mode="before")
    @classmethod
    def _known_cuda(cls, value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        known = matrix.load().cuda.toolkits
        valid = ", ".join(sorted(known, key=versions.parse))
        for i, cuda in enumerate(value):
            problem = _not_a_version(cuda, r"\d+\.\d+(\.\d+)?", "a CUDA toolkit version", "12.8", valid)
            if problem is None and cuda not in known:
                problem = f"{_shown(cuda)} is not a CUDA toolkit version the matrix knows (valid: {valid})"
            if problem:
                raise ValueError(_at(f"[{i}]", problem))
            if cuda in value[:i]:
                raise ValueError(_at(f"[{i}]", f"{_shown(cuda)} is listed twice"))
        return tuple(value)


class TimeSlicing(_Model):
    replicas: StrictInt = Field(ge=2, le=64)


class MigConfig(_Model):
    config: str

    @field_validator("config")
    @classmethod
    def _known_config(cls, value: str) -> str:
        names = matrix.load().mig_config_names
        if value not in names:
            raise ValueError(
                f"{_shown(value)} is not a MIG configuration of any GPU in the matrix "
                f"(valid: {_valid(names)})"
            )
        return value


class NodePool(_Model):
    name: str = Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$")
    instance_type: str = Field(alias="instanceType", pattern=r"^[a-z][a-z0-9-]*\.[a-z0-9]+$")
    min_size: StrictInt = Field(alias="minSize", ge=0)
    desired_size: StrictInt = Field(alias="desiredSize", ge=0)
    max_size: StrictInt = Field(alias="maxSize", ge=1)
    capacity_type: Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"] = Field(
        default="ON_DEMAND", alias="capacityType"
    )
    time_slicing: Optional[TimeSlicing] = Field(default=None, alias="timeSlicing")
    mig: Optional[MigConfig] = None
    root_volume_gib: StrictInt = Field(default=200, alias="rootVolumeGiB", ge=100, le=16384)
    # How a new node image reaches the pool's nodes: surge (EKS's rolling update, new nodes first),
    # in-place (EKS's MINIMAL strategy: old nodes go first, no spare capacity needed) or blue-green (a
    # new node group beside the old, removed after a readiness gate). Default surge; in-place for a
    # capacity block, whose reservation holds no spare instance to surge into.
    rollout: Optional[Literal["surge", "in-place", "blue-green"]] = None
    # blue-green on a capacity block: both generations run at once, so the block must hold twice the
    # pool's nodes; the stack accepts it only when the stack file says the block does.
    block_holds_both_generations: StrictBool = Field(default=False, alias="blockHoldsBothGenerations")
    # EKS node auto repair: a node whose GPU reports a fatal condition (the node monitoring agent's
    # AcceleratedHardwareReady, e.g. NVIDIA XID or double-bit errors) is rebooted or replaced. Any pool
    # with it on gets the cluster the eks-node-monitoring-agent add-on that detects those conditions.
    node_repair: StrictBool = Field(default=True, alias="nodeRepair")
    # A capacity block is a reservation bought ahead for a fixed window: EKS launches its nodes only
    # through a launch template that targets it by id.
    capacity_reservation_id: Optional[str] = Field(
        default=None, alias="capacityReservationId", pattern=r"^cr-[0-9a-f]{17}$"
    )
    # Elastic Fabric Adapter interfaces (one per network card that takes one), a cluster placement
    # group and the EFA security group, for NCCL across nodes (components/aws/efa.py). Unset: on for
    # the multi-node training families (gpu_platform/aws_limits.yaml efa), off elsewhere.
    efa: Optional[StrictBool] = None
    # The subnets the pool's nodes launch in (default cluster.subnetIds): the zone an EFA pool's
    # placement group lives in, or a capacity block's zone, is the pool's choice, not always the
    # cluster's first subnet. They must be in the cluster's VPC (EKS refuses a node group otherwise).
    subnet_ids: Optional[tuple[str, ...]] = Field(default=None, alias="subnetIds", min_length=1)

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
        return None if value is None else _subnet_ids(value, "give each subnet once")

    @field_validator("rollout", "node_repair", "efa", mode="before")
    @classmethod
    def _no_null(cls, value: Any, info) -> Any:
        # `rollout:`, `nodeRepair:` and `efa:` with nothing after them are YAML nulls: all are refused
        # alike, never read as "the default" for one and an error for another.
        if value is None or value == "":
            valid = "surge, in-place or blue-green" if info.field_name == "rollout" else "true or false"
            default = {"rollout": "surge; in-place for a capacity block", "node_repair": "true",
                       "efa": "on for p4d, p5 and p6 types, off elsewhere"}[info.field_name]
            raise ValueError(f"has no value (null or empty): give {valid}, or remove the key for the default ({default})")
        return value

    @field_validator("max_size")
    @classmethod
    def _node_group_quota(cls, value: int) -> int:
        quota = aws_limits.nodes_per_node_group()
        if value > quota:
            raise ValueError(
                f"{value} is above the {quota} nodes a managed node group may have (the default EKS quota "
                f"{aws_limits.node_group_quota_code()}, raised in Service Quotas only); split the pool, or ask AWS to "
                f"raise the quota first"
            )
        return value

    @model_validator(mode="after")
    def _sizes(self) -> "NodePool":
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ValueError(
                f"sizes must satisfy minSize <= desiredSize <= maxSize "
                f"(got {self.min_size}, {self.desired_size}, {self.max_size})"
            )
        return self

    @model_validator(mode="after")
    def _rollout(self) -> "NodePool":
        block = self.capacity_type == "CAPACITY_BLOCK"
        if self.rollout is None:
            object.__setattr__(self, "rollout", "in-place" if block else "surge")
        elif block and self.rollout == "surge":
            # A surge launches extra instances before the old ones go; a capacity block reserves a fixed
            # count for a fixed window (EC2 User Guide, "Capacity Blocks for ML"), so there is none to spare.
            raise ValueError(_at(".rollout", "surge does not fit capacityType: CAPACITY_BLOCK: the block holds no spare instance "
                                             "to launch new nodes into first (valid: in-place; blue-green with blockHoldsBothGenerations: true)"))
        elif block and self.rollout == "blue-green" and not self.block_holds_both_generations:
            # The new node group launches desiredSize nodes into the same reservation while the old one
            # still holds its own: the block must have room for both generations, which only its owner knows.
            raise ValueError(_at(".rollout", (
                f"blue-green on capacityType: CAPACITY_BLOCK runs both node group generations at once, {self.desired_size} + "
                f"{self.desired_size} nodes in the block {self.capacity_reservation_id}; say that the block holds them with "
                "blockHoldsBothGenerations: true, or use rollout: in-place (valid: in-place; blue-green with blockHoldsBothGenerations: true)")))
        if self.block_holds_both_generations and not (block and self.rollout == "blue-green"):
            raise ValueError(_at(".blockHoldsBothGenerations", "only for rollout: blue-green with capacityType: CAPACITY_BLOCK; remove it"))
        if self.rollout == "blue-green" and self.min_size == 0:
            # The readiness gate is a DaemonSet on the new group's nodes, and Pulumi's DaemonSet wait
            # ends once kstatus says Current, which a DaemonSet that wants no pod is at once
            # (pulumi-kubernetes v4.32.0 provider/pkg/await/daemonset.go lines 169-171, 186-193). The new
            # group's nodes run only DaemonSet pods until the old group goes, so the cluster autoscaler
            # removes them as unneeded, down to minSize: at 0 the gate passes and the old group is deleted.
            raise ValueError(_at(".minSize", (
                "0 does not fit rollout: blue-green: the cluster autoscaler may scale the new node group down to 0 nodes "
                "before its readiness gate has proven any (they run only DaemonSet pods until the old group goes), and a gate "
                "with no node to check passes at once, so the old group would be deleted unchecked (valid: minSize 1 or more "
                "with blue-green, the nodes the pool keeps through a replacement; or rollout: surge or in-place)")))
        return self

    @field_validator("instance_type")
    @classmethod
    def _supported_nvidia_gpu(cls, value: str) -> str:
        gpu = aws_limits.older_nvidia_gpu(value)
        if gpu:
            known = ", ".join(f"{g.key} ({'/'.join(g.families)})" for g in matrix.load().gpus.values())
            raise ValueError(f"{value!r} carries an NVIDIA {gpu}, which this platform does not support: its version matrix "
                             f"(the driver floors, MIG profiles and kernel modules the node image is built for) has no row "
                             f"for it (supported: {known})")
        return value

    @model_validator(mode="after")
    def _one_way_to_share(self) -> "NodePool":
        # The device plugin's config gets both (components/kubernetes/operands/device_plugin.py
        # plugin_config): time-slicing of nvidia.com/gpu beside the MIG strategy, and a configuration
        # carving several profiles (mixed strategy) exposes no nvidia.com/gpu at all, so the replicas
        # would apply to nothing while the pool looked shared.
        if self.mig and self.time_slicing:
            raise ValueError("mig and timeSlicing are exclusive on one pool: a MIG pool shares its GPUs as MIG instances "
                             "(with several profiles they are nvidia.com/mig-<profile> resources, and time-slicing "
                             "nvidia.com/gpu applies to nothing) (valid: one of mig or timeSlicing; put the other in a "
                             "pool of its own)")
        return self

    @model_validator(mode="after")
    def _capacity_block_family(self) -> "NodePool":
        families = matrix.load().capacity_block_families
        family = self.instance_type.split(".", 1)[0]
        if self.capacity_type == "CAPACITY_BLOCK" and family not in families:
            raise ValueError(_at(".capacityType", (
                f"EC2 sells Capacity Blocks for ML only for {', '.join(families)} instances, not {self.instance_type!r} "
                "(valid: ON_DEMAND, SPOT; CAPACITY_BLOCK with an instance type of those families; gpu_platform/matrix.yaml capacityBlocks)")))
        return self

    @model_validator(mode="after")
    def _reservation_with_capacity_block(self) -> "NodePool":
        if self.capacity_type == "CAPACITY_BLOCK" and not self.capacity_reservation_id:
            raise ValueError("capacityReservationId (cr-...) is required with capacityType: CAPACITY_BLOCK")
        if self.capacity_type != "CAPACITY_BLOCK" and self.capacity_reservation_id:
            raise ValueError(f"capacityReservationId is only for capacityType: CAPACITY_BLOCK (this pool is {self.capacity_type})")
        # A Capacity Block is zonal, and its node group must name only a subnet of the reservation's zone
        # (EKS User Guide 4d52b4d0 latest/ug/ml/capacity-blocks-mng.adoc:64, capacity-blocks.adoc:69).
        if self.capacity_type == "CAPACITY_BLOCK" and (self.subnet_ids is None or len(self.subnet_ids) != 1):
            raise ValueError(_at(".subnetIds", (
                "a Capacity Block is zonal: name the one subnet in the Availability Zone of the reservation "
                f"{self.capacity_reservation_id} (subnetIds: [subnet-...]); the cluster's subnets span zones"
                if self.subnet_ids is None else
                f"{len(self.subnet_ids)} subnets, but a Capacity Block is zonal: name only the subnet in the Availability "
                f"Zone of the reservation {self.capacity_reservation_id}")))
        return self


# The privilege ledger's hash (gpu_platform/ledger.py HASH): what `python -m preview` prints.


class Allocation(_Model):
    # How pods get GPUs, for the whole cluster: the device plugin's extended resources (nvidia.com/gpu)
    # or Dynamic Resource Allocation (ResourceClaims on the DRA driver's DeviceClasses). One mode per
    # cluster: AWS's EKS guide warns never to run the DRA driver and the device plugin on the same node
    # (GPUs are silently oversubscribed: docs.aws.amazon.com/eks/latest/userguide/
    # device-management-nvidia-dra-device-plugin.html), and the GPU Operator's DRA mode (GPUCluster) is
    # cluster-wide as well (NVIDIA/gpu-operator v26.7.0 controllers/nodelabeling_controller.go:253-269).
    mode: Literal["device-plugin", "dra"] = "device-plugin"
    # The DRA driver's feature gates, by name (gpu_platform/dra.yaml, per driver version): passed to its
    # kubelet plugin as upstream passes them (env FEATURE_GATES). Unset gates keep the driver's default.
    feature_gates: Mapping[str, StrictBool] = Field(default_factory=dict, alias="featureGates")
    # Alpha gates the stack turns on knowingly: without it, policy dra-alpha-features-acknowledged
    # reports each one (the program writes the list on the operands' namespace for the pack).
    acknowledge_alpha: tuple[str, ...] = Field(default=(), alias="acknowledgeAlpha")


# resource.k8s.io/v1 (DRA structured parameters) is GA, served and on by default from Kubernetes 1.34
# (KEP-4381 kep.yaml, kubernetes/enhancements keps/sig-node/4381-dra-structured-parameters); NVIDIA's
# DRA driver and the GPU Operator ask for 1.34.2 or later, past kubernetes/kubernetes#133920
# (kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 docs/prerequisites.md:10-11; NVIDIA/cloud-native-docs
# gpu-operator-v26.7-1 gpu-operator/dra-intro-install.rst:193).
DRA_MIN_KUBERNETES = (1, 34)
DRA_OPERAND = "dra-driver"
# In mode dra the DCGM exporter finds which pod holds a GPU only with KUBERNETES_ENABLE_DRA (the
# kubelet names DRA devices by pool and device, not by GPU UUID), a flag the exporter has from 4.4.0
# (NVIDIA/dcgm-exporter 4.3.1-4.4.0 pkg/cmd/app.go:315, absent at 4.2.3-4.2.0; 4.5.3-4.8.2
# pkg/cmd/app.go:329-334). An older one ignores the variable and exports metrics with no pod,
# namespace or container label.
DRA_EXPORTER = "dcgm-exporter"
DRA_EXPORTER_SINCE = "4.4.0"


class Audit(_Model):
    owner: str = Field(min_length=1)
    approval: str = Field(min_length=1)
    # The privilege ledger's hash that the approval covered: the program writes it on the operands'
    # namespace, and the policy pack refuses a stack whose ledger has moved since (policy/audit.py).
    approved_ledger: Optional[str] = Field(default=None, alias="approvedLedger")

    @field_validator("approved_ledger", mode="before")
    @classmethod
    def _ledger_hash(cls, value: Any) -> Any:
        if not isinstance(value, str) or not ledger.HASH.fullmatch(value):
            raise ValueError(f"{_shown(value)} is not a privilege ledger hash: give 'sha256:' and 64 lowercase hex "
                             "digits, as `python -m preview --stack NAME` prints it (\"Privilege ledger: sha256:...\")")
        return value

    @field_validator("owner", "approval")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank: the audit trail names a real owner and approval")
        # Both become tags of every AWS resource that runs the driver, IAM roles among them.
        problem = aws_limits.tag_value_problem(value.strip())
        if problem:
            raise ValueError(f"{_shown(value)} {problem}")
        return value.strip()


# kube-prometheus-stack's Prometheus selects ServiceMonitors labelled `release: <its Helm release>`
# unless prometheusSpec.serviceMonitorSelectorNilUsesHelmValues is false
# (prometheus-community/helm-charts, charts/kube-prometheus-stack/templates/prometheus/prometheus.yaml).
DEFAULT_SERVICE_MONITOR_LABELS = {"release": "kube-prometheus-stack"}
# What the stack labels its own objects with (components/kubernetes/operands/manifests.py).
OWN_LABELS = ("app.kubernetes.io/name", "app.kubernetes.io/part-of")
_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


# Namespace names are DNS-1123 labels (Kubernetes docs, "Object Names and IDs").
_NAMESPACE_FORM = ("a DNS-1123 label: 63 characters at most: lower-case letters, digits and '-', starting and ending "
                   "with a letter or digit; e.g. monitoring")


class Monitoring(_Model):
    # A ServiceMonitor is a Prometheus operator CRD object: only a cluster with those CRDs can take it,
    # so a cluster this stack is about to create gets it on the first `pulumi up` after it exists.
    service_monitor: StrictBool = Field(default=False, alias="serviceMonitor")
    service_monitor_labels: Mapping[str, str] = Field(
        default_factory=lambda: dict(DEFAULT_SERVICE_MONITOR_LABELS), alias="serviceMonitorLabels")
    # Who may scrape the operator namespace's metrics ports (its NetworkPolicy allow-metrics): pods with
    # these labels in this namespace. Every Prometheus pod the Prometheus operator runs (kube-prometheus-stack,
    # kube-prometheus) carries app.kubernetes.io/name: prometheus (prometheus-operator v0.93.0
    # pkg/prometheus/server/operator.go:61, 1696-1704; statefulset.go:218-229); `monitoring` is the
    # namespace kube-prometheus deploys to (prometheus-operator/kube-prometheus
    # manifests/prometheus-prometheus.yaml:11 at 017b2aa0). kube-prometheus-stack goes wherever it is installed: set it.
    prometheus_namespace: str = Field(default="monitoring", alias="prometheusNamespace")
    prometheus_pod_labels: Mapping[str, str] = Field(
        default_factory=lambda: {"app.kubernetes.io/name": "prometheus"}, alias="prometheusPodLabels")
    # A ConfigMap that kube-prometheus-stack's Grafana sidecar loads as a dashboard; harmless
    # without one, but useful only with Prometheus scraping the exporter.
    dashboard: StrictBool = False

    @field_validator("prometheus_namespace")
    @classmethod
    def _namespace(cls, value: str) -> str:
        if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", value):
            raise ValueError(f"{_shown(value)} is not a Kubernetes namespace name ({_NAMESPACE_FORM})")
        return value

    @field_validator("prometheus_pod_labels")
    @classmethod
    def _some_pods(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        # An empty matchLabels selects every pod of the namespace: the metrics ports would be open to
        # all of them, not to Prometheus.
        if not value:
            raise ValueError("is empty, which selects every pod of prometheusNamespace; name the labels of the Prometheus "
                             "pods (e.g. {app.kubernetes.io/name: prometheus}, the default), or remove the key for it")
        return value

    @field_validator("service_monitor_labels", "prometheus_pod_labels")
    @classmethod
    def _labels(cls, value: Mapping[str, str], info) -> Mapping[str, str]:
        for key, label in value.items():
            prefix = key.rpartition("/")[0]
            if not _LABEL_KEY.fullmatch(key) or len(prefix) > 253:
                raise ValueError(f"{_shown(key)} is not a Kubernetes label key (e.g. release, app.kubernetes.io/part-of)")
            if info.field_name == "service_monitor_labels" and key in OWN_LABELS:
                raise ValueError(f"{_shown(key)} is the ServiceMonitor's own label (the stack sets it); pick another key")
            if not isinstance(label, str) or not _LABEL_VALUE.fullmatch(label):
                raise ValueError(f"{key}: {_shown(label)} is not a Kubernetes label value (63 characters at most: letters, "
                                 "digits, '-', '_', '.', starting and ending with a letter or digit)")
        return dict(sorted(value.items()))


# How the AWS provider's settings (pulumi-aws 7.51.1 config/vars.py) reach the namespace annotation
# the ledger reads (contract.AWS_PROVIDER_KEY), which is plain text in the cluster and in the reports:
# credentials only as "(set)"; settings that are plain facts (where calls go, which accounts, which
# files, retries, tags) as written; any other (assumeRoles and assumeRoleWithWebIdentity, which carry
# an external id or a web identity token, proxy URLs, which may carry a password, and any setting a
# later provider adds) as its SHA-256, so a change still changes the ledger.
_SECRET_PROVIDER_SETTINGS = frozenset({"accessKey", "secretKey", "token"})
_PLAIN_PROVIDER_SETTINGS = frozenset({
    "allowedAccountIds", "customCaBundle", "defaultTags", "ec2MetadataServiceEndpoint", "ec2MetadataServiceEndpointMode",
    "endpoints", "forbiddenAccountIds", "ignoreTags", "insecure", "maxRetries", "noProxy", "profile", "retryMode",
    "s3UsEast1RegionalEndpoint", "s3UsePathStyle", "sharedConfigFiles", "sharedCredentialsFiles", "skipCredentialsValidation",
    "skipMetadataApiCheck", "skipRegionValidation", "skipRequestingAccountId", "stsRegion", "tagPolicyCompliance",
    "tokenBucketRateLimiterCapacity", "useDualstackEndpoint", "useFipsEndpoint", "userAgents"})


def _provider_setting(name: str, value: Any) -> str:
    if name in _SECRET_PROVIDER_SETTINGS:
        return f"{name} (set)"
    data = canonical(value)  # the ledger's canonical JSON (gpu_platform/canonical_form.py)
    if name in _PLAIN_PROVIDER_SETTINGS:
        return f"{name} {data}"
    return f"{name} {sha256(data)} (SHA-256 of the value: it may hold a credential)"


class StackConfig(_Model):
    region: str = Field(alias="aws:region")
    # The stack's other aws:* provider settings (endpoints, assumeRoles, proxies, insecure, ...), as
    # `key value` (canonical JSON; a credential only as "(set)"), sorted: where the program's AWS
    # calls go and as whom, which the privilege ledger binds (contract.AWS_PROVIDER_KEY). Set by parse()
    # from the raw config; "aws:*" is never a config key a stack file can hold.
    aws_provider: tuple[str, ...] = Field(default=(), alias="aws:*")
    cluster: Cluster = Field(alias="gpu-platform:cluster")
    operator: Operator = Field(alias="gpu-platform:operator")
    node_image: NodeImage = Field(alias="gpu-platform:nodeImage")
    workloads: Workloads = Field(alias="gpu-platform:workloads")
    node_pools: tuple[NodePool, ...] = Field(alias="gpu-platform:nodePools", min_length=1)
    audit: Audit = Field(alias="gpu-platform:audit")
    monitoring: Monitoring = Field(default_factory=Monitoring, alias="gpu-platform:monitoring")
    allocation: Allocation = Field(default_factory=Allocation, alias="gpu-platform:allocation")

    @field_validator("region", mode="before")
    @classmethod
    def _known_region(cls, value: Any) -> Any:
        if not isinstance(value, str) or aws_limits.partition_of(value) is None:
            near = difflib.get_close_matches(str(value), list(aws_limits.regions()), n=3)
            hint = f"did you mean {', '.join(near[:-1]) + ' or ' + near[-1] if len(near) > 1 else near[0]}?" if near else "e.g. us-west-2, eu-central-1, cn-north-1, us-gov-west-1"
            raise ValueError(f"{_shown(value)} is not a region of the aws, aws-cn or aws-us-gov partition ({hint}); a "
                             f"region AWS opened after gpu_platform/aws_limits.yaml was written is added there")
        return value

    @property
    def privilege_actions(self) -> tuple[str, ...]:
        """The GPU-privilege policy's validationActions (gpu-platform:workloads.privilegeAdmission)."""
        chosen = self.workloads.privilege_admission or ("deny" if self.cluster.create else "warn")
        return admission.DENY_ACTIONS if chosen == "deny" else admission.WARN_ACTIONS

    @field_validator("node_pools")
    @classmethod
    def _unique_pools(cls, pools: tuple[NodePool, ...]) -> tuple[NodePool, ...]:
        seen: set[str] = set()
        for i, pool in enumerate(pools):
            if pool.name in seen:
                raise ValueError(_at(f"[{i}].name", f"pool name {pool.name!r} is used twice; names must be unique"))
            seen.add(pool.name)
        return pools

    @model_validator(mode="after")
    def _node_group_quota(self) -> "StackConfig":
        # Each pool is a managed node group, a created cluster adds its system group, and a blue-green
        # pool has two while it is replaced (components/aws/node_pool.py).
        needed = (len(self.node_pools) + (1 if self.cluster.create else 0)
                  + sum(1 for pool in self.node_pools if pool.rollout == "blue-green"))
        quota, code = aws_limits.node_groups_per_cluster()
        if needed > quota:
            raise ValueError(_at("gpu-platform:nodePools", (
                f"{len(self.node_pools)} pools need {needed} managed node groups at once (one each"
                f"{', the system group' if self.cluster.create else ''}"
                f"{', a second per blue-green pool while it is replaced' if needed > len(self.node_pools) + self.cluster.create else ''}); "
                f"a cluster may have {quota} by default (EKS quota {code}): raise it in Service Quotas first, or use fewer pools")))
        return self

    @model_validator(mode="after")
    def _toolkit_override_applies(self) -> "StackConfig":
        # A baked toolkit is the release's version, installed by the bake (or AWS's, in its AMI): no
        # toolkit DaemonSet runs for the override to change, and a patch the user believes applied
        # (a CVE fix) would not be on any node.
        if "container-toolkit" in self.operator.overrides and self.node_image.toolkit_baked:
            raise ValueError(_at("gpu-platform:operator.overrides.container-toolkit", (
                f"{self.operator.overrides['container-toolkit']!r}: the node image bakes the container toolkit "
                f"(gpu-platform:nodeImage.toolkitBaked is true, source {self.node_image.source!r}), at the version of "
                f"release {self.operator.release} ({self.release.toolkit_version}); no toolkit DaemonSet runs for the "
                "override to change (valid: remove the override and move to a release or node image with the toolkit "
                "you need, or set nodeImage.toolkitBaked: false to run the toolkit as a DaemonSet)")))
        return self

    @model_validator(mode="after")
    def _overrides_apply(self) -> "StackConfig":
        # Any other override of an image no operand of this stack runs (the MIG manager without a MIG
        # pool, the device plugin in mode dra, the DRA driver outside it): applied nowhere, it would
        # read as a fix that is not on any node. Where each runs: gpu_platform/operands.yaml `on`.
        any_mig = any(pool.mig for pool in self.node_pools)
        dra_mode = self.allocation.mode == "dra"
        for key in sorted(self.operator.overrides):
            users = [row for row in operands.rows() if row.image == key]
            if not users:
                continue  # an unknown key is refused elsewhere (the toolkit's case said above, in its own words)
            if not any(row.deployed(bool(self.node_image.toolkit_baked), any_mig, dra_mode) for row in users):
                where = sorted({row.on for row in users})
                raise ValueError(_at(f"gpu-platform:operator.overrides.{key}", (
                    f"{self.operator.overrides[key]!r}: no {key} runs in this stack (it runs on {', '.join(where)}: "
                    f"gpu_platform/operands.yaml; this stack has {'a' if any_mig else 'no'} MIG pool, allocation mode "
                    f"{self.allocation.mode}), so the override would apply to no node (valid: remove it)")))
        return self

    @model_validator(mode="after")
    def _dra_renderable(self) -> "StackConfig":
        if self.allocation.mode != "dra":
            return self
        mode = "with gpu-platform:allocation.mode 'dra'"
        if DRA_OPERAND not in self.release.images:
            shipping = [name for name, r in matrix.load().releases.items() if DRA_OPERAND in r.images]
            raise ValueError(_at("gpu-platform:operator.release", (
                f"{self.operator.release!r} {mode}: this GPU Operator release ships no DRA driver (its matrix row in "
                f"gpu_platform/matrix.yaml pins no {DRA_OPERAND} image) (valid: {', '.join(shipping)}; or allocation.mode "
                "device-plugin)")))
        if versions.major_minor(self.cluster.kubernetes_version) < DRA_MIN_KUBERNETES:
            raise ValueError(_at("gpu-platform:cluster.kubernetesVersion", (
                f"{self.cluster.kubernetes_version!r} {mode}: DRA's resource.k8s.io/v1 API (DeviceClass, ResourceClaim) "
                "is GA and on by default from Kubernetes 1.34, and NVIDIA's DRA driver asks for 1.34.2 or later "
                "(kubernetes/kubernetes#133920) (valid: \"1.34\" or later; or allocation.mode device-plugin)")))
        for i, pool in enumerate(self.node_pools):
            if pool.time_slicing:
                raise ValueError(_at(f"gpu-platform:nodePools[{i}].timeSlicing", (
                    f"is the device plugin's setting, and {mode} no device plugin runs: nothing would share the "
                    f"GPUs of pool {pool.name!r} (valid: remove it, or allocation.mode device-plugin)")))
            if pool.mig:
                raise ValueError(_at(f"gpu-platform:nodePools[{i}].mig", (
                    f"is carved by the MIG manager and advertised by the device plugin, and {mode} neither runs "
                    f"(the GPU Operator's DRA mode deploys no MIG manager either) (valid: remove it from pool "
                    f"{pool.name!r}, or allocation.mode device-plugin)")))
        tag = self.operator.overrides.get(DRA_EXPORTER)
        exporter = versions.image_tag_version(tag.partition("@")[0]).split("-")[-1] if tag else ""
        if tag and versions.is_version(exporter) and not versions.at_least(exporter, DRA_EXPORTER_SINCE):
            raise ValueError(_at(f"gpu-platform:operator.overrides.{DRA_EXPORTER}", (
                f"{tag!r} {mode}: exporter {exporter} has no KUBERNETES_ENABLE_DRA, so its GPU metrics would name no pod "
                f"holding the GPU (the kubelet reports DRA devices by name, not UUID) (valid: a patch bump of the release's "
                f"{image_refs.tag_of(self.release.images[DRA_EXPORTER])}, which has it, as every exporter from "
                f"{DRA_EXPORTER_SINCE} on does; or remove the override)")))
        return self

    @model_validator(mode="after")
    def _dra_feature_gates(self) -> "StackConfig":
        gates, acknowledged = self.allocation.feature_gates, self.allocation.acknowledge_alpha
        if self.allocation.mode != "dra":
            for key, given in (("featureGates", gates), ("acknowledgeAlpha", acknowledged)):
                if given:
                    raise ValueError(_at(f"gpu-platform:allocation.{key}", (
                        "are the DRA driver's, and with allocation.mode 'device-plugin' no DRA driver runs "
                        "(valid: remove it, or allocation.mode dra)")))
            return self
        image = self.release.images[DRA_OPERAND]
        driver = dra.driver_of_image(image)
        if driver is None:  # a matrix row pinning a driver the table lacks: ours to fix, not the user's
            raise ValueError(_at("gpu-platform:operator.release", (
                f"{self.operator.release!r} ships the DRA driver {image}, whose version gpu_platform/dra.yaml does "
                f"not list (known: {', '.join(dra.load())}), so its feature gates cannot be checked")))
        at = f"the DRA driver {driver.version} of GPU Operator {self.operator.release}"
        for name in gates:
            if name not in driver.gates:
                raise ValueError(_at(f"gpu-platform:allocation.featureGates.{name}", (
                    f"is not a feature gate of {at} (valid: {', '.join(driver.gates)})")))
        problems = driver.problems(gates)
        if problems:
            name, wrong, valid = problems[0]
            raise ValueError(_at(f"gpu-platform:allocation.featureGates.{name}", f"{wrong} (valid: {valid})"))
        for i, name in enumerate(acknowledged):
            if name not in driver.alpha():
                raise ValueError(_at(f"gpu-platform:allocation.acknowledgeAlpha[{i}]", (
                    f"{name!r} is not an alpha feature gate of {at}, and only alpha gates need acknowledging "
                    f"(valid: {', '.join(driver.alpha())})")))
            if name in acknowledged[:i]:
                raise ValueError(_at(f"gpu-platform:allocation.acknowledgeAlpha[{i}]", f"{name!r} is listed twice (valid: once)"))
            # An acknowledgement of a gate that is off would let a later change turn it on unreviewed.
            if not gates.get(name):
                raise ValueError(_at(f"gpu-platform:allocation.acknowledgeAlpha[{i}]", (
                    f"{name!r} is not turned on (featureGates.{name}: true), and an acknowledgement is for a gate the "
                    f"stack turns on, reviewed with it (valid: remove it, or turn the gate on)")))
        return self

    @property
    def dra(self) -> bool:
        return self.allocation.mode == "dra"

    @property
    def release(self) -> matrix.Release:
        return matrix.load().release(self.operator.release)


# -- reading raw config ---------------------------------------------------------------------------

_KNOWN_KEYS = tuple(
    f.alias for f in StackConfig.model_fields.values() if f.alias and f.alias.startswith(PROJECT)
)


def _key_path(loc: tuple) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not path:
            path = str(part)
        else:
            path += f".{part}"
    return path


def _message(error: dict) -> str:
    kind, msg = error["type"], error["msg"]
    got = f" (got {_shown(error['input'])})" if "input" in error else ""
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required key is missing"
    if kind == "value_error":
        return msg.removeprefix("Value error, ")
    if kind == "string_pattern_mismatch":
        return f"{_shown(error['input'])} is {_PATTERNS.get(error['ctx']['pattern'], 'not valid here')}"
    if kind == "too_short":
        return f"needs at least {error['ctx']['min_length']} item(s){got}"
    if kind == "tuple_type":  # every list of the models is a tuple[...] (list_type never occurs)
        return f"expected a list{got}"
    if kind in ("model_type", "model_attributes_type", "dict_type", "mapping_type"):
        return f"expected a mapping{got}"  # (null or empty never reaches here: _no_value answers it)
    # Every number and switch is StrictInt/StrictBool: pydantic's lax kinds (int_parsing,
    # int_from_float, bool_parsing) never occur, "3" and 2.0 are int_type.
    if kind == "int_type":
        return f"expected a whole number{got}"
    if kind == "bool_type":
        return f"expected true or false{got}"
    if kind in ("string_type", "string_sub_type"):
        return f"expected text{got}"
    # Every bound of the models is Field(ge=...) or Field(le=...); pydantic puts the limit in ctx.
    if kind == "greater_than_equal":
        return f"must be at least {error['ctx']['ge']}{got}"
    if kind == "less_than_equal":
        return f"must be at most {error['ctx']['le']}{got}"
    if kind == "literal_error":
        return f"expected {error['ctx']['expected']}{got}"
    return f"{msg}{got}"


def _alias_loc(loc: tuple) -> tuple:
    """Pydantic reports model-level validator errors without a field; keep the path it gives."""
    return tuple(part for part in loc if part not in ("function-after", "function-before"))


# Namespaces this program's packages read: the project's own, and the AWS provider's (its default
# provider, which every AWS resource uses). The Kubernetes provider is built from the cluster, so
# `kubernetes:` config would do nothing.
_PROVIDER_NAMESPACES = ("aws",)


@functools.lru_cache(maxsize=None)
def provider_config_keys(package: str) -> tuple[str, ...]:
    """The config keys a provider SDK reads (`aws:region`, `aws:profile`, ...), from the installed
    SDK's own `config/vars.py` (`__config__.get('region')`), read as text: importing it is slow."""
    spec = importlib.util.find_spec(f"pulumi_{package}")
    if spec is None or not spec.submodule_search_locations:
        return ()
    source = Path(spec.submodule_search_locations[0], "config", "vars.py").read_text()
    return tuple(sorted(set(re.findall(r"__config__\.get[a-z_]*\('([A-Za-z0-9]+)'", source))))


def _key_problem(key: str) -> Optional[str]:
    """What is wrong with a config key's name, or None. Pulumi reads `namespace:key`; a key this
    program reads nowhere would be ignored silently, so it is an error."""
    namespace, sep, name = key.partition(":")
    if namespace == "pulumi":
        return None  # the engine's own settings (pulumi:disable-default-providers, ...)
    if not sep:
        guess = f"{PROJECT}:{key}" if f"{PROJECT}:{key}" in _KNOWN_KEYS else None
        return (f"{key}: a config key is namespace:key" + (f"; did you mean {guess}?" if guess else
                f" ({', '.join(_KNOWN_KEYS)} or aws:<provider setting>)"))
    if namespace == PROJECT:
        if key in _KNOWN_KEYS:
            return None
        near = difflib.get_close_matches(key, _KNOWN_KEYS, n=1)
        return f"{key}: unknown key ({'did you mean ' + near[0] + '? ' if near else ''}valid: {', '.join(_KNOWN_KEYS)})"
    if namespace in _PROVIDER_NAMESPACES:
        known = provider_config_keys(namespace)
        if name in known:
            return None
        near = difflib.get_close_matches(name, known, n=1)
        return (f"{key}: not a setting of the {namespace} provider" +
                (f"; did you mean {namespace}:{near[0]}?" if near else f" (its settings: {', '.join(known)})"))
    near = difflib.get_close_matches(namespace, [PROJECT, *_PROVIDER_NAMESPACES], n=1)
    return (f"{key}: no package of this program reads the namespace {namespace!r}" +
            (f"; did you mean {near[0]}:{name}?" if near else f" (namespaces: {PROJECT}, {', '.join(_PROVIDER_NAMESPACES)})"))


_MAX_PROBLEMS = 20  # a file of 5,000 unknown keys is one mistake repeated, not a page per key


def parse(raw: Mapping[str, Any]) -> StackConfig:
    """Validate a stack's config (`project:key` -> value, objects already decoded) or raise
    ConfigError listing every problem as `key.path: what is wrong (what is valid)`."""
    problems = []
    values = {}
    for key, value in raw.items():
        problem = _key_problem(key)
        if problem:
            problems.append(problem)
            continue
        if key.split(":", 1)[0] == PROJECT or key == "aws:region":
            values[key] = value
    try:
        if not problems:
            settings = tuple(sorted(_provider_setting(key.split(":", 1)[1], value)
                                    for key, value in raw.items() if key.startswith("aws:") and key != "aws:region"))
            return StackConfig.model_validate(values).model_copy(update={"aws_provider": settings})
    except ValidationError as exc:
        errors = exc.errors()
        locs = [_alias_loc(e["loc"]) for e in errors]
        # A list whose items failed also reports itself "too short" (no valid item left): noise.
        errors = [
            e for e, loc in zip(errors, locs)
            if not (e["type"] == "too_short" and any(other[: len(loc)] == loc and other != loc for other in locs))
        ]
        for error in errors:
            loc = _alias_loc(error["loc"])
            fields = _field_names(loc)
            path = _key_path(loc)
            message = _no_value(error, loc) or _message(error)
            if message.startswith("@"):  # a validator named the item at fault (_at)
                sub, message = message[1:].split(": ", 1)
                path = sub if sub.startswith(PROJECT) else path + sub
            if message == "unknown key" and fields:
                message += f" (valid: {', '.join(fields)})"
            if error["type"] in ("model_type", "model_attributes_type") and not _empty(error):
                keys = _field_names(loc + ("",))
                if keys:
                    message = f"expected a mapping with keys {', '.join(keys)} (got {_shown(error['input'])})"
            problems.append(f"{path}: {message}" if path else message)
    shown = problems[:_MAX_PROBLEMS] + ([f"... and {len(problems) - _MAX_PROBLEMS} more"] if len(problems) > _MAX_PROBLEMS else [])
    raise ConfigError("invalid stack configuration:\n  " + "\n  ".join(shown))


def _empty(error: dict) -> bool:
    # `key:` with nothing after it is a YAML null, and a top-level null reaches the program as "" (as
    # Pulumi hands it over): one answer for both, wherever the key is.
    return error["type"] != "missing" and "input" in error and (error["input"] is None or error["input"] == "")


# What to give instead of nothing, where the error kind alone does not say it.
_GIVE = {
    "aws:region": "a region (e.g. us-west-2)",
    "kubernetesVersion": 'a Kubernetes minor version, quoted (e.g. "1.33")',
    "driverVersion": 'an NVIDIA driver version, quoted (e.g. "580.105.08")',
    "release": "a release",
    "owner": "a team that owns the privileged software",
    "approval": "the approval record (e.g. SEC-1042)",
    "approvedLedger": "the privilege ledger hash the approval covered (sha256:..., printed by python -m preview)",
    "instanceType": "an EC2 instance type (e.g. g6.2xlarge)",
    "name": "a name",
    "gpu-platform:nodePools": "a list of pools (mappings with name, instanceType, minSize, desiredSize, maxSize)",
    "cudaVersions": 'a list of quoted CUDA versions (e.g. ["12.8"])',
    "subnetIds": "a list of subnet ids (two zones or more)",
    "admins": "a list of IAM role or user ARNs",
    "publicAccessCidrs": "a list of CIDR blocks (e.g. [203.0.113.0/24])",
    "timeSlicing": "a mapping with key replicas",
    "mig": "a mapping with key config",
    "amiId": "an AMI id (e.g. ami-0123456789abcdef0)",
    "toolkitBaked": "true or false",
    "baseImageRelease": "an EKS AMI release (e.g. v20260714)",
    "capacityReservationId": "a capacity reservation id (cr- and 17 hex digits)",
    "prometheusNamespace": "the namespace of the Prometheus pods (" + _NAMESPACE_FORM + ")",
}


def _no_value(error: dict, loc: tuple) -> Optional[str]:
    """The one answer to a key given null or empty, whatever its type: what to give, and whether
    removing the key is a way out (it is when the key has a default)."""
    kind = error["type"]
    if not _empty(error) or (kind == "value_error" and "has no value" in error["msg"]):
        return None  # a validator that says it itself (with the key's default)
    name = next((part for part in reversed(loc) if isinstance(part, str)), "")
    if name in _GIVE and isinstance(loc[-1], str):
        give = _GIVE[name]
    elif kind in ("model_type", "model_attributes_type", "dict_type", "mapping_type"):
        keys = _field_names(loc + ("",))
        give = f"a mapping with keys {', '.join(keys)}" if keys else "a mapping"
    elif kind == "tuple_type":  # (too_short never has an empty input: null fails the type first)
        give = "a list"
    elif kind == "int_type":
        give = "a whole number"
    elif kind == "bool_type":
        give = "true or false"
    elif kind == "literal_error":
        give = error["ctx"]["expected"]
    elif kind == "string_pattern_mismatch" and error["ctx"]["pattern"] in _PATTERNS:
        give = _PATTERNS[error["ctx"]["pattern"]].removeprefix("not ")
    else:
        give = _GIVE.get(name, "text" if kind.startswith("string") else "a value")
    field = _field(loc)
    optional = field is not None and not field.is_required()
    return f"has no value (null or empty): give {give}" + (", or remove the key for the default" if optional else "")


def _field(loc: tuple) -> Any:
    """The pydantic field at `loc`, or None (an item of a list, a key the model does not have)."""
    if not loc or not isinstance(loc[-1], str):
        return None
    model: Any = StackConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        model = _model_in(fields[part].annotation) if part in fields else None
        if model is None:
            return None
    return {f.alias or name: f for name, f in model.model_fields.items()}.get(loc[-1])


def _field_names(loc: tuple) -> list[str]:
    """The keys valid at the parent of `loc`, for 'unknown key' messages."""
    model: Any = StackConfig
    for part in loc[:-1]:
        if isinstance(part, int):
            continue
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
        if part not in fields:
            return []
        annotation = fields[part].annotation
        model = _model_in(annotation)
        if model is None:
            return []
    return [f.alias or name for name, f in model.model_fields.items()]


def _model_in(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


def _decode(value: Any) -> Any:
    """Pulumi hands objects and lists over as JSON strings; plain strings stay strings."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or an integer of more than 4300 digits, or too deep
            return value
    return value


def from_pulumi() -> StackConfig:
    """The stack's config as the Pulumi engine hands it to the program."""
    from pulumi.runtime import config as runtime_config

    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return parse({key: _decode(value) for key, value in raw.items()})
