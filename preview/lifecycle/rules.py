"""The lifecycle rules (rules.yaml) as typed data."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gpu_platform.catalog import versions

_FILE = Path(__file__).with_name("rules.yaml")


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
class Rules:
    markers_dir: str
    cleared_at_boot: bool
    checks: dict[str, Check]
    toolkit_modes: tuple[tuple[str, str], ...]  # (since, mode), oldest first
    operands: dict[str, dict[str, Any]]
    allocations_survive_boot: bool
    mig_instances_cleared_at_boot: bool

    def toolkit_mode(self, version: str) -> str:
        mode = self.toolkit_modes[0][1]
        for since, row_mode in self.toolkit_modes:
            if versions.at_least(version, since):
                mode = row_mode
        return mode

    def operand(self, name: str) -> dict[str, Any]:
        return self.operands.get(name) or {}


@functools.cache
def load() -> Rules:
    data = yaml.safe_load(_FILE.read_text())
    checks = {name: Check(name, row["writes"], dict(row.get("writes_before") or {}), tuple(row.get("needs") or ()),
                          tuple(row.get("workload_needs") or ()))
              for name, row in data["validator_checks"].items()}
    return Rules(
        markers_dir=data["markers"]["dir"],
        cleared_at_boot=bool(data["markers"]["cleared_at_boot"]),
        checks=checks,
        toolkit_modes=tuple((row["since"], row["mode"]) for row in data["toolkit_modes"]),
        operands=dict(data["operands"]),
        allocations_survive_boot=bool(data["kubelet"]["allocations_survive_boot"]),
        mig_instances_cleared_at_boot=bool(data["mig"]["instances_cleared_at_boot"]),
    )
