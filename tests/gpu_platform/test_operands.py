"""The operand registry is what every reader of the operand list reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_platform import operands

ROOT = Path(__file__).resolve().parents[2]


def test_each_operand_and_gate_is_declared_once():
    rows = operands.rows()
    assert len({r.operand for r in rows}) == len(rows)
    gates = [r.gate for r in rows if r.gate]
    assert len(set(gates)) == len(gates)


def test_every_operand_has_its_module_and_its_contract():
    for row in operands.rows():
        assert (ROOT / "components" / "kubernetes" / "operands" / f"{row.module}.py").is_file(), row.module
        contract = ROOT / "gpu_platform" / "operand_contracts" / f"{row.operand}.yaml"
        assert yaml.safe_load(contract.read_text())["operand"] == row.operand


def test_a_placement_outside_the_known_ones_is_refused(tmp_path):
    bad = tmp_path / "operands.yaml"
    bad.write_text(yaml.safe_dump({"operands": [{"operand": "x", "module": "x", "component": "X", "gate": None,
                                                 "waitsFor": None, "on": "some-nodes", "since": "v1.0.0"}]}))
    with pytest.raises(ValueError, match="on 'some-nodes' is not one of every-node, gpu-nodes, mig-pools, toolkit-daemonset"):
        operands.rows(bad)


@pytest.mark.parametrize(("on", "baked", "mig", "deployed"), [
    ("toolkit-daemonset", True, True, False), ("toolkit-daemonset", False, False, True),
    ("mig-pools", False, False, False), ("mig-pools", True, True, True),
    ("gpu-nodes", True, False, True), ("every-node", True, False, True),
])
def test_where_an_operand_runs(on, baked, mig, deployed):
    row = operands.OperandRow("x", "x", "X", "x", None, on, "v1.0.0")
    assert row.deployed(toolkit_baked=baked, mig=mig) is deployed
