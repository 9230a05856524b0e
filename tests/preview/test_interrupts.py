"""Ctrl-C at any moment of `python -m preview`: one line, "interrupted", exit 130, and no report or
temporary file left behind (the summary and the reports are one all-or-nothing output)."""

from __future__ import annotations

import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from preview.__main__ import main
from tests.conftest import ROOT

OUTPUTS = ("--json", "report.json", "--manifests", "manifests", "--audit", "audit.md", "--graph", "rollout.md")


def _start(tmp_path, *python: str) -> subprocess.Popen:
    outputs = [str(tmp_path / part) if not part.startswith("--") else part for part in OUTPUTS]
    return subprocess.Popen(
        [sys.executable, *python, "--stack", "prod", *outputs],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def _interrupt(preview: subprocess.Popen) -> tuple[int, str]:
    assert preview.poll() is None, "the run ended before the signal: nothing was interrupted"
    preview.send_signal(signal.SIGINT)
    _, err = preview.communicate(timeout=60)
    return preview.returncode, err


def _wait_for_our_handlers(preview: subprocess.Popen) -> None:
    """Until preview/__main__.py's first lines have run: they catch SIGTERM, which the interpreter
    never does by itself (Linux: SigCgt in /proc/<pid>/status). Before that instant a Ctrl-C meets
    only the interpreter's own start-up, which no program controls; counting delays from a fixed
    time after spawning made this test fail whenever start-up was slow (a loaded machine)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        status = pathlib.Path(f"/proc/{preview.pid}/status").read_text()
        caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
        if caught & (1 << (signal.SIGTERM - 1)):
            return
        time.sleep(0.001)
    raise AssertionError("preview never installed its signal handlers")


def _wait_for_working_children(preview: subprocess.Popen, count: int) -> None:
    """Until the fleet has forked `count` workers and each is previewing: it has started the
    engine's threads (a worker sets its signal handlers first, and a fresh fork shows its parent's)."""
    children = pathlib.Path(f"/proc/{preview.pid}/task/{preview.pid}/children")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pids = children.read_text().split()
        if len(pids) == count and all(_threads(pid) > 1 for pid in pids):
            return
        time.sleep(0.001)
    raise AssertionError(f"the fleet never had {count} working workers")


def _threads(pid: str) -> int:
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return 0
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


# From our first line (the handlers) through the imports of Pulumi and the policy pack to the two
# runs of the program under the recording engine (prod: about 3 s).
@pytest.mark.subprocess
@pytest.mark.parametrize("delay", [0.0, 0.05, 0.15, 0.3, 0.6, 1.0, 2.0])
def test_ctrl_c_at_any_moment_is_one_line_and_exit_130(tmp_path, delay):
    preview = _start(tmp_path, "-m", "preview")
    _wait_for_our_handlers(preview)
    time.sleep(delay)
    assert _interrupt(preview) == (130, "interrupted\n")
    assert list(tmp_path.iterdir()) == []


# The summary waits on stdout while every report is already written to its temporary file.
_HELD_AT_THE_SUMMARY = """
import pathlib, runpy, sys, time
from preview import writing
marker = pathlib.Path(sys.argv.pop(1))
def held(text):
    marker.write_text("")
    time.sleep(60)
writing._print = held
sys.argv[0] = "preview"
runpy.run_module("preview", run_name="__main__", alter_sys=True)
"""


@pytest.mark.subprocess
def test_ctrl_c_while_the_reports_are_written_leaves_no_file(tmp_path):
    outputs = tmp_path / "outputs"
    outputs.mkdir()
    marker = tmp_path / "staged"
    preview = _start(outputs, "-c", _HELD_AT_THE_SUMMARY, str(marker))
    deadline = time.monotonic() + 60
    while not marker.exists() and preview.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert list(outputs.rglob("*.tmp")), "no report was being written"
    assert _interrupt(preview) == (130, "interrupted\n")
    assert list(outputs.iterdir()) == []  # the temporary files and the manifests directory this run made


def test_ctrl_c_while_the_reports_are_moved_into_place_waits_for_the_last(tmp_path, capsys, monkeypatch, request):
    # Between the first and the last move, an interrupt would leave half a set of reports: it is
    # honoured right after the last.
    # In-process, Ctrl-C is Python's own handler (KeyboardInterrupt), which this test relies on: set it
    # here, because pytest started as a background job of a script (`.ci/run &`: job control off)
    # inherits SIGINT ignored, the interpreter then installs no handler, and main returned 0.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    real, moved = os.replace, []

    def replace(source, target):
        if not moved:
            signal.raise_signal(signal.SIGINT)
        moved.append(target)
        real(source, target)

    monkeypatch.setattr(os, "replace", replace)
    outputs = [str(tmp_path / part) if not part.startswith("--") else part for part in OUTPUTS]
    assert main(["--stack", "dev", *outputs]) == 130
    assert capsys.readouterr().err == "interrupted\n"
    assert len(moved) > 10 and all(os.path.exists(p) for p in moved) and not list(tmp_path.rglob("*.tmp"))


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "command",
    [("--stack", "dev", "--json", "{out}/report.json"), ("--all", "--out", "{out}")],
    ids=["one stack", "fleet"],
)
def test_a_sigint_ignored_at_start_stays_ignored(tmp_path, command):
    # `python -m preview &` in a script: the shell starts it with SIGINT ignored, so that a Ctrl-C
    # meant for the script's foreground command leaves it running. Sent to the whole process group
    # (the fleet's workers too), it finishes its run: both shipped stacks pass.
    preview = subprocess.Popen(
        [sys.executable, "-m", "preview", *(part.format(out=tmp_path) for part in command)],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    _wait_for_our_handlers(preview)
    if "--all" in command:  # and until both workers (one per stack) run a preview: past their own handlers
        _wait_for_working_children(preview, 2)
    os.killpg(preview.pid, signal.SIGINT)
    _, err = preview.communicate(timeout=180)
    assert (preview.returncode, err) == (0, "")
    written = {path.parent.name for path in tmp_path.rglob("report.json")}
    assert written == ({"dev", "dra", "prod"} if "--all" in command else {tmp_path.name})


def test_ctrl_c_while_a_module_is_half_imported_still_exits_130(monkeypatch, capfd):
    # Seen under load: the signal landed while preview.writing was being imported, the handler
    # called its not-yet-defined discard_unfinished, and the AttributeError surfaced as exit 3.
    import types

    from preview import __main__ as entry

    monkeypatch.setitem(sys.modules, "preview.writing", types.ModuleType("preview.writing"))
    exits = []
    monkeypatch.setattr(entry.os, "_exit", lambda code: exits.append(code))
    entry._exit_now(signal.SIGINT, None)
    assert exits == [130]
    assert capfd.readouterr().err == "interrupted\n"
