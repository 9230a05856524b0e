"""The EKS half of the platform, behind the cluster handle (components/cluster_handle.py): node role,
cluster (created or adopted), node image, GPU node pools and their health agent, all registered under
the platform component as before (their URNs do not move), and the handle the Kubernetes half reads."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import pulumi

from components.aws import efa as efa_network, tags as aws_tags, user_data
from components.aws.cluster import ClusterArgs, EksCluster
from components.aws.discovery import Discovered
from components.aws.efa import EfaNetwork, EfaNetworkArgs
from components.aws.image_hardware import PoolHardware, image_hardware
from components.aws.node_health import SOFTWARE as NODE_HEALTH_SOFTWARE, NodeMonitoringAgent
from components.aws.node_image import NodeImage, NodeImageArgs
from components.aws.node_pool import ClusterEndpoint, GpuNodePool, NodePoolArgs
from components.aws.node_role import NodeRole
from components.cluster_handle import ClusterHandle, GpuPoolHandle
from gpu_platform.catalog import aws_limits
from gpu_platform.config import StackConfig
from gpu_platform.interface import admission, contract


@dataclass(frozen=True)
class EksGpuCluster:
    cluster: EksCluster
    image: NodeImage
    pools: dict[str, GpuNodePool]
    node_health: NodeMonitoringAgent | None
    handle: ClusterHandle


def check(config: StackConfig, found: Discovered):
    """What the EKS half must refuse before anything is registered (a config error): one node image
    cannot carry the kernel modules or module options every pool's GPU needs."""
    hardware = image_hardware(
        [
            PoolHardware(i, p.instance_type, found.gpus[p.name].model, found.gpus[p.name].count)
            for i, p in enumerate(config.node_pools)
        ],
        config.node_image.source,
    )
    # A base release that carries the EFA driver gets it proven by the test phase (aws_limits.yaml efa).
    base = found.base_image
    return dataclasses.replace(hardware, efa=base is not None and base.release >= aws_limits.efa_in_standard_ami_from())


def efa_devices(found: Discovered, pool: str) -> int:
    """The EFA devices of a node of the pool: those of the interfaces its launch template attaches
    (node_pool.py lays them out the same way); 0 for a pool without EFA."""
    gpu = found.gpus[pool]
    return efa_network.devices(efa_network.layout(gpu.network_cards, gpu.efa_interfaces)) if found.efa.get(pool) else 0


def build(
    name: str,
    config: StackConfig,
    found: Discovered,
    stack: str,
    pool_gates: dict[str, tuple[str, ...]],
    pool_resources: dict[str, dict[str, int]],
    parent: pulumi.Resource,
) -> EksGpuCluster:
    """`pool_gates`: the gating labels each pool's nodes carry; `pool_resources`: the extended resources
    they advertise (the Kubernetes half decides both)."""
    child = pulumi.ResourceOptions(parent=parent)
    hardware = check(config, found)
    release, node_image = config.release, config.node_image
    k8s_version = config.cluster.kubernetes_version
    base_tags = aws_tags.stack_tags(stack, config.audit)
    privileged_tags = {
        **base_tags,
        **aws_tags.audit_tags(
            config.audit,
            aws_tags.node_software(
                node_image.driver_version,
                node_image.toolkit_baked,
                hardware.fabric_manager,
                hardware.kernel_module,
                hardware.nvlink_subnet_manager,
            ),
        ),
    }
    declared = aws_tags.declared_facts(release.name, config.workloads.cuda_versions, node_image.source)

    node_role = NodeRole(f"{name}-node-role", base_tags, found.partition, opts=child)
    cluster = EksCluster(
        f"{name}-cluster",
        ClusterArgs(
            config.cluster,
            node_role,
            base_tags,
            found.adopted,
            partition=found.partition,
            runner=found.runner,
            existing_entries=found.existing_entries,
            stack=stack,
            account=found.account,
            region=config.region,
        ),
        opts=child,
    )
    # The image needs nothing from the cluster: it builds while the control plane comes up.
    image = NodeImage(
        f"{name}-node-image",
        NodeImageArgs(
            config=node_image,
            kubernetes_version=k8s_version,
            base_image=found.base_image,
            toolkit_version=release.toolkit_version,
            hardware=hardware,
            tags=privileged_tags,
            declared={
                **declared,
                contract.GPU_MODELS_TAG: contract.join_values(
                    sorted({found.gpus[p.name].model.key for p in config.node_pools})
                ),
            },
            region=config.region,
            build_network=found.build_network,
            partition=found.partition,
            project=pulumi.get_project(),
            stack=stack,
            eks_nvidia=found.eks_nvidia,
            account=found.account,
        ),
        opts=child,
    )
    endpoint = ClusterEndpoint(
        name=cluster.name,
        endpoint=cluster.endpoint,
        certificate_authority=cluster.certificate_authority,
        service_cidr=cluster.service_cidr,
        security_group_id=cluster.security_group_id,
    )
    efa = (
        EfaNetwork(f"{name}-efa", EfaNetworkArgs(vpc_id=found.vpc_id, tags=base_tags), opts=child)
        if any(found.efa.values())
        else None
    )
    if efa is not None and found.adopted is not None:
        # EKS's current vpc-cni versions take efa-only interfaces; an adopted cluster's may be older, and
        # the stack does not manage it (EKS User Guide 4d52b4d0 latest/ug/ml/node-efa.adoc:37).
        pulumi.log.warn(
            f"gpu-platform:nodePools[].efa: the adopted cluster {config.cluster.name!r} must run the VPC CNI "
            f"{aws_limits.efa_vpc_cni_minimum()} or later for the EFA pools' efa-only interfaces; check with `aws eks "
            f"describe-addon --cluster-name {config.cluster.name} --addon-name vpc-cni` before pulumi up"
        )
    if found.adopted is not None:
        # The stack leaves an adopted cluster's CNI alone (components/aws/vpc_cni.py), and its node role
        # no longer carries the CNI's policy: aws-node there must have a role of its own.
        pulumi.log.warn(
            f"gpu-platform:cluster.create: the adopted cluster {config.cluster.name!r} must give its VPC CNI (kube-system/"
            f"aws-node) an IAM role of its own (Pod Identity or IRSA): this stack's node role carries no AmazonEKS_CNI_Policy, "
            f"so GPU nodes whose aws-node has no other credentials get no pod addresses. Check with `aws eks "
            f"list-pod-identity-associations --cluster-name {config.cluster.name} --namespace kube-system --service-account "
            f"aws-node`, or the eks.amazonaws.com/role-arn annotation of that service account"
        )
    pools = {}
    for pool in config.node_pools:
        gpu = found.gpus[pool.name]
        pools[pool.name] = GpuNodePool(
            f"{name}-pool-{pool.name}",
            NodePoolArgs(
                pool=pool,
                gpu=gpu,
                ami_id=image.ami_id,
                cluster=endpoint,
                node_role=node_role,
                subnet_ids=pool.subnet_ids or config.cluster.subnet_ids,
                labels=contract.pool_labels(
                    pool.name,
                    gpu.model.key,
                    pool_gates[pool.name],
                    pool.mig.config if pool.mig else None,
                    whole_gpus=pool_resources[pool.name].get(admission.GPU_RESOURCE, 0) > 0,
                ),
                tags={**privileged_tags, **image.declares},
                generation=image.generation,
                declared=declared,
                gpu_access_at_boot=bool(node_image.toolkit_baked) and node_image.source != "bake",
                # A baked toolkit is registered by nodeadm itself (/usr/bin/nvidia-container-runtime).
                containerd_config="" if node_image.toolkit_baked else user_data.toolkit_runtime(release.cdi),
                efa_security_group_id=efa.security_group_id if efa is not None and found.efa[pool.name] else None,
                waits_for=tuple(cluster.cni_ready),
                resources=pool_resources[pool.name],
            ),
            opts=child,
        )
    # Node auto repair acts on the GPU conditions only the node monitoring agent reports.
    node_health = (
        NodeMonitoringAgent(
            f"{name}-node-monitoring",
            cluster.name,
            {**base_tags, **aws_tags.audit_tags(config.audit, [NODE_HEALTH_SOFTWARE])},
            depends_on=[cluster, *pools.values()],
            opts=child,
        )
        if any(pool.node_repair for pool in config.node_pools)
        else None
    )
    handle = ClusterHandle(
        name=cluster.name,
        provider=cluster.provider,
        pools={
            pool.name: GpuPoolHandle(
                name=pool.name,
                labels=pools[pool.name].labels,
                taints=(contract.gpu_taint(),),
                rollout=pool.rollout,
                node_selector=pools[pool.name].node_selector,
                ready=pools[pool.name].node_group,
                efa=found.efa.get(pool.name, False),
            )
            for pool in config.node_pools
        },
        first_stage_waits_on=tuple(pools.values()),
    )
    return EksGpuCluster(cluster=cluster, image=image, pools=pools, node_health=node_health, handle=handle)
