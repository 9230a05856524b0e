"""`python -m preview --all`: many stacks in one process, one verdict line each, the worst exit code,
and each stack's reports exactly as a preview of that stack alone writes them."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from preview.__main__ import main
from preview.offline import engine
from tests import fixture_stacks
from tests.conftest import FIXTURES, ROOT

PASSING, VIOLATING = FIXTURES / "passing", fixture_stacks.directory("violating")
TOO_OLD_FOR_CUDA = fixture_stacks.row("violating", "driver-too-old-for-cuda").path


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_without_paths_every_shipped_stack_is_previewed_and_passes(capsys):
    assert main(["--all", "--jobs", "1"]) == 0
    lines = _lines(capsys)
    assert [line.split()[:2] for line in lines[:-1]] == [["PASS", "dev"], ["PASS", "dra"], ["PASS", "prod"]]
    assert lines[-1] == "3 stacks: 3 pass"


def test_a_failing_stack_names_its_mandatory_policies_and_the_run_exits_1(capsys):
    assert main(["--all", str(PASSING / "eks-nvidia.yaml"), str(TOO_OLD_FOR_CUDA), "--jobs", "1"]) == 1
    lines = _lines(capsys)
    assert lines[0].startswith("PASS    eks-nvidia ")
    assert lines[1].startswith("FAIL    driver-too-old-for-cuda ")
    assert "1 mandatory (driver-serves-cuda-major)" in lines[1]
    assert lines[-1] == "2 stacks: 1 pass, 1 fail"


def test_an_invalid_stack_is_one_line_naming_its_file_and_key_and_the_others_still_run(capsys):
    bad = fixture_stacks.row("bad_stacks", "unknown-release").path
    assert main(["--all", str(bad), str(TOO_OLD_FOR_CUDA), str(PASSING), "--jobs", "1"]) == 2
    lines = _lines(capsys)
    assert len(lines) == 1 + 1 + 2 + 1  # the bad stack, the violating one, the passing directory, the total
    invalid = lines[0]
    assert invalid.startswith("INVALID unknown-release ")
    assert f"{bad}: invalid stack configuration" in invalid and "gpu-platform:operator.release" in invalid
    assert [line.split()[0] for line in lines[1:4]] == ["FAIL", "PASS", "PASS"]
    assert lines[-1] == "4 stacks: 2 pass, 1 fail, 1 invalid"


def test_a_bug_in_one_stack_is_its_error_line_and_exit_3_after_the_others(capsys, monkeypatch):
    real = engine.run

    def broken(path, **kwargs):
        if path.name == "Pulumi.dev.yaml":
            raise KeyError("planted")
        return real(path, **kwargs)

    monkeypatch.setattr(engine, "run", broken)
    assert main(["--all", "--jobs", "1"]) == 3
    lines = _lines(capsys)
    assert lines[0].startswith("ERROR   dev ") and "internal error: KeyError" in lines[0] and "--debug" in lines[0]
    assert lines[1].startswith("PASS    dra ")
    assert lines[2].startswith("PASS    prod ")
    assert lines[3] == "3 stacks: 2 pass, 1 error"


def test_the_reports_under_out_are_those_of_a_preview_of_the_stack_alone(tmp_path, capsys):
    assert main(["--all", "--out", str(tmp_path / "fleet"), "--jobs", "1"]) == 0
    alone = tmp_path / "alone"
    assert (
        main(
            [
                "--stack",
                "prod",
                "--json",
                str(alone / "report.json"),
                "--manifests",
                str(alone / "manifests"),
                "--audit",
                str(alone / "audit.md"),
                "--graph",
                str(alone / "rollout.md"),
            ]
        )
        == 0
    )
    fleet = tmp_path / "fleet" / "prod"
    written = sorted(p.relative_to(fleet) for p in fleet.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(alone) for p in alone.rglob("*") if p.is_file())
    assert {"report.json", "audit.md", "rollout.md"} <= {str(p) for p in written}
    for relative in written:
        assert (fleet / relative).read_bytes() == (alone / relative).read_bytes(), relative
    assert (tmp_path / "fleet" / "dev" / "report.json").is_file()


@pytest.mark.parametrize(
    "argv, says",
    [
        (["--all", "no/such/dir"], "--all no/such/dir: no such file or directory"),
        (["--all", "tests/golden"], "--all tests/golden: has no stack files"),
        (["--all", "stacks", "stacks/Pulumi.dev.yaml"], "stacks/Pulumi.dev.yaml is named twice"),
        (
            ["--all", "stacks/Pulumi.dev.yaml", "tests/fixtures/passing/../../../stacks/Pulumi.dev.yaml"],
            "is named twice",
        ),
    ],
)
def test_bad_paths_are_refused_before_any_stack_runs(argv, says, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert says in captured.err


def test_two_files_with_the_same_stack_name_are_refused(tmp_path, capsys):
    for directory in ("a", "b"):
        (tmp_path / directory).mkdir()
        (tmp_path / directory / "Pulumi.dev.yaml").write_bytes((ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes())
    assert main(["--all", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    assert "would both be reported as 'dev'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["--all", "--json", "r.json"],
        ["--all", "--tree"],
        ["--all", "--stack", "dev"],
        ["--out", "x"],
        ["--jobs", "2"],
        ["--all", "--jobs", "0"],
        ["--all", "--analyzer", "grpc", "--jobs", "2"],
    ],
)
def test_flags_that_do_not_go_together_are_usage_errors(argv, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip()


def test_an_out_directory_that_cannot_be_written_is_refused_before_any_stack_runs(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert main(["--all", "--out", str(blocker), "--jobs", "1"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "--out" in captured.err


@pytest.mark.subprocess
def test_forked_workers_print_what_one_process_prints(tmp_path):
    # The forked path (the default on a machine with cores) must not change a byte of the output.
    # Three stacks over two workers: one worker previews two, and their lines still come in order.
    stacks = ["stacks/Pulumi.dev.yaml", str(PASSING / "eks-nvidia.yaml"), str(TOO_OLD_FOR_CUDA)]
    argv = [sys.executable, "-m", "preview", "--all", *stacks]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    one = subprocess.run([*argv, "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
    two = subprocess.run(
        [*argv, "--jobs", "2", "--out", str(tmp_path / "out")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert (one.returncode, two.returncode) == (1, 1), two.stderr
    assert one.stdout == two.stdout
    assert len(one.stdout.splitlines()) == 3 + 1  # three stacks and the total
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["dev", "driver-too-old-for-cuda", "eks-nvidia"]


@pytest.mark.parametrize("file_name, name", [("Pulumi....yaml", ".."), ("Pulumi..yaml", ""), ("-x.yaml", "-x")])
def test_a_stack_name_that_cannot_name_a_report_directory_is_refused(tmp_path, capsys, file_name, name):
    stack = tmp_path / file_name
    stack.write_bytes((ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes())
    assert main(["--all", str(stack), "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert f"its stack name {name!r} cannot name a report directory" in captured.err
    assert captured.out == "" and not (tmp_path / "out").exists()


def test_an_out_directory_holding_an_input_is_refused(tmp_path, capsys):
    # A stack file where its own report would go, and a policy config in --out: both refused.
    (tmp_path / "rollout").mkdir()
    stack = tmp_path / "rollout" / "rollout.md"
    stack.write_bytes((ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes())
    assert main(["--all", str(stack), "--out", str(tmp_path)]) == 2
    assert "holds " + str(stack) + ", an input of this run (--all)" in capsys.readouterr().err
    assert stack.read_bytes() == (ROOT / "stacks" / "Pulumi.dev.yaml").read_bytes()
    config = tmp_path / "out" / "dev" / "report.json"
    config.parent.mkdir(parents=True)
    config.write_text("{}")
    assert (
        main(["--all", "stacks/Pulumi.dev.yaml", "--out", str(tmp_path / "out"), "--policy-config", str(config)]) == 2
    )
    assert "an input of this run (--policy-config)" in capsys.readouterr().err
    assert config.read_text() == "{}"


def test_all_given_twice_previews_both_lists(capsys):
    assert main(["--all", "stacks/Pulumi.dev.yaml", "--all", "stacks/Pulumi.prod.yaml", "--jobs", "1"]) == 0
    assert [line.split()[1] for line in _lines(capsys)[:-1]] == ["dev", "prod"]


def test_a_directory_of_plain_yaml_files_leaves_out_the_project_file(tmp_path):
    from preview import fleet

    for name in ("Pulumi.yaml", "a.yaml"):
        (tmp_path / name).write_text("config: {}\n")
    assert [s.name for s in fleet.stacks([tmp_path])] == ["a"]


@pytest.mark.subprocess
def test_a_worker_killed_midway_costs_its_stacks_an_error_line_not_a_hang(tmp_path):
    # The OOM killer's SIGKILL: the run still ends, with every stack's line and the total.
    argv = [sys.executable, "-m", "preview", "--all", "stacks", str(PASSING), str(VIOLATING), "--jobs", "2"]
    # Unbuffered: communicate() with a timeout reads the raw descriptor, so a second line that a
    # buffered readline() had already taken in with the first (two stacks done at once) would be lost;
    # a raw readline() takes one byte at a time, up to the first line's end.
    run = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0)
    first = run.stdout.readline().decode()  # a worker has finished its first stack: both are running
    workers = subprocess.run(["pgrep", "-P", str(run.pid)], capture_output=True, text=True).stdout.split()
    assert len(workers) == 2, workers
    os.kill(int(workers[1]), 9)
    rest, _ = run.communicate(timeout=300)
    lines = [first.rstrip("\n"), *rest.decode().splitlines()]
    # Every stack file it was given: the shipped ones, the passing fixtures, one per violating row.
    given = len(list((ROOT / "stacks").glob("Pulumi.*.yaml"))) + len(list(PASSING.glob("*.yaml")))
    given += len(fixture_stacks.rows("violating"))
    assert run.returncode == 3
    assert lines[-1].startswith(f"{given} stacks: ") and "error" in lines[-1]
    lost = [line for line in lines if line.startswith("ERROR")]
    assert lost and all("the worker previewing it ended (killed by signal 9)" in line for line in lost)
    assert len(lines) == given + 1
