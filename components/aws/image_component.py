"""The Image Builder component of a baked node image: its build step (the install script with its
inputs, and the boot script it installs) and its test step, which proves on a fresh boot of the new
AMI that the driver is the one configured, and stops the bake when it is not.

Every check of the test step reads what the real tools print, never a guess of it: the test runs it
against stubs that print exactly that (tests/components/aws/test_image_component_test_phase.py)."""

from __future__ import annotations

import base64
import gzip
import re
from pathlib import Path

import yaml

from components.aws.image_hardware import ImageHardware

SCRIPTS = Path(__file__).with_name("scripts")
INSTALL_SCRIPT = SCRIPTS / "install-nvidia-driver.sh"
# Baked only with the fabric manager; runs at every boot and starts it on instance types with NVSwitch.
NVSWITCH_SCRIPT = SCRIPTS / "nvswitch-fabric.sh"
NVSWITCH_SCRIPT_PATH = "/usr/libexec/gpu-platform/nvswitch-fabric"
NVSWITCH_UNIT = "gpu-platform-nvswitch.service"
# The test phase boots the new AMI on a GPU and proves the driver: a cheap single-L4 instance. Ada
# accepts both kernel module flavours (matrix.yaml, L4 kernelModules), and its one GPU has no NVSwitch,
# so the fabric manager must stay off there.
BUILD_INSTANCE_TYPE = "g6.xlarge"
# What `modinfo -F license nvidia` says of each flavour (MODULE_LICENSE in NVIDIA/open-gpu-kernel-modules
# kernel-open/nvidia/nv.c for the open one; the proprietary one declares "NVIDIA").
MODULE_LICENSES = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}
# The kmod package of each flavour in NVIDIA's CUDA repository (amazon-eks-ami v20260714,
# templates/al2023/provisioners/install-nvidia-driver.sh lines 124 and 219).
KMOD_PACKAGES = {"open": "kmod-nvidia-open-dkms", "proprietary": "kmod-nvidia-latest-dkms"}
# NVIDIA's download domain per partition: China regions use nvidia.cn (amazon-eks-ami v20260714,
# templates/al2023/provisioners/install-nvidia-driver.sh lines 34-39).
NVIDIA_DOMAINS = {"aws-cn": "nvidia.cn"}
# The toolkit settings that keep GPUs from pods the device plugin gave none (install-nvidia-driver.sh,
# components/aws/user_data.py), as `nvidia-ctk config --in-place --set` writes them.
GPU_ACCESS_SETTINGS = (
    ("accept-nvidia-visible-devices-envvar-when-unprivileged", "false"),
    ("accept-nvidia-visible-devices-as-volume-mounts", "true"),
)


# Image Builder refuses a component document longer than this (InlineComponentData; botocore
# imagebuilder/2019-12-02/service-2.json, and terraform-provider-aws v5.42.0
# internal/service/imagebuilder/component.go line 54, StringLenBetween(1, 16000) on `data`): the
# scripts travel compressed.
MAX_DOCUMENT = 16000


def _payload(script: Path) -> str:
    """A script as gzip (no timestamp: the same bytes every run) in base64 lines, for a here-document."""
    packed = base64.b64encode(gzip.compress(script.read_bytes(), compresslevel=9, mtime=0)).decode()
    return "\n".join(packed[i : i + 200] for i in range(0, len(packed), 200))


def nvidia_domain(partition: str) -> str:
    return NVIDIA_DOMAINS.get(partition, "nvidia.com")


def build_commands(driver: str, toolkit: str | None, hardware: ImageHardware, partition: str) -> str:
    """The build phase's one bash step: the install script's inputs, the boot script it installs
    (with the fabric manager only), then the install script itself."""
    lines = [
        # A failed unpack must stop the step, not hand an empty script to bash.
        "set -euo pipefail",
        f"export DRIVER_VERSION={driver}",
        f"export KERNEL_MODULE={hardware.kernel_module}",
        f"export TOOLKIT_VERSION={toolkit or ''}",
        f"export FABRIC_MANAGER={str(hardware.fabric_manager).lower()}",
        f"export NVLINK_SUBNET_MANAGER={str(hardware.nvlink_subnet_manager).lower()}",
        f"export NVSWITCH_INSTANCE_TYPES='{' '.join(hardware.nvswitch_instance_types)}'",
        f"export NVLINK5_INSTANCE_TYPES='{' '.join(hardware.nvlink5_instance_types)}'",
        f"export GSP_FIRMWARE_OFF={str(hardware.gsp_firmware_off).lower()}",
        f"export NVIDIA_DOMAIN={nvidia_domain(partition)}",
    ]
    # The scripts travel gzipped in base64 (the document's length limit), unpacked byte for byte from
    # quoted here-documents. ROOT is unset on a build instance (tests set it to a scratch directory).
    lines += ["unpack() { base64 -d | gunzip; }", 'work="$(mktemp -d)"']
    if hardware.fabric_manager:
        lines += [
            f"unpack <<'GPU_PLATFORM_NVSWITCH' | install -D -m 0755 /dev/stdin \"${{ROOT:-}}{NVSWITCH_SCRIPT_PATH}\"",
            _payload(NVSWITCH_SCRIPT),
            "GPU_PLATFORM_NVSWITCH",
        ]
    lines += [
        f"unpack <<'GPU_PLATFORM_INSTALL' >\"${{work}}/{INSTALL_SCRIPT.name}\"",
        _payload(INSTALL_SCRIPT),
        "GPU_PLATFORM_INSTALL",
        f'bash "${{work}}/{INSTALL_SCRIPT.name}"',
    ]
    return "\n".join(lines) + "\n"


def _check(command: str, problem: str) -> str:
    return f"{command} || fail {_quoted(problem)}"


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def test_commands(driver: str, hardware: ImageHardware, toolkit_baked: bool) -> list[str]:
    """What the test phase checks on a fresh boot of the new image (BUILD_INSTANCE_TYPE), each with the
    message the bake fails with: the module loaded is the configured version and flavour, nvidia-smi
    and the kmod package say that version, persistence is on, kernel and driver are version-locked, the
    fabric manager stays off without NVSwitch, and the runtime is the one nodeadm registers, refusing
    GPUs to pods the device plugin gave none."""
    flavour = hardware.kernel_module
    kmod = KMOD_PACKAGES[flavour]
    version = re.escape(driver)
    commands = [
        "set -euo pipefail",
        'fail() { echo "test phase: $*" >&2; exit 1; }',
        _check("nvidia-smi", "nvidia-smi found no GPU: the driver did not load on the new image"),
        _check(
            f'test "$(cat "${{ROOT:-}}/sys/module/nvidia/version")" = "{driver}"',
            f"the loaded nvidia module is not {driver}",
        ),
        _check(
            f'test "$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | sort -u)" = "{driver}"',
            f"nvidia-smi does not report driver {driver}",
        ),
        _check(
            f'test "$(modinfo -F license nvidia)" = "{MODULE_LICENSES[flavour]}"',
            f"the nvidia module is not the {flavour} flavour",
        ),
        # rpm's %{VERSION} has no epoch: 580.105.08 for kmod-nvidia-open-dkms-3:580.105.08-1.amzn2023.
        _check(f'test "$(rpm -q --qf \'%{{VERSION}}\' {kmod})" = "{driver}"', f"{kmod} is not installed at {driver}"),
        _check("systemctl is-active nvidia-persistenced.service", "nvidia-persistenced is not running"),
        # dnf's versionlock lists NAME-EPOCH:VERSION-RELEASE.* (dnf-plugins-core plugins/versionlock.py at
        # tag 4.3.0, pkgtup2spec lines 317-319, printed by `list` at 195-197): the version after the colon.
        'locks="$(dnf versionlock list)"',
        _check(f"grep -Eq -- '^{kmod}-[0-9]+:{version}-' <<<\"${{locks}}\"", f"{kmod} {driver} is not version-locked"),
        'kernel="$(uname -r)"',
        'kernel="${kernel%.*}"',
        _check(
            'grep -Eq -- "^kernel[0-9.]*-[0-9]+:${kernel//./\\\\.}\\.\\*$" <<<"${locks}"',
            "the running kernel is not version-locked: a kernel update would leave the driver's modules behind",
        ),
    ]
    if hardware.fabric_manager:
        # Enabled everywhere, started only on instance types with NVSwitch: on the L4 test instance it stays off.
        commands += [
            _check(f"systemctl is-enabled {NVSWITCH_UNIT}", f"{NVSWITCH_UNIT} is not enabled"),
            _check(
                "! systemctl is-active --quiet nvidia-fabricmanager.service",
                "the fabric manager runs on an instance without NVSwitch",
            ),
        ]
    if hardware.efa:
        # The base image brings the EFA kernel driver (amazon-eks-ami builds every AL2023 variant with
        # enable_efa true: templates/al2023/variables-default.json:17, provisioners/install-efa.sh at
        # 81fec2e8); an EFA pool's image proves it is there for the kernel it boots.
        commands.append(
            _check(
                'modinfo -k "$(uname -r)" efa >/dev/null',
                "the EFA kernel driver (efa) is missing for the running kernel: the pools with EFA need it",
            )
        )
    if toolkit_baked:
        commands += [
            # What nodeadm looks for to make `nvidia` containerd's runtime (runtime_config_nvidia.go).
            _check(
                'test -x "${ROOT:-}/usr/bin/nvidia-container-runtime"',
                "the toolkit's nvidia-container-runtime is missing",
            ),
            *(
                _check(
                    f"grep -Eq '^{key} *= *{value}$' \"${{ROOT:-}}/etc/nvidia-container-runtime/config.toml\"",
                    f"the toolkit's config does not set {key} = {value}",
                )
                for key, value in GPU_ACCESS_SETTINGS
            ),
        ]
    return commands


class _Dumper(yaml.SafeDumper):
    """Multi-line commands as literal blocks: readable as the shell reads them, and a third shorter
    than the quoted style, which doubles every line break (the document's length limit)."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if "\n" in text else None),
)


def document(driver: str, toolkit: str | None, toolkit_baked: bool, hardware: ImageHardware, partition: str) -> str:
    """The Image Builder component: the install script with its inputs, and a test phase that proves
    the driver on a fresh boot of the new image."""
    doc = {
        "name": "nvidia-driver",
        "description": f"NVIDIA driver {driver} ({hardware.kernel_module} kernel modules) for EKS AL2023 GPU nodes",
        "schemaVersion": 1.0,
        "phases": [
            {
                "name": "build",
                "steps": [
                    {
                        "name": "InstallNvidiaDriver",
                        "action": "ExecuteBash",
                        "inputs": {
                            "commands": [
                                build_commands(driver, toolkit if toolkit_baked else None, hardware, partition)
                            ]
                        },
                    }
                ],
            },
            {
                "name": "test",
                "steps": [
                    {
                        "name": "DriverLoads",
                        "action": "ExecuteBash",
                        "inputs": {"commands": test_commands(driver, hardware, toolkit_baked)},
                    }
                ],
            },
        ],
    }
    text = yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=1000)
    if len(text) > MAX_DOCUMENT:
        raise ValueError(
            f"the node image's component document is {len(text)} characters; Image Builder takes at most {MAX_DOCUMENT}"
        )
    return text
