"""Every GPU node refuses NVIDIA_VISIBLE_DEVICES from unprivileged containers, with the toolkit baked
into its image or installed by the toolkit DaemonSet alike: every operand container that needs all GPUs
without being privileged in the runtime's sense (privileged, or CAP_SYS_ADMIN) asks through the volume
mount the node accepts instead, and the device plugin hands GPUs out the same way when CDI is off.

What the runtime reads, at every toolkit tag we render: /dev/null mounts under
/var/run/nvidia-container-devices first (when accept-nvidia-visible-devices-as-volume-mounts), the
variable only for a container holding CAP_SYS_ADMIN or when accept-nvidia-visible-devices-envvar-when-
unprivileged (nvidia-container-toolkit cmd/nvidia-container-runtime-hook/container_config.go:236-258 at
v1.14.3; internal/config/image/cuda_image.go:258-292 at v1.18.1, which CDI mode reads too:
internal/modifier/cdi.go:102-115)."""

from __future__ import annotations

import pytest

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
DEVICES_ALL = "/var/run/nvidia-container-devices/all"
TOOLKIT_ENV = {
    "ACCEPT_NVIDIA_VISIBLE_DEVICES_ENVVAR_WHEN_UNPRIVILEGED": "false",
    "ACCEPT_NVIDIA_VISIBLE_DEVICES_AS_VOLUME_MOUNTS": "true",
}


def _toolkit(baked: bool, release: str | None = None):
    def change(config):
        config["gpu-platform:nodeImage"]["toolkitBaked"] = baked
        if release:
            config["gpu-platform:operator"]["release"] = release

    return change


def _containers(rec):
    for ds in rec.of_type(DAEMONSET):
        spec = ds.inputs["spec"]["template"]["spec"]
        for c in [*spec.get("initContainers", []), *spec["containers"]]:
            yield ds, spec, c


def _runtime_privileged(c) -> bool:
    context = c.get("securityContext") or {}
    return bool(context.get("privileged")) or "SYS_ADMIN" in ((context.get("capabilities") or {}).get("add") or [])


def _asks_all(c) -> bool:
    return {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in (c.get("env") or [])


def _env(c) -> dict:
    return {e["name"]: e.get("value") for e in c.get("env") or []}


@pytest.mark.parametrize("baked", [True, False], ids=["toolkit-baked", "toolkit-daemonset"])
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_unprivileged_containers_that_need_every_gpu_ask_by_volume_mount(variant, stack, baked):
    rec = variant(_toolkit(baked), stack=stack)
    needing = [(ds, spec, c) for ds, spec, c in _containers(rec) if _asks_all(c) and not _runtime_privileged(c)]
    # prod's MIG pool has its own plugin and GFD (nvidia-*-mig), privileged or with SYS_ADMIN, which the
    # runtime counts as privileged; its other pool runs the same plugin and GFD as dev's.
    assert {(ds.inputs["metadata"]["name"], c["name"]) for ds, _, c in needing} == {
        ("nvidia-operator-validator", "toolkit-validation"),
        ("nvidia-device-plugin", "nvidia-device-plugin"),
        ("nvidia-gpu-feature-discovery", "gpu-feature-discovery"),
    }
    for ds, spec, c in needing:
        (mount,) = [m for m in c.get("volumeMounts", []) if m["mountPath"] == DEVICES_ALL]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["hostPath"] == {"path": "/dev/null", "type": "CharDevice"}, ds.name
        assert mount["readOnly"] is True


@pytest.mark.parametrize("release", ["v23.9.0", "v25.3.4", "v25.10.1", "v26.7.0"])
def test_the_toolkit_daemonset_refuses_the_variable_from_unprivileged_pods_and_accepts_mounts(variant, release):
    # Left at the installer's defaults (true, false: tools/container/toolkit/toolkit.go:176-188 at
    # v1.14.3, cmd/nvidia-ctk-installer/toolkit/toolkit.go:157-169 at v1.20.0) any pod of a CUDA image
    # under the nvidia RuntimeClass gets every GPU, with CDI (management.nvidia.com/gpu=all) or without.
    rec = variant(_toolkit(False, release))
    (installer,) = [c for _, _, c in _containers(rec) if c["name"] == "nvidia-container-toolkit-ctr"]
    assert {k: _env(installer).get(k) for k in TOOLKIT_ENV} == TOOLKIT_ENV


@pytest.mark.parametrize("baked", [True, False], ids=["toolkit-baked", "toolkit-daemonset"])
def test_without_cdi_the_plugin_hands_out_volume_mounts_on_every_node(variant, baked):
    rec = variant(_toolkit(baked, "v25.3.4"))  # cdi off (matrix.yaml), plugin v0.17
    (plugin,) = [c for _, _, c in _containers(rec) if c["name"] == "nvidia-device-plugin"]
    assert _env(plugin)["DEVICE_LIST_STRATEGY"] == "volume-mounts"
