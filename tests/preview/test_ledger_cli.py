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


GATE = ROOT / "policy" / "gate-config.json"


def test_the_gate_fails_a_shipped_stack_whose_approved_ledger_was_deleted(tmp_path, capsys):
    # Without the gate's levels a stack that records no hash is only told the one to record; with
    # policy/gate-config.json (make preview, make preview-all, the PR gate) it fails.
    current = _recorded(PROD)
    text = PROD.read_text()
    unrecorded = tmp_path / "Pulumi.prod.yaml"
    unrecorded.write_text("".join(line for line in text.splitlines(keepends=True) if current not in line))
    assert main(["--config", str(unrecorded)]) == 0
    assert "[advisory] privilege-ledger-recorded" in capsys.readouterr().out
    assert main(["--config", str(unrecorded), "--policy-config", str(GATE)]) == 1
    out = capsys.readouterr().out
    assert "[mandatory] privilege-ledger-recorded" in out and current in out and "Verdict: FAIL" in out


def test_the_gate_passes_the_shipped_stacks_as_they_are():
    for stack in ("dev", "prod"):
        assert main(["--stack", stack, "--policy-config", str(GATE)]) == 0, stack


def test_prod_with_one_more_cluster_admin_exits_1_on_the_approval_it_had(tmp_path, capsys):
    # The hole of issue 17: the new admin gets cluster-admin, so the old approval must not cover it.
    current = _recorded(PROD)
    deployer = "arn:aws:iam::123456789012:role/gpu-platform-deployer"
    more = tmp_path / "Pulumi.prod.yaml"
    more.write_text(
        PROD.read_text().replace(
            f"admins: [{deployer}]", f"admins: [{deployer}, arn:aws:iam::123456789012:user/mallory]"
        )
    )
    assert more.read_text() != PROD.read_text()
    assert main(["--config", str(more), "--audit", str(tmp_path / "a.md")]) == 1
    out = capsys.readouterr().out
    violation = next(line for line in out.splitlines() if "[mandatory] privilege-ledger-approved" in line)
    assert f"approval covers {current}" in violation and "Verdict: FAIL" in out
    assert (
        "| EKS cluster access | arn:aws:iam::123456789012:user/mallory | AmazonEKSClusterAdminPolicy (cluster scope) |"
        in (tmp_path / "a.md").read_text()
    )
