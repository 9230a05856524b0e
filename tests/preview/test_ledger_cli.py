"""The approved privilege ledger as a user meets it: the preview prints the stack's hash, the shipped
stacks record theirs and pass, and the same prod stack with a stale approvedLedger exits 1 naming
both hashes."""

from __future__ import annotations

import json
import re

import yaml

from preview.__main__ import main
from tests.conftest import ROOT

PROD = ROOT / "stacks" / "Pulumi.prod.yaml"
STALE = "sha256:" + "5" * 64


def _recorded(path) -> str:
    return yaml.safe_load(path.read_text())["config"]["gpu-platform:audit"]["approvedLedger"]


def test_prod_prints_the_hash_it_records_and_passes(capsys):
    assert main(["--stack", "prod"]) == 0
    out = capsys.readouterr().out
    assert f"Privilege ledger: {_recorded(PROD)}, the approved hash" in out


def test_prod_with_a_stale_approved_ledger_exits_1_naming_the_stale_and_the_current_hash(tmp_path, capsys):
    current = _recorded(PROD)
    stale = tmp_path / "Pulumi.prod.yaml"
    stale.write_text(PROD.read_text().replace(current, STALE))
    assert main(["--config", str(stale)]) == 1
    out = capsys.readouterr().out
    violation = next(line for line in out.splitlines() if "[mandatory] privilege-ledger-approved" in line)
    assert f"hashes to {current}" in violation and f"approval covers {STALE}" in violation
    assert f"NOT the approved {STALE}" in out and "Verdict: FAIL" in out


def test_the_hash_is_in_the_audit_report_and_the_json_report(tmp_path):
    current = _recorded(PROD)
    assert main(["--stack", "prod", "--audit", str(tmp_path / "a.md"), "--json", str(tmp_path / "r.json")]) == 0
    report = json.loads((tmp_path / "r.json").read_text())["privilegeLedger"]
    assert report["hash"] == current and report["approved"] == [current]
    assert report["canonicalForm"] == "gpu-platform privilege ledger v1"
    audit = (tmp_path / "a.md").read_text()
    assert f"Hash: `{current}`" in audit
    assert re.search(rf"^- Privilege ledger: {current}, the approved hash", audit, re.M)
