"""The node image's test phase, run as Image Builder runs it on a fresh boot of the new AMI, against
stubs that print what dnf, rpm and nvidia-smi really print (tests/components/aws/node_shell.py): a
good image passes every check, and each way an image can be wrong stops the bake with a message that
says which. And the bake's own stops, for what cannot be verified before a bake."""

from __future__ import annotations

import pytest

from tests.components.aws.conftest import COMPONENT_DOC, record_family
from tests.components.aws.node_shell import build_step, module_answers, phase_commands, run_bash

DRIVER = "580.105.08"  # the dev stack's driverVersion
LICENSE = {"open": "Dual MIT/GPL", "proprietary": "NVIDIA"}
FLAVOUR = {"g5": "proprietary", "g6": "open", "p5": "open", "p6-b200": "open"}


def _document(record_variant, family: str) -> str:
    return record_family(record_variant, family).one(*COMPONENT_DOC).inputs["data"]


def _booted(record_variant, family: str, tmp_path, **env):
    """Bake the family's image with the stubs, then run its test phase on the result (the same root
    and the same versionlock state), as the test instance boots it."""
    document = _document(record_variant, family)
    answers = {**module_answers(DRIVER, LICENSE[FLAVOUR[family]])}
    bake = run_bash(build_step(document), tmp_path, answers)
    assert bake.returncode == 0, bake.output
    module = tmp_path / "root/sys/module/nvidia"
    module.mkdir(parents=True, exist_ok=True)
    (module / "version").write_text(DRIVER + "\n")
    return run_bash(phase_commands(document, "test"), tmp_path, {**answers, **env})


@pytest.mark.parametrize("family", sorted(FLAVOUR))
def test_a_good_image_passes_every_check_of_its_test_phase(record_variant, family, tmp_path):
    run = _booted(record_variant, family, tmp_path)
    assert run.returncode == 0, run.output
    # The locks were read as dnf lists them: NAME-EPOCH:VERSION-RELEASE.*, epoch 3 for NVIDIA's kmod.
    assert ["versionlock", "list"] in run.of("dnf")


def test_the_lock_check_reads_the_line_dnf_versionlock_writes(record_variant, tmp_path):
    # Exactly the lock of the review: kmod-nvidia-open-dkms at epoch 3 (dnf-plugins-core pkgtup2spec).
    run = _booted(record_variant, "g6", tmp_path)
    locks = (tmp_path / "state/versionlock.list").read_text()
    assert f"kmod-nvidia-open-dkms-3:{DRIVER}-1.amzn2023.*" in locks.splitlines()
    assert "kernel6.12-0:6.12.94-123.180.amzn2023.*" in locks.splitlines()
    assert run.returncode == 0, run.output


def test_a_driver_locked_at_another_version_fails_the_test_phase(record_variant, tmp_path):
    document = _document(record_variant, "g6")
    run = _booted(record_variant, "g6", tmp_path)
    assert run.returncode == 0
    locks = tmp_path / "state/versionlock.list"
    locks.write_text(locks.read_text().replace(f":{DRIVER}-", ":580.95.05-"))
    again = run_bash(phase_commands(document, "test"), tmp_path, module_answers(DRIVER, LICENSE["open"]))
    assert again.returncode != 0
    assert f"test phase: kmod-nvidia-open-dkms {DRIVER} is not version-locked" in again.output


def test_an_unlocked_kernel_fails_the_test_phase(record_variant, tmp_path):
    document = _document(record_variant, "g6")
    _booted(record_variant, "g6", tmp_path)
    locks = tmp_path / "state/versionlock.list"
    locks.write_text(
        "".join(line + "\n" for line in locks.read_text().splitlines() if not line.startswith("kernel6.12-0:"))
    )
    run = run_bash(phase_commands(document, "test"), tmp_path, module_answers(DRIVER, LICENSE["open"]))
    assert run.returncode != 0 and "the running kernel is not version-locked" in run.output


@pytest.mark.parametrize(
    "env, message",
    [
        ({"STUB_MODULE_VERSION": "580.95.05"}, f"nvidia-smi does not report driver {DRIVER}"),
        ({"STUB_MODULE_LICENSE": "NVIDIA"}, "the nvidia module is not the open flavour"),
        ({"STUB_RPM_VERSION": "580.95.05"}, f"kmod-nvidia-open-dkms is not installed at {DRIVER}"),
        ({"STUB_ACTIVE": ""}, "nvidia-persistenced is not running"),
    ],
)
def test_each_wrong_image_stops_the_bake_with_what_is_wrong(record_variant, tmp_path, env, message):
    run = _booted(record_variant, "g6", tmp_path, **env)
    assert run.returncode != 0 and f"test phase: {message}" in run.output


def test_a_fabric_manager_running_on_the_l4_test_instance_fails_the_test_phase(record_variant, tmp_path):
    run = _booted(
        record_variant, "p5", tmp_path, STUB_ACTIVE="nvidia-persistenced.service nvidia-fabricmanager.service"
    )
    assert run.returncode != 0 and "the fabric manager runs on an instance without NVSwitch" in run.output


def test_a_toolkit_that_accepts_gpus_by_environment_fails_the_test_phase(record_variant, tmp_path):
    document = _document(record_variant, "g6")
    _booted(record_variant, "g6", tmp_path)
    config = tmp_path / "root/etc/nvidia-container-runtime/config.toml"
    config.write_text(config.read_text().replace("envvar-when-unprivileged = false", "envvar-when-unprivileged = true"))
    run = run_bash(phase_commands(document, "test"), tmp_path, module_answers(DRIVER, LICENSE["open"]))
    assert run.returncode != 0
    assert "does not set accept-nvidia-visible-devices-envvar-when-unprivileged = false" in run.output


# What a bake relies on and cannot check before it runs (docs/operations.md, "What is not verified offline"): if
# it turns out false, the bake stops there, saying which.
@pytest.mark.parametrize(
    "env, message",
    [
        (
            {"STUB_FAIL_MAKECACHE": "1"},
            "its metadata signature (repodata/repomd.xml.asc, required by repo_gpgcheck=1) does not verify",
        ),
        ({"STUB_FAIL_MODULE": "1"}, "NVIDIA's repository has no module stream nvidia-driver:580-open"),
        ({"STUB_MISSING": f"kmod-nvidia-open-dkms-{DRIVER}"}, f"dnf could not install kmod-nvidia-open-dkms-{DRIVER}"),
        ({"STUB_UNLOCKABLE": "dkms"}, "dnf versionlock holds no lock for dkms"),
    ],
)
def test_the_bake_stops_with_a_clear_message_when_an_unverified_fact_is_false(record_variant, tmp_path, env, message):
    document = _document(record_variant, "g6")
    run = run_bash(build_step(document), tmp_path, {**module_answers(DRIVER, LICENSE["open"]), **env})
    assert run.returncode != 0
    assert "[install-nvidia-driver] ERROR: " in run.output and message in run.output, run.output


def test_the_proprietary_stream_is_named_when_it_is_missing(record_variant, tmp_path):
    document = _document(record_variant, "g5")
    run = run_bash(
        build_step(document), tmp_path, {**module_answers(DRIVER, LICENSE["proprietary"]), "STUB_FAIL_MODULE": "1"}
    )
    assert run.returncode != 0 and "no module stream nvidia-driver:580-dkms" in run.output


def test_an_efa_pools_image_without_the_efa_driver_fails_the_test_phase(record_variant, tmp_path):
    # p5.48xlarge pools have EFA by default: their image must carry the efa module for its kernel.
    run = _booted(record_variant, "p5", tmp_path, STUB_MODULES="nvidia")
    assert run.returncode != 0 and "test phase: the EFA kernel driver (efa) is missing" in run.output
    assert ["-k", "6.12.94-123.180.amzn2023.x86_64", "efa"] in run.of("modinfo")


def test_the_efa_check_follows_the_base_release_not_the_pools(record_variant, tmp_path):
    # Turning a pool's EFA on or off must not rebuild the image: the check is there whenever the base
    # carries the driver (v20260505 and later), here the g6 image on v20260714 without any EFA pool.
    run = _booted(record_variant, "g6", tmp_path)
    assert ["-k", "6.12.94-123.180.amzn2023.x86_64", "efa"] in run.of("modinfo")
    assert run.returncode == 0, run.output
