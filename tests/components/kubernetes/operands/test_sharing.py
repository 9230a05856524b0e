"""Each pool's sharing reaches its nodes: time-slicing and MIG strategy per pool in the plugin's
and GFD's config maps, and each MIG pool's named configuration in the MIG manager's."""

from __future__ import annotations

import yaml

from components.kubernetes.operands import sharing
from components.kubernetes.operands.context import MigPool
from components.kubernetes.operands.mig_manager import mig_parted_config
from gpu_platform.catalog import matrix
from gpu_platform.config.node_pool import NodePool
from gpu_platform.interface import contract
from tests.components.kubernetes.conftest import daemonset_of, gpu_node_groups, pod_spec

CONFIG_MAP = "kubernetes:core/v1:ConfigMap"


def config_map(rec, name: str) -> dict:
    return next(r.inputs["data"] for r in rec.of_type(CONFIG_MAP) if r.inputs["metadata"]["name"] == name)


def test_every_pool_has_its_plugin_config_named_by_its_node_label(stack):
    for operand in ("device-plugin", "gpu-feature-discovery"):
        configs = config_map(stack, f"nvidia-{operand}-available-configs")
        for ng in gpu_node_groups(stack):
            assert ng.inputs["labels"][contract.DEVICE_PLUGIN_CONFIG_LABEL] in configs


def test_config_manager_watches_a_label_every_pool_sets_to_one_of_its_configs(stack):
    # Both ways, from what is deployed: the label each config-manager container watches (its
    # NODE_LABEL) is set on every GPU pool's nodes, to the name of a config in its map. A watched
    # label no pool sets leaves every node on the default config, silently.
    for operand in ("device-plugin", "gpu-feature-discovery"):
        spec = pod_spec(daemonset_of(stack, operand))
        managers = [
            c for c in spec.get("initContainers", []) + spec["containers"] if c.get("command") == ["config-manager"]
        ]
        assert len(managers) == 2, operand  # the init container and the sidecar
        configs = config_map(stack, f"nvidia-{operand}-available-configs")
        for container in managers:
            watched = {e["name"]: e.get("value") for e in container["env"]}["NODE_LABEL"]
            for ng in gpu_node_groups(stack):
                assert ng.inputs["labels"].get(watched) in configs, (operand, container["name"], ng.name, watched)


def test_the_time_sliced_pool_shares_each_gpu_by_its_replicas(dev):
    configs = config_map(dev, "nvidia-device-plugin-available-configs")
    document = yaml.safe_load(configs["l4"])
    assert document["sharing"]["timeSlicing"]["resources"] == [{"name": "nvidia.com/gpu", "replicas": 4}]
    assert document["flags"]["migStrategy"] == "none"


def test_the_mig_pool_uses_the_mixed_strategy_and_the_others_none(prod):
    configs = config_map(prod, "nvidia-device-plugin-available-configs")
    assert yaml.safe_load(configs["h100-mig"])["flags"]["migStrategy"] == "mixed"
    assert yaml.safe_load(configs["l40s"])["flags"]["migStrategy"] == "none"
    assert "sharing" not in yaml.safe_load(configs["l40s"])


def test_the_mig_manager_carves_each_mig_pools_configuration(prod):
    parted = yaml.safe_load(config_map(prod, "nvidia-mig-manager-mig-parted-config")["config.yaml"])
    h100 = matrix.load().gpus["H100-80GB"].mig.configs()["all-balanced"]
    assert parted["mig-configs"]["all-balanced"] == [{"devices": "all", "mig-enabled": True, "mig-devices": h100}]
    assert parted["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    for ng in gpu_node_groups(prod):
        label = ng.inputs["labels"].get(contract.MIG_CONFIG_LABEL)
        assert label is None or label in parted["mig-configs"]


def test_the_mig_managers_map_holds_every_layout_of_a_mig_pools_gpu(prod):
    # A layout change rolls the pool before the map is updated (the manager waits for the pools); a node
    # booting with a name the map lacks stays uncarved (mig-parted v0.13.1 reconfigure.go:135-138).
    parted = yaml.safe_load(config_map(prod, "nvidia-mig-manager-mig-parted-config")["config.yaml"])
    h100 = matrix.load().gpus["H100-80GB"].mig
    assert set(h100.configs()) <= set(parted["mig-configs"])
    assert parted["mig-configs"]["all-3g.40gb"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {"3g.40gb": 2}}
    ]


def test_a_layout_name_two_mig_gpus_carve_differently_is_left_out_unless_a_pool_uses_it():
    h100 = MigPool("h", "H100-80GB", "all-1g.10gb", {"1g.10gb": 7})
    a100 = MigPool("a", "A100-40GB", "all-1g.5gb", {"1g.5gb": 7})
    parted = yaml.safe_load(mig_parted_config((h100, a100)))["mig-configs"]
    assert "all-balanced" not in parted  # 2/1/1 of 1g.10gb.. on an H100, other profiles on an A100
    assert parted["all-1g.10gb"] == [{"devices": "all", "mig-enabled": True, "mig-devices": {"1g.10gb": 7}}]


def test_a_media_extension_profile_is_a_resource_named_with_a_dot():
    # The plugin names MIG resources with `+` turned into `.` (k8s-device-plugin v0.18.1
    # internal/rm/rm.go:134, internal/resource/nvml-mig-device.go:103): 1g.10gb+me -> mig-1g.10gb.me.
    h100 = matrix.load().gpus["H100-80GB"]
    assert sharing.node_resources(_h100_pool("all-1g.10gb.me"), h100, 8, dra=False, efa_devices=0) == {
        "nvidia.com/mig-1g.10gb.me": 8
    }


def test_a_configuration_the_gpu_cannot_carve_never_reaches_the_map():
    unknown = MigPool("h100", "H100-80GB", "all-1g.18gb", {}, exists=False)
    parted = yaml.safe_load(mig_parted_config((unknown,)))
    assert set(parted["mig-configs"]) == {"all-disabled"}


def test_no_mig_manager_without_a_mig_pool(dev):
    assert not any(r.name.startswith("gpu-mig-manager") for r in dev.resources)


def test_the_config_config_manager_falls_back_to_is_in_the_map(stack):
    # With no node label config-manager links DEFAULT_CONFIG, which must exist in CONFIG_FILE_SRCDIR
    # or it exits (cmd/config-manager/main.go:334-392 at v0.18.1).
    for operand in ("device-plugin", "gpu-feature-discovery"):
        ds = next(
            r
            for r in stack.of_type("kubernetes:apps/v1:DaemonSet")
            if r.inputs["metadata"]["name"] == f"nvidia-{operand}"
        )
        pod = ds.inputs["spec"]["template"]["spec"]
        for c in [*pod["initContainers"], *pod["containers"]]:
            default = {e["name"]: e.get("value") for e in c.get("env", [])}.get("DEFAULT_CONFIG")
            if default is not None:
                assert default in config_map(stack, f"nvidia-{operand}-available-configs"), (operand, c["name"])


def _h100_pool(mig_config: str) -> NodePool:
    return NodePool.model_validate(
        {
            "name": "h100",
            "instanceType": "p5.48xlarge",
            "minSize": 0,
            "desiredSize": 0,
            "maxSize": 2,
            "mig": {"config": mig_config},
        }
    )


def test_a_single_profile_mig_node_advertises_its_instances_by_profile():
    # all-1g.10gb fills an H100 80GB with 7 instances (gpu-operator v25.10.1
    # assets/state-mig-manager/0400_configmap.yaml, the all-1g.10gb entry); under the mixed strategy
    # each is nvidia.com/mig-1g.10gb: 7 x 8 GPUs.
    h100 = matrix.load().gpus["H100-80GB"]
    assert sharing.node_resources(_h100_pool("all-1g.10gb"), h100, 8, dra=False, efa_devices=0) == {
        "nvidia.com/mig-1g.10gb": 56
    }


def _plugin_accepts(strategy: str, layout: dict[str, int]) -> bool:
    """Whether the device plugin serves a node carved as `layout` (profile -> count per GPU, {} for
    MIG off) under `strategy` (k8s-device-plugin v0.18.1 internal/rm/device_map.go): single needs
    every GPU MIG-enabled with one profile (:88-101, :155-197, else it exits), none hands out a
    MIG-enabled GPU whole (:118-120), mixed takes any."""
    if strategy == "single":
        return len(layout) == 1
    if strategy == "none":
        return not layout
    return True


def test_after_a_layout_change_the_plugin_still_serves_nodes_carved_the_old_way():
    # The new config reaches the plugin at once; a node keeps the old layout until it is rolled or the
    # MIG manager has repartitioned it (a busy node: pods still hold the old instances).
    refused = [
        f"{name}: {old} -> {new}"
        for name, gpu in sorted(matrix.load().gpus.items())
        if gpu.mig is not None
        for old, layout in sorted(gpu.mig.configs().items())
        for new in sorted(gpu.mig.configs())
        if not _plugin_accepts(sharing.mig_strategy(new, gpu), layout)
    ]
    assert refused == []


def test_a_dra_node_advertises_no_extended_resource():
    h100 = matrix.load().gpus["H100-80GB"]
    assert sharing.node_resources(_h100_pool("all-balanced"), h100, 8, dra=True, efa_devices=0) == {}


def test_an_efa_node_advertises_its_efa_devices_beside_its_gpus():
    # The EFA device plugin advertises each EFA device as vpc.amazonaws.com/efa (EKS User Guide 4d52b4d0
    # latest/ug/ml/node-efa.adoc:138); a p5.48xlarge has 32 (its NCCL job asks for 32, lines 260 and 265).
    h100 = matrix.load().gpus["H100-80GB"]
    assert sharing.node_resources(_h100_pool("all-1g.10gb"), h100, 8, dra=False, efa_devices=32) == {
        "nvidia.com/mig-1g.10gb": 56,
        "vpc.amazonaws.com/efa": 32,
    }


def test_a_dra_node_advertises_its_efa_devices_only():
    # Under DRA the GPUs are ResourceSlice devices, but the EFA device plugin runs all the same.
    h100 = matrix.load().gpus["H100-80GB"]
    assert sharing.node_resources(_h100_pool("all-balanced"), h100, 8, dra=True, efa_devices=32) == {
        "vpc.amazonaws.com/efa": 32
    }
