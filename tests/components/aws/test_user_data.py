"""nodeadm user data of the GPU pools: pinned by golden files, and carrying what a node needs to join
(EKS adds no bootstrap for a custom AMI)."""

from __future__ import annotations


import pytest

from components.aws import user_data as user_data_module
from gpu_platform import contract
from tests.components.aws.conftest import node_config, node_group, pool_names, user_data
from tests.golden import assert_golden

SHIPPED_POOLS = [("dev", "l4"), ("prod", "h100-mig"), ("prod", "l40s")]


@pytest.mark.parametrize("stack, pool", SHIPPED_POOLS)
def test_user_data_matches_its_golden_file(request, stack, pool):
    rec = request.getfixturevalue(stack)
    assert_golden(f"user_data/{stack}-{pool}.txt", user_data(rec, pool))


def test_every_shipped_pool_has_a_golden_file(dev, prod):
    assert {(r.stack, p) for r in (dev, prod) for p in pool_names(r)} == set(SHIPPED_POOLS)


def test_user_data_joins_the_cluster_it_was_built_for(shipped):
    cluster = shipped.one("aws:eks/cluster:Cluster", "gpu-cluster")
    # The mock engine fills these outputs exactly as outputs.py derives them from the cluster name.
    from preview.offline import outputs

    computed = outputs.fill(cluster.type, cluster.name, cluster.inputs)[1]
    for pool in pool_names(shipped):
        spec = node_config(shipped, pool)["spec"]["cluster"]
        assert spec["name"] == shipped.config["gpu-platform:cluster"]["name"]
        assert spec["apiServerEndpoint"] == computed["endpoint"]
        assert spec["certificateAuthority"] == computed["certificateAuthority"]["data"]
        assert spec["cidr"] == computed["kubernetesNetworkConfig"]["serviceIpv4Cidr"]


def test_user_data_registers_the_pools_labels_and_the_gpu_taint(shipped):
    for pool in pool_names(shipped):
        flags = node_config(shipped, pool)["spec"]["kubelet"]["flags"]
        labels = node_group(shipped, pool).inputs["labels"]
        assert f"--node-labels={','.join(f'{k}={v}' for k, v in sorted(labels.items()))}" in flags
        assert "--register-with-taints=nvidia.com/gpu=present:NoSchedule" in flags
        assert labels[contract.GPU_PRESENT_LABEL] == "true"


def test_user_data_is_a_nodeadm_mime_document(dev):
    text = user_data(dev, "l4")
    assert text.startswith("MIME-Version: 1.0\n")
    assert "Content-Type: application/node.eks.aws" in text
    assert node_config(dev, "l4")["kind"] == "NodeConfig"
    assert node_config(dev, "l4")["apiVersion"] == "node.eks.aws/v1alpha1"


def test_mime_wraps_the_node_config_verbatim():
    config = user_data_module.node_config("c", "https://e", "Q0E=", "10.0.0.0/16", {"a": "b"}, [contract.gpu_taint()])
    document = user_data_module.mime(config)
    # The NodeConfig is the one part between the boundary lines, unchanged.
    part = document.split("Content-Type: application/node.eks.aws\n\n", 1)[1].rsplit("--==GPUPLATFORM==--", 1)[0]
    assert part == config
