"""What the stack must ask AWS before it registers anything: the partition ARNs are built in, each
pool's GPUs (AWS's instance catalogue), the base image for a bake (a pinned EKS AMI release), the
cluster to adopt, and who runs the stack (it gets a cluster-admin access entry). A wrong name here is
the user's mistake, so it becomes a ConfigError naming the key, and nothing has been created yet."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.aws import base_image
from components.aws.base_image import BaseImage
from gpu_platform.catalog import aws_limits, eks_amis, matrix
from gpu_platform.config import ConfigError, StackConfig


@dataclass(frozen=True)
class PoolGpu:
    """A pool's GPUs as AWS's catalogue states them, mapped to the matrix row."""

    model: matrix.Gpu
    count: int
    memory_mib: int
    architecture: str  # the instance's CPU architecture (x86_64 | arm64)
    network_cards: int = 1
    efa_interfaces: int = 0  # 0: the type has no EFA


@dataclass(frozen=True)
class AdoptedCluster:
    name: str
    endpoint: str
    certificate_authority: str
    service_cidr: str
    security_group_id: str


@dataclass(frozen=True)
class BuildNetwork:
    """Where the image build runs: the cluster's first (private) subnet, whose route to the internet
    the nodes already need, instead of a default VPC the account may not have."""

    subnet_id: str
    vpc_id: str


@dataclass(frozen=True)
class EksNvidiaImage:
    """AWS's accelerated AMI of the pinned release for the cluster's minor (source: eks-nvidia)."""

    ami_id: str
    ami: matrix.EksNvidiaAmi  # what the release's CHANGELOG says it carries


@dataclass(frozen=True)
class Discovered:
    gpus: dict[str, PoolGpu]  # by pool name
    base_image: BaseImage | None  # with source: bake
    adopted: AdoptedCluster | None
    build_network: BuildNetwork | None = None  # with source: bake
    partition: str = "aws"  # aws | aws-cn | aws-us-gov: every ARN the stack builds starts arn:<partition>:
    # The account the stack runs in: trust and key policies name it (confused-deputy conditions, the
    # key's administrator).
    account: str = ""
    runner: str | None = None  # the IAM role or user running the stack
    # The cluster exists already: adopted, or created by an earlier `pulumi up` of this stack. Only
    # then can it hold what others install into it (the Prometheus operator's CRDs, access entries).
    cluster_exists: bool = False
    existing_entries: dict[str, dict[str, str]] = field(default_factory=dict)  # admin -> its entry's tags
    eks_nvidia: EksNvidiaImage | None = None  # with source: eks-nvidia
    efa: dict[str, bool] = field(default_factory=dict)  # by pool name: its nodes get EFA
    vpc_id: str | None = None  # the cluster subnets' VPC, where the EFA security group goes (with an EFA pool)


# Access entries take IAM roles (a path allowed) and users only (EKS User Guide, "Create access entries").
_PRINCIPAL = re.compile(r"arn:(?P<partition>[a-z-]+):iam::\d{12}:(role|user)/.+")


def aws_said(error: Exception) -> str:
    """What AWS answered, without the SDK's wrapping ("invoke of aws:ec2/getSubnet:getSubnet failed:
    ..." and an empty " ()" of failure details)."""
    text = str(error).strip()
    text = re.sub(r"^invoke of \S+ failed: ", "", text)
    text = re.sub(r"^invocation of \S+ returned an error: ", "", text)
    return re.sub(r"\s*\(\)$", "", text)


def _pool_gpu(index: int, instance_type: str) -> PoolGpu:
    key = f"gpu-platform:nodePools[{index}].instanceType"
    other = aws_limits.non_nvidia_accelerator(instance_type)
    if other is not None:
        # Known before asking: AWS lists some of these families' accelerators as GPUs (g4ad's AMD
        # Radeon, dl1's Habana Gaudi), and moto's catalogue lacks some of them.
        raise ConfigError(
            f"{key}: {instance_type!r} has no NVIDIA data-center GPU: it carries the {other.accelerator}, which needs "
            f"{other.driver}; GPU pools need one the baked NVIDIA driver serves (e.g. g6.2xlarge, g6e.12xlarge, p5.48xlarge)"
        )
    try:
        found = aws.ec2.get_instance_type(instance_type=instance_type)
    except Exception as exc:  # the provider's error text is the useful part
        raise ConfigError(f"{key}: no instance type {instance_type!r} ({aws_said(exc)})") from None
    nvidia = [g for g in (found.gpuses or []) if g.manufacturer == "NVIDIA"]
    if not nvidia:
        raise ConfigError(
            f"{key}: {instance_type!r} has no NVIDIA GPU; GPU pools need one (e.g. g6.2xlarge, g6e.12xlarge, p5.48xlarge)"
        )
    gpu = nvidia[0]
    if not gpu.count:
        # DescribeInstanceTypes: Count 0 with a GpuPartitionSize below 1 is a fraction of a GPU (g6f,
        # gr6f), a vGPU that needs NVIDIA's GRID driver, not the data-center driver baked here.
        raise ConfigError(
            f"{key}: {instance_type!r} carries a fraction of an NVIDIA {gpu.name} (a vGPU, {gpu.memory_size} MiB), which "
            f"needs NVIDIA's GRID driver; the node image bakes the data-center driver: use a whole-GPU type "
            f"(e.g. g6.xlarge for one L4)"
        )
    model = matrix.load().gpu_for_aws(gpu.name, gpu.memory_size)
    if model is None:
        known = ", ".join(f"{g.key} ({'/'.join(g.families)})" for g in matrix.load().gpus.values())
        raise ConfigError(
            f"{key}: {instance_type!r} carries NVIDIA {gpu.name}, which the version matrix does not cover (supported: {known})"
        )
    # The catalogue lists every architecture a type runs (some x86 types list i386 first).
    supported = list(found.supported_architectures or [])
    arch = "x86_64" if "x86_64" in supported else (supported[0] if supported else "unknown")
    if arch != "x86_64":
        raise ConfigError(f"{key}: {instance_type!r} is {arch}; the baked node image is x86_64 only")
    efa = int(found.efa_maximum_interfaces or 0) if found.efa_supported else 0
    return PoolGpu(
        model=model,
        count=int(gpu.count),
        memory_mib=int(gpu.memory_size),
        architecture=arch,
        network_cards=int(found.maximum_network_cards or 1),
        efa_interfaces=efa,
    )


def _efa_in_base(config: StackConfig, release: str, efa: dict[str, bool]) -> None:
    """A baked image gets the EFA driver from its base: refused before the bake when the base predates it."""
    first = aws_limits.efa_in_standard_ami_from()
    if release >= first:  # vYYYYMMDD: the tags sort by date
        return
    index = next(i for i, pool in enumerate(config.node_pools) if efa[pool.name])
    k8s = config.cluster.kubernetes_version
    newer = [r for r in eks_amis.releases(k8s, "standard") if r >= first]
    way = (
        f"pin {base_image.KEY} to {min(newer)} or later"
        if newer
        else f"no release for Kubernetes {k8s} has it (its last is {eks_amis.newest(k8s, 'standard')}): move to a newer minor"
    )
    raise ConfigError(
        f"{base_image.KEY}: {release!r} predates the EFA driver in the standard AL2023 image (amazon-eks-ami builds it in "
        f"from {first}), and nodePools[{index}] has EFA; {way}, or set gpu-platform:nodePools[{index}].efa: false"
    )


def _one_zone(index: int, pool) -> None:
    """An EFA pool outside a capacity block gets a cluster placement group, which lives in one
    Availability Zone (EC2 User Guide, "Placement groups": a cluster placement group is in a single
    Availability Zone): subnets it names are its choice of zone, so more than one is refused rather
    than all but the first dropped unsaid."""
    if pool.subnet_ids is not None and len(pool.subnet_ids) > 1 and pool.capacity_type != "CAPACITY_BLOCK":
        raise ConfigError(
            f"gpu-platform:nodePools[{index}].subnetIds: {len(pool.subnet_ids)} subnets, but the pool has EFA and its "
            f"nodes launch in one cluster placement group, which lives in one Availability Zone; give the one subnet "
            f"of the zone to use{' (EFA is on by default for ' + pool.instance_type + ')' if pool.efa is None else ''}, "
            f"or set efa: false"
        )


def _pool_efa(index: int, pool, gpu: PoolGpu) -> bool:
    """Whether the pool's nodes get EFA: as the stack says, else on for the multi-node training
    families that have it (gpu_platform/catalog/aws_limits.yaml efa)."""
    if pool.efa is None:
        return gpu.efa_interfaces > 0 and aws_limits.efa_by_default(pool.instance_type, gpu.count)
    if pool.efa and gpu.efa_interfaces == 0:
        raise ConfigError(
            f"gpu-platform:nodePools[{index}].efa: {pool.instance_type!r} has no Elastic Fabric Adapter (AWS's catalogue: "
            f"EfaSupported false); remove efa, or use a type with EFA (e.g. p5.48xlarge, p4d.24xlarge, g6e.48xlarge)"
        )
    return pool.efa


def _adopt(config: StackConfig) -> AdoptedCluster:
    cfg = config.cluster
    try:
        found = aws.eks.get_cluster(name=cfg.name)
    except Exception as exc:
        raise ConfigError(
            f"gpu-platform:cluster.name: no EKS cluster {cfg.name!r} to adopt ({aws_said(exc)}); set create: true to create it"
        ) from None
    if found.version != cfg.kubernetes_version:
        raise ConfigError(
            f"gpu-platform:cluster.kubernetesVersion: {cfg.kubernetes_version!r}, but the adopted cluster "
            f"{cfg.name!r} runs {found.version!r}; set it to {found.version!r}"
        )
    # A cluster older than access entries reports no access config: it is CONFIG_MAP.
    configs = found.access_configs or []
    mode = configs[0].authentication_mode if configs else "CONFIG_MAP"
    if cfg.admins and mode == "CONFIG_MAP":
        raise ConfigError(
            f"gpu-platform:cluster.admins: the adopted cluster {cfg.name!r} authenticates through the aws-auth "
            "ConfigMap only (authenticationMode CONFIG_MAP), which has no access entries; switch it to "
            "API_AND_CONFIG_MAP (aws eks update-cluster-config --access-config) or leave admins empty"
        )
    if mode != "API":
        # The privilege ledger reads the stack's resources; an adopted cluster's aws-auth mappings
        # and access entries made outside the stack are none of them, so say where they are.
        pulumi.log.warn(
            f"gpu-platform:cluster: the adopted cluster {cfg.name!r} has authenticationMode {mode}: IAM principals its "
            f"kube-system aws-auth ConfigMap maps are admitted{' too' if mode != 'CONFIG_MAP' else ' (the only way in, in this mode)'}, "
            f"and the privilege ledger does not show them (it shows "
            f"the stack's own access entries); review them with `kubectl -n kube-system get configmap aws-auth -o yaml`, "
            f"or switch the cluster to API (aws eks update-cluster-config --access-config authenticationMode=API) once "
            f"every mapping has an access entry"
        )
    return AdoptedCluster(
        name=found.name,
        endpoint=found.endpoint,
        certificate_authority=found.certificate_authorities[0].data,
        service_cidr=found.kubernetes_network_configs[0].service_ipv4_cidr,
        security_group_id=found.vpc_config.cluster_security_group_id,
    )


def _base_image(config: StackConfig) -> BaseImage:
    k8s = config.cluster.kubernetes_version
    release = base_image.release_for(k8s, config.node_image.base_image_release)
    if release is None:
        defaults = base_image.default_releases()
        known = ", ".join(f"{minor}: {r}" for minor, r in defaults.items())
        newest = max(defaults, key=lambda minor: int(minor.split(".")[1]))
        if int(k8s.split(".")[1]) > int(newest.split(".")[1]):
            # Most likely a typo of the cluster's version: say so first, where the user wrote it.
            raise ConfigError(
                f"gpu-platform:cluster.kubernetesVersion: {k8s!r} is newer than any EKS AMI release this program knows "
                f"(newest: {newest}, in {defaults[newest]}); check the version, or pin {base_image.KEY} to a release of "
                f"github.com/awslabs/amazon-eks-ami whose notes list {k8s}"
            )
        raise ConfigError(
            f"{base_image.KEY}: no default EKS AMI release for Kubernetes {k8s!r} (defaults: {known}); "
            f"pin a release of github.com/awslabs/amazon-eks-ami whose notes list {k8s} (v and its date, e.g. v20260714)"
        )
    parameter = base_image.parameter(k8s, release)
    try:
        return BaseImage(release=release, ami_id=aws.ssm.get_parameter(name=parameter).value)
    except Exception as exc:
        raise ConfigError(
            f"{base_image.KEY}: {release!r} has no EKS-optimized AL2023 x86_64 image for Kubernetes {k8s!r} "
            f"in {config.region} ({parameter}: {aws_said(exc)}); pick a release whose notes list {k8s} "
            "(github.com/awslabs/amazon-eks-ami/releases)"
        ) from None


def _eks_nvidia(config: StackConfig) -> EksNvidiaImage:
    """The release-specific SSM parameter of the nvidia flavour, never `recommended`: the AMI stays the
    same until the stack names another release."""
    k8s, release = config.cluster.kubernetes_version, config.node_image.release
    key = "gpu-platform:nodeImage.release"
    amis = matrix.load().eks_nvidia_amis[release]
    if k8s not in amis:
        raise ConfigError(
            f"{key}: the matrix records no nvidia AMI of {release} for Kubernetes {k8s!r} (recorded: {', '.join(amis)}); "
            "pick a release recorded for the cluster's minor, or record it in gpu_platform/catalog/matrix.yaml from its CHANGELOG entry"
        )
    parameter = base_image.parameter(k8s, release, flavour="nvidia")
    try:
        return EksNvidiaImage(ami_id=aws.ssm.get_parameter(name=parameter).value, ami=amis[k8s])
    except Exception as exc:
        raise ConfigError(
            f"{key}: {release!r} has no EKS-optimized AL2023 x86_64 nvidia image for Kubernetes {k8s!r} in "
            f"{config.region} ({parameter}: {exc}); pick a release AWS published there (github.com/awslabs/amazon-eks-ami/releases)"
        ) from None


def _runner(caller: str) -> str | None:
    """The IAM principal running the stack (warned about when it is no named admin): an assumed-role
    session is turned into its role, since access entries take roles and users, never sessions
    (pulumi_aws iam.get_session_context: `issuer_arn` is the source role of an assumed role, the ARN
    itself otherwise). None for an identity that cannot have an entry at all (the account root)."""
    principal = aws.iam.get_session_context(arn=caller).issuer_arn
    return principal if _PRINCIPAL.fullmatch(principal or "") else None


def _existing_entries(config: StackConfig) -> dict[str, dict[str, str]]:
    """The named admins that already have an access entry to the cluster, with that entry's tags."""
    found = {}
    for arn in config.cluster.admins:
        try:
            entry = aws.eks.get_access_entry(cluster_name=config.cluster.name, principal_arn=arn)
        except Exception:  # no entry (ResourceNotFoundException): the stack creates it
            continue
        found[arn] = dict(entry.tags or {})
    return found


def _admins_in_partition(config: StackConfig, partition: str) -> None:
    for i, arn in enumerate(config.cluster.admins):
        found = _PRINCIPAL.fullmatch(arn)
        if found and found["partition"] != partition:
            raise ConfigError(
                f"gpu-platform:cluster.admins[{i}]: {arn!r} is in partition {found['partition']!r}, but the "
                f"stack runs in {partition!r}; an IAM principal works in its own partition only"
            )


def _build_network(config: StackConfig) -> BuildNetwork:
    subnet = config.cluster.subnet_ids[0]
    try:
        found = aws.ec2.get_subnet(id=subnet)
    except Exception as exc:
        why = (
            "the node image builds there"
            if config.node_image.source == "bake"
            else "the EFA pools launch there and the EFA security group goes in its VPC"
        )
        raise ConfigError(f"gpu-platform:cluster.subnetIds[0]: no subnet {subnet!r} ({aws_said(exc)}); {why}") from None
    return BuildNetwork(subnet_id=subnet, vpc_id=found.vpc_id)


def discover(config: StackConfig) -> Discovered:
    partition = aws.get_partition().partition
    _admins_in_partition(config, partition)
    caller = aws.get_caller_identity()
    bake = config.node_image.source == "bake"
    exists = not config.cluster.create or config.cluster.name in (aws.eks.get_clusters().names or [])
    gpus = {pool.name: _pool_gpu(i, pool.instance_type) for i, pool in enumerate(config.node_pools)}
    efa = {pool.name: _pool_efa(i, pool, gpus[pool.name]) for i, pool in enumerate(config.node_pools)}
    for i, pool in enumerate(config.node_pools):
        if efa[pool.name]:
            _one_zone(i, pool)
    if any(efa.values()) and aws_limits.eks_addon_registry(config.region) is None:
        first = next(i for i, pool in enumerate(config.node_pools) if efa[pool.name])
        raise ConfigError(
            f"gpu-platform:nodePools[{first}].efa: the EFA device plugin's image comes from the region's EKS add-on "
            f"registry, and none is recorded for {config.region!r} (gpu_platform/catalog/aws_limits.yaml eks_addon_registries, "
            f"from the EKS User Guide); add the region's row, or set efa: false on the pool "
            f"({'EFA is on by default for ' + config.node_pools[first].instance_type if config.node_pools[first].efa is None else 'it says efa: true'})"
        )
    base = _base_image(config) if bake else None
    if base is not None and any(efa.values()):
        _efa_in_base(config, base.release, efa)
    build_network = _build_network(config) if bake or any(efa.values()) else None
    return Discovered(
        gpus=gpus,
        efa=efa,
        vpc_id=build_network.vpc_id if build_network and any(efa.values()) else None,
        base_image=base,
        build_network=build_network if bake else None,
        adopted=None if config.cluster.create else _adopt(config),
        partition=partition,
        # Without named admins, a created cluster's entry goes to whoever runs the stack.
        runner=_runner(caller.arn),
        account=caller.account_id,
        cluster_exists=exists,
        existing_entries=_existing_entries(config) if exists else {},
        eks_nvidia=_eks_nvidia(config) if config.node_image.source == "eks-nvidia" else None,
    )
