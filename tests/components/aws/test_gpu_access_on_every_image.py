"""GPU access as the NVIDIA container toolkit decides it, on every image source: a pod the device
plugin gave no GPU gets none even when its image sets NVIDIA_VISIBLE_DEVICES, a pod the plugin gave a
GPU gets it with the plugin's device list strategy, and the operands that read every GPU get them.

The toolkit's decision is modelled from its source (nvidia-container-toolkit v1.19.1, the toolkit of
the v20260714 nvidia AMI; the same at v1.18.1, the bake's): internal/config/image/cuda_image.go
VisibleDevices, lines 258-292 (CDI annotations first; then, only when
accept-nvidia-visible-devices-as-volume-mounts is on, the mounts under /var/run/nvidia-container-devices;
then NVIDIA_VISIBLE_DEVICES, only for a privileged container or when
accept-nvidia-visible-devices-envvar-when-unprivileged is on), with the defaults of
api/config/v1/config.go lines 64-65 and 105-106 (envvar accepted, volume mounts not). What the device
plugin hands a pod is k8s-device-plugin v0.17.4 internal/plugin/server.go: envvar, the device ids in
NVIDIA_VISIBLE_DEVICES (342-344, 469-470); volume-mounts, NVIDIA_VISIBLE_DEVICES set to the mount root
and /dev/null mounted at <root>/<id> (346-347, 484-494); CDI, annotations or CRI devices (338-340).

What the node's config.toml holds is not assumed: the bake, or the user data of an image the stack did
not bake, runs with the shell stubs, and `nvidia-ctk config --set` writes what it writes. AWS's AMI
starts with no setting of its own (nothing in amazon-eks-ami v20260714 templates/ calls nvidia-ctk)."""

from __future__ import annotations

import base64
import email
import shlex
from dataclasses import dataclass, field

import pytest

from tests.components.aws.conftest import COMPONENT_DOC, launch_template
from tests.components.aws.node_shell import build_step, module_answers, run_bash
from tests.conftest import FIXTURES

MOUNT_ROOT = "/var/run/nvidia-container-devices"
CDI_PREFIX = "cdi.k8s.io/"


@dataclass
class Container:
    env: dict[str, str] = field(default_factory=dict)
    mounts: tuple[str, ...] = ()
    annotations: dict[str, str] = field(default_factory=dict)
    cdi_devices: tuple[str, ...] = ()  # injected by containerd from the CRI (cdi-cri)
    privileged: bool = False


def _on(config: dict[str, str], key: str, default: bool) -> bool:
    return config.get(key, str(default).lower()) == "true"


def visible_devices(config: dict[str, str], c: Container) -> list[str]:
    """cuda_image.go VisibleDevices (lines 258-292), for the config.toml keys of config.go 64-65."""
    annotated = [d for k, v in sorted(c.annotations.items()) if k.startswith(CDI_PREFIX) for d in v.split(",")]
    if annotated:
        return annotated
    if _on(config, "accept-nvidia-visible-devices-as-volume-mounts", False):
        mounted = [m.removeprefix(MOUNT_ROOT + "/") for m in c.mounts if m.startswith(MOUNT_ROOT + "/")]
        if mounted:
            return mounted
    requested = [d for d in c.env.get("NVIDIA_VISIBLE_DEVICES", "").split(",") if d and d not in ("void", "none")]
    if requested and (c.privileged or _on(config, "accept-nvidia-visible-devices-envvar-when-unprivileged", True)):
        return requested
    return []


def gpus(config: dict[str, str], c: Container) -> list[str]:
    """The GPUs the container really gets (each once): containerd's CDI devices, plus what the runtime
    resolves; a `device` that is a path (the volume-mounts root read as NVIDIA_VISIBLE_DEVICES) is no GPU."""
    found = [*c.cdi_devices, *(d for d in visible_devices(config, c) if not d.startswith("/"))]
    return sorted({d.removeprefix("nvidia.com/gpu=") for d in found})


def allocated(strategies: str, gpu: str) -> Container:
    """What the device plugin's Allocate response puts into a pod that asked for one GPU."""
    c = Container(env={"NVIDIA_VISIBLE_DEVICES": "all"})  # a CUDA base image's own environment
    for strategy in strategies.split(","):
        if strategy == "envvar":
            c.env["NVIDIA_VISIBLE_DEVICES"] = gpu
        elif strategy == "volume-mounts":
            c.env["NVIDIA_VISIBLE_DEVICES"] = MOUNT_ROOT
            c.mounts += (f"{MOUNT_ROOT}/{gpu}",)
        elif strategy == "cdi-annotations":
            c.annotations[f"{CDI_PREFIX}nvidia-device-plugin_pod"] = f"nvidia.com/gpu={gpu}"
        elif strategy == "cdi-cri":
            c.cdi_devices += (f"nvidia.com/gpu={gpu}",)
    return c


def _plugin(rec) -> dict:
    ds = rec.one("kubernetes:apps/v1:DaemonSet", "gpu-device-plugin-ds")
    return next(c for c in ds.inputs["spec"]["template"]["spec"]["containers"] if c["name"] == "nvidia-device-plugin")


def _strategies(rec) -> str:
    env = {e["name"]: e.get("value") for e in _plugin(rec)["env"]}
    return env.get("DEVICE_LIST_STRATEGY", "envvar")  # the plugin's default (api/config/v1 flags)


def _operand_all_gpus(rec) -> Container:
    """The device plugin's own container: it reads every GPU without a GPU request."""
    plugin = _plugin(rec)
    env = {e["name"]: e.get("value") for e in plugin["env"] if "value" in e}
    mounts = tuple(m["mountPath"] for m in plugin.get("volumeMounts", []))
    caps = ((plugin.get("securityContext") or {}).get("capabilities") or {}).get("add") or []
    return Container(env=env, mounts=mounts, privileged="SYS_ADMIN" in caps)


def _user_data_script(rec, pool: str) -> str | None:
    message = email.message_from_bytes(base64.b64decode(launch_template(rec, pool).inputs["userData"]))
    scripts = [p.get_payload() for p in message.walk() if p.get_content_type() == "text/x-shellscript"]
    return scripts[0] if scripts else None


def node_config(rec, tmp_path) -> dict[str, str]:
    """config.toml of a node booting this stack's image, after what runs before the kubelet starts."""
    if rec.config["gpu-platform:nodeImage"]["source"] == "bake":
        run = run_bash(
            build_step(rec.one(*COMPONENT_DOC).inputs["data"]), tmp_path, module_answers("580.105.08", "Dual MIT/GPL")
        )
        assert run.returncode == 0, run.output
        return run.toolkit_config()
    pool = rec.config["gpu-platform:nodePools"][0]["name"]
    script = _user_data_script(rec, pool)
    if script is None:
        return {}  # AWS's AMI as it ships: no toolkit setting of its own
    first_boot = run_bash(script, tmp_path)
    assert first_boot.returncode == 0, first_boot.output
    assert ["daemon-reload"] in first_boot.of("systemctl")
    drop_in = (first_boot.root / "etc/systemd/system/kubelet.service.d/10-gpu-platform-gpu-access.conf").read_text()
    (pre,) = [line.split("=", 1)[1] for line in drop_in.splitlines() if line.startswith("ExecStartPre=")]
    # What systemd runs before each kubelet start (the binary by its name: the stubs stand in for /usr/bin).
    argv = shlex.split(pre)
    kubelet_start = run_bash(shlex.join([argv[0].rsplit("/", 1)[1], *argv[1:]]), tmp_path)
    assert kubelet_start.returncode == 0, kubelet_start.output
    return kubelet_start.toolkit_config()


@pytest.fixture(scope="module")
def stacks(record_variant):
    from preview.offline import engine
    from tests.conftest import record

    def pinned(config):
        config["gpu-platform:nodeImage"] = {
            "source": "ami",
            "amiId": "ami-0123456789abcdef0",
            "driverVersion": "580.105.08",
            "toolkitBaked": True,
        }

    def eks(release):
        def change(config):
            config.update(engine.read_stack_file(FIXTURES / "passing" / "eks-nvidia.yaml"))
            config["gpu-platform:operator"]["release"] = release

        return change

    return {
        "bake": record(engine.stack_file("dev")),
        "eks-nvidia, v25.10.1 (CDI)": record(FIXTURES / "passing" / "eks-nvidia.yaml"),
        # The review's case: AWS's AMI with a release before CDI, whose plugin hands out volume mounts.
        "eks-nvidia, v25.3.4 (no CDI)": record_variant("eks-nvidia-v25.3.4", eks("v25.3.4")),
        "ami, toolkitBaked": record_variant("pinned-ami-toolkit", pinned),
    }


SOURCES = ["bake", "eks-nvidia, v25.10.1 (CDI)", "eks-nvidia, v25.3.4 (no CDI)", "ami, toolkitBaked"]


@pytest.mark.parametrize("source", SOURCES)
def test_a_pod_without_a_gpu_from_the_plugin_gets_none(stacks, source, tmp_path):
    config = node_config(stacks[source], tmp_path)
    # nodeadm makes nvidia every pod's runtime; the pod's CUDA image sets NVIDIA_VISIBLE_DEVICES=all.
    assert gpus(config, Container(env={"NVIDIA_VISIBLE_DEVICES": "all"})) == []


@pytest.mark.parametrize("source", SOURCES)
def test_a_pod_the_plugin_gave_a_gpu_gets_it(stacks, source, tmp_path):
    rec = stacks[source]
    config = node_config(rec, tmp_path)
    assert gpus(config, allocated(_strategies(rec), "GPU-0a1b")) == ["GPU-0a1b"], (_strategies(rec), config)


@pytest.mark.parametrize("source", SOURCES)
def test_the_operands_that_read_every_gpu_get_them(stacks, source, tmp_path):
    rec = stacks[source]
    assert gpus(node_config(rec, tmp_path), _operand_all_gpus(rec)) == ["all"]


def test_awss_ami_as_it_ships_would_leak_gpus_and_starve_volume_mount_pods(stacks):
    # Why the user data is needed: the toolkit's defaults alone.
    rec = stacks["eks-nvidia, v25.3.4 (no CDI)"]
    assert _strategies(rec) == "volume-mounts"
    assert gpus({}, Container(env={"NVIDIA_VISIBLE_DEVICES": "all"})) == ["all"]
    assert gpus({}, allocated("volume-mounts", "GPU-0a1b")) == []


def test_a_baked_image_needs_no_user_data_script(stacks):
    assert _user_data_script(stacks["bake"], "l4") is None
