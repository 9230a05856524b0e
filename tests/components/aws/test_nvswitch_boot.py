"""The boot unit a node image with the fabric manager runs: it starts the fabric manager only on
hardware with NVSwitch, and loads ib_umad first on fourth-generation NVSwitch, decided from the node's
/proc and /sys as NVIDIA's driver container decides (gpu-driver-container rhel9/nvidia-driver,
_assert_nvswitch_system, _assert_nvlink5_system)."""

from __future__ import annotations

from components.aws.node_image import NVSWITCH_SCRIPT
from tests.components.aws.node_shell import run_bash


def _boot(tmp_path, make_tree):
    root = tmp_path / "root"
    root.mkdir()
    make_tree(root)
    return run_bash(NVSWITCH_SCRIPT.read_text(), tmp_path)


def test_a_node_without_nvswitch_starts_nothing(tmp_path):
    run = _boot(tmp_path, lambda root: (root / "proc/driver").mkdir(parents=True))
    assert run.returncode == 0, run.output
    assert not run.of("systemctl") and not run.of("modprobe")


def test_an_nvswitch_node_starts_the_fabric_manager(tmp_path):
    def hgx_h100(root):
        devices = root / "proc/driver/nvidia-nvswitch/devices"
        devices.mkdir(parents=True)
        (devices / "0000:05:00.0").write_text("")

    run = _boot(tmp_path, hgx_h100)
    assert run.returncode == 0, run.output
    assert run.systemctl("start") == ["nvidia-fabricmanager.service"]
    assert not run.of("modprobe")


def test_an_nvlink5_node_loads_ib_umad_before_the_fabric_manager(tmp_path):
    def hgx_b200(root):
        nic = root / "sys/class/infiniband/mlx5_0/device"
        nic.mkdir(parents=True)
        (nic / "vpd").write_bytes(b"\x82\x10NVIDIA NVLINK\x90SW_MNG\x00")
        (root / "sys/class/infiniband/mlx5_1/device").mkdir(parents=True)  # a NIC without VPD

    run = _boot(tmp_path, hgx_b200)
    assert run.returncode == 0, run.output
    assert [c[0] for c in run.calls] == ["modprobe", "systemctl"]
    assert run.of("modprobe") == [["ib_umad"]]
    assert run.systemctl("start") == ["nvidia-fabricmanager.service"]


def test_an_infiniband_nic_that_is_not_an_nvlink_manager_is_no_nvswitch(tmp_path):
    def efa_only(root):
        nic = root / "sys/class/infiniband/rdmap0s6/device"
        nic.mkdir(parents=True)
        (nic / "vpd").write_bytes(b"\x82\x08Elastic Fabric Adapter")

    run = _boot(tmp_path, efa_only)
    assert run.returncode == 0 and not run.of("systemctl")
