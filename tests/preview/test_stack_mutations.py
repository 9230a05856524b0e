"""Property: whatever a user does to a shipped stack file (drop a key, put any value anywhere, add
a key, break the YAML), the preview answers with an exit code that means one thing (0 pass, 1
policy violations, 2 invalid input) and never with a traceback or an internal error (3). A
mutation that leaves the config valid runs the whole preview, program and policy pack included.

Derandomized: CI runs the same examples every time; `HYPOTHESIS_PROFILE=deep` runs many more."""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, event, given, settings, strategies as st

from preview.__main__ import main
from tests.conftest import stack_config

settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, max_examples=30, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "deep", derandomize=False, deadline=None, max_examples=500, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Values a YAML file can hold: what a user might type where another value was.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(
        [
            "",
            "yes",
            "1.33",
            "1.30",
            "580",
            "g6.2xlarge",
            "p5.48xlarge",
            "all-1g.10gb",
            "arn:aws:iam::123456789012:role/x",
            "us-west-2",
            "-1",
            "0",
            "v25.10.1",
            "ami-0123456789abcdef0",
        ]
    ),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=12), inner, max_size=3)),
    max_leaves=6,
)


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    """Every place in the config: mapping keys and list positions, containers included."""
    found = [path] if path else []
    if isinstance(value, dict):
        for key, sub in value.items():
            found += _paths(sub, (*path, key))
    elif isinstance(value, list):
        for i, sub in enumerate(value):
            found += _paths(sub, (*path, i))
    return found


def _apply(config: dict, mutation: tuple) -> None:
    kind, path, value = mutation
    *head, last = path
    container = config
    for part in head:
        container = container[part]
    if kind == "drop":
        del container[last]
    elif kind == "set":
        container[last] = value
    elif kind == "add" and isinstance(container[last], dict):
        container[last]["unexpected" if value is None else str(value)[:20]] = value
    elif kind == "add" and isinstance(container[last], list):
        container[last].append(value)


@st.composite
def mutated_stack(draw) -> str:
    config = stack_config(draw(st.sampled_from(["dev", "prod"])))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(config)
        if not paths:
            break
        mutation = (draw(st.sampled_from(["drop", "set", "add"])), draw(st.sampled_from(paths)), draw(VALUES))
        _apply(config, mutation)
    text = yaml.safe_dump({"config": config}, sort_keys=False, allow_unicode=True)
    if draw(st.integers(min_value=0, max_value=9)) == 0:  # now and then, a broken file
        cut = draw(st.integers(min_value=0, max_value=len(text)))
        text = (
            text[:cut]
            + draw(st.sampled_from(["\t", ": [", "&a *a", "\x00", "  - ", "'", "!!python/object:os.system x"]))
            + text[cut:]
        )
    return text


@given(mutated_stack())
def test_a_mutated_stack_file_never_ends_in_a_traceback(text):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "Pulumi.mutated.yaml"
        path.write_text(text)
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["--config", str(path)])
    errors = err.getvalue()
    event(f"exit {code}")  # --hypothesis-show-statistics: how many mutations ran the whole preview
    assert code in (0, 1, 2), errors
    assert "Traceback" not in errors and "internal error" not in errors
    if code == 2:
        assert errors.startswith(f"error: {path}"), errors  # names the file
    else:
        assert f"Verdict: {'PASS' if code == 0 else 'FAIL'}" in out.getvalue()
