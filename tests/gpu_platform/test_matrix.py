"""The version matrix as data: complete, sourced, and consistent with AWS's instance catalogue."""

from __future__ import annotations

import pytest

from gpu_platform import matrix, versions
from preview.offline.aws_answers import instance_catalogue

MATRIX = matrix.load()


def test_every_release_from_v23_9_0_to_v26_7_0_is_present_in_order():
    names = list(MATRIX.releases)
    assert names[0] == "v23.9.0" and names[-1] == "v26.7.0"
    assert len(names) == 22
    assert names == sorted(names, key=versions.parse)


@pytest.mark.parametrize("release", MATRIX.releases.values(), ids=lambda r: r.name)
def test_every_release_row_is_complete_and_sourced(release):
    assert release.source.startswith("github.com/NVIDIA/gpu-operator/blob/")
    assert set(release.images) == set(matrix.OPERAND_IMAGES)
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
    for (_, lower), (_, higher) in zip(rows, rows[1:]):
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
    with pytest.raises(ValueError, match="releases.v25.10.1.images: dcgm-exporter missing, but the registry says it ships from v23.9.0"):
        matrix.load(path)


def test_an_operand_only_newer_releases_carry_is_absent_from_older_ones(tmp_path, monkeypatch):
    # What adding the DRA driver looks like: one registry row with its first release, images from it on.
    from gpu_platform import operands

    rows = operands.rows() + (operands.OperandRow("dra-driver", "dra_driver", "DraDriver", None, None, "gpu-nodes", "v26.3.0"),)
    monkeypatch.setattr(operands, "rows", lambda: rows)
    monkeypatch.setattr(matrix, "OPERAND_IMAGES", tuple(r.operand for r in rows))

    def add(raw):
        for name, row in raw["releases"].items():
            if versions.at_least(name, "v26.3.0"):
                row["images"]["dra-driver"] = "registry.k8s.io/dra-driver-nvidia-gpu:v25.8.0"
    loaded = matrix.load(_matrix_with(tmp_path, add))
    assert "dra-driver" in loaded.release("v26.3.0").images
    assert "dra-driver" not in loaded.release("v25.10.1").images

    def add_everywhere(raw):
        raw["releases"]["v25.10.1"]["images"]["dra-driver"] = "registry.k8s.io/dra-driver-nvidia-gpu:v25.8.0"
    with pytest.raises(ValueError, match="releases.v25.10.1.images: dra-driver given, but the registry says it ships from v26.3.0"):
        matrix.load(_matrix_with(tmp_path, lambda raw: (add(raw), add_everywhere(raw))))


def test_an_image_key_the_registry_does_not_know_is_refused(tmp_path):
    path = _matrix_with(tmp_path, lambda raw: raw["releases"]["v25.10.1"]["images"].update({"dcgm": "x:1"}))
    with pytest.raises(ValueError, match="releases.v25.10.1.images: dcgm not in the operand registry"):
        matrix.load(path)
