"""The snapshot harness itself: rewriting is refused under CI, and `-m "not golden"` leaves out exactly
the tests that compare a snapshot (what `make mutation` measures depends on it)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.subprocess  # runs Python in a child process (see tests/conftest.py)


def _pytest(*args: str, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "UPDATE_GOLDEN")} | env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", *args],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_rewriting_golden_files_under_ci_is_refused_before_any_test_runs():
    before = {p: p.read_bytes() for p in (ROOT / "tests" / "golden").rglob("*") if p.is_file()}
    done = _pytest("tests/preview/reports/test_audit.py", UPDATE_GOLDEN="1", CI="true")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "UPDATE_GOLDEN=1 is refused when CI is set" in done.stderr
    assert " passed" not in done.stdout
    after = {p: p.read_bytes() for p in (ROOT / "tests" / "golden").rglob("*") if p.is_file()}
    assert after == before


def test_the_golden_marker_selects_the_snapshot_comparisons_and_nothing_else():
    done = _pytest("--override-ini=addopts=", "--collect-only", "-q", "-m", "golden")
    collected = sorted(
        line.split("::")[0] + "::" + line.split("::")[1].split("[")[0]
        for line in done.stdout.splitlines()
        if "::" in line
    )
    # Written out: the four snapshot tests of the suite (user data per pool, manifests and audit
    # reports per shipped stack). A new snapshot test joins by calling assert_golden.
    assert sorted(set(collected)) == [
        "tests/components/aws/test_user_data.py::test_user_data_matches_its_golden_file",
        "tests/preview/reports/test_audit.py::test_dev_report_matches_its_golden_file",
        "tests/preview/reports/test_audit.py::test_prod_report_matches_its_golden_file",
        "tests/preview/reports/test_manifests.py::test_manifests_match_their_golden_files",
    ]
