"""The lifecycle rules' version boundaries, written out from the upstream sources rules.yaml cites."""

from preview.lifecycle import rules


def test_the_toolkit_runs_the_legacy_hook_before_1_18_and_jit_cdi_from_it():
    # nvidia-container-toolkit internal/info/auto.go: `auto` resolved to legacy up to v1.17.x; the
    # resolver's default is JitCDIRuntimeMode from v1.18.0 (auto.go:89 at v1.18.1).
    loaded = rules.load()
    assert loaded.toolkit_mode("1.17.8") == "legacy"
    assert loaded.toolkit_mode("1.18.0") == "jit-cdi"
    assert loaded.toolkit_mode("1.20.0") == "jit-cdi"


def test_a_host_driver_gets_driver_ready_from_validator_24_6_and_host_driver_ready_before():
    driver = rules.load().checks["driver"]
    assert driver.marker("24.3.0") == "host-driver-ready"
    assert driver.marker("24.6.0") == "driver-ready"
    assert driver.marker("25.10.1") == "driver-ready"


def test_only_the_plugin_check_with_a_workload_needs_a_free_gpu():
    # The CUDA workload pod requests no GPU (cuda-workload-validation.yaml); the plugin workload pod
    # requests one (plugin-workload-validation.yaml limits), at gpu-operator v25.10.1.
    checks = rules.load().checks
    needing = {name for name, check in checks.items() if "free-gpu" in check.needs + check.workload_needs}
    assert needing == {"plugin"}
    assert "free-gpu" not in checks["plugin"].needs


def test_markers_are_gone_after_a_boot():
    loaded = rules.load()
    assert loaded.cleared_at_boot and loaded.markers_dir == "/run/nvidia/validations"


def test_a_boot_loses_device_plugin_allocations_and_keeps_dra_claims():
    # kubernetes PR #116376: the kubelet rejects a pod whose devices' plugin has not registered yet
    # (UnexpectedAdmissionError), as a rebooted node's pods are admitted again (issues #125579, #128043).
    # A ResourceClaim's allocation is in the API and the kubelet retries its prepare in syncPod.
    survive = rules.load().allocations_survive_boot
    assert survive == {"device-plugin": False, "dra": True}


def test_the_mig_manager_waits_five_minutes_for_each_client_by_its_app_label():
    # mig-parted v0.13.1 pkg/mig/reconfigure/reconfigure.go:380 (timeout), 383-398 (the selectors).
    manager = rules.load().mig_manager
    assert manager.wait_seconds == 300
    assert manager.waits_for_apps == (
        "nvidia-device-plugin-daemonset",
        "gpu-feature-discovery",
        "nvidia-dcgm-exporter",
        "nvidia-dcgm",
    )


def test_a_pod_without_a_grace_period_gets_the_kubernetes_default_of_30_seconds():
    assert rules.load().termination_grace_default == 30
