"""Shared test harness: the same recording engine the offline preview uses, one run per stack config
per worker, shared read-only (tests/recordings.py; a run costs about a second)."""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from preview.offline import engine
from tests import recordings

# EKS support is judged as of a fixed day in the suite (gpu_platform/catalog/eks_lifecycle.py reads
# SOURCE_DATE_EPOCH, here and in every process a test starts), so verdicts and snapshots do not move
# with the calendar: 2026-06-01 00:00 UTC (1.33, which the shipped stacks run, is then in standard
# support; 1.32 in extended support; 1.28 past it). Tests of another day set their own.
AS_OF_EPOCH = "1780272000"
os.environ["SOURCE_DATE_EPOCH"] = AS_OF_EPOCH

# What the preview's own code renders in-process (the CLI tests, --all, the docs) is shared too.
engine.run = recordings.engine_run

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHIPPED_STACKS = sorted(engine.STACKS.glob("Pulumi.*.yaml"))


def record(path: Path) -> engine.Recording:
    return record_mode(path, engine.UP)


@pytest.fixture(scope="session")
def real_pack():
    """The policy pack started as the Pulumi CLI starts it (a subprocess, over gRPC), once per worker."""
    from preview.offline import analyze

    with analyze.PackProcess() as pack:
        yield pack


def record_mode(path: Path, mode: str) -> engine.Recording:
    """One recording per stack file and mode per worker (`engine.UP` or `engine.FIRST_PREVIEW`), read-only."""
    return recordings.of_file(path, mode)


@pytest.fixture(scope="session")
def dev() -> engine.Recording:
    return record(engine.stack_file("dev"))


@pytest.fixture(scope="session")
def prod() -> engine.Recording:
    return record(engine.stack_file("prod"))


@pytest.fixture(scope="session")
def dra() -> engine.Recording:
    """The shipped stack in gpu-platform:allocation mode dra (not among `stack`'s: most tests of
    the operands read the device plugin's path)."""
    return record(engine.stack_file("dra"))


@pytest.fixture(params=["dev", "prod"])
def stack(request, dev, prod) -> engine.Recording:
    """Each shipped stack in turn."""
    return {"dev": dev, "prod": prod}[request.param]


def stack_config(stack: str = "dev") -> dict[str, Any]:
    return copy.deepcopy(engine.read_stack_file(engine.stack_file(stack)))


# The advisory every stack without gpu-platform:audit.approvedLedger gets (policy/audit.py): the
# fixture stacks record none, and tests about other policies leave it out of what they compare.
LEDGER_RECORDED = "privilege-ledger-recorded"


def unapproved(config: dict[str, Any]) -> dict[str, Any]:
    """A variant of a shipped stack without its approvedLedger: a change of driver, pools or operands
    changes the privilege ledger, so the shipped approval no longer covers it and the pack would stop
    the preview (privilege-ledger-approved); tests about something else drop the approval."""
    config["gpu-platform:audit"].pop("approvedLedger", None)
    return config


def published_ami(minor: str, release: str, flavour: str = "standard") -> str:
    """The id the offline answers give for that EKS AMI, read from the generated answers file itself
    (preview/offline/fixtures/eks_ami_parameters.yaml), not through the program."""
    document = yaml.safe_load((ROOT / "preview" / "offline" / "fixtures" / "eks_ami_parameters.yaml").read_text())
    return document["parameters"][minor][flavour][f"amazon-eks-node-al2023-x86_64-{flavour}-{minor}-{release}"]


def write_stack(tmp_path: Path, config: dict[str, Any], name: str = "test") -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


@pytest.fixture
def variant() -> Callable[..., engine.Recording]:
    """Record a variant of a shipped stack: `variant(lambda cfg: ..., stack="prod")`, read-only and
    shared with every test that records the same variant."""

    def make(change: Callable[[dict[str, Any]], Any], stack: str = "dev") -> engine.Recording:
        config = stack_config(stack)
        change(config)
        return recordings.of_config(config, stack)

    return make


@pytest.fixture
def monkeypatch(monkeypatch):
    """pytest's own, and while it is active no recording is shared: what a test patches may change
    what the program renders (tests/recordings.py)."""
    recordings.patching += 1
    try:
        yield monkeypatch
    finally:
        recordings.patching -= 1


def pytest_configure(config):
    from tests import attribution

    if attribution.ACTIVE:
        config.pluginmanager.register(attribution.Attribution(), "mutmut-attribution")
    config.addinivalue_line("markers", "golden: compares generated text with a snapshot under tests/golden")
    config.addinivalue_line(
        "markers",
        "subprocess: runs our Python code in a child process (marked by hand, or by using the real_pack fixture)",
    )
    from tests.golden import refusal, updating

    try:
        updating()
    except RuntimeError:
        raise pytest.UsageError(refusal()) from None


def pytest_collection_modifyitems(items):
    """Every test that compares a snapshot is marked `golden`, by what it calls, so that no one has
    to remember the marker and `-m "not golden"` means what it says. Every test that talks to a
    pack started as the CLI starts it (the real_pack fixture, or a PackProcess of its own) is marked `subprocess`.

    `make mutation` leaves both out (setup.cfg): a snapshot catch is not the behaviour test the run
    measures, and mutmut credits a test only with the code it runs in its own process, so a test
    whose code under test runs in a child is never chosen for a mutant anyway (and mutmut's
    coverage pass cannot run in such a child)."""
    for item in items:
        function = getattr(item, "function", None)
        if function is not None and "assert_golden" in function.__code__.co_names:
            item.add_marker(pytest.mark.golden)
        if "real_pack" in getattr(item, "fixturenames", ()) or (
            function is not None and "PackProcess" in function.__code__.co_names
        ):
            item.add_marker(pytest.mark.subprocess)


def pytest_sessionfinish(session):
    # Under xdist each worker hands its count of engine runs to the controller (pytest_testnodedown).
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["recordings"] = dict(recordings.runs)


_RUNS: dict[str, int] = {}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    for name, count in getattr(node, "workeroutput", {}).get("recordings", {}).items():
        _RUNS[name] = _RUNS.get(name, 0) + count


def pytest_terminal_summary(terminalreporter):
    """One line of what the shared recordings saved (tools/bench/suite.py reads it)."""
    runs = _RUNS or recordings.runs
    if runs.get("asked"):
        terminalreporter.write_line(f"shared recordings: {runs['made']} engine runs for {runs['asked']} asked")
