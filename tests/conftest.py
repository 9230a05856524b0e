"""Shared test harness: the same recording engine the offline preview uses, one run per stack file
per session (a run costs about a second)."""

from __future__ import annotations

import copy
import functools
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from preview import engine

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHIPPED_STACKS = sorted(engine.STACKS.glob("Pulumi.*.yaml"))


@functools.lru_cache(maxsize=None)
def _record(path: str) -> engine.Recording:
    return engine.run(Path(path))


def record(path: Path) -> engine.Recording:
    return _record(str(path.resolve()))


@pytest.fixture(scope="session")
def dev() -> engine.Recording:
    return record(engine.stack_file("dev"))


@pytest.fixture(scope="session")
def prod() -> engine.Recording:
    return record(engine.stack_file("prod"))


def stack_config(stack: str = "dev") -> dict[str, Any]:
    return copy.deepcopy(engine.read_stack_file(engine.stack_file(stack)))


def write_stack(tmp_path: Path, config: dict[str, Any], name: str = "test") -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


@pytest.fixture
def variant(tmp_path: Path) -> Callable[..., engine.Recording]:
    """Record a variant of a shipped stack: `variant(lambda cfg: ..., stack="prod")`."""

    def make(change: Callable[[dict[str, Any]], Any], stack: str = "dev") -> engine.Recording:
        config = stack_config(stack)
        change(config)
        return engine.run(write_stack(tmp_path, config, name=stack))

    return make
