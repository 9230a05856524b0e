"""The operand registry (`operands.yaml`): one row per operand, in rollout order, as plain data that
the policy pack may read too (no component is imported here; stages.py resolves the modules)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from gpu_platform.catalog import yaml_files

REGISTRY_FILE = Path(__file__).with_name("operands.yaml")
MODES = ("device-plugin", "dra")  # gpu-platform:allocation.mode


@dataclass(frozen=True)
class Placement:
    """A kind of place an operand runs (a row's `on`), and the stack fact that leaves it out."""

    where: str  # as docs/ says it
    left_out_if: str | None = None  # a key of `_facts` below; None: in every stack
    why: str = ""  # the plan's "left out" reason; "" with an opt-in
    opt_in: bool = False  # left out without a word: the stack did not turn it on


PLACEMENTS = {
    "every-node": Placement("every node"),
    "gpu-nodes": Placement("GPU nodes"),
    "mig-pools": Placement("MIG pools only", "no-mig", "no pool uses MIG"),
    "toolkit-daemonset": Placement(
        "only with `toolkitBaked: false`",
        "toolkit-baked",
        "the node image registers the nvidia runtime (nodeImage.toolkitBaked)",
    ),
    "device-plugin-nodes": Placement(
        "GPU nodes, `allocation.mode: device-plugin` (the default)", "dra", "gpu-platform:allocation.mode is dra"
    ),
    "dra-nodes": Placement("GPU nodes, `allocation.mode: dra`", "device-plugin", opt_in=True),
}


def _facts(toolkit_baked: bool, mig: bool, dra: bool) -> dict[str, bool]:
    return {"toolkit-baked": toolkit_baked, "no-mig": not mig, "dra": dra, "device-plugin": not dra}


@dataclass(frozen=True)
class OperandRow:
    operand: str
    module: str
    component: str
    gate: str | None
    waits_for: str | None  # in allocation mode device-plugin (the default)
    on: str
    since: str
    waits_for_dra: str | None = None  # in allocation mode dra
    # The matrix's image key it runs (and operator.overrides' key): its own name unless it borrows
    # another operand's image, as the DRA validator runs the validator's.
    image: str = ""

    def __post_init__(self) -> None:
        if not self.image:
            object.__setattr__(self, "image", self.operand)

    def marker(self, dra: bool) -> str | None:
        """The readiness marker its pods wait for in the stack's allocation mode."""
        return self.waits_for_dra if dra else self.waits_for

    def deployed(self, toolkit_baked: bool, mig: bool, dra: bool = False) -> bool:
        """Whether the operand runs in a stack (or on a pool) with these facts; `dra`: the stack
        allocates GPUs through the DRA driver (gpu-platform:allocation mode dra)."""
        return self.left_out(toolkit_baked, mig, dra) is None

    def left_out(self, toolkit_baked: bool, mig: bool, dra: bool = False) -> Placement | None:
        """Its placement when these facts leave it out, else None."""
        placement = PLACEMENTS[self.on]
        fact = placement.left_out_if
        return placement if fact is not None and _facts(toolkit_baked, mig, dra)[fact] else None


@functools.cache
def rows(path: Path = REGISTRY_FILE) -> tuple[OperandRow, ...]:
    raw = yaml_files.load(path.read_text())["operands"]
    found = []
    for r in raw:
        waits = r["waitsFor"]
        if isinstance(waits, dict) and set(waits) != set(MODES):
            raise ValueError(
                f"{path.name}: {r['operand']}: waitsFor names {sorted(waits)}, not the modes {', '.join(MODES)}"
            )
        by_mode = waits if isinstance(waits, dict) else dict.fromkeys(MODES, waits)
        found.append(
            OperandRow(
                operand=r["operand"],
                module=r["module"],
                component=r["component"],
                gate=r["gate"],
                waits_for=by_mode["device-plugin"],
                on=r["on"],
                since=str(r["since"]),
                waits_for_dra=by_mode["dra"],
                image=r.get("image") or r["operand"],
            )
        )
    for row in found:
        if row.on not in PLACEMENTS:
            raise ValueError(f"{path.name}: {row.operand}: on {row.on!r} is not one of {', '.join(PLACEMENTS)}")
        # A borrowed image is another row's own, so the matrix pins it once and one override moves both.
        owners = {r.operand for r in found if r.image == r.operand}
        if row.image not in owners:
            raise ValueError(
                f"{path.name}: {row.operand}: image {row.image!r} is no operand's own image "
                f"(valid: {', '.join(sorted(owners))})"
            )
    return tuple(found)


def names() -> tuple[str, ...]:
    return tuple(r.operand for r in rows())


def image_keys() -> tuple[str, ...]:
    """The matrix's image keys (and operator.overrides'): one per image, in registry order."""
    return tuple(dict.fromkeys(r.image for r in rows()))


def image_key(operand: str) -> str:
    """The image key an operand runs; an unknown operand's own name."""
    return next((r.image for r in rows() if r.operand == operand), operand)
