"""The lifecycle rules (rules.yaml) as typed data."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.kubernetes.operands import contract_file
from gpu_platform.catalog import versions, yaml_files

_FILE = Path(__file__).with_name("rules.yaml")
# The MIG manager's clauses: the app labels it finds each GPU client's pods by (`lookup.selector`).
_MIG_MANAGER_CONTRACT = contract_file("mig-manager")


@dataclass(frozen=True)
class Check:
    component: str
    writes: str
    writes_before: dict[str, str]  # validator version it changes at -> the marker written before it
    needs: tuple[str, ...]
    workload_needs: tuple[str, ...]

    def marker(self, validator_version: str) -> str:
        for since, older in sorted(self.writes_before.items(), key=lambda kv: versions.parse(kv[0])):
            if not versions.at_least(validator_version, since):
                return older
        return self.writes


@dataclass(frozen=True)
class MigManager:
    waits_for_apps: tuple[str, ...]  # the app labels whose pods it waits to leave the node, in order
    wait_seconds: int  # how long it waits for each before giving up with the gates paused


@dataclass(frozen=True)
class Rules:
    markers_dir: str
    cleared_at_boot: bool
    checks: dict[str, Check]
    toolkit_modes: tuple[tuple[str, str], ...]  # (since, mode), oldest first
    operands: dict[str, dict[str, Any]]
    allocations_survive_boot: dict[str, bool]  # by allocation mode: device-plugin, dra
    mig_instances_cleared_at_boot: bool
    mig_manager: MigManager
    termination_grace_default: int  # seconds, when a pod sets no terminationGracePeriodSeconds
    pre_stop_floor: int  # seconds the kubelet still gives after a pre-stop hook used the grace period
    addon_dcgm_server: dict[str, Any]  # the node monitoring add-on's DCGM server: names and env

    def toolkit_mode(self, version: str) -> str:
        mode = self.toolkit_modes[0][1]
        for since, row_mode in self.toolkit_modes:
            if versions.at_least(version, since):
                mode = row_mode
        return mode

    def operand(self, name: str) -> dict[str, Any]:
        return self.operands.get(name) or {}


def _app_selectors(clause_ids: list[str]) -> tuple[str, ...]:
    clauses = {c["id"]: c for c in yaml_files.load(_MIG_MANAGER_CONTRACT.read_text())["clauses"]}
    apps = []
    for clause_id in clause_ids:
        selector = ((clauses.get(clause_id) or {}).get("lookup") or {}).get("selector", "")
        if not selector.startswith("app="):
            raise ValueError(
                f"{_FILE}: operands.mig-manager.waits_for: {clause_id!r} is not a clause of "
                f"{_MIG_MANAGER_CONTRACT.name} with a lookup selector app=<name> (found {selector!r})"
            )
        apps.append(selector.removeprefix("app="))
    return tuple(apps)


@functools.cache
def load() -> Rules:
    data = yaml_files.load(_FILE.read_text())
    checks = {
        name: Check(
            name,
            row["writes"],
            dict(row.get("writes_before") or {}),
            tuple(row.get("needs") or ()),
            tuple(row.get("workload_needs") or ()),
        )
        for name, row in data["validator_checks"].items()
    }
    manager = data["operands"]["mig-manager"]
    return Rules(
        markers_dir=data["markers"]["dir"],
        cleared_at_boot=bool(data["markers"]["cleared_at_boot"]),
        checks=checks,
        toolkit_modes=tuple((row["since"], row["mode"]) for row in data["toolkit_modes"]),
        operands=dict(data["operands"]),
        allocations_survive_boot={mode: bool(v) for mode, v in data["kubelet"]["allocations_survive_boot"].items()},
        mig_instances_cleared_at_boot=bool(data["mig"]["instances_cleared_at_boot"]),
        mig_manager=MigManager(_app_selectors(manager["waits_for"]), int(manager["wait_seconds"])),
        termination_grace_default=int(data["kubelet"]["termination_grace_default_seconds"]),
        pre_stop_floor=int(data["kubelet"]["pre_stop_floor_seconds"]),
        addon_dcgm_server=dict(data["addon_dcgm_server"]),
    )
