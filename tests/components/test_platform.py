"""The Kubernetes half reads the cloud half through the cluster handle only: platform.py imports from
components/aws nothing but the EKS builder and the discovery it is handed, and registers no AWS
resource itself; every AWS resource is the builder's, under the same parents (same URNs) as before."""

from __future__ import annotations

import ast
from pathlib import Path

import components

PLATFORM = Path(components.__file__).with_name("platform.py")


def test_platform_imports_of_the_cloud_layer_are_the_builder_and_discovery_only():
    tree = ast.parse(PLATFORM.read_text())
    aws_imports = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("components.aws"):
            aws_imports |= {f"{node.module}.{a.name}" for a in node.names}
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith(("pulumi_aws", "components.aws")) for a in node.names)
    assert aws_imports == {"components.aws.gpu_cluster", "components.aws.discovery.Discovered"}
    assert "pulumi_aws" not in PLATFORM.read_text()


def test_the_aws_resources_keep_their_urns(dev):
    # Registered by components/aws/gpu_cluster.py with the platform as parent, as before the boundary.
    for type_, name in (
        ("aws:eks/cluster:Cluster", "gpu-cluster"),
        ("aws:eks/nodeGroup:NodeGroup", "gpu-pool-l4-ng"),
        ("aws:imagebuilder/image:Image", "gpu-node-image-image"),
    ):
        urn = dev.one(type_, name).urn
        assert urn.startswith("urn:pulumi:dev::gpu-platform::gpu-platform:index:GpuPlatform$gpu-platform:aws:"), urn


def test_the_first_operand_stage_waits_for_every_gpu_pool(prod):
    first = next(r for r in prod.of_type("kubernetes:apps/v1:DaemonSet") if "node-feature-discovery" in r.name)
    waits = prod.waits_for(first.urn)
    for pool in ("h100-mig", "l40s"):
        assert prod.one("aws:eks/nodeGroup:NodeGroup", f"gpu-pool-{pool}-ng").urn in waits
