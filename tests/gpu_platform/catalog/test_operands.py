"""The operand registry is what every reader of the operand list reads."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gpu_platform.catalog import operands

ROOT = Path(__file__).resolve().parents[3]


def test_each_operand_and_gate_is_declared_once():
    rows = operands.rows()
    assert len({r.operand for r in rows}) == len(rows)
    gates = [r.gate for r in rows if r.gate]
    assert len(set(gates)) == len(gates)


def test_every_operand_has_its_module_and_its_contract():
    for row in operands.rows():
        folder = ROOT / "components" / "kubernetes" / "operands" / row.module
        assert (folder / "__init__.py").is_file(), row.module
        contract = folder / "contract.yaml"
        assert yaml.safe_load(contract.read_text())["operand"] == row.operand


def test_a_placement_outside_the_known_ones_is_refused(tmp_path):
    bad = tmp_path / "operands.yaml"
    bad.write_text(
        yaml.safe_dump(
            {
                "operands": [
                    {
                        "operand": "x",
                        "module": "x",
                        "component": "X",
                        "gate": None,
                        "waitsFor": None,
                        "on": "some-nodes",
                        "since": "v1.0.0",
                    }
                ]
            }
        )
    )
    with pytest.raises(
        ValueError, match="on 'some-nodes' is not one of every-node, gpu-nodes, mig-pools, toolkit-daemonset"
    ):
        operands.rows(bad)


@pytest.mark.parametrize(
    ("on", "baked", "mig", "deployed"),
    [
        ("toolkit-daemonset", True, True, False),
        ("toolkit-daemonset", False, False, True),
        ("mig-pools", False, False, False),
        ("mig-pools", True, True, True),
        ("gpu-nodes", True, False, True),
        ("every-node", True, False, True),
        ("device-plugin-nodes", True, False, True),
        ("dra-nodes", True, False, False),
    ],
)
def test_where_an_operand_runs(on, baked, mig, deployed):
    row = operands.OperandRow("x", "x", "X", "x", None, on, "v1.0.0")
    assert row.deployed(toolkit_baked=baked, mig=mig) is deployed


@pytest.mark.parametrize(
    ("on", "deployed"),
    [
        ("device-plugin-nodes", False),
        ("dra-nodes", True),
        ("gpu-nodes", True),
        ("every-node", True),
    ],
)
def test_where_an_operand_runs_in_allocation_mode_dra(on, deployed):
    row = operands.OperandRow("x", "x", "X", "x", None, on, "v1.0.0")
    assert row.deployed(toolkit_baked=True, mig=False, dra=True) is deployed


def test_the_device_plugin_and_its_readers_run_only_in_device_plugin_mode_and_the_dra_driver_only_in_dra():
    # Never both on one node (AWS's EKS guide: GPUs silently oversubscribed); GFD reads the device
    # plugin's per-pool config, and upstream's DRA mode runs none.
    on = {r.operand: r.on for r in operands.rows()}
    assert on["device-plugin"] == on["gpu-feature-discovery"] == "device-plugin-nodes"
    assert on["dra-driver"] == "dra-nodes"
    assert on["validator"] == "gpu-nodes" and on["node-feature-discovery"] == "every-node"


def test_the_dcgm_exporter_runs_in_both_modes_and_waits_for_toolkit_ready_only_beside_the_device_plugin():
    # Beside the device plugin it waits for toolkit-ready, as the GPU Operator's asset does
    # (assets/state-dcgm-exporter/0800_daemonset.yaml:31 at v25.10.1); in mode dra it takes its GPUs
    # through a claim the DRA driver prepares (v26.7.0 manifests/state-dcgm-exporter/0700_daemonset.yaml:
    # no init container).
    (row,) = [r for r in operands.rows() if r.operand == "dcgm-exporter"]
    assert row.on == "gpu-nodes"
    assert (row.marker(dra=False), row.marker(dra=True)) == ("toolkit-ready", None)


def test_a_marker_per_mode_must_name_both_modes(tmp_path):
    path = tmp_path / "operands.yaml"
    path.write_text(
        "operands:\n  - {operand: x, module: x, component: X, gate: x, waitsFor: {dra: null}, 'on': gpu-nodes, since: v1.0.0}\n"
    )
    with pytest.raises(ValueError, match="waitsFor names"):
        operands.rows(path)


def test_the_dra_validator_runs_the_validators_image_after_the_dra_driver_on_dra_nodes_only():
    # GPU Operator v26.7.0 runs its DRA validator from the validator's image (internal/state/
    # dra_validation.go:46-48) and proves the DRA path only where the DRA driver runs.
    rows = operands.rows()
    (row,) = [r for r in rows if r.operand == "dra-validator"]
    assert (row.image, row.gate, row.on, row.since, row.marker(dra=True)) == (
        "validator",
        "dra-validator",
        "dra-nodes",
        "v26.7.0",
        None,
    )
    order = [r.operand for r in rows]
    assert order.index("dra-driver") < order.index("dra-validator")
    # A borrowed image is no image key of its own: the matrix pins the validator's once.
    assert "dra-validator" not in operands.image_keys() and "validator" in operands.image_keys()


def test_an_image_that_is_no_operands_own_is_refused(tmp_path):
    path = tmp_path / "operands.yaml"
    path.write_text(
        "operands:\n"
        "  - {operand: a, module: a, component: A, gate: a, waitsFor: null, 'on': gpu-nodes, since: v1.0.0}\n"
        "  - {operand: b, module: b, component: B, gate: b, waitsFor: null, 'on': gpu-nodes, since: v1.0.0, image: c}\n"
    )
    with pytest.raises(ValueError, match=r"operands.yaml: b: image 'c' is no operand's own image \(valid: a\)"):
        operands.rows(path)
