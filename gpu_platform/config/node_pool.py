"""gpu-platform:nodePools: the GPU node pools (each an EKS managed node group), how their GPUs are
shared (time-slicing or MIG), bought and rolled."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, StrictBool, StrictInt, field_validator, model_validator

from gpu_platform.catalog import aws_limits, matrix
from gpu_platform.config.cluster import subnet_ids
from gpu_platform.config.errors import ConfigProblem, NoValue, listed, shown
from gpu_platform.config.section import Section, pattern


class TimeSlicing(Section):
    replicas: StrictInt = Field(
        ge=2,
        le=64,
        description="How many pods share each GPU (2 to 64): the device plugin advertises each GPU this many times.",
    )


class MigConfig(Section):
    config: str = Field(
        description="The MIG configuration the MIG manager carves on every GPU of the pool (e.g. all-1g.10gb): "
        "a configuration of the pool's GPU in the matrix."
    )

    @field_validator("config")
    @classmethod
    def _known_config(cls, value: str) -> str:
        names = matrix.load().mig_config_names
        if value not in names:
            raise ConfigProblem(
                f"{shown(value)} is not a MIG configuration of any GPU in the matrix (valid: {listed(names)})"
            )
        return value


# What each key given null is told: the valid values and the default.
_NULL_ANSWERS = {
    "rollout": ("surge, in-place or blue-green", "surge; in-place for a capacity block"),
    "node_repair": ("true or false", "true"),
    "efa": ("true or false", "on for p4d, p5 and p6 types, off elsewhere"),
}


class NodePool(Section):
    name: str = Field(
        pattern=pattern(
            r"^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$",
            "not a pool name (1 to 32 lowercase letters, digits or '-', starting and ending with a letter or digit)",
        ),
        description="The pool's name, unique in the stack: 1 to 32 lowercase letters, digits or '-'.",
    )
    instance_type: str = Field(
        alias="instanceType",
        pattern=pattern(r"^[a-z][a-z0-9-]*\.[a-z0-9]+$", "not an EC2 instance type (family.size, e.g. g6.2xlarge)"),
        description="The EC2 instance type of the pool's nodes (e.g. g6.2xlarge): one whose NVIDIA GPU the matrix "
        "covers.",
    )
    min_size: StrictInt = Field(alias="minSize", ge=0, description="The fewest nodes the pool scales down to.")
    desired_size: StrictInt = Field(
        alias="desiredSize", ge=0, description="The nodes the pool starts with: minSize <= desiredSize <= maxSize."
    )
    max_size: StrictInt = Field(
        alias="maxSize",
        ge=1,
        description="The most nodes the pool scales up to: at most a managed node group's quota of nodes.",
    )
    capacity_type: Literal["ON_DEMAND", "SPOT", "CAPACITY_BLOCK"] = Field(
        default="ON_DEMAND",
        alias="capacityType",
        description="How the nodes are bought: ON_DEMAND, SPOT, or CAPACITY_BLOCK (a Capacity Block for ML, reserved "
        "ahead for a fixed window).",
    )
    time_slicing: TimeSlicing | None = Field(
        default=None,
        alias="timeSlicing",
        description="Share each GPU among pods by time-slicing. Not with mig, nor with allocation.mode dra.",
    )
    mig: MigConfig | None = Field(
        default=None,
        description="Partition each GPU into MIG instances. Not with timeSlicing, nor with allocation.mode dra.",
    )
    root_volume_gib: StrictInt = Field(
        default=200,
        alias="rootVolumeGiB",
        ge=100,
        le=16384,
        description="The size of each node's root volume, in GiB (100 to 16384).",
    )
    # surge is EKS's rolling update, in-place its MINIMAL strategy; blue-green is components/aws/node_pool.py's.
    rollout: Literal["surge", "in-place", "blue-green"] | None = Field(
        default=None,
        description="How a new node image reaches the nodes. surge: new nodes first. in-place: old nodes go first, "
        "no spare capacity needed. blue-green: a new node group beside the old, removed after a readiness "
        "gate. Unset: surge; in-place for a capacity block.",
    )
    # Both generations run at once, and only the block's owner knows whether it has room for them.
    block_holds_both_generations: StrictBool = Field(
        default=False,
        alias="blockHoldsBothGenerations",
        description="Say that the capacity block holds twice the pool's nodes, which blue-green on a block needs. "
        "Only with rollout: blue-green and capacityType: CAPACITY_BLOCK.",
    )
    # The condition is the node monitoring agent's AcceleratedHardwareReady.
    node_repair: StrictBool = Field(
        default=True,
        alias="nodeRepair",
        description="EKS node auto repair: a node whose GPU reports a fatal condition (an NVIDIA XID, double-bit "
        "errors) is rebooted or replaced. Any pool with it on adds the eks-node-monitoring-agent add-on.",
    )
    # EKS launches a block's nodes only through a launch template that targets it by id.
    capacity_reservation_id: str | None = Field(
        default=None,
        alias="capacityReservationId",
        pattern=pattern(r"^cr-[0-9a-f]{17}$", "not a capacity reservation id (cr- and 17 lowercase hex digits)"),
        description="With capacityType: CAPACITY_BLOCK (and only then): the reservation's id (cr-...).",
    )
    # components/aws/efa.py; the families: gpu_platform/catalog/aws_limits.yaml efa.
    efa: StrictBool | None = Field(
        default=None,
        description="Elastic Fabric Adapter interfaces, a cluster placement group and the EFA security group, for "
        "NCCL across nodes. Unset: on for the multi-node training families, off elsewhere.",
    )
    # The zone of an EFA pool's placement group, or of a capacity block, is the pool's choice; EKS
    # refuses a node group whose subnets are outside the cluster's VPC.
    subnet_ids: tuple[str, ...] | None = Field(
        default=None,
        alias="subnetIds",
        min_length=1,
        description="The subnets the pool's nodes launch in, in the cluster's VPC. Unset: cluster.subnetIds. "
        "A Capacity Block needs exactly one, in the reservation's zone.",
    )

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: tuple[str, ...] | None) -> tuple[str, ...] | None:
        return None if value is None else subnet_ids(value, "give each subnet once")

    @field_validator("rollout", "node_repair", "efa", mode="before")
    @classmethod
    def _no_null(cls, value: Any, info) -> Any:
        # `rollout:`, `nodeRepair:` and `efa:` with nothing after them are YAML nulls: all are refused
        # alike, never read as "the default" for one and an error for another.
        if value is None or value == "":
            valid, default = _NULL_ANSWERS[info.field_name]
            raise NoValue(f"has no value (null or empty): give {valid}, or remove the key for the default ({default})")
        return value

    @field_validator("max_size")
    @classmethod
    def _node_group_quota(cls, value: int) -> int:
        quota = aws_limits.nodes_per_node_group()
        if value > quota:
            raise ConfigProblem(
                f"{value} is above the {quota} nodes a managed node group may have (the default EKS quota "
                f"{aws_limits.node_group_quota_code()}, raised in Service Quotas only); split the pool, or ask AWS to "
                f"raise the quota first"
            )
        return value

    @model_validator(mode="after")
    def _mig_fits_gpu(self) -> NodePool:
        """A MIG layout the pool's GPU has, and that carves something: else its nodes would offer no
        GPU (policy mig-config-fits-gpu checks the same of the declared node group, at `pulumi up`)."""
        gpu = matrix.load().gpu_for_instance_type(self.instance_type) if self.mig else None
        if self.mig is None or gpu is None:  # an instance type the matrix lacks is refused elsewhere
            return self
        if gpu.mig is None:
            capable = sorted(k for k, g in matrix.load().gpus.items() if g.mig)
            raise ConfigProblem(
                f"{self.instance_type}'s GPU {gpu.key} is not MIG-capable: remove mig, or use an instance type "
                f"of a MIG-capable GPU ({', '.join(capable)})",
                path=("mig",),
            )
        valid = sorted(gpu.mig.serving_configs())
        if self.mig.config not in valid:
            raise ConfigProblem(
                f"{shown(self.mig.config)} is not a MIG configuration of {gpu.key} ({self.instance_type}) that carves "
                f"instances (valid: {listed(valid)})",
                path=("mig", "config"),
            )
        return self

    @model_validator(mode="after")
    def _sizes(self) -> NodePool:
        if not self.min_size <= self.desired_size <= self.max_size:
            raise ConfigProblem(
                f"sizes must satisfy minSize <= desiredSize <= maxSize "
                f"(got {self.min_size}, {self.desired_size}, {self.max_size})"
            )
        return self

    @model_validator(mode="after")
    def _rollout(self) -> NodePool:
        block = self.capacity_type == "CAPACITY_BLOCK"
        if self.rollout is None:
            object.__setattr__(self, "rollout", "in-place" if block else "surge")
        elif block and self.rollout == "surge":
            # A surge launches extra instances before the old ones go; a capacity block reserves a fixed
            # count for a fixed window (EC2 User Guide, "Capacity Blocks for ML"), so there is none to spare.
            raise ConfigProblem(
                "surge does not fit capacityType: CAPACITY_BLOCK: the block holds no spare instance to "
                "launch new nodes into first (valid: in-place; blue-green with "
                "blockHoldsBothGenerations: "
                "true)",
                path=("rollout",),
            )
        elif block and self.rollout == "blue-green" and not self.block_holds_both_generations:
            # The new node group launches desiredSize nodes into the same reservation while the old one
            # still holds its own: the block must have room for both generations, which only its owner knows.
            raise ConfigProblem(
                "blue-green on capacityType: CAPACITY_BLOCK runs both node group generations at once, "
                f"{self.desired_size} + "
                f"{self.desired_size} nodes in the block {self.capacity_reservation_id}; say that the block holds "
                "them with "
                "blockHoldsBothGenerations: true, or use rollout: in-place (valid: in-place; blue-green with "
                "blockHoldsBothGenerations: true)",
                path=("rollout",),
            )
        if self.block_holds_both_generations and not (block and self.rollout == "blue-green"):
            raise ConfigProblem(
                "only for rollout: blue-green with capacityType: CAPACITY_BLOCK; remove it",
                path=("blockHoldsBothGenerations",),
            )
        if self.rollout == "blue-green" and self.min_size == 0:
            # The readiness gate is a DaemonSet on the new group's nodes, and Pulumi's DaemonSet wait
            # ends once kstatus says Current, which a DaemonSet that wants no pod is at once
            # (pulumi-kubernetes v4.32.0 provider/pkg/await/daemonset.go lines 169-171, 186-193). The new
            # group's nodes run only DaemonSet pods until the old group goes, so the cluster autoscaler
            # removes them as unneeded, down to minSize: at 0 the gate passes and the old group is deleted.
            raise ConfigProblem(
                "0 does not fit rollout: blue-green: the cluster autoscaler may scale the new node group down to 0 "
                "nodes "
                "before its readiness gate has proven any (they run only DaemonSet pods until the old group goes), "
                "and a gate "
                "with no node to check passes at once, so the old group would be deleted unchecked (valid: minSize 1 "
                "or more "
                "with blue-green, the nodes the pool keeps through a replacement; or rollout: surge or in-place)",
                path=("minSize",),
            )
        return self

    @field_validator("instance_type")
    @classmethod
    def _supported_nvidia_gpu(cls, value: str) -> str:
        gpu = aws_limits.older_nvidia_gpu(value)
        if gpu:
            known = ", ".join(f"{g.key} ({'/'.join(g.families)})" for g in matrix.load().gpus.values())
            raise ConfigProblem(
                f"{value!r} carries an NVIDIA {gpu}, which this platform does not support: its version "
                "matrix (the driver floors, MIG profiles and kernel modules the node image is built "
                "for) "
                f"has no row for it (supported: {known})"
            )
        return value

    @model_validator(mode="after")
    def _one_way_to_share(self) -> NodePool:
        # The device plugin's config gets both (components/kubernetes/operands/device_plugin/
        # plugin_config): time-slicing of nvidia.com/gpu beside the MIG strategy, and a MIG pool's
        # instances (the mixed strategy) are no nvidia.com/gpu at all, so the replicas would apply to
        # nothing while the pool looked shared.
        if self.mig and self.time_slicing:
            raise ConfigProblem(
                "mig and timeSlicing are exclusive on one pool: a MIG pool shares its GPUs as MIG "
                "instances (nvidia.com/mig-<profile> resources; time-slicing nvidia.com/gpu applies to "
                "nothing) (valid: one of mig or timeSlicing; put the other in a pool of its own)"
            )
        return self

    @model_validator(mode="after")
    def _capacity_block_family(self) -> NodePool:
        families = matrix.load().capacity_block_families
        family = self.instance_type.split(".", 1)[0]
        if self.capacity_type == "CAPACITY_BLOCK" and family not in families:
            raise ConfigProblem(
                f"EC2 sells Capacity Blocks for ML only for {', '.join(families)} instances, not "
                f"{self.instance_type!r} "
                "(valid: ON_DEMAND, SPOT; CAPACITY_BLOCK with an instance type of those families; "
                "gpu_platform/catalog/matrix.yaml "
                "capacityBlocks)",
                path=("capacityType",),
            )
        return self

    @model_validator(mode="after")
    def _reservation_with_capacity_block(self) -> NodePool:
        if self.capacity_type == "CAPACITY_BLOCK" and not self.capacity_reservation_id:
            raise ConfigProblem("capacityReservationId (cr-...) is required with capacityType: CAPACITY_BLOCK")
        if self.capacity_type != "CAPACITY_BLOCK" and self.capacity_reservation_id:
            raise ConfigProblem(
                f"capacityReservationId is only for capacityType: CAPACITY_BLOCK (this pool is {self.capacity_type})"
            )
        # A Capacity Block is zonal, and its node group must name only a subnet of the reservation's zone
        # (EKS User Guide 4d52b4d0 latest/ug/ml/capacity-blocks-mng.adoc:64, capacity-blocks.adoc:69).
        if self.capacity_type == "CAPACITY_BLOCK" and (self.subnet_ids is None or len(self.subnet_ids) != 1):
            raise ConfigProblem(
                "a Capacity Block is zonal: name the one subnet in the Availability Zone of the reservation "
                f"{self.capacity_reservation_id} (subnetIds: [subnet-...]); the cluster's subnets span zones"
                if self.subnet_ids is None
                else f"{len(self.subnet_ids)} subnets, but a Capacity Block is zonal: name only the subnet in the "
                "Availability "
                f"Zone of the reservation {self.capacity_reservation_id}",
                path=("subnetIds",),
            )
        return self
