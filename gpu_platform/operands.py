"""The operand registry (`operands.yaml`): one row per operand, in rollout order, as plain data that
the policy pack may read too (no component is imported here; stages.py resolves the modules)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

REGISTRY_FILE = Path(__file__).with_name("operands.yaml")
MODES = ("device-plugin", "dra")  # gpu-platform:allocation.mode
PLACEMENTS = ("every-node", "gpu-nodes", "mig-pools", "toolkit-daemonset", "device-plugin-nodes", "dra-nodes")


@dataclass(frozen=True)
class OperandRow:
    operand: str
    module: str
    component: str
    gate: Optional[str]
    waits_for: Optional[str]  # in allocation mode device-plugin (the default)
    on: str
    since: str
    waits_for_dra: Optional[str] = None  # in allocation mode dra

    def marker(self, dra: bool) -> Optional[str]:
        """The readiness marker its pods wait for in the stack's allocation mode."""
        return self.waits_for_dra if dra else self.waits_for

    def deployed(self, toolkit_baked: bool, mig: bool, dra: bool = False) -> bool:
        """Whether the operand runs in a stack (or on a pool) with these facts; `dra`: the stack
        allocates GPUs through the DRA driver (gpu-platform:allocation mode dra)."""
        return not ((self.on == "toolkit-daemonset" and toolkit_baked) or (self.on == "mig-pools" and not mig)
                    or (self.on == "device-plugin-nodes" and dra) or (self.on == "dra-nodes" and not dra))


@functools.lru_cache(maxsize=None)
def rows(path: Path = REGISTRY_FILE) -> tuple[OperandRow, ...]:
    raw = yaml.safe_load(path.read_text())["operands"]
    found = []
    for r in raw:
        waits = r["waitsFor"]
        if isinstance(waits, dict) and set(waits) != set(MODES):
            raise ValueError(f"{path.name}: {r['operand']}: waitsFor names {sorted(waits)}, not the modes {', '.join(MODES)}")
        by_mode = waits if isinstance(waits, dict) else {mode: waits for mode in MODES}
        found.append(OperandRow(operand=r["operand"], module=r["module"], component=r["component"], gate=r["gate"],
                                waits_for=by_mode["device-plugin"], on=r["on"], since=str(r["since"]),
                                waits_for_dra=by_mode["dra"]))
    for row in found:
        if row.on not in PLACEMENTS:
            raise ValueError(f"{path.name}: {row.operand}: on {row.on!r} is not one of {', '.join(PLACEMENTS)}")
    return tuple(found)


def names() -> tuple[str, ...]:
    return tuple(r.operand for r in rows())
