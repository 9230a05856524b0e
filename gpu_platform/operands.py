"""The operand registry (`operands.yaml`): one row per operand, in rollout order, as plain data that
the policy pack may read too (no component is imported here; stages.py resolves the modules)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import yaml

REGISTRY_FILE = Path(__file__).with_name("operands.yaml")
PLACEMENTS = ("every-node", "gpu-nodes", "mig-pools", "toolkit-daemonset", "device-plugin-nodes", "dra-nodes")


@dataclass(frozen=True)
class OperandRow:
    operand: str
    module: str
    component: str
    gate: Optional[str]
    waits_for: Optional[str]
    on: str
    since: str

    def deployed(self, toolkit_baked: bool, mig: bool, dra: bool = False) -> bool:
        """Whether the operand runs in a stack (or on a pool) with these facts; `dra`: the stack
        allocates GPUs through the DRA driver (gpu-platform:allocation mode dra)."""
        return not ((self.on == "toolkit-daemonset" and toolkit_baked) or (self.on == "mig-pools" and not mig)
                    or (self.on == "device-plugin-nodes" and dra) or (self.on == "dra-nodes" and not dra))


@functools.lru_cache(maxsize=None)
def rows(path: Path = REGISTRY_FILE) -> tuple[OperandRow, ...]:
    raw = yaml.safe_load(path.read_text())["operands"]
    found = tuple(
        OperandRow(operand=r["operand"], module=r["module"], component=r["component"], gate=r["gate"],
                   waits_for=r["waitsFor"], on=r["on"], since=str(r["since"]))
        for r in raw
    )
    for row in found:
        if row.on not in PLACEMENTS:
            raise ValueError(f"{path.name}: {row.operand}: on {row.on!r} is not one of {', '.join(PLACEMENTS)}")
    return found


def names() -> tuple[str, ...]:
    return tuple(r.operand for r in rows())
