"""The MIG manager: applies the named MIG configuration the node's `nvidia.com/mig.config` label
asks for, from a mig-parted config map that holds each MIG pool's configuration (and
`all-disabled`, the manager's fallback). Only configurations that exist for the pool's GPU reach the
map, so a profile the GPU cannot carve never reaches a node.

Env and host paths: the GPU Operator's v25.10.1 DaemonSet (gpu-operator-facts.yaml,
per_component.mig-manager.v25.10.1). Privileged with hostPID: it resets GPUs and stops and restarts
host services that hold them (through the host root).
"""

from __future__ import annotations

import yaml

from components.kubernetes.operands.base import VALIDATIONS_DIR, Container, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import MigPool, OperandContext


def mig_parted_config(pools: tuple[MigPool, ...]) -> str:
    configs: dict[str, list] = {"all-disabled": [{"devices": "all", "mig-enabled": False}]}
    for pool in pools:
        if not pool.exists:
            continue
        entry = [{"devices": "all", "mig-enabled": True, "mig-devices": dict(pool.profiles)}] if pool.profiles else [
            {"devices": "all", "mig-enabled": pool.config != "all-disabled"}]
        if configs.get(pool.config, entry) != entry:
            # One name, two carvings (two GPU models): mig-parted would need PCI device filters.
            raise ValueError(f"nodePools: MIG configuration {pool.config!r} means different profiles on different GPUs")
        configs[pool.config] = entry
    return yaml.safe_dump({"version": "v1", "mig-configs": dict(sorted(configs.items()))}, sort_keys=False)


# GPU clients the manager stops before repartitioning; the operands run as pods, paused by label.
GPU_CLIENTS = yaml.safe_dump({"version": "v1", "systemd-services": []}, sort_keys=False)


def spec(ctx: OperandContext) -> OperandSpec:
    manager = Container(
        name="nvidia-mig-manager",
        image=ctx.images["mig-manager"],
        env=(
            ("CONFIG_FILE", "/mig-parted-config/config.yaml"),
            ("GPU_CLIENTS_FILE", "/gpu-clients/clients.yaml"),
            ("WITH_REBOOT", "false"),
        ),
        field_env=(("NODE_NAME", "spec.nodeName"), ("DEFAULT_GPU_CLIENTS_NAMESPACE", "metadata.namespace")),
        host_paths=("host-sys", "run-nvidia-validations", "host-root", "cdi-root"),
        mounts=(("mig-parted-config", "/mig-parted-config", True), ("gpu-clients", "/gpu-clients", True)),
        privileged=True,
        read_only_root=False,
        requests=("50m", "64Mi"),
    )
    return OperandSpec(
        operand="mig-manager",
        reason=(
            "repartitions GPUs into MIG instances: privileged with hostPID to reset GPUs and stop "
            "their host clients through the host root; writes /sys MIG state and CDI specs"
        ),
        containers=(manager,),
        host_paths=(
            HostPath("host-sys", "/sys", "/sys", False, "Directory"),
            HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, False, "DirectoryOrCreate"),
            HostPath("host-root", "/", "/host", True),
            HostPath("cdi-root", "/var/run/cdi", "/var/run/cdi", False, "DirectoryOrCreate"),
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
