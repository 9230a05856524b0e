"""nodeadm user data of the GPU pools: pinned by golden files, and carrying what a node needs to join
(EKS adds no bootstrap for a custom AMI)."""

from __future__ import annotations

import tomllib

import pytest

from components.aws import user_data as user_data_module
from gpu_platform.interface import contract
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


# --- the toolkit DaemonSet's runtime, registered with containerd at every boot ---------------------

# nodeadm decodes spec.containerd.config as TOML and deep-merges it into the config its template
# renders, map by map, the NodeConfig's keys winning (mergo.Merge WithOverride: amazon-eks-ami v20260714
# nodeadm/internal/containerd/config.go:91-106, nodeadm/internal/util/merge.go:16-53); its template
# registers only `runc` and imports no drop-in (config2.template.toml, config.template.toml). So a
# runtime the node serves from boot is a table the NodeConfig itself carries. Version 2 (the
# io.containerd.grpc.v1.cri plugin) is what nodeadm takes with containerd 1.7 and 2.x alike
# (config.go:126-149); the toolkit DaemonSet installs the runtime at /usr/local/nvidia/toolkit
# (ROOT=/usr/local/nvidia; cmd/nvidia-ctk-installer/main.go:65-67 at v1.20.0).
CRI_V2 = "io.containerd.grpc.v1.cri"
DAEMONSET_RUNTIME = "/usr/local/nvidia/toolkit/nvidia-container-runtime"


def _toolkit_daemonset(config):
    config["gpu-platform:nodeImage"]["toolkitBaked"] = False


def _containerd_config(rec, pool):
    return tomllib.loads(node_config(rec, pool)["spec"]["containerd"]["config"])


def test_a_pool_without_a_baked_toolkit_registers_the_nvidia_runtime_with_nodeadm(record_variant):
    rec = record_variant("toolkit-daemonset", _toolkit_daemonset)
    config = _containerd_config(rec, "l4")
    assert config["version"] == 2
    nvidia = config["plugins"][CRI_V2]["containerd"]["runtimes"]["nvidia"]
    # What the installer writes for it, copied from nodeadm's runc entry (pkg/config/engine/containerd
    # at v1.20.0; nodeadm config2.template.toml: runc v2, base spec, SystemdCgroup).
    assert nvidia == {
        "runtime_type": "io.containerd.runc.v2",
        "base_runtime_spec": "/etc/containerd/base-runtime-spec.json",
        "options": {"BinaryName": DAEMONSET_RUNTIME, "SystemdCgroup": True},
    }


def test_the_boot_config_leaves_runc_the_default_runtime(record_variant):
    # At first boot the runtime's binary is not there yet: as the default it would fail every pod on
    # the node, the toolkit's own among them. Unset here, nodeadm's default_runtime_name stays.
    rec = record_variant("toolkit-daemonset", _toolkit_daemonset)
    assert "default_runtime_name" not in _containerd_config(rec, "l4")["plugins"][CRI_V2]["containerd"]


def test_the_boot_config_turns_cdi_on_exactly_when_the_release_uses_cdi(record_variant):
    # v25.10.1 (dev's release) enables CDI; the installer would set enable_cdi (RUNTIME_ENABLE_CDI
    # defaults to CDI_ENABLED, container/runtime/runtime.go:153-155 at v1.20.0), nodeadm does only
    # from kubelet 1.32 (config.go:115).
    rec = record_variant("toolkit-daemonset", _toolkit_daemonset)
    assert _containerd_config(rec, "l4")["plugins"][CRI_V2]["enable_cdi"] is True
    assert "enable_cdi" not in tomllib.loads(user_data_module.toolkit_runtime(cdi=False))["plugins"][CRI_V2]


def test_a_baked_pool_leaves_containerd_to_nodeadm(shipped):
    # nodeadm registers a baked toolkit itself, from /usr/bin/nvidia-container-runtime
    # (nodeadm/internal/containerd/runtime_config_nvidia.go:10-35).
    for pool in pool_names(shipped):
        assert "containerd" not in node_config(shipped, pool)["spec"]
