"""The version matrix as data: complete, sourced, and consistent with AWS's instance catalogue."""

from __future__ import annotations

import itertools

import pytest

from gpu_platform.catalog import matrix, operands, versions
from preview.offline.aws_answers import instance_catalogue

MATRIX = matrix.load()


def test_the_releases_start_at_v23_9_0_each_once_oldest_first():
    # No count kept by hand: a new release is a row at the end, and only the oldest is a fixed choice.
    names = list(MATRIX.releases)
    assert names[0] == "v23.9.0"
    assert names == sorted(set(names), key=versions.parse)


@pytest.mark.parametrize("release", MATRIX.releases.values(), ids=lambda r: r.name)
def test_every_release_row_is_complete_and_sourced(release):
    assert release.source.startswith("github.com/NVIDIA/gpu-operator/blob/")
    # The image of every operand the registry says the release carries (each from its `since`), no other.
    assert set(release.images) == {r.image for r in operands.rows() if versions.at_least(release.name, r.since)}
    assert all(":" in ref for ref in release.images.values())
    assert versions.at_least(release.kubernetes_max, release.kubernetes_min)
    assert versions.major(release.driver_default) in release.driver_branches


def test_overrides_swap_only_the_tag():
    release = MATRIX.release("v25.10.1")
    images = release.images_with({"device-plugin": "v0.18.2"})
    assert images["device-plugin"] == "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    assert images["gpu-feature-discovery"] == release.image("gpu-feature-discovery")


def test_cuda_minimums_grow_with_the_toolkit():
    rows = sorted(MATRIX.cuda.toolkits.items(), key=lambda kv: versions.parse(kv[0]))
    for (_, lower), (_, higher) in itertools.pairwise(rows):
        assert versions.at_least(higher, lower)
    # Minor-version compatibility: each major's floor is at most the driver of its first toolkit.
    assert versions.at_least(MATRIX.cuda.minimum_driver("12.0"), MATRIX.cuda.major_floor("12.8"))


@pytest.mark.parametrize("gpu", MATRIX.gpus.values(), ids=lambda g: g.key)
def test_every_gpu_family_is_that_gpu_in_awss_catalogue(gpu):
    catalogue = instance_catalogue()
    for family in gpu.families:
        types = [t for t in catalogue if t.split(".")[0] == family and catalogue[t].get("GpuInfo")]
        assert types, family
        for name in types:
            found = catalogue[name]["GpuInfo"]["Gpus"][0]
            assert MATRIX.gpu_for_aws(found["Name"], found["MemoryInfo"]["SizeInMiB"]) is gpu, name


def test_mig_configurations_are_named_as_nvidias_default_config():
    h100 = MATRIX.gpus["H100-80GB"].mig.configs()
    assert h100["all-1g.10gb"] == {"1g.10gb": 7}
    assert h100["all-1g.10gb.me"] == {"1g.10gb+me": 1}
    assert h100["all-balanced"] == {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}
    assert "all-1g.10gb" not in MATRIX.gpus["H200-141GB"].mig.configs()
    assert MATRIX.gpus["L40S"].mig is None


def test_every_gpu_names_the_kernel_module_flavours_it_runs():
    for gpu in MATRIX.gpus.values():
        assert gpu.kernel_modules and set(gpu.kernel_modules) <= {"open", "proprietary"}, gpu.key
    # Blackwell runs only the open modules (NVIDIA, 2024-07-17); AWS runs g5's A10G on the proprietary
    # ones with GSP off (amazon-eks-ami v20260714 nvidia-kmod-load.sh 84-93).
    assert MATRIX.gpus["B200"].kernel_modules == ("open",)
    assert MATRIX.gpus["A10G"].kernel_modules == ("proprietary",)
    assert [g.key for g in MATRIX.gpus.values() if g.nvlink_subnet_manager] == ["B200"]


def _matrix_with(tmp_path, change):
    import yaml

    raw = yaml.safe_load(matrix.MATRIX_FILE.read_text())
    change(raw)
    path = tmp_path / f"matrix-{len(list(tmp_path.iterdir()))}.yaml"  # load() caches by path
    path.write_text(yaml.safe_dump(raw))
    return path


def test_a_release_without_an_operand_the_registry_says_it_carries_is_refused(tmp_path):
    path = _matrix_with(tmp_path, lambda raw: raw["releases"]["v25.10.1"]["images"].pop("dcgm-exporter"))
    with pytest.raises(
        ValueError, match="releases.v25.10.1.images: dcgm-exporter missing, but the registry says it ships from v23.9.0"
    ):
        matrix.load(path)


def test_the_dra_driver_is_carried_by_v26_7_0_and_by_no_older_release():
    # The GPU Operator ships the DRA driver from v26.7.0 (manifests/state-dra-driver/, values.yaml
    # draDriver lines 581-584); v25.10.x and v26.3.x have no DRA code (a README roadmap bullet at v26.3.3).
    loaded = matrix.load()
    # From v26.7.0 on, every release; a later release carrying it leaves this test alone.
    names = sorted(loaded.releases, key=versions.parse)
    carrying = [name for name in names if "dra-driver" in loaded.releases[name].images]
    assert carrying == names[names.index("v26.7.0") :]
    assert loaded.release("v26.7.0").images["dra-driver"] == "nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0"


def test_the_dra_validator_pins_no_image_of_its_own_and_is_carried_from_v26_7_0():
    # It runs the validator's image (gpu_platform/catalog/operands.yaml `image`), so no release pins a
    # dra-validator image, and v26.7.0 carries it while older releases with the same image do not.
    loaded = matrix.load()
    assert not [name for name, release in loaded.releases.items() if "dra-validator" in release.images]
    assert "dra-validator" in loaded.release("v26.7.0").carried_operands
    assert "dra-validator" not in loaded.release("v26.3.3").carried_operands
    assert "validator" in loaded.release("v26.3.3").carried_operands


def test_a_release_pinning_an_image_for_an_operand_that_borrows_one_is_refused(tmp_path):
    def add(raw):
        raw["releases"]["v26.7.0"]["images"]["dra-validator"] = "nvcr.io/nvidia/gpu-operator:v26.7.0"

    with pytest.raises(ValueError, match="releases.v26.7.0.images: dra-validator not in the operand registry"):
        matrix.load(_matrix_with(tmp_path, add))


def test_an_operand_image_in_a_release_before_its_first_is_refused(tmp_path):
    def add(raw):
        raw["releases"]["v26.3.3"]["images"]["dra-driver"] = (
            "registry.k8s.io/dra-driver-nvidia/dra-driver-nvidia-gpu:v0.4.1"
        )

    with pytest.raises(
        ValueError, match="releases.v26.3.3.images: dra-driver given, but the registry says it ships from v26.7.0"
    ):
        matrix.load(_matrix_with(tmp_path, add))

    def drop(raw):
        del raw["releases"]["v26.7.0"]["images"]["dra-driver"]

    with pytest.raises(
        ValueError, match="releases.v26.7.0.images: dra-driver missing, but the registry says it ships from v26.7.0"
    ):
        matrix.load(_matrix_with(tmp_path, drop))


def test_an_image_key_the_registry_does_not_know_is_refused(tmp_path):
    path = _matrix_with(tmp_path, lambda raw: raw["releases"]["v25.10.1"]["images"].update({"dcgm": "x:1"}))
    with pytest.raises(ValueError, match="releases.v25.10.1.images: dcgm not in the operand registry"):
        matrix.load(path)


# -- image digests -----------------------------------------------------------------------------------
# Made-up, well-formed digests: the shipped matrix pins none (none could be looked up here).
DIGEST_A = "sha256:" + "a" * 64
DIGEST_B = "sha256:" + "b" * 64


def _image_set(tmp_path, release: str, operand: str, ref: str):
    return _matrix_with(tmp_path, lambda raw: raw["releases"][release]["images"].__setitem__(operand, ref))


def test_a_release_image_pinned_by_digest_keeps_it_until_an_override_changes_the_tag(tmp_path):
    pinned = f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@{DIGEST_A}"
    release = matrix.load(_image_set(tmp_path, "v25.10.1", "device-plugin", pinned)).release("v25.10.1")
    assert release.images_with({})["device-plugin"] == pinned
    # The release's digest is the release tag's: another tag never inherits it.
    assert (
        release.images_with({"device-plugin": "v0.18.2"})["device-plugin"] == "nvcr.io/nvidia/k8s-device-plugin:v0.18.2"
    )
    assert (
        release.images_with({"device-plugin": f"v0.18.2@{DIGEST_B}"})["device-plugin"]
        == f"nvcr.io/nvidia/k8s-device-plugin:v0.18.2@{DIGEST_B}"
    )


def test_the_toolkit_version_is_read_from_the_tag_of_a_digest_pinned_image(tmp_path):
    pinned = f"nvcr.io/nvidia/k8s/container-toolkit:v1.18.0@{DIGEST_A}"
    release = matrix.load(_image_set(tmp_path, "v25.10.1", "container-toolkit", pinned)).release("v25.10.1")
    assert release.toolkit_version == "1.18.0"


@pytest.mark.parametrize(
    "ref, says",
    [
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{'a' * 63}", "is malformed"),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:{'A' * 64}", "is malformed"),
        (f"nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha512:{'a' * 128}", "is not a sha256 digest"),
        (f"nvcr.io/nvidia/k8s-device-plugin@{DIGEST_A}", "is not repository:tag"),
    ],
)
def test_a_malformed_image_in_the_matrix_is_an_error_naming_the_file_and_key(tmp_path, ref, says):
    with pytest.raises(
        ValueError, match=r"^matrix[-\d]*\.yaml: releases\.v25\.10\.1\.images\.device-plugin: .*" + says
    ):
        matrix.load(_image_set(tmp_path, "v25.10.1", "device-plugin", ref))


def test_the_preview_of_a_stack_refuses_a_malformed_matrix_digest_with_exit_2(tmp_path, monkeypatch, capsys):
    import re

    from preview.__main__ import main

    bad = _image_set(tmp_path, "v25.10.1", "device-plugin", "nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:abc")
    real_load = matrix.load
    monkeypatch.setattr(matrix, "load", lambda path=bad: real_load(path))
    assert main(["--stack", "dev"]) == 2
    err = capsys.readouterr().err
    assert re.search(
        r"matrix[-\d]*\.yaml: releases\.v25\.10\.1\.images\.device-plugin: digest 'sha256:abc' is malformed", err
    )
    assert "Traceback" not in err
