"""The NVIDIA device plugin: advertises `nvidia.com/gpu` to the kubelet, with each pool's sharing
configuration (time-slicing replicas, MIG strategy) chosen per node by the
`nvidia.com/device-plugin.config` label through the plugin's own config-manager.

What the image needs from this DaemonSet, clause by clause with upstream sources, is
components/kubernetes/operands/device_plugin/contract.yaml; the notes here say only why we chose what we did.
"""

from __future__ import annotations

import yaml

from components.kubernetes.operands import gpu_access, mig_access
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.sharing import PoolSharing
from components.kubernetes.operands.spec import Container, HostPath, OperandSpec
from components.kubernetes.operands.version_table import image_version
from gpu_platform.catalog import versions
from gpu_platform.config import ConfigError

DEFAULT_CONFIG = "default"
_CONFIG_DIR = "/config"
_AVAILABLE_DIR = "/available-configs"
# The GPU Operator's pod label for the plugin, which the MIG manager waits for and restarts the plugin
# by (mig-parted v0.5.5 deployments/gpu-operator/reconfigure-mig.sh line 449; v0.15.0
# pkg/mig/reconfigure/reconfigure.go line 393).
APP_LABEL = "nvidia-device-plugin-daemonset"
# The driver is always on the host (a baked or AWS image), so the plugin finds it under the host's
# root, mounted read-only where DRIVER_ROOT_CTR_PATH points: what the operator's validator writes to
# driver-ready for a host driver (gpu-operator v25.10.1 cmd/nvidia-validator/driver.go lines 41-51).
HOST_ROOT = HostPath("host-root", "/", "/host", True, "Directory")
# NVIDIA_CDI_HOOK_PATH and DRIVER_ROOT_CTR_PATH are the plugin's names from v0.16.0 (before it,
# NVIDIA_CTK_PATH naming nvidia-ctk itself, and CONTAINER_DRIVER_ROOT; cmd/nvidia-device-plugin/main.go
# at v0.15.0 and v0.16.1). Every release that turns CDI on ships v0.18 or later.
CDI_SINCE = "0.16.0"
# Where the hook the CDI spec names is on the host: the toolkit package's /usr/bin/nvidia-cdi-hook
# (nvidia-container-toolkit packaging/rpm/SPECS/nvidia-container-toolkit.spec lines 46, 117 at v1.18.1,
# the binary the vendored generator defaults to: internal/discover/hooks.go line 51), the same the
# MIG manager names; or the toolkit operand's install directory (the operator's
# transformDevicePluginCtrForCDI, controllers/object_controls.go lines 1455-1463 at v25.10.1).
BAKED_CDI_HOOK = "/usr/bin/nvidia-cdi-hook"
OPERAND_CDI_HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"


def plugin_config(sharing: PoolSharing | None) -> str:
    """One device plugin config file (the plugin's `version: v1` format)."""
    document: dict = {"version": "v1", "flags": {"migStrategy": sharing.mig_strategy if sharing else "none"}}
    if sharing and sharing.replicas:
        document["sharing"] = {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": sharing.replicas}]}}
    return yaml.safe_dump(document, sort_keys=False)


def _cdi_env(ctx: OperandContext, image: str) -> tuple[tuple[str, str], ...]:
    """With CDI (the release's default from v25.10.0) the plugin hands devices out as CDI names and
    writes their spec at every start from the driver it finds under DRIVER_ROOT_CTR_PATH. Both CDI
    strategies, as the operator sets them: cdi-cri for a containerd that resolves CDI devices, and
    cdi-annotations for the NVIDIA runtime, which reads `cdi.k8s.io/` annotations by default
    (nvidia-container-toolkit internal/config/config.go line 127 at v1.18.1). The plugin reads no
    CDI_ENABLED (no such flag at v0.14.2..v0.20.0): the strategy is the switch. GDRCopy, GDS and
    MOFED specs stay off as in every other version: v0.19.0-v0.19.2 turned them on by default and
    v0.19.3 reverted that (k8s-device-plugin commit 2ffedc34b); none of them is on our nodes."""
    if not ctx.cdi:
        # Every GPU node refuses NVIDIA_VISIBLE_DEVICES from unprivileged pods and accepts volume
        # mounts, baked image or toolkit DaemonSet (gpu_access.py), so without CDI the plugin hands
        # devices out as volume mounts: with its default (envvar) a pod would get no GPU.
        return (("DEVICE_LIST_STRATEGY", "volume-mounts"),)
    version = image_version(image)
    if not versions.at_least(version, CDI_SINCE):
        raise ConfigError(
            f"gpu-platform:operator.overrides: device-plugin: {image!r} (version {version}) with CDI on: the "
            f"plugin names its CDI settings as this platform renders them from {CDI_SINCE} (valid: {CDI_SINCE} or later)"
        )
    return (
        ("DEVICE_LIST_STRATEGY", "cdi-annotations,cdi-cri"),
        ("CDI_ANNOTATION_PREFIX", "cdi.k8s.io/"),
        ("NVIDIA_CDI_HOOK_PATH", BAKED_CDI_HOOK if ctx.toolkit_baked else OPERAND_CDI_HOOK),
        ("NVIDIA_DRIVER_ROOT", "/"),
        ("DRIVER_ROOT_CTR_PATH", HOST_ROOT.mount),
        ("GDRCOPY_ENABLED", "false"),
        ("GDS_ENABLED", "false"),
        ("MOFED_ENABLED", "false"),
    )


def _config_manager(image: str, name: str, process: str, init: bool) -> Container:
    """config-manager links the config file named by the node's label and, as a sidecar, signals the
    process to reload it: SIGHUP (SIGNAL=1) to the process whose argv[0] is PROCESS_TO_SIGNAL in the
    pod's shared PID namespace (cmd/config-manager/main.go lines 433-459 at v0.18.1). kill(2) lets a
    sender signal a process of its own UID with no capability, and the processes it signals run as
    root (the kubelet's socket directory and the GPU device nodes are root's), so the sidecar runs as
    root with every capability dropped: CAP_KILL would add nothing but the right to signal other UIDs.
    The init container runs before anything it could signal: ONESHOT with SEND_SIGNAL=false, as
    upstream (else it exits 1 on 'no process found'), and as the default non-root user: it only
    writes the link into the emptyDir."""
    signal = (
        (("SEND_SIGNAL", "false"), ("SIGNAL", ""), ("PROCESS_TO_SIGNAL", ""), ("ONESHOT", "true"))
        if init
        else (("SEND_SIGNAL", "true"), ("SIGNAL", "1"), ("PROCESS_TO_SIGNAL", process))
    )
    return Container(
        name=name,
        image=image,
        command=("config-manager",),
        env=(
            ("NODE_LABEL", "nvidia.com/device-plugin.config"),
            ("CONFIG_FILE_SRCDIR", _AVAILABLE_DIR),
            ("CONFIG_FILE_DST", f"{_CONFIG_DIR}/config.yaml"),
            ("DEFAULT_CONFIG", DEFAULT_CONFIG),
            ("FALLBACK_STRATEGIES", "named,single"),
            *signal,
        ),
        field_env=(("NODE_NAME", "spec.nodeName"),),
        mounts=(("available-configs", _AVAILABLE_DIR, True), ("config", _CONFIG_DIR, False)),
        run_as_root=not init,
        # It lists and watches its node: the pod's API token is mounted in it alone.
        api_token=True,
    )


def config_managers(image: str, process: str) -> tuple[Container, Container]:
    """The init container and the sidecar, for a pod whose `process` reads the linked config."""
    return (
        _config_manager(image, "config-manager-init", process, init=True),
        _config_manager(image, "config-manager", process, init=False),
    )


# What a reader of the linked config mounts: the link's directory, and the ConfigMap the link points
# into (the link is followed inside the reader's own mount namespace).
CONFIG_MOUNTS = (("config", _CONFIG_DIR, True), ("available-configs", _AVAILABLE_DIR, True))
CONFIG_FILE = f"{_CONFIG_DIR}/config.yaml"
# config-manager lists and watches its own node (a field selector on metadata.name), nothing else
# (cmd/config-manager/main.go lines 256-293 at v0.18.1).
CONFIG_MANAGER_RULES = ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},)


def available_configs(ctx: OperandContext) -> dict[str, dict[str, str]]:
    """The ConfigMap of every pool's config, as `OperandSpec.config_maps`: the pod template's config
    hash covers it, so a change of content (replicas) rolls the pods; config-manager alone would
    never notice it, as the link it watches does not change."""
    configs = {DEFAULT_CONFIG: plugin_config(None)}
    configs.update({s.config_name: plugin_config(s) for s in ctx.sharing})
    return {"available-configs": dict(sorted(configs.items()))}


def spec(ctx: OperandContext) -> OperandSpec:
    """One DaemonSet for pools without MIG and, on a stack with MIG pools, one for those (mig_access)."""
    return mig_access.by_pool(ctx, lambda mig: _spec(ctx, mig), advertises=True)


def _spec(ctx: OperandContext, mig: bool) -> OperandSpec:
    """The plugin for MIG pools (`mig`) or the others."""
    image = ctx.images["device-plugin"]
    privileged = mig and mig_access.privileged(ctx)
    init, manager = config_managers(image, "nvidia-device-plugin")
    return OperandSpec(
        operand="device-plugin",
        reason=(
            "registers nvidia.com/gpu with the kubelet through its device-plugin socket directory "
            "(/var/lib/kubelet/device-plugins, read-write)"
            + (
                "; writes the CDI specs of the devices it hands out to /var/run/cdi, generated from the "
                "host's driver under / (read-only)"
                if ctx.cdi
                else ""
            )
            + (
                "; " + mig_access.reason(ctx, "to list MIG devices and watch their health")
                if privileged
                else "; SYS_ADMIN to watch MIG devices' health"
                if mig
                else ""
            )
        ),
        init_containers=(init,),
        containers=(
            Container(
                name="nvidia-device-plugin",
                image=image,
                command=("nvidia-device-plugin",),
                env=(
                    ("CONFIG_FILE", CONFIG_FILE),
                    ("NVIDIA_VISIBLE_DEVICES", "all"),
                    ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
                    ("PASS_DEVICE_SPECS", "true"),
                    ("NVIDIA_MIG_MONITOR_DEVICES", "all" if mig else "none"),
                    *_cdi_env(ctx, image),
                ),
                host_paths=(
                    "device-plugin",
                    *(("cdi-root", HOST_ROOT.volume) if ctx.cdi else ()),
                    *gpu_access.volumes(),
                ),
                mounts=CONFIG_MOUNTS,
                privileged=privileged,
                capabilities=("SYS_ADMIN",) if mig and not privileged else (),
                run_as_root=True,
                requests=("50m", "64Mi"),
                # No probe: the plugin has no health endpoint, and on a node with nothing to advertise
                # it runs healthy without a socket ('No devices found. Waiting indefinitely.',
                # cmd/nvidia-device-plugin/main.go lines 372-394 at v0.18.1); device health goes to
                # the kubelet per device. Upstream's chart and the operator define none.
            ),
            manager,
        ),
        host_paths=(
            HostPath(
                "device-plugin",
                "/var/lib/kubelet/device-plugins",
                "/var/lib/kubelet/device-plugins",
                False,
                "Directory",
            ),
            *(
                (HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"), HOST_ROOT)
                if ctx.cdi
                else ()
            ),
            *gpu_access.host_paths(),
        ),
        empty_dirs=("config",),
        config_maps=available_configs(ctx),
        cluster_rules=CONFIG_MANAGER_RULES,
        runtime_class="nvidia",
        # config-manager finds and signals the plugin through /proc of one PID namespace.
        share_process_namespace=True,
        app_label=APP_LABEL,
    )


class DevicePlugin(Operand):
    """`gpu-platform:operands:DevicePlugin`."""
