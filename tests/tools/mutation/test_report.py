"""tools/mutation/report.py: what docs/mutation.md says about a mutmut run, from .meta files written here by
hand (mutmut's format: {"exit_code_by_key": {mutant name: exit code}})."""

from __future__ import annotations

import json

import yaml

from tests.conftest import ROOT
from tools.mutation import report
from tools.mutation.report import Mutant


def _meta(root, relative: str, codes: dict) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": codes}))


def test_results_are_read_per_package_with_mutmuts_exit_codes(tmp_path):
    _meta(tmp_path, "policy/gpu.py.meta", {"policy.gpu.x_a__mutmut_1": 1, "policy.gpu.x_a__mutmut_2": 0})
    _meta(
        tmp_path,
        "components/aws/cluster.py.meta",
        {"components.aws.cluster.x_b__mutmut_1": 36, "components.aws.cluster.x_b__mutmut_2": None},
    )
    _meta(tmp_path, "preview/cli.py.meta", {"preview.cli.x_c__mutmut_1": 0})  # outside the scope
    found = report.read_results(tmp_path)
    assert found == [
        Mutant("components.aws.cluster.x_b__mutmut_1", "components/aws", "timeout"),
        Mutant("components.aws.cluster.x_b__mutmut_2", "components/aws", "not run"),
        Mutant("policy.gpu.x_a__mutmut_1", "policy", "killed"),
        Mutant("policy.gpu.x_a__mutmut_2", "policy", "survived"),
    ]


def _mutants(**counts: int) -> list[Mutant]:
    out = []
    for status, n in counts.items():
        out += [Mutant(f"policy.m.x_{status}__mutmut_{i}", "policy", status.replace("_", " ")) for i in range(n)]
    return out


def test_the_rate_is_killed_or_timed_out_over_the_mutants_run():
    # 16 killed + 1 timeout of 20 run (3 survived); 5 not run do not count: 85%.
    assert report.kill_rate(_mutants(killed=16, timeout=1, survived=3, not_run=5)) == 0.85
    assert report.kill_rate(_mutants(not_run=4)) is None


def test_a_mutant_without_tests_counts_as_not_caught():
    assert report.kill_rate(_mutants(killed=1, no_tests=1)) == 0.5


def test_the_target_holds_at_85_percent_and_not_below():
    text, ok = report.render(
        _mutants(killed=17, survived=3),
        {f"policy.m.x_survived__mutmut_{i}": "- a / + b" for i in range(3)},
        {f"policy.m.x_survived__mutmut_{i}": {"change": "- a / + b", "why": "equivalent"} for i in range(3)},
    )
    assert "85.0%, holds" in text and ok
    text, ok = report.render(_mutants(killed=16, survived=4), {}, {})
    assert "80.0%, NOT MET" in text and not ok


def test_every_survivor_is_listed_with_its_change_and_fate():
    survivors = _mutants(killed=98, survived=2)
    changes = {
        "policy.m.x_survived__mutmut_0": "- return a >= b / + return a > b",
        "policy.m.x_survived__mutmut_1": "- x = 'a' / + x = 'XXaXX'",
    }
    explained = {
        "policy.m.x_survived__mutmut_0": {
            "change": "- return a >= b / + return a > b",
            "why": "equal values never reach this line",
        }
    }
    text, ok = report.render(survivors, changes, explained)
    assert (
        "| `policy.m.x_survived__mutmut_0` | survived | `- return a >= b / + return a > b` | explained: equal values never reach this line |"
        in text
    )
    assert "| `policy.m.x_survived__mutmut_1` | survived | `- x = 'a' / + x = 'XXaXX'` | open |" in text
    assert "## Survivors (2; 1 without a fate)" in text
    assert not ok  # one survivor has no fate


def test_an_explanation_for_a_change_that_no_longer_survives_is_stale():
    mutants = _mutants(killed=10)
    text, ok = report.render(mutants, {}, {"policy.m.x_gone__mutmut_3": {"change": "- a / + b", "why": "old"}})
    assert "## Stale explanations" in text and "- `policy.m.x_gone__mutmut_3`" in text
    assert not ok


def test_an_explanation_of_another_change_under_the_same_name_does_not_apply():
    # mutmut numbers mutants by position: after an edit, the same name can be another change.
    mutants = _mutants(killed=99, survived=1)
    name = "policy.m.x_survived__mutmut_0"
    text, ok = report.render(mutants, {name: "- a + 1 / + a - 1"}, {name: {"change": "- a / + b", "why": "old"}})
    assert f"| `{name}` | survived | `- a + 1 / + a - 1` | open |" in text
    assert "## Stale explanations" in text and not ok


def test_an_explanation_follows_its_change_when_an_edit_renumbers_the_mutant():
    # An edit above the line renumbers the function's mutants: the same change in the same function
    # keeps its fate; the same change in another function does not borrow it.
    mutants = _mutants(killed=98, survived=2)
    renumbered, other = "policy.m.x_survived__mutmut_0", "policy.m.x_survived__mutmut_1"
    changes = {renumbered: "- a / + b", other: "- c / + d"}
    explained = {
        "policy.m.x_survived__mutmut_7": {"change": "- a / + b", "why": "equivalent"},
        "policy.m.x_elsewhere__mutmut_1": {"change": "- c / + d", "why": "other function"},
    }
    text, ok = report.render(mutants, changes, explained)
    assert f"| `{renumbered}` | survived | `- a / + b` | explained: equivalent |" in text
    assert f"| `{other}` | survived | `- c / + d` | open |" in text
    assert "- `policy.m.x_elsewhere__mutmut_1`" in text and "- `policy.m.x_survived__mutmut_7`" not in text
    assert not ok


def test_the_report_is_the_same_text_for_the_same_results():
    mutants = _mutants(killed=5, survived=2, timeout=1)
    changes = {"policy.m.x_survived__mutmut_0": "- a / + b", "policy.m.x_survived__mutmut_1": "- c / + d"}
    assert report.render(mutants, changes, {}) == report.render(list(reversed(mutants)), changes, {})


def test_the_report_names_the_commit_the_run_was_made_at(tmp_path):
    (tmp_path / "mutmut-stats.json").write_text(json.dumps({"git_commit": "a1bba25b5f724f00e2cf40a010d03fa9d7397238"}))
    commit = report.run_commit(tmp_path)
    text, _ = report.render(_mutants(killed=1), {}, {}, commit)
    assert "Results of the run made at commit `a1bba25b5f72`" in text
    assert report.run_commit(tmp_path / "none") is None
    # The latest run's own record wins over mutmut's baseline (its last full coverage pass).
    (tmp_path / "gpu-platform-run.json").write_text(json.dumps({"commit": "58afdc4" + "0" * 33}))
    assert report.run_commit(tmp_path) == "58afdc4" + "0" * 33


def test_the_explanations_are_read_from_the_file_beside_the_report():
    # A missing file reads as "nothing explained"; the default path must be the one the repo keeps.
    assert report.EXPLAINED == ROOT / "tools" / "mutation" / "explained.yaml"
    assert report.load_explained() == yaml.safe_load(report.EXPLAINED.read_text())
