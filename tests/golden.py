"""Golden files for generated text (user data, manifests, audit reports). `make golden` rewrites them
from the current code (UPDATE_GOLDEN=1); review the diff like any other change.

Snapshots are a backstop, not the check: every test that compares one carries the `golden` marker
(tests/conftest.py adds it), so `-m "not golden"` runs what the behaviour tests alone catch; that is
what `make mutation` measures. Rewriting is refused where CI is set: a CI run that rewrote its own
expectations would pass whatever the code does."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"


def updating() -> bool:
    """True when this run rewrites the golden files (UPDATE_GOLDEN=1); never true under CI."""
    if os.environ.get("UPDATE_GOLDEN") != "1":
        return False
    if os.environ.get("CI"):
        raise RuntimeError(refusal())
    return True


def refusal() -> str:
    return (
        "UPDATE_GOLDEN=1 is refused when CI is set: golden files are rewritten on a developer's "
        "machine with `make golden` and the diff is reviewed in the PR"
    )


def assert_golden(relative: str, text: str) -> None:
    path = GOLDEN / relative
    if updating():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path}; run `make golden` and review it"
    assert text == path.read_text(), (
        f"{relative} differs from its golden file; if intended, run `make golden` and review the diff"
    )
