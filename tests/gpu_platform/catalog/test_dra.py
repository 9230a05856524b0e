"""The DRA driver's table (gpu_platform/catalog/dra.yaml) as its readers see it, the expectations restated from
upstream (kubernetes-sigs/dra-driver-nvidia-gpu main 95932046 pkg/featuregates/featuregates.go:116-207;
NVIDIA's v26.7 docs; amazon-eks-ami nodeadm), and the FEATURE_GATES spelling the driver reads."""

from __future__ import annotations

import re

import pytest

from gpu_platform.catalog import dra


def test_the_v0_5_0_driver_has_upstreams_gates_with_their_maturity_and_default():
    gates = {name: (g.maturity, g.default) for name, g in dra.load()["v0.5.0"].gates.items()}
    assert gates == {
        "TimeSlicingSettings": ("alpha", False),
        "MPSSupport": ("alpha", False),
        "DynamicMIG": ("alpha", False),
        "PassthroughSupport": ("alpha", False),
        "NVMLDeviceHealthCheck": ("alpha", False),
        "DeviceMetadata": ("alpha", False),
        "FabricManagerPartitioning": ("alpha", False),
        "HostManagedIMEXDaemon": ("alpha", False),
        "DRAListTypeAttributes": ("alpha", False),
        "ConsumableShares": ("alpha", False),
        "IMEXDaemonsWithDNSNames": ("beta", True),
        "ComputeDomainCliques": ("beta", True),
        "CrashOnNVLinkFabricErrors": ("beta", True),
    }


def test_the_v0_5_0_driver_has_upstreams_start_up_rules_between_gates():
    # ValidateFeatureGates, featuregates.go:252-279 at 95932046, restated.
    rules = {(r.gate, r.kind, r.other) for r in dra.load()["v0.5.0"].rules}
    assert rules == {
        ("ComputeDomainCliques", "needs", "IMEXDaemonsWithDNSNames"),
        ("DeviceMetadata", "needs", "PassthroughSupport"),
        ("DynamicMIG", "excludes", "PassthroughSupport"),
        ("DynamicMIG", "excludes", "NVMLDeviceHealthCheck"),
        ("DynamicMIG", "excludes", "MPSSupport"),
        ("PassthroughSupport", "excludes", "NVMLDeviceHealthCheck"),
    }


@pytest.mark.parametrize(
    "given, named",
    [
        ({}, []),
        ({"DynamicMIG": True, "TimeSlicingSettings": True, "NVMLDeviceHealthCheck": False}, []),
        ({"IMEXDaemonsWithDNSNames": False}, ["IMEXDaemonsWithDNSNames"]),  # its partner is on by default
        ({"IMEXDaemonsWithDNSNames": False, "ComputeDomainCliques": False}, []),
        ({"ComputeDomainCliques": True, "IMEXDaemonsWithDNSNames": False}, ["ComputeDomainCliques"]),
        ({"NVMLDeviceHealthCheck": True, "DynamicMIG": True}, ["DynamicMIG"]),
        ({"DeviceMetadata": True}, ["DeviceMetadata"]),  # needs PassthroughSupport, off by default
        ({"MPSSupport": False}, []),
        ({"MPSSupport": True}, ["MPSSupport"]),
        ({"PassthroughSupport": True, "DeviceMetadata": True}, ["PassthroughSupport"]),
        (
            {"ConsumableShares": True, "DRAListTypeAttributes": True, "FabricManagerPartitioning": True},
            ["ConsumableShares", "DRAListTypeAttributes", "FabricManagerPartitioning"],
        ),
    ],
)
def test_problems_name_a_gate_the_stack_set(given, named):
    assert [name for name, _, _ in dra.load()["v0.5.0"].problems(given)] == named


def test_a_fix_never_suggests_turning_on_a_gate_this_stack_refuses():
    ((_, _, valid),) = dra.load()["v0.5.0"].problems({"DeviceMetadata": True})
    assert valid == "DeviceMetadata: false"
    ((_, _, valid),) = dra.load()["v0.5.0"].problems({"IMEXDaemonsWithDNSNames": False})
    assert valid == "ComputeDomainCliques: false or IMEXDaemonsWithDNSNames: true"


def test_the_v0_5_0_driver_needs_kubernetes_1_34_branch_580_and_cdi_from_kubelet_1_32():
    row = dra.load()["v0.5.0"]
    assert (row.kubernetes, row.driver_branch, row.cdi_kubelet) == ("1.34", 580, "1.32")


def test_an_image_finds_its_row_by_tag_with_or_without_a_digest():
    assert dra.driver_of_image("nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0").version == "v0.5.0"
    assert dra.driver_of_image("nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.5.0@sha256:" + "a" * 64).version == "v0.5.0"
    assert dra.driver_of_image("nvcr.io/nvidia/dra-driver-nvidia-gpu:v0.9.9") is None


def test_gates_are_spelt_sorted_as_name_equals_bool():
    assert (
        dra.format_gates({"TimeSlicingSettings": False, "DynamicMIG": True})
        == "DynamicMIG=true,TimeSlicingSettings=false"
    )
    assert dra.parse_gates("DynamicMIG=true, TimeSlicingSettings=False") == {
        "DynamicMIG": True,
        "TimeSlicingSettings": False,
    }


def test_a_row_with_an_unknown_maturity_is_refused(tmp_path):
    bad = tmp_path / "dra.yaml"
    bad.write_text(
        "drivers:\n  v1.0.0:\n    source: x\n    requires: {kubernetes: '1.34', driverBranch: 580, cdiKubelet: '1.32'}\n"
        "    gates:\n      Foo: {maturity: experimental, default: false}\n"
    )
    with pytest.raises(ValueError, match="Foo"):
        dra.load(bad)


@pytest.mark.parametrize(
    "extra, named",
    [
        ("    rules: [{gate: Foo, needs: Bar, excludes: Bar, source: x}]\n", "rules[0]"),  # both relations
        ("    rules: [{gate: Foo, source: x}]\n", "rules[0]"),  # neither
        ("    rules: [{gate: Foo, needs: Baz, source: x}]\n", "rules[0]"),  # a gate the driver lacks
        ("    unsupported: {Baz: why}\n", "Baz"),
    ],
)
def test_a_row_whose_rules_or_unsupported_gates_are_malformed_is_refused(tmp_path, extra, named):
    bad = tmp_path / "dra.yaml"
    bad.write_text(
        "drivers:\n  v1.0.0:\n    source: x\n    requires: {kubernetes: '1.34', driverBranch: 580, cdiKubelet: '1.32'}\n"
        "    gates:\n      Foo: {maturity: alpha, default: false}\n      Bar: {maturity: beta, default: true}\n" + extra
    )
    with pytest.raises(ValueError, match=re.escape(named)):
        dra.load(bad)


def _table(tmp_path, kubernetes: str):
    path = tmp_path / f"dra-{kubernetes}.yaml"  # one file each: load() caches by path
    path.write_text(
        f"drivers:\n  v1.0.0:\n    source: x\n    requires: {{kubernetes: '{kubernetes}', driverBranch: 580, cdiKubelet: '1.32'}}\n"
        "    gates: {}\ntokenNodeName: {feature: ServiceAccountTokenPodNodeInfo, lockedOn: '1.32'}\n"
    )
    return path


def test_every_driver_row_needs_a_kubernetes_whose_tokens_always_name_their_node():
    # ServiceAccountTokenPodNodeInfo is GA and locked on from Kubernetes 1.32 (kube_features.go's versioned
    # entry; kubernetes/website feature-gates/ServiceAccountTokenPodNodeInfo.md:17-20): the shipped table's
    # rows all start later, so the ResourceSlice policy always finds the plugin's node.
    assert all(tuple(map(int, d.kubernetes.split("."))) >= (1, 32) for d in dra.load().values())


def test_a_driver_row_below_the_token_node_name_lock_is_refused(tmp_path):
    assert dra.load(_table(tmp_path, "1.32"))["v1.0.0"].kubernetes == "1.32"
    with pytest.raises(
        ValueError, match=r"drivers\.v1\.0\.0\.requires\.kubernetes: '1\.31'.*ServiceAccountTokenPodNodeInfo"
    ):
        dra.load(_table(tmp_path, "1.31"))
