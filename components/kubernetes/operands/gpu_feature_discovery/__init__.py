"""GPU feature discovery: the `nvidia.com/gpu.*`, `nvidia.com/cuda.*` and `nvidia.com/mig.*` labels,
published through NFD. Up to v0.18 it writes them as an NFD feature file, which the NFD worker reads;
from v0.19 (USE_NODE_FEATURE_API on by default) as its own NodeFeature object, which the NFD master
reads. It reads the same per-pool sharing config as the device plugin (by the
`nvidia.com/device-plugin.config` label), so replicas and MIG strategy show in the labels.

Env and host paths: the GPU Operator's v25.10.1 GFD DaemonSet (gpu-operator-facts.yaml,
per_component.gpu-feature-discovery.v25.10.1): GFD_SLEEP_INTERVAL, GFD_FAIL_ON_INIT_ERROR,
NAMESPACE, NODE_NAME; features.d read-write and /sys read-only (/sys covers the DMI product name
that GFD v0.8.x reads from /sys/class/dmi/id, the only host path the v23.9.2 DaemonSet mounts).
What the image needs, clause by clause with upstream sources: contract.yaml beside this module.

What changes with the image is in `IMAGES`, chosen by the image tag's version.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.kubernetes.operands import device_plugin, gpu_access, mig_access
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import Container, HostPath, OperandSpec
from components.kubernetes.operands.version_table import for_version

FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"
# The GPU Operator's pod label for GFD, which the MIG manager waits for and restarts GFD by
# (mig-parted v0.5.5 deployments/gpu-operator/reconfigure-mig.sh line 456; v0.15.0
# pkg/mig/reconfigure/reconfigure.go line 398).
APP_LABEL = "gpu-feature-discovery"
# In NodeFeature API mode GFD gets, creates and updates NodeFeature nvidia-features-for-<node> in
# NAMESPACE (internal/lm/output.go lines 115-166 at v0.20.0), and reads its own pod (POD_NAME) to
# make its DaemonSet the NodeFeature's owner (lines 174-218), so the labels go when GFD does. The
# object's name is per node, so the rule cannot name it; a pod's name is random, likewise.
NODE_FEATURE_RULES = (
    {"apiGroups": ["nfd.k8s-sigs.io"], "resources": ["nodefeatures"], "verbs": ["get", "create", "update"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
)


@dataclass(frozen=True)
class GfdImage:
    since: str  # first GFD version (image tag) this row describes
    repository: str  # where the release's values.yaml takes the image from
    # argv[0] of the GFD process: config-manager finds the process to signal by an exact match
    # of cmdline[0] (k8s-device-plugin cmd/config-manager/main.go at v0.14.2 and v0.20.0).
    binary: str
    ships_config_manager: bool  # else config-manager runs from the device plugin's image
    # Labels go out as a NodeFeature object (USE_NODE_FEATURE_API's default), not a features.d file.
    node_feature_api: bool
    source: str


IMAGES: tuple[GfdImage, ...] = (
    # Operator 23.9.x: its own repository and binary; the image holds only gpu-feature-discovery
    # (ENTRYPOINT /usr/bin/gpu-feature-discovery), so the operator runs config-manager from the
    # device plugin's image and signals "/usr/bin/gpu-feature-discovery".
    GfdImage(
        "0.8.0",
        "nvcr.io/nvidia/gpu-feature-discovery",
        "/usr/bin/gpu-feature-discovery",
        False,
        False,
        "NVIDIA/gpu-feature-discovery deployments/container/Dockerfile.ubi8 at v0.8.2; NVIDIA/gpu-operator "
        "assets/gpu-feature-discovery/0500_daemonset.yaml and controllers/object_controls.go "
        "(config-manager image = DevicePlugin image) at v23.9.2",
    ),
    # Operator 24.3.0 on: the k8s-device-plugin image, which carries gpu-feature-discovery and
    # config-manager in /usr/bin.
    GfdImage(
        "0.15.0",
        "nvcr.io/nvidia/k8s-device-plugin",
        "gpu-feature-discovery",
        True,
        False,
        "NVIDIA/k8s-device-plugin deployments/container/Dockerfile* at v0.15.0..v0.20.0; NVIDIA/gpu-operator "
        "assets/gpu-feature-discovery/0500_daemonset.yaml at v24.3.0..v26.7.0",
    ),
    # USE_NODE_FEATURE_API defaults to true (cmd/gpu-feature-discovery/main.go lines 100-105 at
    # v0.19.0 and v0.20.0); the operator leaves it so off OpenShift (controllers/object_controls.go
    # lines 947-951 at v26.7.0).
    GfdImage(
        "0.19.0",
        "nvcr.io/nvidia/k8s-device-plugin",
        "gpu-feature-discovery",
        True,
        True,
        "NVIDIA/k8s-device-plugin cmd/gpu-feature-discovery/main.go and internal/lm/output.go at v0.19.0..v0.20.0",
    ),
)


def image_traits(image: str) -> GfdImage:
    return for_version(image, IMAGES)


def spec(ctx: OperandContext) -> OperandSpec:
    """One DaemonSet for pools without MIG and, on a stack with MIG pools, one for those (mig_access)."""
    return mig_access.by_pool(ctx, lambda mig: _spec(ctx, mig))


def _spec(ctx: OperandContext, mig: bool) -> OperandSpec:
    """GFD for MIG pools (`mig`) or the others."""
    image = ctx.images["gpu-feature-discovery"]
    traits = image_traits(image)
    manager_image = image if traits.ships_config_manager else ctx.images["device-plugin"]
    privileged = mig and mig_access.privileged(ctx)
    # The same config-manager as the device plugin's, signalling GFD instead.
    init, manager = device_plugin.config_managers(manager_image, traits.binary)
    api = traits.node_feature_api
    gfd = Container(
        name="gpu-feature-discovery",
        image=image,
        command=(traits.binary,),
        env=(
            ("GFD_SLEEP_INTERVAL", "60s"),
            ("GFD_FAIL_ON_INIT_ERROR", "true"),
            ("CONFIG_FILE", device_plugin.CONFIG_FILE),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
            # What asks the runtime for MIG's capability devices, as the operator sets it on GFD
            # (controllers/object_controls.go:959, 2611-2622 at v25.10.1); see mig_access.
            *((("NVIDIA_MIG_MONITOR_DEVICES", "all"),) if mig else ()),
        ),
        field_env=(
            ("NAMESPACE", "metadata.namespace"),
            ("NODE_NAME", "spec.nodeName"),
            *((("POD_NAME", "metadata.name"),) if api else ()),
        ),
        host_paths=(*(() if api else ("output-dir",)), "host-sys", *gpu_access.volumes()),
        mounts=device_plugin.CONFIG_MOUNTS,
        privileged=privileged,
        capabilities=("SYS_ADMIN",) if mig and not privileged else (),
        run_as_root=True,
        api_token=api,  # it publishes its NodeFeature object itself from v0.19
        # No probe: GFD has no health endpoint, and the feature file exists only in file mode (never
        # from v0.19 on, the NodeFeature API being the default) and until GFD exits; upstream's chart
        # and the operator define none.
    )
    return OperandSpec(
        operand="gpu-feature-discovery",
        reason=(
            (
                "publishes GPU labels as its node's NodeFeature object"
                if api
                else "writes GPU labels as an NFD feature file in " + FEATURES_D + " (read-write)"
            )
            + " and reads PCI/DMI data from /sys (read-only)"
            + (
                "; " + mig_access.reason(ctx, "to label MIG devices")
                if privileged
                else "; SYS_ADMIN to read MIG devices through NVML"
                if mig
                else ""
            )
        ),
        init_containers=(init,),
        containers=(gfd, manager),
        host_paths=(
            *(() if api else (HostPath("output-dir", FEATURES_D, FEATURES_D, False, "DirectoryOrCreate"),)),
            HostPath("host-sys", "/sys", "/sys", True, "Directory"),
            *gpu_access.host_paths(),
        ),
        empty_dirs=("config",),
        config_maps=device_plugin.available_configs(ctx),
        cluster_rules=device_plugin.CONFIG_MANAGER_RULES,
        namespace_rules=NODE_FEATURE_RULES if api else (),
        runtime_class="nvidia",
        # config-manager finds and signals GFD through /proc of one PID namespace.
        share_process_namespace=True,
        app_label=APP_LABEL,
    )


class GpuFeatureDiscovery(Operand):
    """`gpu-platform:operands:GpuFeatureDiscovery`."""
