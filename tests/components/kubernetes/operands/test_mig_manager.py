"""The MIG manager finds what it stops and restarts, stops the host's GPU clients for a host driver,
and sees the host's devices with CDI: each expectation a literal from upstream, with its source."""

from __future__ import annotations

import pytest
import yaml

from components.kubernetes.operands import mig_manager
from components.kubernetes.operands.context import MigPool, OperandContext
from gpu_platform.catalog import matrix

RELEASES = matrix.load().releases


def spec(release: str = "v25.10.1", toolkit_baked: bool = True):
    h100 = matrix.load().gpus["H100-80GB"].mig.configs()["all-balanced"]
    ctx = OperandContext(
        images=dict(RELEASES[release].images),
        sharing=(),
        toolkit_baked=toolkit_baked,
        cdi=RELEASES[release].cdi,
        toolkit_version=RELEASES[release].toolkit_version,
        mig_pools=(MigPool("h100-mig", "H100-80GB", "all-balanced", h100),),
    )
    return mig_manager.spec(ctx)


def env(s) -> dict[str, str]:
    return dict(s.containers[0].env)


def mounts(s) -> dict[str, tuple[str, bool]]:
    """mount path -> (host path, read-only) for the manager's host paths."""
    by_volume = {hp.volume: hp for hp in s.host_paths}
    return {by_volume[v].mount: (by_volume[v].path, by_volume[v].read_only) for v in s.containers[0].host_paths}


def test_its_own_pods_carry_the_operators_app_label():
    # gpu-operator v25.10.1 assets/state-mig-manager/0600_daemonset.yaml:6-15 (app: nvidia-mig-manager).
    assert spec().app_label == "nvidia-mig-manager"


def test_it_looks_for_the_gpu_clients_in_its_own_namespace():
    # mig-parted v0.13.1 cmd/nvidia-mig-manager/main.go:210-217 (DEFAULT_GPU_CLIENTS_NAMESPACE, default
    # "default"); the operator sets it from metadata.namespace (0600_daemonset.yaml:54-57).
    assert ("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace") in spec().containers[0].field_env


def test_it_may_list_wait_for_and_delete_pods_in_its_namespace():
    # mig-parted v0.13.1 pkg/mig/reconfigure/reconfigure.go:591-622 (Pods(ns).List, Pods(ns).Delete).
    rules = spec().namespace_rules
    assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]} in rules


@pytest.mark.parametrize("release, cluster_wide", [("v26.7.0", True), ("v26.3.3", False), ("v25.10.1", False)])
def test_from_v0_15_it_may_list_pods_in_every_namespace(release, cluster_wide):
    # mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go:648-672: Pods(corev1.NamespaceAll).List on
    # every reconfiguration (the gpu.deploy.client wait); v26.7.0 0210_clusterrole.yaml adds pods list.
    pods = [r for r in spec(release).cluster_rules if r["resources"] == ["pods"]]
    assert (pods == [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]) == cluster_wide


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_for_the_host_driver_it_shuts_down_the_hosts_gpu_clients(release):
    # gpu-operator v25.10.1 assets/state-mig-manager/0420_configmap.yaml:22-24:
    # WITH_SHUTDOWN_HOST_GPU_CLIENTS=$IS_HOST_DRIVER; our driver is always the host's.
    s = spec(release)
    assert env(s)["WITH_SHUTDOWN_HOST_GPU_CLIENTS"] == "true"
    clients = yaml.safe_load(s.config_maps["gpu-clients"]["clients.yaml"])
    # The operator's default-gpu-clients list (0410_configmap.yaml:7-18), in its order.
    assert clients == {
        "version": "v1",
        "systemd-services": [
            "nvsm.service",
            "nvsm-mqtt.service",
            "nvsm-core.service",
            "nvsm-api-gateway.service",
            "nvsm-notifier.service",
            "nv_peer_mem.service",
            "nvidia-dcgm.service",
            "dcgm.service",
            "dcgm-exporter.service",
        ],
    }
    # Left running, as upstream leaves them (mig-parted v0.13.1 deployments/systemd/nvidia-mig-manager.service:18).
    assert not {"nvidia-persistenced.service", "nvidia-fabricmanager.service"} & set(clients["systemd-services"])


def test_it_can_write_its_host_copy_of_mig_parted_and_nothing_else_on_the_host_root():
    # mig-parted v0.13.1 cmd/nvidia-mig-manager/main.go:455-482: copies nvidia-mig-parted and the
    # config to HOST_ROOT_MOUNT + HOST_NVIDIA_DIR (/host + /usr/local/nvidia) + /mig-manager.
    m = mounts(spec())
    assert m["/host/usr/local/nvidia/mig-manager"] == ("/usr/local/nvidia/mig-manager", False)
    assert m["/host"] == ("/", True)


def test_the_audit_reason_says_what_the_manifest_does():
    s = spec()
    assert env(s)["WITH_SHUTDOWN_HOST_GPU_CLIENTS"] == "true" and "host's GPU client services" in s.reason


@pytest.mark.parametrize("release", [r for r in sorted(RELEASES) if RELEASES[r].cdi])
def test_with_cdi_it_creates_device_nodes_and_specs_against_the_hosts_dev(release):
    # mig-parted v0.13.1 cmd/nvidia-mig-manager/main.go:240-255 (NVIDIA_DEV_ROOT, DEV_ROOT_CTR_PATH,
    # default empty, not defaulted to the driver root); the validator's driver-ready carries / and
    # /host for a host driver (gpu-operator v25.10.1 cmd/nvidia-validator/driver.go:41-51).
    e = env(spec(release))
    assert (e["NVIDIA_DEV_ROOT"], e["DEV_ROOT_CTR_PATH"]) == ("/", "/host")
    assert (e["NVIDIA_DRIVER_ROOT"], e["DRIVER_ROOT_CTR_PATH"]) == ("/", "/host")


def test_it_has_no_probe_as_upstream_has_none():
    # mig-parted v0.13.1 deployments/container/nvidia-mig-manager-example.yaml: no probe, no port.
    manager = spec().containers[0]
    assert manager.readiness is None and manager.liveness is None and manager.startup is None


@pytest.mark.parametrize("release, writes_cdi", [("v24.9.2", False), ("v25.10.1", True)])
def test_its_audit_reason_says_it_writes_cdi_specs_only_where_it_does(release, writes_cdi):
    # cdi.enabled defaults to true from v25.10.0 (matrix.yaml notes); the reason must not claim a host
    # write the pod does not make.
    s = spec(release)
    assert ("CDI specs" in s.reason) is writes_cdi
    assert any(h.path == "/var/run/cdi" for h in s.host_paths) is writes_cdi


def test_its_audit_reason_says_why_the_host_root_may_be_read_only():
    # Upstream mounts the host root read-write (gpu-operator v25.10.1 assets/state-mig-manager/
    # 0600_daemonset.yaml:71-73, 101-103); ours is read-only. mig-parted v0.13.1 writes through it only the
    # systemd drop-in override.conf when it exists (pkg/mig/reconfigure/reconfigure.go:301-329) and device
    # nodes under /host/dev (reconfigure.go:472-479, 624-630), a submount a non-recursive read-only bind
    # leaves writable (containerd v2.2.4 internal/cri/opts/spec_linux_opts.go:181-194).
    s = spec()
    assert mounts(s)["/host"] == ("/", True)
    for cited in ("0600_daemonset.yaml:71-73", "reconfigure.go:301-329", "override.conf", "/host/dev"):
        assert cited in s.reason, cited
