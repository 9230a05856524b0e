"""GPU-model policies: minimum driver per GPU, MIG configurations per GPU (matrix rows)."""

from __future__ import annotations

import pytest

from policy.gpu import driver_supports_gpu, mig_config_fits_gpu, multi_node_pools_use_efa
from tests.policy.resources import namespace, node_group, node_image
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("driver-supports-gpu", "resource", "mandatory"),
    ("mig-config-fits-gpu", "resource", "mandatory"),
    ("multi-node-pools-use-efa", "resource", "advisory"),
]


@pytest.mark.parametrize("gpu, driver", [("B200", "570.133.20"), ("H200-141GB", "550.54.14"), ("L4", "535.309.01")])
def test_driver_at_the_gpu_minimum_passes(gpu, driver):
    assert violations(driver_supports_gpu, [node_group(pool="p", gpu_model=gpu, driver=driver)]) == []


@pytest.mark.parametrize(
    "gpu, driver, minimum",
    [
        ("B200", "570.26", "570.133.20"),  # numerically older although "570.26" > "570.133.20" as strings
        ("B200", "550.163.01", "570.133.20"),
        ("H200-141GB", "535.309.01", "550.54.14"),
    ],
)
def test_driver_below_the_gpu_minimum_fails_naming_both(gpu, driver, minimum):
    found = violations(driver_supports_gpu, [namespace("v25.10.1"), node_group(pool="p", gpu_model=gpu, driver=driver)])
    assert len(found) == 1
    message, urn = found[0]
    assert gpu in message and minimum in message and driver in message and urn == node_group(pool="p").urn


@pytest.mark.parametrize(
    "gpu, config", [("H100-80GB", "all-balanced"), ("H200-141GB", "all-1g.18gb"), ("A100-40GB", "all-1g.5gb.me")]
)
def test_mig_configuration_of_the_pools_gpu_passes(gpu, config):
    assert violations(mig_config_fits_gpu, [node_group(pool="m", gpu_model=gpu, mig_config=config)]) == []


def test_pool_without_mig_passes_on_any_gpu():
    assert (
        violations(mig_config_fits_gpu, [node_group(gpu_model="L4"), node_group(pool="h", gpu_model="H100-80GB")]) == []
    )


@pytest.mark.parametrize(
    "gpu, config", [("H200-141GB", "all-1g.10gb"), ("B200", "all-1g.18gb"), ("A100-40GB", "all-7g.80gb")]
)
def test_mig_configuration_of_another_gpu_fails_naming_both(gpu, config):
    found = violations(mig_config_fits_gpu, [node_group(pool="m", gpu_model=gpu, mig_config=config)])
    assert len(found) == 1
    message, _ = found[0]
    assert config in message and gpu in message and "all-balanced" in message


def test_a_mig_configuration_that_carves_nothing_fails():
    # all-enabled is in NVIDIA's default set (MIG on, no instance); the device plugin then offers no
    # device on the node (k8s-device-plugin v0.18.1 internal/rm/device_map.go:120, :171).
    found = violations(mig_config_fits_gpu, [node_group(pool="m", gpu_model="H100-80GB", mig_config="all-enabled")])
    assert len(found) == 1
    assert "carves no instance" in found[0][0] and "all-disabled" in found[0][0] and "all-enabled," not in found[0][0]


@pytest.mark.parametrize("gpu", ["L40S", "A10G"])
def test_mig_on_a_gpu_without_mig_fails(gpu):
    found = violations(mig_config_fits_gpu, [node_group(pool="m", gpu_model=gpu, mig_config="all-balanced")])
    assert len(found) == 1 and "not MIG-capable" in found[0][0] and gpu in found[0][0]
    # A pool that names no instance type is judged by its declared model, and the message says no
    # instance type (not "instance type (declared)").
    message, urn = found[0]
    assert message.startswith(f"GPU pool 'm' ({urn}) asks for MIG configuration 'all-balanced'"), message


def test_the_gpu_comes_from_the_instance_type_not_from_the_declared_model():
    # Declared L4 (which 550 serves), launching B200s (which need 570 or later).
    group = node_group(gpu_model="L4", driver="550.163.01")
    group.props["instanceTypes"] = ["p6-b200.48xlarge"]
    found = violations(driver_supports_gpu, [group])
    assert len(found) == 1 and "B200" in found[0][0] and "p6-b200.48xlarge" in found[0][0]


def test_the_node_image_is_checked_for_every_gpu_it_is_built_for_before_the_bake():
    # B200 needs 570 or later (matrix.yaml); L4 is served by 550.
    found = violations(driver_supports_gpu, [node_image(driver="550.163.01", gpu_models="B200 L4")])
    assert len(found) == 1 and "B200" in found[0][0] and "550.163.01" in found[0][0] and found[0][1] == node_image().urn


def _pool(instance_type: str, max_size: int, efa_interfaces: str | None, gpus: str = "8"):
    group = node_group(pool="h100", gpu_model="H100-80GB")
    group.props.update(
        instanceTypes=[instance_type], scalingConfig={"minSize": 0, "desiredSize": 1, "maxSize": max_size}
    )
    group.props["tags"]["gpu-platform.io/gpu-count"] = gpus
    if efa_interfaces is not None:
        group.props["tags"]["gpu-platform.io/efa-interfaces"] = efa_interfaces
    return group


def test_a_multi_node_p5_pool_without_efa_gets_an_advisory_naming_the_fix():
    found = violations(multi_node_pools_use_efa, [_pool("p5.48xlarge", 8, "0")])
    assert len(found) == 1
    message, urn = found[0]
    assert "runs p5.48xlarge on up to 8 nodes without EFA" in message and "TCP" in message and "efa: false" in message
    # The pack sees no config: it names the pool by the name the stack gives it, which the user finds in nodePools.
    assert "the gpu-platform:nodePools entry named 'h100'" in message
    assert urn == _pool("p5.48xlarge", 8, "0").urn


@pytest.mark.parametrize(
    "instance_type, max_size, efa",
    [
        ("p5.48xlarge", 8, "32"),  # has EFA
        ("p5.48xlarge", 1, "0"),  # one node: NCCL stays inside it
        ("g6e.12xlarge", 10, "0"),  # not a multi-node training family
        ("p4d.24xlarge", 4, "4"),
    ],
)
def test_pools_with_efa_single_node_or_of_other_families_pass(instance_type, max_size, efa):
    assert violations(multi_node_pools_use_efa, [_pool(instance_type, max_size, efa)]) == []


def test_a_one_gpu_size_of_the_family_is_not_a_multi_node_training_node():
    assert violations(multi_node_pools_use_efa, [_pool("p5.4xlarge", 8, "0", gpus="1")]) == []


def test_every_multi_node_family_without_efa_is_reported():
    for instance_type in (
        "p4d.24xlarge",
        "p4de.24xlarge",
        "p5.48xlarge",
        "p5e.48xlarge",
        "p5en.48xlarge",
        "p6-b200.48xlarge",
        "p6-b300.48xlarge",
    ):
        assert len(violations(multi_node_pools_use_efa, [_pool(instance_type, 2, "0")])) == 1, instance_type
