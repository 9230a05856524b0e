"""The boot unit a node image with the fabric manager runs: it asks IMDSv2 for the instance type and,
on a type the stack declared as having NVSwitch, waits (bounded) for the hardware NVIDIA's driver
container checks (gpu-driver-container rhel9/nvidia-driver at 06a208ca: _assert_nvswitch_system,
_assert_nvlink5_system, and _ensure_nvlink5_prerequisites, which waits for mlx5_core because it loads
asynchronously), then starts the fabric manager, loading ib_umad first on fourth-generation NVSwitch."""

from __future__ import annotations

import shlex

from components.aws.image_component import NVSWITCH_SCRIPT
from tests.components.aws.conftest import COMPONENT_DOC, record_family
from tests.components.aws.node_shell import build_step, module_answers, run_bash

# A short bound for the tests: sleep is a stub, so this is five polls of five seconds.
WAIT = {"WAIT_SECONDS": "25"}
B200, H100 = "p6-b200.48xlarge", "p5.48xlarge"


def _boot(tmp_path, make_tree=None, **env):
    root = tmp_path / "root"
    root.mkdir(exist_ok=True)
    if make_tree:
        make_tree(root)
    return run_bash(NVSWITCH_SCRIPT.read_text(), tmp_path, {**WAIT, **env})


def hgx_h100(root):
    devices = root / "proc/driver/nvidia-nvswitch/devices"
    devices.mkdir(parents=True)
    (devices / "0000:05:00.0").write_text("")


def nvlink_management_nic(root):
    """What mlx5_core brings up on an HGX B200: the NVLink management NIC, its VPD holding SW_MNG."""
    nic = root / "sys/class/infiniband/mlx5_0/device"
    nic.mkdir(parents=True, exist_ok=True)
    (nic / "vpd").write_bytes(b"\x82\x10NVIDIA NVLINK\x90SW_MNG\x00")
    (root / "proc").mkdir(exist_ok=True)
    (root / "proc/modules").write_text("mlx5_core 2719744 1 mlx5_ib, Live 0x0000000000000000\n")


def test_the_baked_environment_declares_the_stacks_nvswitch_types(record_variant, tmp_path):
    rec = record_family(record_variant, "p6-b200")
    bake = run_bash(
        build_step(rec.one(*COMPONENT_DOC).inputs["data"]), tmp_path, module_answers("580.105.08", "Dual MIT/GPL")
    )
    assert bake.returncode == 0, bake.output
    env = dict(
        line.split("=", 1) for line in (tmp_path / "root/etc/gpu-platform/nvswitch.env").read_text().splitlines()
    )
    assert {k: shlex.split(v)[0] for k, v in env.items()} == {
        "NVSWITCH_INSTANCE_TYPES": B200,
        "NVLINK5_INSTANCE_TYPES": B200,
    }


def test_a_b200_whose_nic_comes_up_late_still_starts_the_fabric_manager(tmp_path):
    # mlx5_core loads after the unit starts: the management NIC appears on the third poll.
    late = (
        "mkdir -p $ROOT/proc && printf 'mlx5_core 2719744 1 mlx5_ib, Live 0x0\\n' >$ROOT/proc/modules && "
        "mkdir -p $ROOT/sys/class/infiniband/mlx5_0/device && printf 'SW_MNG' >$ROOT/sys/class/infiniband/mlx5_0/device/vpd"
    )
    run = _boot(
        tmp_path,
        STUB_INSTANCE_TYPE=B200,
        NVSWITCH_INSTANCE_TYPES=B200,
        NVLINK5_INSTANCE_TYPES=B200,
        STUB_ON_SLEEP=late,
        STUB_SLEEP_AT="3",
    )
    assert run.returncode == 0, run.output
    assert len(run.of("sleep")) == 3
    assert [c[0] for c in run.calls if c[0] in ("modprobe", "systemctl")] == ["modprobe", "systemctl"]
    assert run.of("modprobe") == [["ib_umad"]] and run.systemctl("start") == ["nvidia-fabricmanager.service"]


def test_a_b200_whose_nic_never_comes_up_fails_the_unit_after_the_bound(tmp_path):
    run = _boot(tmp_path, STUB_INSTANCE_TYPE=B200, NVSWITCH_INSTANCE_TYPES=B200, NVLINK5_INSTANCE_TYPES=B200)
    assert run.returncode == 1
    assert len(run.of("sleep")) == 5  # 25 s in polls of 5 s, then it gives up
    assert "ERROR: p6-b200.48xlarge should have an NVLink management NIC" in run.output
    assert not run.of("modprobe") and not run.systemctl("start")


def test_an_h100_nvswitch_type_whose_switches_never_show_fails_the_unit_after_the_bound(tmp_path):
    # No /proc/driver/nvidia-nvswitch devices on a type the stack declares with NVSwitch: the unit fails
    # (the node must not look healthy without a fabric manager; CUDA would see no peer GPUs).
    run = _boot(
        tmp_path,
        lambda root: (root / "proc/driver").mkdir(parents=True),
        STUB_INSTANCE_TYPE=H100,
        NVSWITCH_INSTANCE_TYPES=H100,
        NVLINK5_INSTANCE_TYPES=B200,
    )
    assert run.returncode == 1
    assert len(run.of("sleep")) == 5  # 25 s in polls of 5 s, then it gives up
    assert f"ERROR: {H100} should have NVSwitch devices under /proc/driver/nvidia-nvswitch" in run.output
    assert not run.systemctl("start")


def test_an_nvswitch_type_starts_the_fabric_manager_once_its_switches_show(tmp_path):
    run = _boot(
        tmp_path,
        hgx_h100,
        STUB_INSTANCE_TYPE=H100,
        NVSWITCH_INSTANCE_TYPES=f"{H100} {B200}",
        NVLINK5_INSTANCE_TYPES=B200,
    )
    assert run.returncode == 0, run.output
    assert run.systemctl("start") == ["nvidia-fabricmanager.service"] and not run.of("modprobe") and not run.of("sleep")


def test_the_imds_request_is_imdsv2(tmp_path):
    run = _boot(tmp_path, hgx_h100, STUB_INSTANCE_TYPE=H100, NVSWITCH_INSTANCE_TYPES=H100)
    token, query = run.of("curl")
    assert "PUT" in token and "X-aws-ec2-metadata-token-ttl-seconds: 60" in token
    assert token[-1] == "http://169.254.169.254/latest/api/token"
    assert "X-aws-ec2-metadata-token: AQAEAFakeImdsToken==" in query
    assert query[-1] == "http://169.254.169.254/latest/meta-data/instance-type"


def test_a_single_h100_instance_waits_for_nothing_and_starts_nothing(tmp_path):
    # p5.4xlarge is one H100: no NVSwitch (matrix.yaml), so the stack never declares it.
    run = _boot(
        tmp_path,
        lambda root: (root / "proc/driver").mkdir(parents=True),
        STUB_INSTANCE_TYPE="p5.4xlarge",
        NVSWITCH_INSTANCE_TYPES=H100,
    )
    assert run.returncode == 0, run.output
    assert not run.of("systemctl") and not run.of("modprobe") and not run.of("sleep")


def test_without_imds_the_hardware_present_decides(tmp_path):
    run = _boot(tmp_path, nvlink_management_nic, NVSWITCH_INSTANCE_TYPES=B200, NVLINK5_INSTANCE_TYPES=B200)
    assert run.returncode == 0, run.output
    assert "IMDS did not answer" in run.output
    assert run.of("modprobe") == [["ib_umad"]] and run.systemctl("start") == ["nvidia-fabricmanager.service"]


def test_an_infiniband_nic_that_is_not_an_nvlink_manager_is_no_nvswitch(tmp_path):
    def efa_only(root):
        nic = root / "sys/class/infiniband/rdmap0s6/device"
        nic.mkdir(parents=True)
        (nic / "vpd").write_bytes(b"\x82\x08Elastic Fabric Adapter")

    run = _boot(tmp_path, efa_only, STUB_INSTANCE_TYPE="g6e.12xlarge", NVSWITCH_INSTANCE_TYPES=H100)
    assert run.returncode == 0 and not run.of("systemctl")
