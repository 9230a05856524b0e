"""Every release of the matrix renders the device plugin, GFD, DCGM exporter and MIG manager its own
images expect: the GFD binary and config-manager of its image, CDI only where the release turns it
on, the exporter's entrypoint and a shell-free exporter pod, the MIG manager's env names, and objects
that are strictly valid for the Kubernetes versions the release supports.

The tests read what the real components register: the prod stack recorded on each release
(tests/release_stacks.py; a MIG pool and, with the toolkit DaemonSet, a time-sliced pool: every branch
of the four specs), never a test-side copy of the operand wiring."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from components.kubernetes.operands import dcgm_exporter, gpu_feature_discovery, mig_manager
from gpu_platform.catalog import matrix, versions
from gpu_platform.config.operator import Operator
from tests import release_stacks as stacks

RELEASES = matrix.load().releases
OPERANDS = ("device-plugin", "gpu-feature-discovery", "dcgm-exporter", "mig-manager")
SHELLS = {"sh", "bash", "/bin/sh", "/bin/bash"}


def rendered(operand: str, release: matrix.Release, baked: bool = False):
    """The recording of the prod stack on the release (with the toolkit DaemonSet unless `baked`) and
    the operand's DaemonSet in it."""
    rec = stacks.rendered(release.name, baked)
    return rec, stacks.workload(rec, operand)


def tag_version(image: str) -> str:
    return versions.image_tag_version(image.rsplit(":", 1)[1])


releases = pytest.mark.parametrize("release", stacks.each(RELEASES, RELEASES.get))


@releases
@pytest.mark.parametrize("operand", OPERANDS)
def test_each_releases_objects_are_strictly_valid_for_its_kubernetes(release, operand):
    for baked in (False, True):
        rec = stacks.rendered(release.name, baked)
        objects = stacks.objects(rec, operand)
        assert objects, (release.name, baked, operand)
        wrong = [p for obj in objects for p in stacks.problems(rec, obj, release)]
        assert not wrong, f"{release.name} ({'baked' if baked else 'toolkit DaemonSet'}) {operand}: " + "; ".join(wrong)


@releases
def test_gfd_runs_its_images_binary_and_config_manager_signals_exactly_that_process(release):
    _, ds = rendered("gpu-feature-discovery", release)
    gfd = stacks.container(ds, "gpu-feature-discovery")
    row = gpu_feature_discovery.image_traits(gfd["image"])
    # The row agrees with where the release's values.yaml takes GFD from.
    assert gfd["image"].rsplit(":", 1)[0] == row.repository
    assert gfd["command"] == [row.binary]
    # config-manager matches cmdline[0] exactly.
    assert stacks.env(stacks.container(ds, "config-manager"))["PROCESS_TO_SIGNAL"] == row.binary


@releases
def test_gfd_up_to_23_9_is_its_own_image_and_borrows_config_manager_from_the_plugin(release):
    _, ds = rendered("gpu-feature-discovery", release)
    gfd = stacks.container(ds, "gpu-feature-discovery")
    managers = [stacks.container(ds, "config-manager-init"), stacks.container(ds, "config-manager")]
    standalone = not versions.at_least(release.name, "24.3.0")
    assert gfd["image"].startswith("nvcr.io/nvidia/gpu-feature-discovery:") == standalone
    assert gfd["command"] == (["/usr/bin/gpu-feature-discovery"] if standalone else ["gpu-feature-discovery"])
    # config-manager is only ever in the k8s-device-plugin image.
    for manager in managers:
        assert manager["image"] == (release.images["device-plugin"] if standalone else gfd["image"])
        assert manager["image"].startswith("nvcr.io/nvidia/k8s-device-plugin:")


@releases
def test_the_plugin_hands_out_cdi_devices_only_where_the_release_turns_cdi_on(release):
    _, ds = rendered("device-plugin", release)
    plugin = stacks.container(ds, "nvidia-device-plugin")
    env, host_paths = stacks.env(plugin), stacks.host_mounts(ds, plugin)
    cdi_env = {"CDI_ANNOTATION_PREFIX", "NVIDIA_CDI_HOOK_PATH", "DRIVER_ROOT_CTR_PATH", "NVIDIA_DRIVER_ROOT"}
    assert (cdi_env <= set(env)) == release.cdi
    # Without CDI the node refuses NVIDIA_VISIBLE_DEVICES from unprivileged pods: devices go out as volume mounts.
    assert env["DEVICE_LIST_STRATEGY"] == ("cdi-annotations,cdi-cri" if release.cdi else "volume-mounts")
    # The plugin reads no CDI_ENABLED at any version: the strategy is the switch.
    assert "CDI_ENABLED" not in env
    assert ("cdi-root" in host_paths) == ("host-root" in host_paths) == release.cdi
    if release.cdi:
        # NVIDIA_CDI_HOOK_PATH and the cdi-cri strategy need plugin v0.16+ (v0.18 is what ships with CDI).
        assert versions.at_least(tag_version(plugin["image"]), "0.16.0")
    else:
        assert not cdi_env & set(env)


@releases
def test_the_exporter_runs_its_binary_not_the_entrypoint_script_at_every_version(release):
    # The scripts setcap (fails on a read-only root) and, at 4.0.4-4.4.0, run ldconfig under set -e
    # (fatal on a read-only root); /usr/bin/dcgm-exporter is the binary at every tag the matrix ships.
    _, ds = rendered("dcgm-exporter", release)
    exporter = stacks.container(ds, "nvidia-dcgm-exporter")
    assert exporter["command"] == ["/usr/bin/dcgm-exporter"]
    assert exporter["securityContext"]["readOnlyRootFilesystem"] is True
    assert "NO_SETCAP" not in stacks.env(exporter)
    assert ds.inputs["spec"]["template"]["metadata"]["labels"]["app"] == "nvidia-dcgm-exporter"


@releases
def test_the_exporter_listens_where_its_probes_and_service_look_at_every_version(release):
    rec, ds = rendered("dcgm-exporter", release)
    exporter = stacks.container(ds, "nvidia-dcgm-exporter")
    env = stacks.env(exporter)
    assert env["DCGM_EXPORTER_LISTEN"] == f":{dcgm_exporter.PORT}"
    assert exporter["ports"] == [{"name": "metrics", "containerPort": dcgm_exporter.PORT}]
    for probe in (exporter["readinessProbe"], exporter["livenessProbe"]):
        assert probe["httpGet"] == {"path": "/health", "port": dcgm_exporter.PORT}
    services = stacks.of_kind(rec, "dcgm-exporter", "Service")
    assert [p["port"] for s in services for p in s.inputs["spec"]["ports"]] == [dcgm_exporter.PORT]
    # The Service reaches the exporter's pods, at the port it listens on.
    named = {p["name"]: p["containerPort"] for p in exporter["ports"]}
    pod_labels = ds.inputs["spec"]["template"]["metadata"]["labels"]
    for service in services:
        assert service.inputs["spec"]["selector"].items() <= pod_labels.items()
        assert [named.get(p["targetPort"], p["targetPort"]) for p in service.inputs["spec"]["ports"]] == [
            dcgm_exporter.PORT
        ]
    # The metrics list is in the ConfigMap mounted where DCGM_EXPORTER_COLLECTORS points.
    directory, file = env["DCGM_EXPORTER_COLLECTORS"].rsplit("/", 1)
    assert file in (stacks.mounted_config(rec, ds, exporter, directory) or {})


@releases
def test_nothing_in_the_exporter_pod_needs_a_shell_from_the_exporter_image(release):
    _, ds = rendered("dcgm-exporter", release)
    image = release.images["dcgm-exporter"]
    pod = stacks.pod(ds)
    for c in stacks.containers(ds):
        probes = [c.get("readinessProbe") or {}, c.get("livenessProbe") or {}]
        if c["image"] == image:
            assert not set(c.get("command", [])[:1]) & SHELLS, c["name"]
            assert not any("exec" in p for p in probes), c["name"]
    # The wait for toolkit-ready runs in the validator's image, as the operator's own wait does.
    assert [c["image"] for c in pod["initContainers"]] == [release.images["validator"]]


@releases
def test_the_mig_manager_finds_the_host_driver_by_its_images_env_names(release):
    _, ds = rendered("mig-manager", release)
    manager = stacks.container(ds, "nvidia-mig-manager")
    env = stacks.env(manager)
    newer = versions.at_least(tag_version(manager["image"]), "0.8.0")
    driver_root = "NVIDIA_DRIVER_ROOT" if newer else "DRIVER_ROOT"
    assert env[driver_root] == "/"
    assert env["DRIVER_ROOT_CTR_PATH"] == "/host"
    assert dict(stacks.host_mounts(ds, manager).values())["/"] == "/host"
    # The image's own entrypoint: no operator entrypoint script, no shell.
    assert "command" not in manager
    # With CDI the device nodes are the host's too; v0.13+ no longer default them to the driver root.
    if release.cdi and newer:
        assert (env["NVIDIA_DEV_ROOT"], env["DEV_ROOT_CTR_PATH"]) == ("/", "/host")


@releases
def test_the_mig_manager_always_applies_our_config_file(release):
    rec, ds = rendered("mig-manager", release)
    manager = stacks.container(ds, "nvidia-mig-manager")
    directory, file = stacks.env(manager)["CONFIG_FILE"].rsplit("/", 1)
    # The file is in the ConfigMap mounted at its directory.
    data = stacks.mounted_config(rec, ds, manager, directory)
    assert data is not None and file in data and "config.yaml" in data


@releases
def test_the_mig_manager_regenerates_cdi_specs_only_where_the_release_turns_cdi_on(release):
    _, ds = rendered("mig-manager", release)
    manager = stacks.container(ds, "nvidia-mig-manager")
    env = stacks.env(manager)
    assert (env.get("CDI_ENABLED") == "true") == release.cdi
    assert ("cdi-root" in stacks.host_mounts(ds, manager)) == release.cdi
    hook = env.get("NVIDIA_CDI_HOOK_PATH")
    assert (hook is not None) == (release.cdi and versions.at_least(tag_version(manager["image"]), "0.8.0"))


@stacks.group("v25.10.1")
def test_a_baked_toolkit_points_the_mig_manager_at_the_packaged_cdi_hook():
    _, ds = rendered("mig-manager", RELEASES["v25.10.1"], baked=True)
    assert stacks.env(stacks.container(ds, "nvidia-mig-manager"))["NVIDIA_CDI_HOOK_PATH"] == "/usr/bin/nvidia-cdi-hook"


def test_every_release_image_falls_in_a_row_of_its_operands_table():
    for release in RELEASES.values():
        gpu_feature_discovery.image_traits(release.images["gpu-feature-discovery"])
        dcgm_exporter.image_traits(release.images["dcgm-exporter"])
        mig_manager.image_traits(release.images["mig-manager"])


@pytest.mark.parametrize("operand", ["gpu-feature-discovery", "dcgm-exporter", "mig-manager"])
def test_a_tag_without_a_version_never_reaches_an_operand(operand):
    """Traits are chosen by the tag's version, so the config model refuses a tag that has none."""
    raw = {"release": "v25.10.1", "overrides": {operand: "latest"}}
    with pytest.raises(ValidationError) as error:
        Operator.model_validate(raw)
    (problem,) = [e["ctx"]["error"] for e in error.value.errors()]
    assert problem.path == (operand,) and problem.message.startswith("'latest' is not an image tag")
