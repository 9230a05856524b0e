"""GPU operands: one folder each (`<module>/`: its `spec` and ComponentResource in `__init__.py`, its
upstream contract in `contract.yaml`), on the shared machinery of `spec.py` (what an operand is),
`version_table.py`, `manifests.py` and `component.py`, created in the order of the operand registry
(gpu_platform/catalog/operands.yaml) that `stages.py` resolves."""

from __future__ import annotations

from pathlib import Path

from gpu_platform.catalog import operands

HERE = Path(__file__).parent


def contract_file(operand: str) -> Path:
    """The operand's contract (docs/operand-contracts.md), in its folder beside its module."""
    (row,) = [r for r in operands.rows() if r.operand == operand]
    return HERE / row.module / "contract.yaml"
