"""What one node image must carry for the pools it serves, per instance type: the fabric manager only
where an instance type has NVSwitch (more than one GPU of an HGX model), GSP firmware off only for
the GPUs AWS turns it off for, one kernel module flavour per image the stack bakes or pins."""

from __future__ import annotations

import pytest

from components.aws.image_hardware import PoolHardware, image_hardware
from gpu_platform.catalog import matrix
from gpu_platform.config import ConfigError

GPUS = matrix.load().gpus


def _pool(index: int, instance_type: str, gpu: str, count: int) -> PoolHardware:
    return PoolHardware(index, instance_type, GPUS[gpu], count)


def test_one_h100_has_no_nvswitch_and_eight_do():
    # p5.4xlarge is one H100 and p5.48xlarge eight on an HGX baseboard (AWS's instance catalogue;
    # amazon-eks-ami v20260714 nodeadm/internal/kubelet/instance-info.jsonl line 916 lists p5.4xlarge).
    alone = image_hardware([_pool(0, "p5.4xlarge", "H100-80GB", 1)], "bake")
    assert not alone.fabric_manager and alone.nvswitch_instance_types == ()
    both = image_hardware([_pool(0, "p5.4xlarge", "H100-80GB", 1), _pool(1, "p5.48xlarge", "H100-80GB", 8)], "bake")
    assert both.fabric_manager and both.nvswitch_instance_types == ("p5.48xlarge",)
    assert both.nvlink5_instance_types == ()


def test_gsp_firmware_is_off_only_on_an_image_of_g5_gpus():
    # amazon-eks-ami v20260714 templates/al2023/runtime/gpu/nvidia-kmod-load.sh lines 87-93: g4dn, g5,
    # g5g only, and only with the proprietary modules.
    g5 = image_hardware([_pool(0, "g5.xlarge", "A10G", 1)], "bake")
    assert g5.gsp_firmware_off and g5.kernel_module == "proprietary"
    g6 = image_hardware([_pool(0, "g6.xlarge", "L4", 1)], "bake")
    assert not g6.gsp_firmware_off and g6.kernel_module == "open"


@pytest.mark.parametrize("source", ["bake", "ami"])
def test_one_image_cannot_turn_gsp_off_for_g5_and_keep_it_on_for_others(source):
    with pytest.raises(
        ConfigError, match=r"nodePools\[1\]\.instanceType: 'g6\.xlarge' \(L4\) would boot the image of nodePools\[0\]"
    ):
        image_hardware([_pool(0, "g5.xlarge", "A10G", 1), _pool(1, "g6.xlarge", "L4", 1)], source)


def test_awss_own_ami_decides_per_node_and_refuses_no_mix():
    # The eks-nvidia AMI picks module flavour and GSP per instance type at boot (nvidia-kmod-load.sh 63-98).
    found = image_hardware([_pool(0, "g5.xlarge", "A10G", 1), _pool(1, "p5.48xlarge", "H100-80GB", 8)], "eks-nvidia")
    assert found.kernel_module is None and not found.gsp_firmware_off
    assert found.nvswitch_instance_types == ("p5.48xlarge",)
