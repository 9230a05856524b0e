"""What the preview writes is all or nothing, and a path it cannot use is invalid input (exit 2)
naming its flag: the reports, the manifests directory, and the summary on stdout."""

from __future__ import annotations

import errno
import io
import os
import stat
import subprocess
import sys

import pytest

from preview.__main__ import main
from tests.conftest import ROOT, stack_config, write_stack

LONG = "x" * 300  # longer than a file name may be (NAME_MAX 255): the OS answers ENAMETOOLONG
INPUTS = ("--config", "--against", "--policy-config", "--audit-against")
OUTPUTS = ("--json", "--manifests", "--audit", "--graph")


def _files(directory) -> list[str]:
    return sorted(str(p.relative_to(directory)) for p in directory.rglob("*"))


@pytest.mark.parametrize("flag", INPUTS + OUTPUTS)
def test_a_path_the_os_refuses_is_invalid_input_naming_the_flag(tmp_path, capsys, flag):
    path = tmp_path / f"{LONG}.md"
    report = tmp_path / "report.json"
    others = ["--audit", str(tmp_path / "a.md")] if flag == "--audit-against" else []
    others += ["--json", str(report)] if flag != "--json" else []
    assert main([flag, str(path), *others]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag} {path}: ") and "File name too long" in err
    assert err.count("\n") == 1 and "internal error" not in err
    assert not report.exists()


def test_a_stack_name_the_os_refuses_is_invalid_input(capsys):
    assert main(["--stack", LONG]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --stack {LONG}: ") and "File name too long" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv", [["--config", ""], ["--json="], ["--manifests", ""], ["--policy-config="], ["verify-ami", "--config", ""]]
)
def test_an_empty_path_is_named_empty(capsys, argv):
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    flag = next(a for a in argv if a.startswith("--")).rstrip("=")
    assert f"argument {flag}: the path is empty" in capsys.readouterr().err


@pytest.mark.parametrize("first, second", [("--json", "--audit"), ("--audit", "--graph"), ("--json", "--manifests")])
def test_two_outputs_on_one_path_are_refused_naming_both(tmp_path, capsys, first, second):
    out = tmp_path / "out.md"
    assert main([first, str(out), second, str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and first in err and second in err
    assert _files(tmp_path) == []


def test_manifests_replace_only_what_the_preview_wrote_there(tmp_path):
    out = tmp_path / "manifests"
    assert main(["--stack", "prod", "--manifests", str(out)]) == 0
    assert any("mig-manager" in p.name for p in out.iterdir())
    mine = out / "10-my-app.yaml"
    mine.write_text("kind: ConfigMap\n")
    assert main(["--stack", "dev", "--manifests", str(out)]) == 0
    assert mine.read_text() == "kind: ConfigMap\n"
    assert not any("mig-manager" in p.name for p in out.iterdir())  # prod's, written by the first run


def test_a_manifests_directory_holding_an_input_is_refused(tmp_path, capsys):
    stack = write_stack(tmp_path, stack_config("dev"), name="dev")
    mine = stack.rename(tmp_path / "01-my-stack.yaml")
    assert main(["--config", str(mine), "--manifests", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --manifests {tmp_path}: ") and f"--config {mine}" in err
    assert _files(tmp_path) == ["01-my-stack.yaml"]


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


@pytest.mark.parametrize("mask, mode", [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_reports_get_the_mode_open_gives_them(tmp_path, umask, mask, mode):
    umask(mask)
    assert main(["--json", str(tmp_path / "dev.json"), "--manifests", str(tmp_path / "manifests")]) == 0
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) > 10 and {stat.S_IMODE(p.stat().st_mode) for p in files} == {mode}


def test_a_replaced_report_keeps_its_mode(tmp_path, umask):
    report = tmp_path / "dev.json"
    report.write_text("old")
    report.chmod(0o640)
    assert main(["--json", str(report)]) == 0
    assert stat.S_IMODE(report.stat().st_mode) == 0o640 and report.read_text() != "old"


class _FullStdout(io.StringIO):
    def write(self, text):
        raise OSError(errno.ENOSPC, "No space left on device")


@pytest.mark.parametrize("stdout, reason", [(_FullStdout(), "No space left on device"), (None, "stdout is closed")])
def test_a_summary_that_cannot_reach_stdout_writes_no_report(tmp_path, capsys, monkeypatch, stdout, reason):
    monkeypatch.setattr(sys, "stdout", stdout)
    outputs = ["--json", str(tmp_path / "dev.json"), "--manifests", str(tmp_path / "out" / "manifests")]
    assert main(outputs) == 2
    assert capsys.readouterr().err == f"error: cannot write the summary to stdout: {reason}; no report was written\n"
    assert _files(tmp_path) == []


@pytest.mark.subprocess
@pytest.mark.parametrize("redirect, reason", [("> /dev/full", "No space left on device"), (">&-", "stdout is closed")])
def test_the_command_with_a_broken_stdout_exits_2_and_writes_nothing(tmp_path, redirect, reason):
    # As a shell runs it: the interpreter's own flush of stdout at exit must not fail a second time.
    command = f'exec "{sys.executable}" -m preview --json "{tmp_path}/dev.json" {redirect}'
    done = subprocess.run(["sh", "-c", command], cwd=ROOT, stderr=subprocess.PIPE, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (
        2,
        f"error: cannot write the summary to stdout: {reason}; no report was written\n",
    )
    assert _files(tmp_path) == []
