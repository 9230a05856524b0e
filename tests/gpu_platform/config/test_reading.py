"""Reading a stack's raw config: bad stack files each exit 2 with an error naming their key and register
nothing, every problem is reported at once, and the config reads as the Pulumi engine hands it over."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpu_platform import config as config_model
from preview.__main__ import main
from preview.offline import engine
from tests import fixture_stacks
from tests.conftest import SHIPPED_STACKS

# tests/fixtures/bad_stacks.yaml: one broken stack a row, with the error it must print.
BAD_STACKS = fixture_stacks.rows("bad_stacks")


def test_there_are_at_least_twenty_distinct_bad_stacks():
    assert len(BAD_STACKS) >= 20
    assert len({row.expect["error"] for row in BAD_STACKS}) == len(BAD_STACKS)


@pytest.mark.parametrize("row", BAD_STACKS, ids=lambda row: row.name)
def test_bad_stack_exits_2_naming_its_file_and_the_key(row: fixture_stacks.Row, capsys):
    assert main(["--config", str(row.path)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"error: {row.path}: ")
    assert row.expect["error"] in captured.err
    assert "Traceback" not in captured.err
    assert captured.out == ""


@pytest.mark.parametrize("row", BAD_STACKS, ids=lambda row: row.name)
def test_bad_stack_registers_nothing(row: fixture_stacks.Row):
    registered: list = []
    with pytest.raises(config_model.ConfigError):
        engine.run(row.path, sink=registered)
    assert registered == []


@pytest.mark.parametrize("path", SHIPPED_STACKS, ids=lambda p: p.stem)
def test_shipped_stacks_are_valid(path: Path):
    parsed = config_model.parse(engine.read_stack_file(path))
    assert parsed.node_pools


def test_every_problem_is_reported_at_once():
    raw = engine.read_stack_file(engine.stack_file("dev"))
    raw["gpu-platform:operator"] = {"release": "v0.0.0"}
    raw["gpu-platform:audit"] = {"owner": "ml-platform"}
    with pytest.raises(config_model.ConfigError) as error:
        config_model.parse(raw)
    assert "gpu-platform:operator.release" in str(error.value)
    assert "gpu-platform:audit.approval: required key is missing" in str(error.value)


def test_config_from_pulumi_reads_json_objects_as_the_engine_passes_them():
    import json

    import pulumi

    raw = engine.read_stack_file(engine.stack_file("dev"))
    pulumi.runtime.set_all_config({k: v if isinstance(v, str) else json.dumps(v) for k, v in raw.items()})
    parsed = config_model.from_pulumi()
    assert parsed.cluster.kubernetes_version == "1.33"
    assert parsed.node_pools[0].time_slicing.replicas == 4
