"""The MIG manager: applies the named MIG configuration the node's `nvidia.com/mig.config` label
asks for, from a mig-parted config map that holds each MIG pool's configuration (and
`all-disabled`, the manager's fallback). Only configurations that exist for the pool's GPU reach the
map, so a profile the GPU cannot carve never reaches a node.

Env and host paths: the GPU Operator's v25.10.1 DaemonSet (gpu-operator-facts.yaml,
per_component.mig-manager.v25.10.1). Privileged with hostPID: it resets GPUs and stops and restarts
host services that hold them (through the host root).

The driver is on the host: the operator's entrypoint (assets/state-mig-manager/0420_configmap.yaml,
v23.9.0 .. v26.7.0) exports driver root `/`, seen in the container at `/host`, when the validator
found a host driver; without it the manager looks for a driver container's root in
/run/nvidia/driver (DefaultDriverRoot, NVIDIA/mig-parted). We run the image's own entrypoint
(`nvidia-mig-manager` in every image v0.5.5 .. v0.15.0) with those values as env, so no shell is
needed in the v0.13+ distroless images. With CDI the manager regenerates the CDI specs after
repartitioning (CDI_ENABLED, and the hook path, like the operator's TransformMIGManager at
v25.10.1). `CONFIG_FILE` stays set at every version: v0.15.0 generates a configuration from the
hardware only when it is unset (cmd/nvidia-mig-manager/main.go setupMigConfig; the operator sets
it for a custom config, object_controls.go at v26.7.0). What changes with the image is in `IMAGES`.

Before repartitioning the manager pauses the GPU clients' gates, waits for their pods to leave by the
operator's `app=` labels in DEFAULT_GPU_CLIENTS_NAMESPACE (ours, from the downward API), and
afterwards deletes the validator's pod so its checks run again (mig-parted v0.13.1
pkg/mig/reconfigure/reconfigure.go:379-410, 604-622): the operands carry those labels. For the host
driver it also stops the host's GPU client services (WITH_SHUTDOWN_HOST_GPU_CLIENTS, as the
operator's entrypoint does for a host driver). It writes no readiness marker and has no probe
(upstream defines none); it reports through the node label nvidia.com/mig.config.state.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import yaml

from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.spec import VALIDATIONS_DIR, Container, HostPath, OperandSpec
from components.kubernetes.operands.version_table import for_version
from gpu_platform.catalog import matrix
from gpu_platform.config import ConfigError

HOST_ROOT = "/host"
# Where the toolkit package puts the hook on a node image that bakes it; the toolkit operand
# installs it under its install dir instead (the operator's toolkit.installDir + toolkit/).
_BAKED_CDI_HOOK = "/usr/bin/nvidia-cdi-hook"
_OPERAND_CDI_HOOK = "/usr/local/nvidia/toolkit/nvidia-cdi-hook"


@dataclass(frozen=True)
class MigManagerImage:
    since: str  # first k8s-mig-manager version this row describes
    driver_root_env: str  # the driver root's env name (the older name stays an alias)
    cdi_hook_env: str | None  # None: the image generates CDI specs with nvidia-ctk's default hook
    # NVIDIA_DEV_ROOT / DEV_ROOT_CTR_PATH exist (v0.8.0 on). From v0.13.0 nothing defaults them to
    # the driver root: unset, the CDI step creates device nodes and specs against the container's
    # own /dev (mig-parted v0.13.1 cmd/nvidia-mig-manager/main.go:240-255, reconfigure.go:624-698).
    dev_root_env: bool
    # Waits for every DaemonSet pod on its node that selects on nvidia.com/gpu.deploy.client, listed
    # in all namespaces (mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go:412-415, 648-672).
    lists_pods_cluster_wide: bool
    source: str


IMAGES: tuple[MigManagerImage, ...] = (
    MigManagerImage(
        "0.5.0",
        "DRIVER_ROOT",
        None,
        False,
        False,
        "NVIDIA/mig-parted deployments/gpu-operator/main.go at v0.5.5, cmd/nvidia-mig-manager/main.go at v0.6.0, v0.7.0",
    ),
    MigManagerImage(
        "0.8.0",
        "NVIDIA_DRIVER_ROOT",
        "NVIDIA_CDI_HOOK_PATH",
        True,
        False,
        "NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go at v0.8.0 .. v0.14.2",
    ),
    MigManagerImage(
        "0.15.0",
        "NVIDIA_DRIVER_ROOT",
        "NVIDIA_CDI_HOOK_PATH",
        True,
        True,
        "NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go, pkg/mig/reconfigure/reconfigure.go at v0.15.0",
    ),
)


def image_traits(image: str) -> MigManagerImage:
    return for_version(image, IMAGES)


def _cdi_env(ctx: OperandContext, traits: MigManagerImage) -> tuple[tuple[str, str], ...]:
    if not ctx.cdi:
        return ()
    hook = (
        ()
        if traits.cdi_hook_env is None
        else ((traits.cdi_hook_env, _BAKED_CDI_HOOK if ctx.toolkit_baked else _OPERAND_CDI_HOOK),)
    )
    # The device nodes are the host's, seen at the host root: what the validator's driver-ready
    # carries for a host driver (gpu-operator v25.10.1 cmd/nvidia-validator/driver.go:41-51).
    dev_root = (("NVIDIA_DEV_ROOT", "/"), ("DEV_ROOT_CTR_PATH", HOST_ROOT)) if traits.dev_root_env else ()
    return (("CDI_ENABLED", "true"), *hook, *dev_root)


def _entry(config: str, profiles: Mapping[str, int]) -> list:
    # mig-parted requires mig-devices wherever mig-enabled is true, {} for all-enabled (its
    # config-default.yaml at v0.13.1 spells it so).
    if config == "all-disabled":
        return [{"devices": "all", "mig-enabled": False}]
    return [{"devices": "all", "mig-enabled": True, "mig-devices": dict(profiles)}]


def mig_parted_config(pools: tuple[MigPool, ...]) -> str:
    gpus = matrix.load().gpus
    configs: dict[str, list] = {"all-disabled": _entry("all-disabled", {})}
    for pool in pools:
        if not pool.exists:
            continue
        entry = _entry(pool.config, pool.profiles)
        if configs.get(pool.config, entry) != entry:
            # One name, two carvings (two GPU models): mig-parted would need PCI device filters.
            first = next(p for p in pools if p.config == pool.config)

            # What pool.pool could take instead: a layout of its GPU that no other pool's GPU carves otherwise.
            def carving(gpu: str) -> dict[str, dict[str, int]]:
                mig = gpus[gpu].mig if gpu in gpus else None
                return mig.serving_configs() if mig else {}

            theirs = [carving(p.gpu) for p in pools if p.gpu != pool.gpu]
            valid = sorted(
                n for n, layout in carving(pool.gpu).items() if all(o.get(n, layout) == layout for o in theirs)
            )
            raise ConfigError(
                f"gpu-platform:nodePools: MIG configuration {pool.config!r} carves {first.gpu} in pool "
                f"{first.pool!r} and {pool.gpu} in pool {pool.pool!r} differently, and the MIG manager's map "
                f"holds one carving per name: give pool {pool.pool!r} another mig.config (valid: {', '.join(valid)})"
            )
        configs[pool.config] = entry
    # Every other layout of each MIG pool's GPU too, as the GPU Operator's default config holds them: a
    # layout change rolls the pool before this config map changes (the manager waits for the pools), and
    # a node that boots with a name the file lacks is left uncarved, state failed (mig-parted v0.13.1
    # pkg/mig/reconfigure/reconfigure.go:135-138). A name two GPUs carve differently is left out.
    others: dict[str, list] = {}
    clashes = set()
    for pool in pools:
        mig = gpus[pool.gpu].mig if pool.exists and pool.gpu in gpus else None
        for name, layout in (mig.configs() if mig else {}).items():
            entry = _entry(name, layout)
            if name not in configs and others.setdefault(name, entry) != entry:
                clashes.add(name)
    configs.update({name: entry for name, entry in others.items() if name not in clashes})
    return yaml.safe_dump({"version": "v1", "mig-configs": dict(sorted(configs.items()))}, sort_keys=False)


# Host services the manager stops (when active) before repartitioning and starts again after; the
# kubelet is added while a MIG mode changes. The GPU Operator's default-gpu-clients list
# (gpu-operator v25.10.1 assets/state-mig-manager/0410_configmap.yaml:7-18), so a node where someone
# runs DCGM or NVSM on the host is covered too. nvidia-persistenced and nvidia-fabricmanager (which
# the node image runs) are left running, as upstream leaves them: mig-parted's own systemd unit
# starts after both (mig-parted v0.13.1 deployments/systemd/nvidia-mig-manager.service:18) and its
# hooks stop only nvsm, dcgm, nvidia-dcgm, dcgm-exporter and kubelet (deployments/systemd/hooks.sh:21-30);
# without the fabric manager an NVSwitch node's GPUs cannot run work at all.
HOST_GPU_CLIENTS = (
    "nvsm.service",
    "nvsm-mqtt.service",
    "nvsm-core.service",
    "nvsm-api-gateway.service",
    "nvsm-notifier.service",
    "nv_peer_mem.service",
    "nvidia-dcgm.service",
    "dcgm.service",
    "dcgm-exporter.service",
)
GPU_CLIENTS = yaml.safe_dump({"version": "v1", "systemd-services": list(HOST_GPU_CLIENTS)}, sort_keys=False)
# With host clients shut down, the manager copies nvidia-mig-parted and the config here (under the
# host root, HOST_NVIDIA_DIR /usr/local/nvidia + mig-manager/) and runs it chrooted in the host
# (mig-parted v0.13.1 cmd/nvidia-mig-manager/main.go:407-414, 455-482; v0.12.3
# deployments/container/reconfigure-mig.sh:184-191): the one host directory it writes.
HOST_MIG_PARTED_DIR = "/usr/local/nvidia/mig-manager"
# Why the host root can be read-only where upstream mounts it read-write: the audit reason's own words,
# with their sources (checked by reading them, not on a node).
HOST_ROOT_READ_ONLY = (
    "host root read-only where upstream's is read-write (gpu-operator v25.10.1 assets/state-mig-manager/"
    "0600_daemonset.yaml:71-73, 101-103): mig-parted v0.13.1 writes there only its copy in "
    f"{HOST_MIG_PARTED_DIR} (a read-write mount of its own; cmd/nvidia-mig-manager/main.go:458-482), the "
    "systemd drop-in nvidia-mig-manager.service.d/override.conf only if it exists "
    "(pkg/mig/reconfigure/reconfigure.go:301-329; neither the EKS AMI nor the bake installs one) and device nodes "
    "in /host/dev (`chroot /host nvidia-smi`, nvidia-ctk create-device-nodes: reconfigure.go:472-479, 624-630); "
    "/host/dev and /host/run (the D-Bus socket) are submounts, which the runtime's non-recursive read-only bind "
    "leaves writable (containerd v2.2.4 internal/cri/opts/spec_linux_opts.go:153, 181-194)"
)


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["mig-manager"]
    traits = image_traits(image)
    manager = Container(
        name="nvidia-mig-manager",
        image=image,
        env=(
            ("CONFIG_FILE", "/mig-parted-config/config.yaml"),
            ("GPU_CLIENTS_FILE", "/gpu-clients/clients.yaml"),
            # The driver is on the host: the operator's entrypoint sets this to IS_HOST_DRIVER
            # (gpu-operator v25.10.1 assets/state-mig-manager/0420_configmap.yaml:22-24).
            ("WITH_SHUTDOWN_HOST_GPU_CLIENTS", "true"),
            ("WITH_REBOOT", "false"),
            (traits.driver_root_env, "/"),
            ("DRIVER_ROOT_CTR_PATH", HOST_ROOT),
            *_cdi_env(ctx, traits),
        ),
        field_env=(("NODE_NAME", "spec.nodeName"), ("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace")),
        host_paths=(
            "host-sys",
            "run-nvidia-validations",
            "host-root",
            "host-mig-parted",
            *(("cdi-root",) if ctx.cdi else ()),
        ),
        mounts=(("mig-parted-config", "/mig-parted-config", True), ("gpu-clients", "/gpu-clients", True)),
        privileged=True,
        read_only_root=False,
        requests=("50m", "64Mi"),
    )
    return OperandSpec(
        operand="mig-manager",
        reason=(
            "repartitions GPUs into MIG instances: privileged with hostPID to reset GPUs, stop the "
            "host's GPU client services (and the kubelet while a MIG mode changes) over the host's "
            "D-Bus and run nvidia-mig-parted chrooted in the host root (read-only but for its copy in "
            f"{HOST_MIG_PARTED_DIR}); writes /sys MIG state"
            + (" and CDI specs" if ctx.cdi else "")
            + "; "
            + HOST_ROOT_READ_ONLY
        ),
        containers=(manager,),
        host_paths=(
            HostPath("host-sys", "/sys", "/sys", False, "Directory"),
            HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, False, "DirectoryOrCreate"),
            HostPath("host-root", "/", HOST_ROOT, True),
            HostPath(
                "host-mig-parted", HOST_MIG_PARTED_DIR, HOST_ROOT + HOST_MIG_PARTED_DIR, False, "DirectoryOrCreate"
            ),
            *((HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"),) if ctx.cdi else ()),
        ),
        config_maps={
            "mig-parted-config": {"config.yaml": mig_parted_config(ctx.mig_pools)},
            "gpu-clients": {"clients.yaml": GPU_CLIENTS},
        },
        # Sets mig.config.state and pauses the operands' gates on its node while it repartitions.
        cluster_rules=(
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
            *(
                ({"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},)
                if traits.lists_pods_cluster_wide
                else ()
            ),
        ),
        # Waits for the GPU clients' pods (by their app= labels) in its own namespace to leave, and
        # deletes the validator's so its checks run again on the new layout.
        namespace_rules=({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},),
        host_pid=True,
        runtime_class="nvidia",
        app_label="nvidia-mig-manager",
    )


class MigManager(Operand):
    """`gpu-platform:operands:MigManager`."""
