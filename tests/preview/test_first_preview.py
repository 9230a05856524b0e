"""The first preview judged in a forked child: the same output as one after the other, and a child
that fails, dies or hangs costs only time."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import threading

import pytest

import preview.__main__ as cli
from preview import first_preview
from tests import fixture_stacks
from tests.conftest import ROOT

VIOLATING = fixture_stacks.row("violating", "driver-too-old-for-cuda").path


def _child(code: str) -> first_preview.Child:
    """A Child around a plain process that plays the forked child's part on the pipe."""
    read, write = os.pipe()
    process = subprocess.Popen([sys.executable, "-c", code], stdout=write, close_fds=True)
    os.close(write)
    return first_preview.Child(process.pid, read)


@pytest.mark.subprocess
@pytest.mark.parametrize("stack", ["prod", VIOLATING], ids=["prod", "violating"])
def test_the_forked_cli_prints_what_the_preview_prints_one_run_after_the_other(stack, tmp_path, capsys):
    flag = ["--stack", stack] if stack == "prod" else ["--config", str(stack)]
    forked = subprocess.run(
        [sys.executable, "-m", "preview", *flag, "--json", str(tmp_path / "forked.json")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    # In-process, main() never forks (no stop handlers of `python -m preview`): one run after the other.
    code = cli.main([*flag, "--json", str(tmp_path / "serial.json")])
    serial = capsys.readouterr()
    assert (forked.returncode, forked.stdout, forked.stderr) == (code, serial.out, serial.err)
    assert (tmp_path / "forked.json").read_bytes() == (tmp_path / "serial.json").read_bytes()
    assert "First pulumi preview of a new stack (ids and computed outputs unknown): the same verdicts" in serial.out


# The real fork, in a process of its own (a pytest worker has threads: it would not fork).
_FORK = """
import signal, sys
from pathlib import Path
from preview import first_preview
from preview.offline import analyze, engine
case = sys.argv[1]
if case == "noisy":
    real = engine.run
    engine.run = lambda *a, **k: (print("a word from the program"), real(*a, **k))[1]
if case == "sigchld-ignored":
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
path, pack, hooks = Path("stacks/Pulumi.dev.yaml"), analyze.in_process(), []
child = first_preview.start(path, "dev", pack, {}, hooks.append)
if child is None:
    print("not forked")
    sys.exit(0)
got = child.verdicts()
serial = analyze.analyze(engine.run(path, mode=engine.FIRST_PREVIEW), pack, {})
print("hooked" if hooks == [child.end] else "not hooked", "none" if got is None else got == serial and "same")
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "case, expected",
    [
        ("quiet", "hooked same"),  # the verdicts it pipes back are those judged here
        ("noisy", "hooked none"),  # it printed: the parent's own run prints it where it belongs
        ("sigchld-ignored", "not forked"),  # the kernel would reap it before waitpid
    ],
)
def test_the_forked_child(case, expected):
    done = subprocess.run([sys.executable, "-c", _FORK, case], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == expected


def test_no_fork_while_another_thread_runs():
    # A fork copies only the calling thread; a lock another thread holds would stay held in the child.
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert first_preview.start(ROOT / "stacks" / "Pulumi.dev.yaml", "dev", None, {}, print) is None
    finally:
        stop.set()
        other.join()


def test_a_childs_verdicts_are_what_it_wrote_when_it_exits_0():
    child = _child(f"import sys; sys.stdout.buffer.write({pickle.dumps(['v1', 'v2'])!r})")
    assert child.verdicts() == ["v1", "v2"]
    assert os.WIFEXITED(child.status) and os.WEXITSTATUS(child.status) == 0


def test_a_child_that_fails_gives_no_verdicts_even_if_it_wrote_some():
    child = _child(f"import sys; sys.stdout.buffer.write({pickle.dumps(['v1'])!r}); sys.exit(3)")
    assert child.verdicts() is None


def test_a_child_that_hangs_is_killed_and_gives_no_verdicts(monkeypatch):
    monkeypatch.setattr(first_preview, "_PATIENCE_FLOOR_S", 0.5)
    child = _child("import time; time.sleep(60)")
    assert child.verdicts() is None
    assert os.WIFSIGNALED(child.status) and os.WTERMSIG(child.status) == 9


def test_ending_a_child_twice_is_harmless():
    child = _child("import time; time.sleep(60)")
    child.end()
    child.end()
    assert os.WIFSIGNALED(child.status)


@pytest.mark.parametrize("answer", [None, "verdicts"])
def test_the_output_is_the_same_whether_the_child_answers_or_fails(monkeypatch, capsys, answer):
    # The fork stood in for by a child that answers `answer`: None (failed), or the real verdicts.
    code = cli.main(["--config", str(VIOLATING)])
    serial = capsys.readouterr()

    class Stand:
        def verdicts(self):
            if answer is None:
                return None
            from preview.offline import analyze, engine

            return analyze.analyze(engine.run(VIOLATING, mode=engine.FIRST_PREVIEW))

        def end(self):
            ended.append(True)

    def start(path, shown, pack, levels, on_start):
        on_start(stand.end)  # as the real start hooks its child's end onto the stops
        hooked.append(set(cli._ON_STOP))
        return stand

    stand, ended, hooked = Stand(), [], []
    monkeypatch.setattr(cli, "_may_fork", lambda args: True)
    monkeypatch.setattr(first_preview, "start", start)
    monkeypatch.setattr(cli, "_ON_STOP", set())
    assert cli.main(["--config", str(VIOLATING)]) == code
    assert capsys.readouterr() == serial
    # Hooked while it ran, ended and unhooked after.
    assert hooked == [{stand.end}] and ended and not cli._ON_STOP
