"""gpu-platform: one GPU EKS cluster per stack. Thin on purpose: validate the stack's config, ask AWS
what must be known first, build the platform, export what operators look up."""

import pulumi

from components.aws.discovery import discover
from components.platform import GpuPlatform
from gpu_platform.config import from_pulumi

config = from_pulumi()
found = discover(config)
platform = GpuPlatform("gpu", config, found, pulumi.get_stack())

pulumi.export("clusterName", platform.cluster.name)
pulumi.export("nodeImageId", platform.image.ami_id)
pulumi.export("nodeGroups", {name: pool.node_group_name for name, pool in platform.pools.items()})
pulumi.export("operandOrder", [op.daemonset.metadata["name"] for op in platform.operands])
