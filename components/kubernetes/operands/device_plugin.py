"""The NVIDIA device plugin: advertises `nvidia.com/gpu` to the kubelet, with each pool's sharing
configuration (time-slicing replicas, MIG strategy) chosen per node by the
`nvidia.com/device-plugin.config` label through the plugin's own config-manager."""

from __future__ import annotations

import yaml

from components.kubernetes.operands import gpu_access
from components.kubernetes.operands.base import Container, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.sharing import PoolSharing

DEFAULT_CONFIG = "default"
_CONFIG_DIR = "/config"
_AVAILABLE_DIR = "/available-configs"


def plugin_config(sharing: PoolSharing | None) -> str:
    """One device plugin config file (the plugin's `version: v1` format)."""
    document: dict = {"version": "v1", "flags": {"migStrategy": sharing.mig_strategy if sharing else "none"}}
    if sharing and sharing.replicas:
        document["sharing"] = {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": sharing.replicas}]}}
    return yaml.safe_dump(document, sort_keys=False)


def _cdi_env(ctx: OperandContext) -> tuple[tuple[str, str], ...]:
    """With CDI (the release's default from v25.10.0) the plugin hands devices out as CDI names;
    the GPU Operator's transformDevicePluginCtrForCDI (controllers/object_controls.go at v25.10.1,
    gpu-operator-facts.yaml device_plugin_cdi_env). The hook path is the toolkit's install dir, so
    only when the toolkit operand installs it. `ctx.cdi` is the release's matrix `cdi`, true only
    from v25.10.0 (plugin v0.18+): NVIDIA_CDI_HOOK_PATH exists from plugin v0.16.0 (before it,
    NVIDIA_CTK_PATH naming nvidia-ctk; cmd/nvidia-device-plugin/main.go at v0.14.2 and v0.16.1), and
    no release with an older plugin turns CDI on."""
    if not ctx.cdi:
        # A baked toolkit refuses NVIDIA_VISIBLE_DEVICES from unprivileged pods (gpu_access.py), so
        # without CDI the plugin hands devices out as volume mounts, which it accepts.
        return (("DEVICE_LIST_STRATEGY", "volume-mounts"),) if ctx.toolkit_baked else ()
    env = (("CDI_ENABLED", "true"), ("DEVICE_LIST_STRATEGY", "cdi-annotations,cdi-cri"), ("CDI_ANNOTATION_PREFIX", "cdi.k8s.io/"))
    return env if ctx.toolkit_baked else env + (("NVIDIA_CDI_HOOK_PATH", "/usr/local/nvidia/toolkit/nvidia-cdi-hook"),)


def spec(ctx: OperandContext) -> OperandSpec:
    image, sharing = ctx.images["device-plugin"], ctx.sharing
    configs = {DEFAULT_CONFIG: plugin_config(None)}
    configs.update({s.config_name: plugin_config(s) for s in sharing})
    mig = any(s.mig_strategy != "none" for s in sharing)
    # The config-manager picks the file named by the node's label and signals the plugin to reload.
    config_manager = dict(
        image=image,
        command=("config-manager",),
        env=(
            ("NODE_LABEL", "nvidia.com/device-plugin.config"),
            ("CONFIG_FILE_SRCDIR", _AVAILABLE_DIR),
            ("CONFIG_FILE_DST", f"{_CONFIG_DIR}/config.yaml"),
            ("DEFAULT_CONFIG", DEFAULT_CONFIG),
            ("FALLBACK_STRATEGIES", "named,single"),
            ("SEND_SIGNAL", "true"),
            ("SIGNAL", "1"),
            ("PROCESS_TO_SIGNAL", "nvidia-device-plugin"),
        ),
        field_env=(("NODE_NAME", "spec.nodeName"),),
        mounts=(("available-configs", _AVAILABLE_DIR, True), ("config", _CONFIG_DIR, False)),
    )
    return OperandSpec(
        operand="device-plugin",
        reason=(
            "registers nvidia.com/gpu with the kubelet through its device-plugin socket directory "
            "(/var/lib/kubelet/device-plugins, read-write)"
            + ("; writes the CDI specs of the devices it hands out to /var/run/cdi" if ctx.cdi else "")
            + ("; SYS_ADMIN to watch MIG devices' health" if mig else "")
        ),
        init_containers=(
            Container(name="config-manager-init", args=(), **{**config_manager, "env": config_manager["env"] + (("ONESHOT", "true"),)}),
        ),
        containers=(
            Container(
                name="nvidia-device-plugin",
                image=image,
                command=("nvidia-device-plugin",),
                env=(
                    ("CONFIG_FILE", f"{_CONFIG_DIR}/config.yaml"),
                    ("NVIDIA_VISIBLE_DEVICES", "all"),
                    ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
                    ("PASS_DEVICE_SPECS", "true"),
                    ("NVIDIA_MIG_MONITOR_DEVICES", "all" if mig else "none"),
                    *_cdi_env(ctx),
                ),
                host_paths=("device-plugin", *(("cdi-root",) if ctx.cdi else ()), *gpu_access.volumes(ctx)),
                mounts=(("config", _CONFIG_DIR, True),),
                capabilities=("SYS_ADMIN",) if mig else (),
                run_as_root=True,
                requests=("50m", "64Mi"),
                # Every plugin image has a shell: the ubi8/ubi9 CUDA base up to v0.17.x, busybox
                # linked to /bin/sh from v0.18.0 (deployments/container/Dockerfile at v0.18.0, v0.20.0).
                liveness={
                    "exec": {"command": ["sh", "-c", "ls /var/lib/kubelet/device-plugins/nvidia-*.sock"]},
                    "initialDelaySeconds": 30,
                    "periodSeconds": 30,
                },
            ),
            Container(name="config-manager", **config_manager),
        ),
        host_paths=(
            HostPath("device-plugin", "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/device-plugins", False, "Directory"),
            *((HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"),) if ctx.cdi else ()),
            *gpu_access.host_paths(ctx),
        ),
        empty_dirs=("config",),
        config_maps={"available-configs": {name: text for name, text in sorted(configs.items())}},
        # The config-manager reads its own node's labels, nothing else.
        cluster_rules=({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},),
        runtime_class="nvidia",
        share_process_namespace=True,
    )


class DevicePlugin(Operand):
    """`gpu-platform:operands:DevicePlugin`."""
