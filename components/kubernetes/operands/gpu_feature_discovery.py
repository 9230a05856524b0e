"""GPU feature discovery: writes the `nvidia.com/gpu.*`, `nvidia.com/cuda.*` and `nvidia.com/mig.*`
labels as an NFD feature file, which the NFD worker publishes. It reads the same per-pool sharing
config as the device plugin (by the `nvidia.com/device-plugin.config` label), so replicas and MIG
strategy show in the labels.

Env and host paths: the GPU Operator's v25.10.1 GFD DaemonSet (gpu-operator-facts.yaml,
per_component.gpu-feature-discovery.v25.10.1): GFD_SLEEP_INTERVAL, GFD_FAIL_ON_INIT_ERROR,
NAMESPACE, NODE_NAME; features.d read-write and /sys read-only (/sys covers the DMI product name
that GFD v0.8.x reads from /sys/class/dmi/id, the only host path the v23.9.2 DaemonSet mounts).

What changes with the image is in `IMAGES`, chosen by the image tag's version.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.kubernetes.operands import device_plugin, gpu_access
from components.kubernetes.operands.base import Container, HostPath, Operand, OperandSpec, for_version
from components.kubernetes.operands.context import OperandContext

FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"


@dataclass(frozen=True)
class GfdImage:
    since: str  # first GFD version (image tag) this row describes
    repository: str  # where the release's values.yaml takes the image from
    # argv[0] of the GFD process: config-manager finds the process to signal by an exact match
    # of cmdline[0] (k8s-device-plugin cmd/config-manager/main.go at v0.14.2 and v0.20.0).
    binary: str
    ships_config_manager: bool  # else config-manager runs from the device plugin's image
    source: str


IMAGES: tuple[GfdImage, ...] = (
    # Operator 23.9.x: its own repository and binary; the image holds only gpu-feature-discovery
    # (ENTRYPOINT /usr/bin/gpu-feature-discovery), so the operator runs config-manager from the
    # device plugin's image and signals "/usr/bin/gpu-feature-discovery".
    GfdImage("0.8.0", "nvcr.io/nvidia/gpu-feature-discovery", "/usr/bin/gpu-feature-discovery", False,
             "NVIDIA/gpu-feature-discovery deployments/container/Dockerfile.ubi8 at v0.8.2; NVIDIA/gpu-operator "
             "assets/gpu-feature-discovery/0500_daemonset.yaml and controllers/object_controls.go "
             "(config-manager image = DevicePlugin image) at v23.9.2"),
    # Operator 24.3.0 on: the k8s-device-plugin image, which carries gpu-feature-discovery and
    # config-manager in /usr/bin.
    GfdImage("0.15.0", "nvcr.io/nvidia/k8s-device-plugin", "gpu-feature-discovery", True,
             "NVIDIA/k8s-device-plugin deployments/container/Dockerfile* at v0.15.0..v0.20.0; NVIDIA/gpu-operator "
             "assets/gpu-feature-discovery/0500_daemonset.yaml at v24.3.0..v26.7.0"),
)


def image_traits(image: str) -> GfdImage:
    return for_version(image, IMAGES)


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["gpu-feature-discovery"]
    traits = image_traits(image)
    manager_image = image if traits.ships_config_manager else ctx.images["device-plugin"]
    plugin = device_plugin.spec(ctx)
    mig = any(s.mig_strategy != "none" for s in ctx.sharing)
    # The same config-manager as the device plugin's, signalling GFD instead.
    managers = tuple(
        Container(**{**c.__dict__, "image": manager_image, "env": tuple(
            (k, traits.binary if k == "PROCESS_TO_SIGNAL" else v) for k, v in c.env)})
        for c in (*plugin.init_containers, *plugin.containers) if c.name.startswith("config-manager")
    )
    gfd = Container(
        name="gpu-feature-discovery",
        image=image,
        command=(traits.binary,),
        env=(
            ("GFD_SLEEP_INTERVAL", "60s"),
            ("GFD_FAIL_ON_INIT_ERROR", "true"),
            ("CONFIG_FILE", "/config/config.yaml"),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
        ),
        field_env=(("NAMESPACE", "metadata.namespace"), ("NODE_NAME", "spec.nodeName")),
        host_paths=("output-dir", "host-sys", *gpu_access.volumes(ctx)),
        mounts=(("config", "/config", True),),
        capabilities=("SYS_ADMIN",) if mig else (),
        run_as_root=True,
        # Every GFD image has a shell: the ubi8 CUDA base (v0.8.x, plugin v0.15..v0.17) or busybox
        # linked to /bin/sh (plugin v0.18 on, deployments/container/Dockerfile).
        liveness={"exec": {"command": ["sh", "-c", f"ls {FEATURES_D}/gfd"]}, "initialDelaySeconds": 120, "periodSeconds": 60},
    )
    return OperandSpec(
        operand="gpu-feature-discovery",
        reason=(
            "writes GPU labels as an NFD feature file in " + FEATURES_D + " (read-write) and reads "
            "PCI/DMI data from /sys (read-only)" + ("; SYS_ADMIN to read MIG devices through NVML" if mig else "")
        ),
        init_containers=tuple(c for c in managers if c.name == "config-manager-init"),
        containers=(gfd, *(c for c in managers if c.name == "config-manager")),
        host_paths=(
            HostPath("output-dir", FEATURES_D, FEATURES_D, False, "DirectoryOrCreate"),
            HostPath("host-sys", "/sys", "/sys", True, "Directory"),
            *gpu_access.host_paths(ctx),
        ),
        empty_dirs=("config",),
        config_maps=plugin.config_maps,
        cluster_rules=plugin.cluster_rules,
        runtime_class="nvidia",
        share_process_namespace=True,
    )


class GpuFeatureDiscovery(Operand):
    """`gpu-platform:operands:GpuFeatureDiscovery`."""
