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
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import yaml

from components.kubernetes.operands.base import VALIDATIONS_DIR, Container, HostPath, Operand, OperandSpec, for_version
from components.kubernetes.operands.context import MigPool, OperandContext
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
    cdi_hook_env: Optional[str]  # None: the image generates CDI specs with nvidia-ctk's default hook
    source: str


IMAGES: tuple[MigManagerImage, ...] = (
    MigManagerImage("0.5.0", "DRIVER_ROOT", None,
                    "NVIDIA/mig-parted deployments/gpu-operator/main.go at v0.5.5, cmd/nvidia-mig-manager/main.go at v0.6.0, v0.7.0"),
    MigManagerImage("0.8.0", "NVIDIA_DRIVER_ROOT", "NVIDIA_CDI_HOOK_PATH",
                    "NVIDIA/mig-parted cmd/nvidia-mig-manager/main.go at v0.8.0 .. v0.15.0"),
)


def image_traits(image: str) -> MigManagerImage:
    return for_version(image, IMAGES)


def _cdi_env(ctx: OperandContext, traits: MigManagerImage) -> tuple[tuple[str, str], ...]:
    if not ctx.cdi:
        return ()
    hook = () if traits.cdi_hook_env is None else (
        (traits.cdi_hook_env, _BAKED_CDI_HOOK if ctx.toolkit_baked else _OPERAND_CDI_HOOK),)
    return (("CDI_ENABLED", "true"), *hook)


def mig_parted_config(pools: tuple[MigPool, ...]) -> str:
    configs: dict[str, list] = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
    for pool in pools:
        if not pool.exists:
            continue
        entry = [{"devices": "all", "mig-enabled": True, "mig-devices": dict(pool.profiles)}] if pool.profiles else [
            {"devices": "all", "mig-enabled": pool.config != "all-disabled"}]
        if configs.get(pool.config, entry) != entry:
            # One name, two carvings (two GPU models): mig-parted would need PCI device filters.
            first = next(p for p in pools if p.config == pool.config)
            raise ConfigError(
                f"gpu-platform:nodePools: MIG configuration {pool.config!r} carves {first.gpu} in pool "
                f"{first.pool!r} and {pool.gpu} in pool {pool.pool!r} differently; give one of them a "
                f"configuration that names its profiles (e.g. all-<profile>)"
            )
        configs[pool.config] = entry
    return yaml.safe_dump({"version": "v1", "mig-configs": dict(sorted(configs.items()))}, sort_keys=False)


# GPU clients the manager stops before repartitioning; the operands run as pods, paused by label.
GPU_CLIENTS = yaml.safe_dump({"version": "v1", "systemd-services": []}, sort_keys=False)


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["mig-manager"]
    traits = image_traits(image)
    manager = Container(
        name="nvidia-mig-manager",
        image=image,
        env=(
            ("CONFIG_FILE", "/mig-parted-config/config.yaml"),
            ("GPU_CLIENTS_FILE", "/gpu-clients/clients.yaml"),
            ("WITH_REBOOT", "false"),
            (traits.driver_root_env, "/"),
            ("DRIVER_ROOT_CTR_PATH", HOST_ROOT),
            *_cdi_env(ctx, traits),
        ),
        field_env=(("NODE_NAME", "spec.nodeName"), ("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace")),
        host_paths=("host-sys", "run-nvidia-validations", "host-root", *(("cdi-root",) if ctx.cdi else ())),
        mounts=(("mig-parted-config", "/mig-parted-config", True), ("gpu-clients", "/gpu-clients", True)),
        privileged=True,
        read_only_root=False,
        requests=("50m", "64Mi"),
    )
    return OperandSpec(
        operand="mig-manager",
        reason=(
            "repartitions GPUs into MIG instances: privileged with hostPID to reset GPUs and stop "
            "their host clients through the host root; writes /sys MIG state"
            + (" and CDI specs" if ctx.cdi else "")
        ),
        containers=(manager,),
        host_paths=(
            HostPath("host-sys", "/sys", "/sys", False, "Directory"),
            HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, False, "DirectoryOrCreate"),
            HostPath("host-root", "/", HOST_ROOT, True),
            *((HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"),) if ctx.cdi else ()),
        ),
        config_maps={
            "mig-parted-config": {"config.yaml": mig_parted_config(ctx.mig_pools)},
            "gpu-clients": {"clients.yaml": GPU_CLIENTS},
        },
        # Sets mig.config.state and pauses the operands' gates on its node while it repartitions.
        cluster_rules=({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},),
        namespace_rules=({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch", "delete"]},),
        host_pid=True,
        runtime_class="nvidia",
    )


class MigManager(Operand):
    """`gpu-platform:operands:MigManager`."""
