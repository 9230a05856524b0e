"""One GPU node pool: a launch template with the baked AMI (IMDSv2, encrypted gp3 root, no public
IP, nodeadm user data) and an EKS managed node group that rolls it out.

How a new node image (a new launch template version) reaches the nodes is the pool's `rollout`:

- surge: EKS's rolling update (updateStrategy DEFAULT): new nodes are launched first, up to
  maxUnavailable at a time, then the old ones drained (EKS User Guide, "Understand each phase of node
  updates", managed-node-update-behavior.adoc lines 26-56).
- in-place: updateStrategy MINIMAL, which "terminates the old instances before launching the new
  instances ... useful ... with hardware accelerators such as GPUs" (botocore data/eks/2017-11-01/
  service-2.json at 0e6e2404b, NodegroupUpdateConfig.updateStrategy): no spare capacity needed.
- blue-green: the node group is REPLACED when its launch template changes (replaceOnChanges, and
  create-before-delete, never deleteBeforeReplace): Pulumi creates the new group (a new name from the
  prefix) beside the old one and carries on with what depends on it, the readiness gate
  (components/kubernetes/readiness_gate.py), whose Job the Kubernetes provider waits for until it
  succeeds. The old group is deleted only in the engine's post-steps, which run once the program
  has finished, i.e. once every registration, the gate's included, has succeeded
  (pulumi/pulumi pkg/resource/deploy/deployment_executor.go at v3.259.0-14-g1b5949891b: performPostSteps
  is reached only after the source iterator's last event, lines 327-333; a failed step cancels the
  loop first, lines 318-325; GenerateDeletes, step_generator.go lines 2328-2440, deletes replaced
  resources marked Delete there). A failed gate therefore fails the update with both generations up;
  the old one stays in the state as pending delete and goes at the end of the next update that passes.
"""

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
# EKS's update strategies (botocore eks service-2.json, NodegroupUpdateStrategies: DEFAULT | MINIMAL).
_UPDATE_CONFIG = {
    "surge": {"max_unavailable_percentage": MAX_UNAVAILABLE_PERCENT, "update_strategy": "DEFAULT"},
    "in-place": {"max_unavailable": 1, "update_strategy": "MINIMAL"},
    # Never used for a version roll: a new launch template version replaces the whole group.
    "blue-green": {"max_unavailable_percentage": MAX_UNAVAILABLE_PERCENT, "update_strategy": "DEFAULT"},
}


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
    generation: str = ""  # the node image's generation (contract.GENERATION_LABEL)


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
    node_group: aws.eks.NodeGroup
    labels: dict[str, str]  # the kubelet labels its nodes register with
    rollout: str
    # The labels that pick this generation's nodes (pool and image generation).
    generation_selector: dict[str, str]

    def __init__(self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:GpuNodePool", name, None, opts)
        pool = args.pool
        taints = [contract.gpu_taint()]
        labels = dict(sorted({**args.labels, **({contract.GENERATION_LABEL: args.generation} if args.generation else {})}.items()))
        self.labels = labels
        self.rollout = pool.rollout
        self.generation_selector = {contract.POOL_LABEL: pool.name, **({contract.GENERATION_LABEL: args.generation} if args.generation else {})}
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
                user_data.mime(user_data.node_config(c[0], c[1], c[2], c[3], labels, taints)).encode()
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
            update_config=_UPDATE_CONFIG[pool.rollout],
            # Node auto repair reacts to the kubelet's Ready and, with the node monitoring agent
            # (components/aws/node_health.py), to AcceleratedHardwareReady, 10 minutes after it turns
            # (EKS User Guide, node-health.adoc lines 29-36, NVIDIA issues lines 228-250).
            node_repair_config={"enabled": pool.node_repair},
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            # Custom AMI: no amiType, version, releaseVersion, diskSize or remoteAccess. The labels
            # and taint repeat the kubelet's so the cluster autoscaler can scale from zero.
            labels=labels,
            taints=[{"key": t["key"], "value": t["value"], "effect": "NO_SCHEDULE"} for t in taints],
            tags={**tags, **args.declared, contract.ROLLOUT_TAG: pool.rollout},
            opts=pulumi.ResourceOptions(
                parent=self,
                # Nodes of a role without its policies cannot join: wait for every attachment.
                depends_on=list(args.node_role.attachments),
                # The cluster autoscaler owns the desired size once the pool exists.
                ignore_changes=["scalingConfig.desiredSize"],
                # blue-green: a new template version is a new group beside the old (see the module doc).
                **({"replace_on_changes": ["launchTemplate"], "delete_before_replace": False}
                   if pool.rollout == "blue-green" else {}),
            ),
        )
        self.node_group = group
        self.node_group_name = group.node_group_name
        self.launch_template_id = template.id
        self.register_outputs({"node_group_name": self.node_group_name})
