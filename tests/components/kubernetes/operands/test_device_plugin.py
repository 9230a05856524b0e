"""The device plugin's DaemonSet as its image needs it on a real node: each expectation is a literal
from upstream (the k8s-device-plugin source, the GPU Operator's asset or transform, the MIG
manager), with the file and line it comes from."""

from __future__ import annotations

import pytest

from components.kubernetes.operands import device_plugin
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.manifests import CONFIG_HASH_KEY, daemonset_manifest
from components.kubernetes.operands.sharing import PoolSharing
from components.kubernetes.operands.spec import OperandArgs
from gpu_platform.catalog import matrix
from gpu_platform.config import ConfigError
from gpu_platform.config.audit import Audit

RELEASES = matrix.load().releases
CDI_RELEASES = [r for r in RELEASES.values() if r.cdi]
H100 = matrix.load().gpus["H100-80GB"].mig.configs()["all-balanced"]


def context(release: matrix.Release, toolkit_baked: bool = True, replicas: int = 4, **images: str) -> OperandContext:
    """A MIG pool and a time-sliced pool, as the prod stack and its twin have."""
    return OperandContext(
        images={**release.images, **images},
        sharing=(PoolSharing("h100-mig", None, "mixed", "all-balanced"), PoolSharing("l4", replicas, "none", None)),
        mig_pools=(MigPool("h100-mig", "H100-80GB", "all-balanced", H100),),
        toolkit_baked=toolkit_baked,
        toolkit_version=release.toolkit_version,
        cdi=release.cdi,
    )


def daemonset(ctx: OperandContext) -> dict:
    spec = device_plugin.spec(ctx)
    args = OperandArgs(
        spec=spec,
        namespace="gpu-operator",
        gate="device-plugin",
        waits_for=None,
        wait_image="",
        provider=None,
        audit=Audit(owner="platform", approval="CHG-1"),
        release="test",
    )
    return daemonset_manifest(spec, args, spec.name, {s: f"{spec.name}-{s}" for s in spec.config_maps})


def containers(ds: dict) -> dict[str, dict]:
    pod = ds["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


def env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def mounts(ds: dict, container: str) -> dict[str, tuple[dict, dict]]:
    """mountPath -> (mount, volume)."""
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    return {m["mountPath"]: (m, volumes[m["name"]]) for m in containers(ds)[container].get("volumeMounts", [])}


cdi_releases = pytest.mark.parametrize("release", CDI_RELEASES, ids=[r.name for r in CDI_RELEASES])
every_release = pytest.mark.parametrize("release", list(RELEASES.values()), ids=list(RELEASES))
both_toolkits = pytest.mark.parametrize("baked", [True, False], ids=["toolkit-baked", "toolkit-daemonset"])


# --- CDI: the plugin finds the host's driver where it looks ------------------------------------


@cdi_releases
@both_toolkits
def test_with_cdi_the_plugin_looks_for_the_driver_under_the_host_root_it_mounts(release, baked):
    ds = daemonset(context(release, baked))
    plugin = env(containers(ds)["nvidia-device-plugin"])
    # gpu-operator v25.10.1 cmd/nvidia-validator/driver.go:41-51: for a host driver driver-ready holds
    # NVIDIA_DRIVER_ROOT=/ and DRIVER_ROOT_CTR_PATH=/host, and assets/state-device-plugin/0500_daemonset.yaml
    # mounts host / read-only at /host. The plugin's own default is /driver-root (api/config/v1/consts.go:55
    # at v0.18.1), where nothing is mounted: spec generation fails and the plugin exits 1.
    assert plugin["DRIVER_ROOT_CTR_PATH"] == "/host"
    assert plugin["NVIDIA_DRIVER_ROOT"] == "/"
    mount, volume = mounts(ds, "nvidia-device-plugin")["/host"]
    assert volume["hostPath"]["path"] == "/" and mount["readOnly"] is True


@cdi_releases
def test_the_plugin_names_the_hook_the_node_has(release):
    # Baked toolkit: the package installs /usr/bin/nvidia-cdi-hook (nvidia-container-toolkit
    # packaging/rpm/SPECS/nvidia-container-toolkit.spec:46,117 at v1.18.1). Toolkit DaemonSet: the
    # operator's transformDevicePluginCtrForCDI names <installDir>/toolkit/nvidia-cdi-hook
    # (controllers/object_controls.go:1460-1462 at v25.10.1), installDir /usr/local/nvidia.
    assert (
        env(containers(daemonset(context(release, True)))["nvidia-device-plugin"])["NVIDIA_CDI_HOOK_PATH"]
        == "/usr/bin/nvidia-cdi-hook"
    )
    assert (
        env(containers(daemonset(context(release, False)))["nvidia-device-plugin"])["NVIDIA_CDI_HOOK_PATH"]
        == "/usr/local/nvidia/toolkit/nvidia-cdi-hook"
    )


@cdi_releases
def test_cdi_is_switched_on_by_the_strategy_not_by_an_env_var_the_plugin_never_reads(release):
    plugin = env(containers(daemonset(context(release)))["nvidia-device-plugin"])
    # cmd/nvidia-device-plugin/main.go at v0.14.2..v0.20.0 declares no CDI_ENABLED; the strategy is
    # the switch (api/config/v1/strategy.go:51-70 at v0.18.1), as the operator sets it
    # (object_controls.go:1457 at v25.10.1).
    assert "CDI_ENABLED" not in plugin
    assert plugin["DEVICE_LIST_STRATEGY"] == "cdi-annotations,cdi-cri"


@cdi_releases
def test_no_gdrcopy_gds_or_mofed_cdi_devices_are_added_to_every_gpu_container(release):
    plugin = env(containers(daemonset(context(release)))["nvidia-device-plugin"])
    # v0.19.0-v0.19.2 default them to true (cmd/nvidia-device-plugin/main.go:104-121 at v0.19.0);
    # v0.19.3 reverted that (commit 2ffedc34b). Our nodes have none of them.
    assert {k: plugin.get(k) for k in ("GDRCOPY_ENABLED", "GDS_ENABLED", "MOFED_ENABLED")} == {
        "GDRCOPY_ENABLED": "false",
        "GDS_ENABLED": "false",
        "MOFED_ENABLED": "false",
    }


def test_without_cdi_nothing_of_the_host_root_is_mounted():
    ds = daemonset(context(RELEASES["v25.3.4"]))
    assert "/host" not in mounts(ds, "nvidia-device-plugin")
    assert "DRIVER_ROOT_CTR_PATH" not in env(containers(ds)["nvidia-device-plugin"])


@every_release
@both_toolkits
def test_without_cdi_the_plugin_hands_devices_out_as_volume_mounts(release, baked):
    # Every node refuses NVIDIA_VISIBLE_DEVICES from unprivileged pods, the toolkit DaemonSet's too
    # (test_container_toolkit.py), and reads /dev/null mounts under /var/run/nvidia-container-devices
    # first (nvidia-container-toolkit cmd/nvidia-container-runtime-hook/container_config.go:236-258 at
    # v1.14.3). The plugin's default strategy, envvar, would hand a pod its GPUs only as the variable
    # (internal/plugin/server.go:479-480 at v0.18.1): refused, the pod gets none.
    if release.cdi:
        return
    plugin = env(containers(daemonset(context(release, baked)))["nvidia-device-plugin"])
    assert plugin["DEVICE_LIST_STRATEGY"] == "volume-mounts"


@every_release
@both_toolkits
def test_the_plugin_asks_for_every_gpu_by_volume_mount(release, baked):
    # NVIDIA_VISIBLE_DEVICES=all alone is refused for a container without CAP_SYS_ADMIN
    # (internal/config/image/cuda_image.go:258-292, privileged.go:36-61 at nvidia-container-toolkit v1.18.1).
    ds = daemonset(context(release, baked))
    mount, volume = mounts(ds, "nvidia-device-plugin")["/var/run/nvidia-container-devices/all"]
    assert volume["hostPath"]["path"] == "/dev/null" and mount["readOnly"] is True


def test_cdi_with_a_plugin_older_than_its_cdi_names_is_refused():
    # NVIDIA_CDI_HOOK_PATH and DRIVER_ROOT_CTR_PATH exist from v0.16.0 (main.go:121-133 at v0.16.1);
    # v0.15.0 reads NVIDIA_CTK_PATH and CONTAINER_DRIVER_ROOT (main.go:112-121).
    old = context(RELEASES["v25.10.1"], **{"device-plugin": "nvcr.io/nvidia/k8s-device-plugin:v0.15.0-ubi8"})
    with pytest.raises(ConfigError, match="device-plugin: .*v0.15.0-ubi8.* with CDI on"):
        device_plugin.spec(old)


# --- the config the plugin follows -------------------------------------------------------------


@every_release
def test_the_plugin_mounts_the_configs_its_config_link_points_into(release):
    ds = daemonset(context(release))
    # config-manager links /config/config.yaml to /available-configs/<name>
    # (cmd/config-manager/main.go:394-398, 425 at v0.18.1); the plugin follows the link in its own
    # mount namespace, so it mounts the ConfigMap there as upstream's chart does
    # (templates/daemonset-device-plugin.yml:227 at v0.20.0).
    plugin = mounts(ds, "nvidia-device-plugin")
    assert "configMap" in plugin["/available-configs"][1]
    assert "emptyDir" in plugin["/config"][1]
    assert env(containers(ds)["nvidia-device-plugin"])["CONFIG_FILE"] == "/config/config.yaml"


@every_release
def test_config_manager_may_signal_the_plugin(release):
    ds = daemonset(context(release))
    pod, by_name = ds["spec"]["template"]["spec"], containers(ds)
    sender, receiver = by_name["config-manager"], by_name["nvidia-device-plugin"]
    # config-manager kill(2)s the process whose argv[0] is PROCESS_TO_SIGNAL, found in /proc
    # (cmd/config-manager/main.go:433-459 at v0.18.1): one PID namespace (upstream's chart sets
    # shareProcessNamespace, templates/daemonset-device-plugin.yml:58-59 at v0.18.1) and the
    # receiver's UID (kill(2): same real or effective UID, else CAP_KILL).
    assert pod["shareProcessNamespace"] is True
    assert env(sender)["PROCESS_TO_SIGNAL"] == receiver["command"][0] == "nvidia-device-plugin"
    assert sender["securityContext"]["runAsUser"] == receiver["securityContext"]["runAsUser"]
    # Nothing beyond the UID: every capability dropped.
    assert sender["securityContext"]["capabilities"] == {"drop": ["ALL"]}


@every_release
def test_the_init_config_manager_links_once_and_signals_nothing(release):
    init = env(containers(daemonset(context(release)))["config-manager-init"])
    # Upstream's chart and the operator's asset: ONESHOT true, SEND_SIGNAL false, SIGNAL and
    # PROCESS_TO_SIGNAL empty (templates/daemonset-device-plugin.yml:61-88 at v0.18.1;
    # assets/state-device-plugin/0500_daemonset.yaml:39-63 at v25.10.1).
    assert (init["ONESHOT"], init["SEND_SIGNAL"], init["SIGNAL"], init["PROCESS_TO_SIGNAL"]) == (
        "true",
        "false",
        "",
        "",
    )


def test_a_change_of_time_slicing_replicas_changes_the_plugins_pod_template():
    # config-manager relinks (and signals) only on a node label change (cmd/config-manager/main.go:
    # 307-329 at v0.18.1): new content under the same name reaches the plugin only by a new pod.
    release = RELEASES["v25.10.1"]
    four, eight = daemonset(context(release, replicas=4)), daemonset(context(release, replicas=8))
    assert (
        four["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_KEY]
        != eight["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_KEY]
    )
    assert "replicas: 8" in device_plugin.spec(context(release, replicas=8)).config_maps["available-configs"]["l4"]


def test_config_manager_reads_only_its_own_node():
    # An informer on nodes with a field selector: list and watch (cmd/config-manager/main.go:256-293
    # at v0.18.1); the plugin binary calls no API.
    spec = device_plugin.spec(context(RELEASES["v25.10.1"]))
    assert spec.cluster_rules == ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},)
    assert spec.namespace_rules == ()


# --- health and identity -----------------------------------------------------------------------


@every_release
def test_the_plugin_has_no_probe(release):
    # No health endpoint; on a node with nothing to advertise it runs without a socket ('No devices
    # found. Waiting indefinitely.', cmd/nvidia-device-plugin/main.go:372-394 at v0.18.1); neither
    # upstream's chart nor the operator's asset has a probe.
    for c in containers(daemonset(context(release))).values():
        assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(c), c["name"]


def test_the_plugins_pods_carry_the_label_the_mig_manager_waits_for():
    # mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go:393; v0.5.5
    # deployments/gpu-operator/reconfigure-mig.sh:449.
    ds = daemonset(context(RELEASES["v25.10.1"]))
    assert ds["spec"]["template"]["metadata"]["labels"]["app"] == "nvidia-device-plugin-daemonset"
