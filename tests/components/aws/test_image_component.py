"""The bake as a node runs it: the component's build step of each GPU family's image, executed with
the system's commands stubbed (tests/components/aws/node_shell.py). What it installs, enables and
locks is stated here per family, from the sources the script follows, never from the component."""

from __future__ import annotations

import pytest

from tests.components.aws.conftest import COMPONENT_DOC, FAMILIES, NVSWITCH_FAMILIES, record_family
from tests.components.aws.node_shell import KERNEL_6_12, build_step, exported, module_answers, run_bash

DRIVER = "580.105.08"  # the dev stack's driverVersion
# The families whose instance type here has NVSwitch: conftest.NVSWITCH_FAMILIES.
NVSWITCH = NVSWITCH_FAMILIES
# Fourth-generation NVSwitch, which needs the NVLink subnet manager: HGX B200.
NVLINK5 = {"p6-b200"}
# g5's A10G runs the proprietary modules with GSP off on AWS's own AMI (nvidia-kmod-load.sh 84-93).
PROPRIETARY = {"g5"}
GSP_OFF = {"g5"}
LICENSE = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}


def _bake(record_variant, family: str, tmp_path, **env):
    rec = record_family(record_variant, family)
    commands = build_step(rec.one(*COMPONENT_DOC).inputs["data"])
    flavour = "proprietary" if family in PROPRIETARY else "open"
    return run_bash(commands, tmp_path, {**module_answers(DRIVER, LICENSE[flavour]), **env})


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_gets_the_pinned_driver_of_its_flavour_from_nvidias_repository(record_variant, family, tmp_path):
    run = _bake(record_variant, family, tmp_path)
    assert run.returncode == 0, run.output
    kmod = "kmod-nvidia-latest-dkms" if family in PROPRIETARY else "kmod-nvidia-open-dkms"
    installed = run.dnf_installed()
    assert f"{kmod}-{DRIVER}" in installed
    assert f"nvidia-driver-cuda-{DRIVER}" in installed and f"nvidia-persistenced-{DRIVER}" in installed
    # Exactly one flavour, never the other.
    other = "kmod-nvidia-open-dkms" if family in PROPRIETARY else "kmod-nvidia-latest-dkms"
    assert not [p for p in installed if p.startswith(other)]
    # The branch's module stream of that flavour.
    stream = "580-dkms" if family in PROPRIETARY else "580-open"
    assert ["-y", "module", "enable", f"nvidia-driver:{stream}"] in run.of("dnf")
    assert "nvidia-persistenced.service" in run.systemctl("enable")
    gsp = run.root / "etc/modprobe.d/nvidia-gsp.conf"
    assert gsp.exists() is (family in GSP_OFF)
    # The dev stack bakes its release's toolkit (v25.10.1: v1.18.1).
    assert "nvidia-container-toolkit-1.18.1" in installed


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_fabric_manager_and_subnet_manager_only_where_the_family_has_nvswitch(record_variant, family, tmp_path):
    run = _bake(record_variant, family, tmp_path)
    assert run.returncode == 0, run.output
    installed = run.dnf_installed()
    assert (f"nvidia-fabricmanager-{DRIVER}" in installed) is (family in NVSWITCH)
    assert ("nvlsm" in installed) is (family in NVLINK5)
    # Never enabled by the bake: the boot unit starts it where the hardware has NVSwitch.
    assert "nvidia-fabricmanager.service" not in run.systemctl("enable")
    assert ("gpu-platform-nvswitch.service" in run.systemctl("enable")) is (family in NVSWITCH)
    boot_script = run.root / "usr/libexec/gpu-platform/nvswitch-fabric"
    assert boot_script.exists() is (family in NVSWITCH)
    if family in NVSWITCH:
        unit = (run.root / "etc/systemd/system/gpu-platform-nvswitch.service").read_text()
        assert "ExecStart=/usr/libexec/gpu-platform/nvswitch-fabric" in unit
        assert boot_script.stat().st_mode & 0o111
        # The boot decides by instance type: the stack's NVSwitch types reach it through the unit's
        # environment file, and the unit waits for IMDS (the network) to ask for its own type.
        assert "EnvironmentFile=/etc/gpu-platform/nvswitch.env" in unit and "network-online.target" in unit
        env = (run.root / "etc/gpu-platform/nvswitch.env").read_text()
        assert f'NVSWITCH_INSTANCE_TYPES="{FAMILIES[family]}"' in env
        assert f'NVLINK5_INSTANCE_TYPES="{FAMILIES[family] if family in NVLINK5 else ""}"' in env


@pytest.mark.parametrize("family", ["g6", "p5"])
def test_kernel_and_driver_are_locked_at_the_versions_baked(record_variant, family, tmp_path):
    run = _bake(record_variant, family, tmp_path)
    locked = run.locked()
    kernel = KERNEL_6_12.removesuffix(".x86_64")
    assert {
        f"kernel6.12-{kernel}",
        f"kernel6.12-devel-{kernel}",
        f"kmod-nvidia-open-dkms-{DRIVER}",
        f"nvidia-driver-cuda-{DRIVER}",
        f"nvidia-persistenced-{DRIVER}",
    } <= set(locked)
    assert (f"nvidia-fabricmanager-{DRIVER}" in locked) is (family in NVSWITCH)
    # The running kernel's own headers, not the newest the repository has.
    assert f"kernel6.12-devel-{kernel}" in run.dnf_installed()
    # Locked after everything was installed.
    dnf = run.of("dnf")
    assert dnf.index(["versionlock", "add", *locked]) > max(
        i for i, a in enumerate(dnf) if "install" in a and "clean" not in a
    )


@pytest.mark.parametrize(
    "kernel, package", [("6.1.176-221.360.amzn2023.x86_64", "kernel"), ("6.18.36-69.138.amzn2023.x86_64", "kernel6.18")]
)
def test_the_kernel_package_follows_the_running_kernel(record_variant, tmp_path, kernel, package):
    run = _bake(record_variant, "g6", tmp_path, STUB_KERNEL=kernel)
    assert f"{package}-devel-{kernel.removesuffix('.x86_64')}" in run.dnf_installed()


def test_packages_come_from_nvidias_repository_checked_against_the_pinned_key(record_variant, tmp_path):
    run = _bake(record_variant, "g6", tmp_path)
    assert run.of("curl")[0][:4] == ["-fsSL", "--retry", "5", "-o"]
    assert (
        run.of("curl")[0][-1] == "https://developer.download.nvidia.com/compute/cuda/repos/amzn2023/x86_64/D42D0685.pub"
    )
    repo = (run.root / "etc/yum.repos.d/nvidia-cuda.repo").read_text()
    assert "gpgcheck=1" in repo and "repo_gpgcheck=1" in repo
    # The kmods come in module streams that show dnf only the newest driver: a pinned older one needs
    # the filtering off (amazon-eks-ami v20260714 install-nvidia-driver.sh lines 120-124).
    assert "\nmodule_hotfixes=1\n" in repo
    assert "baseurl=https://developer.download.nvidia.com/compute/cuda/repos/amzn2023/x86_64" in repo
    assert "gpgkey=file:///etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA" in repo
    assert ["--import", f"{run.root}/etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA"] in run.of("rpm")
    # The key is imported before anything is installed.
    first_install = next(i for i, c in enumerate(run.calls) if c[0] == "dnf" and "install" in c)
    assert next(i for i, c in enumerate(run.calls) if c[0] == "rpm") < first_install


def test_a_key_with_another_fingerprint_stops_the_bake_before_any_install(record_variant, tmp_path):
    run = _bake(record_variant, "g6", tmp_path, STUB_FINGERPRINT="0000000000000000000000000000000000000000")
    assert run.returncode != 0
    assert not run.of("dnf") and not run.of("rpm")
    assert "refusing" in run.output


def test_a_module_dkms_built_at_another_version_stops_the_bake(record_variant, tmp_path):
    run = _bake(record_variant, "g6", tmp_path, STUB_MODULE_VERSION="580.95.05")
    assert run.returncode != 0 and "580.95.05" in run.output
    assert not run.locked()


def test_a_module_of_the_other_flavour_stops_the_bake(record_variant, tmp_path):
    run = _bake(record_variant, "g6", tmp_path, STUB_MODULE_LICENSE="NVIDIA")
    assert run.returncode != 0 and "not the open flavour" in run.output
    assert not run.locked()


def test_a_china_region_image_downloads_from_nvidia_cn(record_variant, tmp_path):
    def china(config):
        config["aws:region"] = "cn-northwest-1"
        config["gpu-platform:cluster"]["admins"] = ["arn:aws-cn:iam::123456789012:role/gpu-platform-deployer"]

    rec = record_variant("china", china)
    commands = build_step(rec.one(*COMPONENT_DOC).inputs["data"])
    assert exported(commands)["NVIDIA_DOMAIN"] == "nvidia.cn"
    run = run_bash(commands, tmp_path, module_answers(DRIVER, LICENSE["open"]))
    assert run.of("curl")[0][-1].startswith("https://developer.download.nvidia.cn/compute/cuda/repos/amzn2023/x86_64/")


def test_the_toolkit_is_baked_and_registered_only_as_nodeadm_registers_it(dev, tmp_path):
    run = run_bash(
        build_step(dev.one(*COMPONENT_DOC).inputs["data"]), tmp_path, module_answers(DRIVER, LICENSE["open"])
    )
    assert run.returncode == 0, run.output
    toolkit = "1.18.1"  # v25.10.1's container-toolkit image (matrix.yaml), the dev stack's release
    for package in (
        "nvidia-container-toolkit",
        "nvidia-container-toolkit-base",
        "libnvidia-container-tools",
        "libnvidia-container1",
    ):
        assert f"{package}-{toolkit}" in run.dnf_installed()
        assert f"{package}-{toolkit}" in run.locked()
    # nodeadm renders config.toml at every boot and imports nothing: no containerd file is written,
    # and no `nvidia-ctk runtime configure`; the runtime binary is what nodeadm looks for.
    assert not (run.root / "etc/containerd").exists()
    assert not [c for c in run.of("nvidia-ctk") if c[:1] == ["runtime"]]
    assert (run.root / "usr/bin/nvidia-container-runtime").exists()
    # Pods get GPUs from the device plugin only: NVIDIA_VISIBLE_DEVICES of unprivileged pods is refused.
    (config,) = [c for c in run.of("nvidia-ctk") if c[:1] == ["config"]]
    assert "accept-nvidia-visible-devices-envvar-when-unprivileged=false" in config
    assert "accept-nvidia-visible-devices-as-volume-mounts=true" in config
    assert "--in-place" in config


def test_an_image_for_the_toolkit_daemonset_bakes_nothing_of_the_runtime(record_variant, tmp_path):
    rec = record_variant("toolkit-daemonset", lambda cfg: cfg["gpu-platform:nodeImage"].update(toolkitBaked=False))
    run = run_bash(
        build_step(rec.one(*COMPONENT_DOC).inputs["data"]), tmp_path, module_answers(DRIVER, LICENSE["open"])
    )
    assert run.returncode == 0, run.output
    assert not [p for p in run.dnf_installed() if "container" in p] and not run.of("nvidia-ctk")
