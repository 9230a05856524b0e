"""What the stack must ask AWS before it registers anything: each pool's GPUs (AWS's instance
catalogue), the base image for a bake, the cluster to adopt. A wrong name here is the user's mistake,
so it becomes a ConfigError naming the key, and nothing has been created yet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import pulumi_aws as aws

from gpu_platform import matrix
from gpu_platform.config import ConfigError, StackConfig


@dataclass(frozen=True)
class PoolGpu:
    """A pool's GPUs as AWS's catalogue states them, mapped to the matrix row."""

    model: matrix.Gpu
    count: int
    memory_mib: int
    architecture: str  # the instance's CPU architecture (x86_64 | arm64)


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
class Discovered:
    gpus: dict[str, PoolGpu]  # by pool name
    base_ami: Optional[str]
    adopted: Optional[AdoptedCluster]
    build_network: Optional[BuildNetwork] = None  # with source: bake


def eks_ami_parameter(kubernetes_version: str) -> str:
    return f"/aws/service/eks/optimized-ami/{kubernetes_version}/amazon-linux-2023/x86_64/standard/recommended/image_id"


def _pool_gpu(index: int, instance_type: str) -> PoolGpu:
    key = f"gpu-platform:nodePools[{index}].instanceType"
    try:
        found = aws.ec2.get_instance_type(instance_type=instance_type)
    except Exception as exc:  # the provider's error text is the useful part
        raise ConfigError(f"{key}: {instance_type!r} is not an EC2 instance type ({exc})") from None
    nvidia = [g for g in (found.gpuses or []) if g.manufacturer == "NVIDIA"]
    if not nvidia:
        raise ConfigError(f"{key}: {instance_type!r} has no NVIDIA GPU; GPU pools need one (e.g. g6.2xlarge, g6e.12xlarge, p5.48xlarge)")
    gpu = nvidia[0]
    model = matrix.load().gpu_for_aws(gpu.name, gpu.memory_size)
    if model is None:
        known = ", ".join(f"{g.key} ({'/'.join(g.families)})" for g in matrix.load().gpus.values())
        raise ConfigError(f"{key}: {instance_type!r} carries NVIDIA {gpu.name}, which the version matrix does not cover (supported: {known})")
    # The catalogue lists every architecture a type runs (some x86 types list i386 first).
    supported = list(found.supported_architectures or [])
    arch = "x86_64" if "x86_64" in supported else (supported[0] if supported else "unknown")
    if arch != "x86_64":
        raise ConfigError(f"{key}: {instance_type!r} is {arch}; the baked node image is x86_64 only")
    return PoolGpu(model=model, count=int(gpu.count), memory_mib=int(gpu.memory_size), architecture=arch)


def _adopt(config: StackConfig) -> AdoptedCluster:
    cfg = config.cluster
    try:
        found = aws.eks.get_cluster(name=cfg.name)
    except Exception as exc:
        raise ConfigError(f"gpu-platform:cluster.name: no EKS cluster {cfg.name!r} to adopt ({exc}); set create: true to create it") from None
    if found.version != cfg.kubernetes_version:
        raise ConfigError(
            f"gpu-platform:cluster.kubernetesVersion: {cfg.kubernetes_version!r}, but the adopted cluster "
            f"{cfg.name!r} runs {found.version!r}; set it to {found.version!r}"
        )
    return AdoptedCluster(
        name=found.name,
        endpoint=found.endpoint,
        certificate_authority=found.certificate_authorities[0].data,
        service_cidr=found.kubernetes_network_configs[0].service_ipv4_cidr,
        security_group_id=found.vpc_config.cluster_security_group_id,
    )


def _base_ami(config: StackConfig) -> str:
    parameter = eks_ami_parameter(config.cluster.kubernetes_version)
    try:
        return aws.ssm.get_parameter(name=parameter).value
    except Exception as exc:
        raise ConfigError(
            f"gpu-platform:cluster.kubernetesVersion: no EKS-optimized AL2023 image for "
            f"{config.cluster.kubernetes_version!r} ({parameter}: {exc})"
        ) from None


def _build_network(config: StackConfig) -> BuildNetwork:
    subnet = config.cluster.subnet_ids[0]
    try:
        found = aws.ec2.get_subnet(id=subnet)
    except Exception as exc:
        raise ConfigError(f"gpu-platform:cluster.subnetIds[0]: no subnet {subnet!r} ({exc}); the node image builds there") from None
    return BuildNetwork(subnet_id=subnet, vpc_id=found.vpc_id)


def discover(config: StackConfig) -> Discovered:
    return Discovered(
        gpus={pool.name: _pool_gpu(i, pool.instance_type) for i, pool in enumerate(config.node_pools)},
        base_ami=_base_ami(config) if config.node_image.source == "bake" else None,
        build_network=_build_network(config) if config.node_image.source == "bake" else None,
        adopted=None if config.cluster.create else _adopt(config),
    )
