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


def test_markers_are_gone_after_a_boot_and_allocations_are_not():
    loaded = rules.load()
    assert loaded.cleared_at_boot and loaded.markers_dir == "/run/nvidia/validations"
    assert loaded.allocations_survive_boot
