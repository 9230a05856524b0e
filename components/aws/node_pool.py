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
  prefix) beside the old one, at the pool's desiredSize whatever the autoscaler ran in the old one,
  and carries on with what depends on it, the readiness gate (components/kubernetes/readiness_gate.py),
  a DaemonSet on the new group's nodes whose rollout the Kubernetes provider waits for (a DaemonSet
  with no node to run on passes at once, so blue-green needs minSize 1 or more: gpu_platform/config/node_pool.py
  NodePool._rollout; the gate counts the nodes that are there, not one that node repair removed). The old group
  is deleted only in the engine's post-steps, which run once the program has finished, i.e. once every
  registration, the gate's included, has succeeded
  (pulumi/pulumi pkg/resource/deploy/deployment_executor.go at v3.259.0-14-g1b5949891b: performPostSteps
  is reached only after the source iterator's last event, lines 327-333; a failed step cancels the
  loop first, lines 318-325; GenerateDeletes, step_generator.go lines 2328-2440, deletes replaced
  resources marked Delete there). A failed gate therefore fails the update with both generations up;
  the old one stays in the state as pending delete and goes at the end of the next update that passes.
  (Not so with `pulumi up --continue-on-error`: a failed step no longer stops the update, and the
  post-steps delete the old group anyway; pkg/resource/deploy/step_executor.go lines 441-460,
  deployment_executor.go lines 513-545, which hold back only what the failed resource depends on.)

None of the three checks GPUs for surge or in-place: EKS moves on once a new node is Ready
(managed-node-update-behavior.adoc lines 38-42).
"""

from __future__ import annotations

import base64
import math
from dataclasses import dataclass, field

import pulumi
import pulumi_aws as aws

from components.aws import efa as efa_network, launch_settings, user_data
from components.aws.discovery import PoolGpu
from components.aws.node_role import NodeRole
from gpu_platform.config.node_pool import NodePool as NodePoolConfig
from gpu_platform.interface import contract

# A managed node group replaces at most this share of a pool's nodes at once on an AMI rollout.
MAX_UNAVAILABLE_PERCENT = 25
# The label EKS puts on every node of a managed node group, its value the group's name (EKS User Guide,
# managed-node-update-behavior.adoc lines 44-55 at 4d52b4d0, for custom launch template and AMI groups
# too): what picks the nodes of one physical group, a replacement's new group included.
NODE_GROUP_LABEL = "eks.amazonaws.com/nodegroup"
# EKS's update strategies (botocore eks service-2.json, NodegroupUpdateStrategies: DEFAULT | MINIMAL).
_UPDATE_CONFIG = {
    "surge": {"max_unavailable_percentage": MAX_UNAVAILABLE_PERCENT, "update_strategy": "DEFAULT"},
    "in-place": {"max_unavailable": 1, "update_strategy": "MINIMAL"},
    # Never used for a version roll: a new launch template version replaces the whole group.
    "blue-green": {"max_unavailable_percentage": MAX_UNAVAILABLE_PERCENT, "update_strategy": "DEFAULT"},
}


# How long one batch of a node roll may take: EKS launches the batch's new nodes and waits until they
# are Ready, drains each old node (up to 15 minutes before it fails with PodEvictionFailure), waits 60
# seconds after cordoning it and terminates it (managed-node-update-behavior.adoc lines 26-42 and
# 81-87). A GPU node's boot (driver, persistenced, fabric manager) and join take 10 to 15 minutes, so
# 30 minutes a batch; a batch is maxUnavailable nodes, at most 100 (line 22).
BATCH_MINUTES = 30
# The AWS provider waits 60 minutes for a node group update unless told otherwise (tf-aws v5.42.0
# internal/service/eks/node_group.go lines 51-53): an in-place roll of an 8-node p5 pool is 8 batches.
PROVIDER_DEFAULT_MINUTES = 60
MAX_BATCH = 100


def roll_batches(pool: NodePoolConfig) -> tuple[int, int]:
    """(batches, nodes per batch) of a version roll of the whole pool at its maxSize (the cluster
    autoscaler may run that many when the roll starts): in-place one at a time, surge 25% (at least
    one), as _UPDATE_CONFIG asks EKS."""
    per_batch = 1 if pool.rollout == "in-place" else max(1, pool.max_size * MAX_UNAVAILABLE_PERCENT // 100)
    per_batch = min(per_batch, MAX_BATCH)
    return math.ceil(pool.max_size / per_batch), per_batch


def update_timeout(pool: NodePoolConfig) -> str:
    batches, _ = roll_batches(pool)
    return f"{max(PROVIDER_DEFAULT_MINUTES, batches * BATCH_MINUTES)}m"


# A MIG node runs no DCGM server (components/aws/node_health.py DCGM_NODE_TERM), so the node monitoring
# agent reports AcceleratedHardwareReady False with reason DCGMError there, at once and for good: a Fatal
# condition for a host engine it never reached, which no later check sets back
# (aws/eks-node-monitoring-agent v1.7.0 monitors/nvidia/dcgm/dcgm_client.go:118-141,
# dcgm_reconcile.go:14-26, pkg/reasons/reasons.yaml:291-295, pkg/manager/node_exporter.go:111-141).
# Repair would replace such a node every 10 minutes; that one reason takes no action on a MIG pool
# (EKS NodeRepairConfigOverrides, botocore eks service-2.json: all four fields required). Other
# reasons still repair it; the wait is the 10 minutes EKS uses by default (node-health-issues.adoc:15).
_NO_DCGM_OVERRIDE = {
    "node_monitoring_condition": "AcceleratedHardwareReady",
    "node_unhealthy_reason": "DCGMError",
    "min_repair_wait_time_mins": 10,
    "repair_action": "NoAction",
}


def _repair(enabled: bool, mig: bool) -> dict:
    overrides = {"node_repair_config_overrides": [_NO_DCGM_OVERRIDE]} if enabled and mig else {}
    return {"enabled": enabled, **overrides}


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
    # An image the stack did not bake: the user data makes the toolkit refuse GPUs to pods the device
    # plugin gave none (user_data.gpu_access_script).
    gpu_access_at_boot: bool = False
    # TOML nodeadm merges into containerd's config at every boot (user_data.toolkit_runtime); "": none.
    containerd_config: str = ""
    # With EFA: the stack's EFA security group (components/aws/efa.py); None: the pool has no EFA.
    efa_security_group_id: pulumi.Input[str] | None = None
    # What the nodes need in the cluster before they start: the VPC CNI's credentials (EksCluster.cni_ready).
    waits_for: tuple[pulumi.Resource, ...] = ()
    # The extended resources a node advertises once its operands run, EFA devices included (the Kubernetes
    # half decides: sharing.node_resources); {}: none (DRA without EFA). What the autoscaler's template node is told.
    resources: dict[str, int] = field(default_factory=dict)


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
    # The labels that pick the nodes of this pool's node group (a replaced group: the new one's).
    node_selector: dict[str, pulumi.Input[str]]

    def __init__(self, name: str, args: NodePoolArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:GpuNodePool", name, None, opts)
        pool = args.pool
        taints = [contract.gpu_taint()]
        labels = dict(
            sorted({**args.labels, **({contract.GENERATION_LABEL: args.generation} if args.generation else {})}.items())
        )
        self.labels = labels
        self.rollout = pool.rollout
        tags = {
            **args.tags,
            contract.GPU_MODEL_TAG: args.gpu.model.key,
            contract.GPU_COUNT_TAG: str(args.gpu.count),
            contract.POOL_LABEL: pool.name,
        }
        cluster = args.cluster
        interfaces = (
            efa_network.layout(args.gpu.network_cards, args.gpu.efa_interfaces)
            if args.efa_security_group_id is not None
            else []
        )
        tags[contract.EFA_INTERFACES_TAG] = str(efa_network.devices(interfaces))
        network = (
            efa_network.network_interfaces(interfaces, [cluster.security_group_id, args.efa_security_group_id])
            if interfaces
            else launch_settings.private_interface(cluster.security_group_id)
        )
        # One placement group per EFA pool, so its nodes share a network spine; not on a capacity
        # block, whose reservation already places its instances together (EC2 User Guide, "Capacity
        # Blocks for ML": co-located in EC2 UltraClusters) and whose launch names no group.
        placement = (
            {"placement": {"group_name": efa_network.placement_group(name, tags, self).name}}
            if interfaces and pool.capacity_type != "CAPACITY_BLOCK"
            else {}
        )
        encoded_user_data = pulumi.Output.all(
            cluster.name, cluster.endpoint, cluster.certificate_authority, cluster.service_cidr
        ).apply(
            lambda c: base64.b64encode(
                user_data.mime(
                    user_data.node_config(c[0], c[1], c[2], c[3], labels, taints, args.containerd_config),
                    user_data.gpu_access_script() if args.gpu_access_at_boot else None,
                ).encode()
            ).decode()
        )
        machine_tags = {k: v for k, v in tags.items() if k != contract.AUDIT_TAG_APPROVAL}
        template = aws.ec2.LaunchTemplate(
            f"{name}-lt",
            name_prefix=f"gpu-{pool.name}-",
            image_id=args.ami_id,
            user_data=encoded_user_data,
            update_default_version=True,
            metadata_options=launch_settings.metadata_options(),
            block_device_mappings=launch_settings.encrypted_root(pool.root_volume_gib),
            network_interfaces=network,
            **placement,
            **_capacity_block(pool),
            # Instances and volumes get no approval id: tag specifications are template content, so a
            # new approval would make a template version and roll every node (replacements.yaml).
            tag_specifications=[
                {"resource_type": "instance", "tags": machine_tags},
                {"resource_type": "volume", "tags": machine_tags},
            ],
            tags={**tags, **args.declared},
            opts=pulumi.ResourceOptions(parent=self),
        )
        group = aws.eks.NodeGroup(
            f"{name}-ng",
            cluster_name=cluster.name,
            node_group_name_prefix=f"gpu-{pool.name}-",
            node_role_arn=args.node_role.arn,
            # A cluster placement group lives in one zone: an EFA pool launches in the first subnet
            # (its own subnetIds must name one; discovery refuses more).
            subnet_ids=list(args.subnet_ids[:1] if placement else args.subnet_ids),
            instance_types=[pool.instance_type],
            capacity_type=pool.capacity_type,
            scaling_config={"min_size": pool.min_size, "desired_size": pool.desired_size, "max_size": pool.max_size},
            update_config=_UPDATE_CONFIG[pool.rollout],
            # Node auto repair reacts to the kubelet's Ready and, with the node monitoring agent
            # (components/aws/node_health.py), to AcceleratedHardwareReady, 10 minutes after it turns
            # (EKS User Guide, node-health.adoc lines 29-36, NVIDIA issues lines 228-250).
            node_repair_config=_repair(pool.node_repair, pool.mig is not None),
            launch_template={"id": template.id, "version": template.latest_version.apply(str)},
            # Custom AMI: no amiType, version, releaseVersion, diskSize or remoteAccess. The labels
            # and taint repeat the kubelet's: the cluster autoscaler's template node of an empty group
            # takes them from here (contract.CA_RESOURCE_TAG's note), given eks:DescribeNodegroup on its side
            # (cluster-autoscaler-1.33.6 cloudprovider/aws/README.md lines 55 and 110).
            labels=labels,
            taints=[{"key": t["key"], "value": t["value"], "effect": "NO_SCHEDULE"} for t in taints],
            tags={**tags, **args.declared, contract.ROLLOUT_TAG: pool.rollout},
            opts=pulumi.ResourceOptions(
                parent=self,
                # Nodes of a role without its policies cannot join: wait for every attachment. Nodes
                # whose aws-node has no credentials get no pod addresses and never turn Ready: wait
                # for the CNI's role and its Pod Identity association.
                depends_on=[*args.node_role.attachments, *args.waits_for],
                # A version roll of the whole pool, batch by batch (roll_batches).
                custom_timeouts=pulumi.CustomTimeouts(update=update_timeout(pool)),
                # The cluster autoscaler owns the desired size once the pool exists.
                ignore_changes=["scalingConfig.desiredSize"],
                # blue-green: a new template version is a new group beside the old (see the module doc).
                **(
                    {"replace_on_changes": ["launchTemplate"], "delete_before_replace": False}
                    if pool.rollout == "blue-green"
                    else {}
                ),
            ),
        )
        # The template node's resources: what a node advertises, and nvidia.com/gpu 0 where it advertises
        # none (MIG under the mixed strategy, DRA) instead of the instance table's count. A pod asking for
        # a MIG profile, time-sliced replicas or EFA devices then scales an empty pool up; one asking for
        # a whole GPU no longer scales up a pool whose nodes have none.
        asg = group.resources.apply(lambda found: found[0].autoscaling_groups[0].name)
        self.autoscaler_tags = [
            aws.autoscaling.Tag(
                f"{name}-ca-{resource.replace('/', '-')}",
                autoscaling_group_name=asg,
                # Not on the instances: the launch template tags them (propagation would add these).
                tag={"key": contract.CA_RESOURCE_TAG + resource, "value": str(count), "propagate_at_launch": False},
                opts=pulumi.ResourceOptions(parent=self),
            )
            for resource, count in sorted({"nvidia.com/gpu": 0, **args.resources}.items())
        ]
        self.node_group = group
        self.node_group_name = group.node_group_name
        self.node_selector = {contract.POOL_LABEL: pool.name, NODE_GROUP_LABEL: group.node_group_name}
        self.launch_template_id = template.id
        self.register_outputs({"node_group_name": self.node_group_name})
