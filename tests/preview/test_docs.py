"""The generated parts of docs/: the policy table (docs/policy-pack.md) comes from the declarations
(one per policy, in the pack's order, with its kind, what it reads and its level), and `--check` (CI)
fails when any generated part is stale."""

from __future__ import annotations

from preview import docs
from preview.reports import graph
from tests.policy.test_pack import EXPECTED


def _table_rows(block: str) -> list[list[str]]:
    rows = [line for line in block.splitlines() if line.startswith("| `")]
    return [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]


def test_the_policy_table_lists_every_policy_of_the_pack_with_its_kind_and_level():
    rows = _table_rows(docs.policy_table())
    kinds = {1: "resource", 2: "stack"}
    levels = {0: "advisory", 1: "mandatory"}
    assert [(r[0].strip("`"), r[1], r[2]) for r in rows] == [(n, kinds[k], levels[lvl]) for n, k, lvl in EXPECTED]


def test_a_resource_policy_row_says_before_which_steps_it_runs_and_a_stack_policy_row_says_at_the_end():
    rows = {r[0].strip("`"): r for r in _table_rows(docs.policy_table())}
    assert rows["mig-config-fits-gpu"][3] == "before each of `NodeGroup` is created or updated"
    assert (
        rows["driver-branch-supported-by-release"][3]
        == "before each of `Image`, `LaunchTemplate` is created or updated"
    )
    assert rows["one-runtime-owner"][3].startswith("once every resource's step is done")


def test_a_stale_policy_table_is_reported_and_rewritten(tmp_path, prod):
    page = tmp_path / "policy-pack.md"
    page.write_text(f"# t\n{docs.POLICIES_BEGIN}\nold\n{docs.POLICIES_END}\n{graph.BEGIN}\n{graph.END}\n")
    assert any("policy table is stale" in p for p in docs.stale(page, page))
    page.write_text(docs.replace_block(page.read_text(), docs.POLICIES_BEGIN, docs.POLICIES_END, docs.policy_table()))
    assert not any("policy table" in p for p in docs.stale(page, page))


def test_each_generated_table_lives_in_its_guide():
    assert docs.POLICY_PAGE.name == "policy-pack.md" and docs.OPERAND_PAGE.name == "what-gets-created.md"
    assert docs.POLICIES_BEGIN in docs.POLICY_PAGE.read_text()
    assert docs.OPERANDS_BEGIN in docs.OPERAND_PAGE.read_text() and graph.BEGIN in graph.PAGE.read_text()
    readme = (docs.ROOT / "README.md").read_text()
    assert not any(marker in readme for marker in (docs.POLICIES_BEGIN, docs.OPERANDS_BEGIN, graph.BEGIN))


def test_check_fails_on_a_stale_block_naming_the_command(monkeypatch, capsys):
    monkeypatch.setattr(docs, "stale", lambda: ["policy-pack.md: the policy table is stale"])
    assert docs.main(["--check"]) == 1
    assert "make docs" in capsys.readouterr().err


def test_the_committed_docs_are_current():
    """What CI runs: `python -m preview.docs --check`."""
    assert docs.stale() == []
