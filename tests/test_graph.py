"""The recorded graph of the shipped stacks, read like sentences about the infrastructure."""

from __future__ import annotations

from gpu_platform.interface import contract
from preview.recording import Recording

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"


def gpu_node_groups(rec: Recording):
    return [r for r in rec.of_type(NODE_GROUP) if r.name.endswith("-ng")]


def test_every_layer_is_present(stack):
    types = {r.type for r in stack.resources}
    for expected in (
        "aws:eks/cluster:Cluster",
        "aws:imagebuilder/image:Image",
        "aws:ec2/launchTemplate:LaunchTemplate",
        NODE_GROUP,
        "gpu-platform:operands:DevicePlugin",
        DAEMONSET,
    ):
        assert expected in types


def test_one_node_pool_component_per_configured_pool(stack):
    pools = {r.name for r in stack.of_type("gpu-platform:aws:GpuNodePool")}
    configured = {f"gpu-pool-{p['name']}" for p in stack.config["gpu-platform:nodePools"]}
    assert pools == configured


def test_every_operand_workload_waits_for_every_gpu_node_group(stack):
    """Directly (the first stage) or through the stage before it: walk the whole chain."""
    node_groups = {ng.urn for ng in gpu_node_groups(stack)}
    for ds in stack.of_type(DAEMONSET):
        if contract.OPERAND_KEY not in ds.inputs["metadata"].get("labels", {}):
            continue  # not an operand (the EFA device plugin waits for the EFA pools only: its own test)
        seen, frontier = set(), set(stack.waits_for(ds.urn))
        while frontier:
            seen |= frontier
            frontier = set().union(*(stack.waits_for(u) for u in frontier)) - seen
        assert node_groups <= seen, ds.name


def test_kubernetes_objects_use_the_clusters_provider(stack):
    provider = stack.one("pulumi:providers:kubernetes", "gpu-cluster-k8s")
    for r in stack.resources:
        if r.custom and r.type.startswith("kubernetes:"):
            assert r.provider.startswith(provider.urn + "::")


def test_node_image_does_not_wait_for_the_cluster(stack):
    cluster = stack.one("aws:eks/cluster:Cluster", "gpu-cluster")
    cluster_side = {cluster.urn} | {
        r.urn for r in stack.descendants(stack.one("gpu-platform:aws:EksCluster", "gpu-cluster").urn)
    }
    for r in stack.descendants(stack.one("gpu-platform:aws:NodeImage", "gpu-node-image").urn):
        assert not (stack.waits_for(r.urn) & cluster_side), r.name


def test_gpu_launch_templates_use_the_baked_image(stack):
    image = stack.one("aws:imagebuilder/image:Image", "gpu-node-image-image")
    for lt in stack.descendants(stack.one("gpu-platform:index:GpuPlatform", "gpu").urn):
        if lt.type != "aws:ec2/launchTemplate:LaunchTemplate" or not lt.name.startswith("gpu-pool-"):
            continue
        assert image.urn in lt.dependencies
        assert lt.inputs["imageId"].startswith("ami-")


def test_system_nodes_are_hardened_like_gpu_nodes(stack):
    """IMDSv2 with hop limit 1, encrypted root, no public IP; and no custom image (EKS AMI type)."""
    system = stack.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-cluster-system")
    assert system.inputs["metadataOptions"]["httpTokens"] == "required"
    assert system.inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1
    assert system.inputs["blockDeviceMappings"][0]["ebs"]["encrypted"] == "true"
    assert system.inputs["networkInterfaces"][0]["associatePublicIpAddress"] == "false"
    assert "imageId" not in system.inputs
    group = stack.one(NODE_GROUP, "gpu-cluster-system")
    assert group.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert system.urn in group.dependencies
