"""GPU feature discovery: writes the `nvidia.com/gpu.*`, `nvidia.com/cuda.*` and `nvidia.com/mig.*`
labels as an NFD feature file, which the NFD worker publishes. It reads the same per-pool sharing
config as the device plugin (by the `nvidia.com/device-plugin.config` label), so replicas and MIG
strategy show in the labels.

Env and host paths: the GPU Operator's v25.10.1 GFD DaemonSet (gpu-operator-facts.yaml,
per_component.gpu-feature-discovery.v25.10.1): GFD_SLEEP_INTERVAL, GFD_FAIL_ON_INIT_ERROR,
NAMESPACE, NODE_NAME; features.d read-write and /sys read-only.
"""

from __future__ import annotations

from components.kubernetes.operands import device_plugin
from components.kubernetes.operands.base import Container, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext

FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["gpu-feature-discovery"]
    plugin = device_plugin.spec(ctx)
    mig = any(s.mig_strategy != "none" for s in ctx.sharing)
    # The same config-manager as the device plugin's, signalling GFD instead.
    managers = tuple(
        Container(**{**c.__dict__, "image": image, "env": tuple(
            (k, "gpu-feature-discovery" if k == "PROCESS_TO_SIGNAL" else v) for k, v in c.env)})
        for c in (*plugin.init_containers, *plugin.containers) if c.name.startswith("config-manager")
    )
    gfd = Container(
        name="gpu-feature-discovery",
        image=image,
        command=("gpu-feature-discovery",),
        env=(
            ("GFD_SLEEP_INTERVAL", "60s"),
            ("GFD_FAIL_ON_INIT_ERROR", "true"),
            ("CONFIG_FILE", "/config/config.yaml"),
            ("NVIDIA_VISIBLE_DEVICES", "all"),
            ("NVIDIA_DRIVER_CAPABILITIES", "compute,utility"),
        ),
        field_env=(("NAMESPACE", "metadata.namespace"), ("NODE_NAME", "spec.nodeName")),
        host_paths=("output-dir", "host-sys"),
        mounts=(("config", "/config", True),),
        capabilities=("SYS_ADMIN",) if mig else (),
        run_as_root=True,
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
        ),
        empty_dirs=("config",),
        config_maps=plugin.config_maps,
        cluster_rules=plugin.cluster_rules,
        runtime_class="nvidia",
        share_process_namespace=True,
    )


class GpuFeatureDiscovery(Operand):
    """`gpu-platform:operands:GpuFeatureDiscovery`."""
