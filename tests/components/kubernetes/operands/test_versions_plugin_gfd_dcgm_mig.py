"""Every release of the matrix renders the device plugin, GFD, DCGM exporter and MIG manager its own
images expect: the GFD binary and config-manager of its image, CDI only where the release turns it
on, the exporter's entrypoint and a shell-free exporter pod, the MIG manager's env names, and a
DaemonSet that is strictly valid for the release's newest Kubernetes."""

from __future__ import annotations


import kubernetes_validate
import pytest
from pydantic import ValidationError

from components.kubernetes.operands import dcgm_exporter, device_plugin, gpu_feature_discovery, mig_manager
from components.kubernetes.operands.manifests import daemonset_manifest
from components.kubernetes.operands.spec import OperandArgs, OperandSpec, with_wait
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.sharing import PoolSharing
from gpu_platform.config import Operator
from gpu_platform import matrix, versions
from gpu_platform.config import Audit

RELEASES = matrix.load().releases
MODULES = {"device-plugin": device_plugin, "gpu-feature-discovery": gpu_feature_discovery,
           "dcgm-exporter": dcgm_exporter, "mig-manager": mig_manager}
WAITS_FOR = {"device-plugin": "toolkit-ready", "gpu-feature-discovery": "plugin-ready",
             "dcgm-exporter": "plugin-ready", "mig-manager": "toolkit-ready"}
SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash"}


def context(release: matrix.Release, toolkit_baked: bool = False) -> OperandContext:
    """One MIG pool and one time-sliced pool: every branch of the four specs, no stack recording."""
    h100 = matrix.load().gpus["H100-80GB"].mig.configs()["all-balanced"]
    return OperandContext(
        images=dict(release.images),
        sharing=(PoolSharing("h100-mig", None, "mixed", "all-balanced"), PoolSharing("l4", 4, "none", None)),
        mig_pools=(MigPool("h100-mig", "H100-80GB", "all-balanced", h100),),
        toolkit_baked=toolkit_baked,
        cdi=release.cdi,
    )


def rendered(operand: str, release: matrix.Release) -> tuple[OperandSpec, dict]:
    """The spec with its wait init container, and the DaemonSet the platform would create from it."""
    ctx = context(release)
    spec = with_wait(MODULES[operand].spec(ctx), WAITS_FOR[operand], ctx.images["validator"])
    args = OperandArgs(spec=spec, namespace="gpu-operator", gate=operand, waits_for=None, wait_image=ctx.images["validator"],
                       audit=Audit(owner="platform", approval="CHG-1"), release=release.name, provider=None)
    manifest = daemonset_manifest(spec, args, f"nvidia-{operand}", {s: f"nvidia-{operand}-{s}" for s in spec.config_maps})
    manifest["metadata"]["namespace"] = "gpu-operator"
    return spec, {"apiVersion": "apps/v1", "kind": "DaemonSet", **manifest}


def env(container) -> dict[str, str]:
    return dict(container.env)


def container(spec: OperandSpec, name: str):
    return next(c for c in (*spec.init_containers, *spec.containers) if c.name == name)


def tag_version(image: str) -> str:
    return versions.image_tag_version(image.rsplit(":", 1)[1])


releases = pytest.mark.parametrize("release", list(RELEASES.values()), ids=list(RELEASES))


@releases
@pytest.mark.parametrize("operand", list(MODULES))
def test_each_releases_daemonset_is_strictly_valid_for_its_newest_kubernetes(release, operand):
    _, manifest = rendered(operand, release)
    try:
        kubernetes_validate.validate(manifest, release.kubernetes_max + ".0", strict=True)
    except kubernetes_validate.ValidationError as error:
        pytest.fail(f"{release.name} {operand}: {error.message}")


@releases
def test_gfd_runs_its_images_binary_and_config_manager_signals_exactly_that_process(release):
    spec, _ = rendered("gpu-feature-discovery", release)
    gfd = container(spec, "gpu-feature-discovery")
    row = gpu_feature_discovery.image_traits(gfd.image)
    # The row agrees with where the release's values.yaml takes GFD from.
    assert gfd.image.rsplit(":", 1)[0] == row.repository
    assert gfd.command == (row.binary,)
    # config-manager matches cmdline[0] exactly.
    assert env(container(spec, "config-manager"))["PROCESS_TO_SIGNAL"] == row.binary


@releases
def test_gfd_up_to_23_9_is_its_own_image_and_borrows_config_manager_from_the_plugin(release):
    spec, _ = rendered("gpu-feature-discovery", release)
    gfd, managers = container(spec, "gpu-feature-discovery"), [container(spec, "config-manager-init"), container(spec, "config-manager")]
    standalone = not versions.at_least(release.name, "24.3.0")
    assert gfd.image.startswith("nvcr.io/nvidia/gpu-feature-discovery:") == standalone
    assert gfd.command == (("/usr/bin/gpu-feature-discovery",) if standalone else ("gpu-feature-discovery",))
    # config-manager is only ever in the k8s-device-plugin image.
    for manager in managers:
        assert manager.image == (release.images["device-plugin"] if standalone else gfd.image)
        assert manager.image.startswith("nvcr.io/nvidia/k8s-device-plugin:")


@releases
def test_the_plugin_hands_out_cdi_devices_only_where_the_release_turns_cdi_on(release):
    spec, _ = rendered("device-plugin", release)
    plugin = container(spec, "nvidia-device-plugin")
    cdi_env = {"CDI_ANNOTATION_PREFIX", "NVIDIA_CDI_HOOK_PATH", "DRIVER_ROOT_CTR_PATH", "NVIDIA_DRIVER_ROOT"}
    assert (cdi_env <= set(env(plugin))) == release.cdi
    # Without CDI the node refuses NVIDIA_VISIBLE_DEVICES from unprivileged pods: devices go out as volume mounts.
    assert env(plugin)["DEVICE_LIST_STRATEGY"] == ("cdi-annotations,cdi-cri" if release.cdi else "volume-mounts")
    # The plugin reads no CDI_ENABLED at any version: the strategy is the switch.
    assert "CDI_ENABLED" not in env(plugin)
    assert ("cdi-root" in plugin.host_paths) == ("host-root" in plugin.host_paths) == release.cdi
    if release.cdi:
        # NVIDIA_CDI_HOOK_PATH and the cdi-cri strategy need plugin v0.16+ (v0.18 is what ships with CDI).
        assert versions.at_least(tag_version(plugin.image), "0.16.0")
    else:
        assert not cdi_env & set(env(plugin))


@releases
def test_the_exporter_runs_its_binary_not_the_entrypoint_script_at_every_version(release):
    # The scripts setcap (fails on a read-only root) and, at 4.0.4-4.4.0, run ldconfig under set -e
    # (fatal on a read-only root); /usr/bin/dcgm-exporter is the binary at every tag the matrix ships.
    spec, manifest = rendered("dcgm-exporter", release)
    exporter = container(spec, "nvidia-dcgm-exporter")
    assert exporter.command == ("/usr/bin/dcgm-exporter",) and exporter.read_only_root
    assert "NO_SETCAP" not in env(exporter)
    assert manifest["spec"]["template"]["metadata"]["labels"]["app"] == "nvidia-dcgm-exporter"


@releases
def test_the_exporter_listens_where_its_probes_and_service_look_at_every_version(release):
    spec, _ = rendered("dcgm-exporter", release)
    exporter = container(spec, "nvidia-dcgm-exporter")
    assert env(exporter)["DCGM_EXPORTER_LISTEN"] == f":{dcgm_exporter.PORT}"
    assert exporter.ports == (("metrics", dcgm_exporter.PORT),)
    for probe in (exporter.readiness, exporter.liveness):
        assert probe["httpGet"] == {"path": "/health", "port": dcgm_exporter.PORT}
    assert [s.port for s in spec.services] == [dcgm_exporter.PORT]
    # The metrics list is mounted where DCGM_EXPORTER_COLLECTORS points.
    collectors = env(exporter)["DCGM_EXPORTER_COLLECTORS"]
    assert any(collectors.startswith(path + "/") for _, path, _ in exporter.mounts)


@releases
def test_nothing_in_the_exporter_pod_needs_a_shell_from_the_exporter_image(release):
    spec, manifest = rendered("dcgm-exporter", release)
    image = release.images["dcgm-exporter"]
    pod = manifest["spec"]["template"]["spec"]
    for c in [*pod.get("initContainers", []), *pod["containers"]]:
        probes = [c.get("readinessProbe") or {}, c.get("livenessProbe") or {}]
        if c["image"] == image:
            assert not set(c.get("command", [])[:1]) & SHELLS, c["name"]
            assert not any("exec" in p for p in probes), c["name"]
    # The wait for plugin-ready runs in the validator's image, as the operator's own wait does.
    assert [c["image"] for c in pod["initContainers"]] == [release.images["validator"]]


@releases
def test_the_mig_manager_finds_the_host_driver_by_its_images_env_names(release):
    spec, _ = rendered("mig-manager", release)
    manager = container(spec, "nvidia-mig-manager")
    newer = versions.at_least(tag_version(manager.image), "0.8.0")
    driver_root = "NVIDIA_DRIVER_ROOT" if newer else "DRIVER_ROOT"
    assert env(manager)[driver_root] == "/"
    assert env(manager)["DRIVER_ROOT_CTR_PATH"] == "/host"
    assert {hp.path: hp.mount for hp in spec.host_paths}["/"] == "/host"
    # The image's own entrypoint: no operator entrypoint script, no shell.
    assert manager.command == ()
    # With CDI the device nodes are the host's too; v0.13+ no longer default them to the driver root.
    if release.cdi and newer:
        assert (env(manager)["NVIDIA_DEV_ROOT"], env(manager)["DEV_ROOT_CTR_PATH"]) == ("/", "/host")


@releases
def test_the_mig_manager_always_applies_our_config_file(release):
    spec, _ = rendered("mig-manager", release)
    manager = container(spec, "nvidia-mig-manager")
    config = env(manager)["CONFIG_FILE"]
    mounted = {path for _, path, _ in manager.mounts}
    assert config.rsplit("/", 1)[0] in mounted
    assert "config.yaml" in spec.config_maps["mig-parted-config"]


@releases
def test_the_mig_manager_regenerates_cdi_specs_only_where_the_release_turns_cdi_on(release):
    spec, _ = rendered("mig-manager", release)
    manager = container(spec, "nvidia-mig-manager")
    assert (env(manager).get("CDI_ENABLED") == "true") == release.cdi
    assert ("cdi-root" in manager.host_paths) == release.cdi
    hook = env(manager).get("NVIDIA_CDI_HOOK_PATH")
    assert (hook is not None) == (release.cdi and versions.at_least(tag_version(manager.image), "0.8.0"))


def test_a_baked_toolkit_points_the_mig_manager_at_the_packaged_cdi_hook():
    release = RELEASES["v25.10.1"]
    manager = container(mig_manager.spec(context(release, toolkit_baked=True)), "nvidia-mig-manager")
    assert env(manager)["NVIDIA_CDI_HOOK_PATH"] == "/usr/bin/nvidia-cdi-hook"


def test_every_release_image_falls_in_a_row_of_its_operands_table():
    for release in RELEASES.values():
        gpu_feature_discovery.image_traits(release.images["gpu-feature-discovery"])
        dcgm_exporter.image_traits(release.images["dcgm-exporter"])
        mig_manager.image_traits(release.images["mig-manager"])


@pytest.mark.parametrize("operand", ["gpu-feature-discovery", "dcgm-exporter", "mig-manager"])
def test_a_tag_without_a_version_never_reaches_an_operand(operand):
    """Traits are chosen by the tag's version, so the config model refuses a tag that has none."""
    raw = {"release": "v25.10.1", "overrides": {operand: "latest"}}
    with pytest.raises(ValidationError, match=f"{operand}: 'latest' is not an image tag"):
        Operator.model_validate(raw)
