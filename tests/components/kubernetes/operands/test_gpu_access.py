"""With the toolkit baked, a node refuses NVIDIA_VISIBLE_DEVICES from unprivileged containers: every
operand container that needs all GPUs without being privileged in the runtime's sense (privileged,
or CAP_SYS_ADMIN) asks through the volume mount the node accepts instead."""

from __future__ import annotations

import pytest

DAEMONSET = "kubernetes:apps/v1:DaemonSet"
DEVICES_ALL = "/var/run/nvidia-container-devices/all"


def _baked(config):
    config["gpu-platform:nodeImage"]["toolkitBaked"] = True


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


@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_unprivileged_containers_that_need_every_gpu_ask_by_volume_mount(variant, stack):
    rec = variant(_baked, stack=stack)
    needing = [(ds, spec, c) for ds, spec, c in _containers(rec) if _asks_all(c) and not _runtime_privileged(c)]
    # prod has a MIG pool, so the plugin and GFD hold SYS_ADMIN there, which the runtime counts as privileged.
    expected = {"toolkit-validation"} | ({"nvidia-device-plugin", "gpu-feature-discovery"} if stack == "dev" else set())
    assert {c["name"] for _, _, c in needing} == expected
    for ds, spec, c in needing:
        (mount,) = [m for m in c.get("volumeMounts", []) if m["mountPath"] == DEVICES_ALL]
        (volume,) = [v for v in spec["volumes"] if v["name"] == mount["name"]]
        assert volume["hostPath"] == {"path": "/dev/null", "type": "CharDevice"}, ds.name
        assert mount["readOnly"] is True


def test_without_a_baked_toolkit_no_container_mounts_the_device_list(variant):
    rec = variant(lambda cfg: cfg["gpu-platform:nodeImage"].update(toolkitBaked=False))
    assert not [c for _, _, c in _containers(rec) for m in c.get("volumeMounts", []) if m["mountPath"] == DEVICES_ALL]


def test_without_cdi_a_baked_toolkit_makes_the_plugin_hand_out_volume_mounts(variant):
    def older(config):
        _baked(config)
        config["gpu-platform:operator"]["release"] = "v25.3.4"  # cdi off (matrix.yaml), plugin v0.17

    rec = variant(older)
    plugin = [c for ds, _, c in _containers(rec) if c["name"] == "nvidia-device-plugin"][0]
    assert {"name": "DEVICE_LIST_STRATEGY", "value": "volume-mounts"} in plugin["env"]
