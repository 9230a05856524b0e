"""One GPU node pool: a launch template with the baked AMI (IMDSv2, encrypted gp3 root, no public
IP, nodeadm user data) and an EKS managed node group that rolls it out."""

from __future__ import annotations

import base64
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.aws import launch_settings, user_data
from components.aws.discovery import PoolGpu
from components.aws.node_role import NodeRole
from gpu_platform import contract
from gpu_platform.config import NodePool as NodePoolConfig

# A managed node group replaces at most this share of a pool's nodes at once on an AMI rollout.
MAX_UNAVAILABLE_PERCENT = 25


@dataclass(frozen=True)
class ClusterEndpoint:
    """What a node needs to join the cluster (from a created or an adopted cluster)."""

    name: pulumi.Input[str]
    endpoint: pulumi.Input[str]
    certificate_authority: pulumi.Input[str]
    service_cidr: pulumi.Input[str]
    security_group_id: pulumi.Input[str]


@dataclass(frozen=True)
class NodePoolArgs:
    pool: NodePoolConfig
    gpu: PoolGpu
    ami_id: pulumi.Input[str]
    cluster: ClusterEndpoint
    node_role: NodeRole
    subnet_ids: tuple[str, ...]
    labels: dict[str, str]  # the kubelet labels of the contract (gates, sharing config, pool)
    tags: dict[str, str]  # stack, image facts and audit tags
    declared: dict[str, str]  # stack facts for the policy pack: resource tags only, never on an instance


def _capacity_block(pool: NodePoolConfig) -> dict:
    """Launch template settings that put a pool on its capacity block (EKS requires both)."""
    if pool.capacity_type != "CAPACITY_BLOCK":
        return {}
    return {
        "instance_market_options": {"market_type": "capacity-block"},
        "capacity_reservation_specification": {
            "capacity_reservation_target": {"capacity_reservation_id": pool.capacity_reservation_id}
        },
    }


class GpuNodePool(pulumi.ComponentResource):
    node_group_name: pulumi.Output[str]
    launch_template_id: pulumi.Output[str]

    def __init__(self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:GpuNodePool", name, None, opts)
        pool = args.pool
        taints = [contract.gpu_taint()]
        tags = {
            **args.tags,
            contract.GPU_MODEL_TAG: args.gpu.model.key,
            contract.GPU_COUNT_TAG: str(args.gpu.count),
            contract.POOL_LABEL: pool.name,
        }
        cluster = args.cluster
        encoded_user_data = pulumi.Output.all(
            cluster.name, cluster.endpoint, cluster.certificate_authority, cluster.service_cidr
        ).apply(
            lambda c: base64.b64encode(
                user_data.mime(user_data.node_config(c[0], c[1], c[2], c[3], args.labels, taints)).encode()
            ).decode()
        )
        template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            name_prefix=f"gpu-{pool.name}-",
            image_id=args.ami_id,
            user_data=encoded_user_data,
            update_default_version=True,
            metadata_options=launch_settings.metadata_options(),
            block_device_mappings=launch_settings.encrypted_root(pool.root_volume_gib),
            network_interfaces=launch_settings.private_interface(cluster.security_group_id),
            **_capacity_block(pool),
            tag_specifications=[
                {"resource_type": "instance", "tags": tags},
                {"resource_type": "volume", "tags": tags},
            ],
            tags={**tags, **args.declared},
            opts=pulumi.ResourceOptions(parent=self),
        )
        group = aws.eks.NodeGroup(
            f"{name}-ng",
            cluster_name=cluster.name,
            node_group_name_prefix=f"gpu-{pool.name}-",
            node_role_arn=args.node_role.arn,
            subnet_ids=list(args.subnet_ids),
            instance_types=[pool.instance_type],
            capacity_type=pool.capacity_type,
            scaling_config={"min_size": pool.min_size, "desired_size": pool.desired_size, "max_size": pool.max_size},
            update_config={"max_unavailable_percentage": MAX_UNAVAILABLE_PERCENT},
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            # Custom AMI: no amiType, version, releaseVersion, diskSize or remoteAccess. The labels
            # and taint repeat the kubelet's so the cluster autoscaler can scale from zero.
            labels=args.labels,
            taints=[{"key": t["key"], "value": t["value"], "effect": "NO_SCHEDULE"} for t in taints],
            tags={**tags, **args.declared},
            opts=pulumi.ResourceOptions(
                parent=self,
                # Nodes of a role without its policies cannot join: wait for every attachment.
                depends_on=list(args.node_role.attachments),
                # The cluster autoscaler owns the desired size once the pool exists.
                ignore_changes=["scalingConfig.desiredSize"],
            ),
        )
        self.node_group_name = group.node_group_name
        self.launch_template_id = template.id
        self.register_outputs({"node_group_name": self.node_group_name})
