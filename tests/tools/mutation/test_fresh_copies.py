"""tools/mutation/fresh_copies.py: before a run, mutants/ loses its stale copies of the tests and the
also_copy paths, and gets the work tree's data files of the source paths; results stay."""

from __future__ import annotations

from pathlib import Path

from tools.mutation import fresh_copies

SETUP = """[mutmut]
source_paths =
    pkg/
also_copy =
    docs/
    README.md
"""


def _tree(root: Path) -> None:
    (root / "setup.cfg").write_text(SETUP)
    (root / "pkg").mkdir()
    (root / "pkg" / "code.py").write_text("x = 1\n")
    (root / "pkg" / "data.yaml").write_text("new: true\n")
    (root / "pkg" / "sub").mkdir()
    (root / "pkg" / "sub" / "more.json").write_text("{}")


def test_stale_copies_go_and_data_files_are_brought_up_to_date(tmp_path):
    _tree(tmp_path)
    mutants = tmp_path / "mutants"
    (mutants / "tests").mkdir(parents=True)
    (mutants / "tests" / "test_removed_since.py").write_text("")
    (mutants / "docs").mkdir()
    (mutants / "README.md").write_text("old")
    (mutants / "pkg").mkdir()
    (mutants / "pkg" / "data.yaml").write_text("new: false\n")
    (mutants / "pkg" / "code.py").write_text("x = 1  # mutated copy\n")
    (mutants / "pkg" / "code.py.meta").write_text("{}")
    done = fresh_copies.refresh(tmp_path)
    assert not (mutants / "tests").exists() and not (mutants / "docs").exists() and not (mutants / "README.md").exists()
    assert (mutants / "pkg" / "data.yaml").read_text() == "new: true\n"
    assert (mutants / "pkg" / "sub" / "more.json").read_text() == "{}"
    # mutmut's own files stay as they are.
    assert (mutants / "pkg" / "code.py").read_text() == "x = 1  # mutated copy\n"
    assert (mutants / "pkg" / "code.py.meta").read_text() == "{}"
    assert "copied pkg/data.yaml" in done and "removed mutants/tests/" in done


def test_nothing_happens_before_the_first_run(tmp_path):
    _tree(tmp_path)
    assert fresh_copies.refresh(tmp_path) == []
    assert not (tmp_path / "mutants").exists()


def test_the_projects_settings_name_the_three_packages():
    sources, also_copy = fresh_copies.settings()
    assert sources == ["policy", "gpu_platform", "components"]
    assert "preview" in also_copy and "stacks" in also_copy


def test_the_commit_of_the_run_is_recorded_in_mutants(tmp_path):
    import subprocess

    _tree(tmp_path)
    assert fresh_copies.record_commit(tmp_path) is None  # no mutants/ yet
    (tmp_path / "mutants").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(
        ["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "x"],
        cwd=tmp_path,
        check=True,
    )
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp_path, capture_output=True, text=True).stdout.strip()
    assert fresh_copies.record_commit(tmp_path) == head
    assert head in (tmp_path / "mutants" / "gpu-platform-run.json").read_text()


def _mutants_with_results(root: Path, last: str) -> Path:
    import json

    mutants = root / "mutants"
    (mutants / "pkg").mkdir(parents=True)
    (mutants / fresh_copies.RUN_FILE).write_text(json.dumps({"commit": last}) + "\n")
    (mutants / fresh_copies.STATS).write_text("{}")
    # mutmut's record: 1 killed, 0 survived, None not run yet, 36 a timeout.
    (mutants / "pkg" / "code.py.meta").write_text(
        json.dumps(
            {
                "exit_code_by_key": {
                    "pkg.x_f__mutmut_1": 1,
                    "pkg.x_f__mutmut_2": 0,
                    "pkg.x_f__mutmut_3": None,
                    "pkg.x_f__mutmut_4": 36,
                },
                "hash_by_function_name": {"pkg.x_f": "abc"},
            }
        )
    )
    return mutants


def test_after_a_change_coverage_is_collected_again_and_survivors_run_again(tmp_path):
    import json

    mutants = _mutants_with_results(tmp_path, "a" * 40)
    done = fresh_copies.recover(tmp_path, "b" * 40)
    assert not (mutants / fresh_copies.STATS).exists()
    meta = json.loads((mutants / "pkg" / "code.py.meta").read_text())
    assert meta["exit_code_by_key"] == {
        "pkg.x_f__mutmut_1": 1,
        "pkg.x_f__mutmut_2": None,
        "pkg.x_f__mutmut_3": None,
        "pkg.x_f__mutmut_4": 36,
    }
    assert meta["hash_by_function_name"] == {"pkg.x_f": "abc"}
    assert any("1 surviving mutants to run again" in line for line in done)


def test_at_the_same_commit_results_and_coverage_stay(tmp_path):
    mutants = _mutants_with_results(tmp_path, "a" * 40)
    before = (mutants / "pkg" / "code.py.meta").read_text()
    assert fresh_copies.recover(tmp_path, "a" * 40) == []
    assert (mutants / fresh_copies.STATS).exists() and (mutants / "pkg" / "code.py.meta").read_text() == before
