"""One stack's first-preview verdicts judged in a forked child while the parent records and judges
`pulumi up`: the two engine modes are independent runs of the program, so on two cores the preview
takes the time of one of them. `python -m preview` only (never under a test's in-process `main()`,
never in a fleet worker, never with a pack subprocess).

The child is forked before either run, never after: a run leaves the SDK's threads behind and a
fork copies the locks they hold (preview/fleet.py says how a worker forked later hung). Whatever goes
wrong in the child (an error, a signal, no answer in time), the parent judges the first preview
itself, as it would without the child: the output is the same, only slower."""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

# The child does what the parent does in the meantime; past this multiple of the parent's own time
# (and at least the floor), it is taken for hung and the parent judges the first preview itself.
_PATIENCE, _PATIENCE_FLOOR_S = 3.0, 20.0


_STOPS = (signal.SIGINT, signal.SIGTERM)


class Child:
    """The forked child: its verdicts, once; `end()` (idempotent, safe from a signal handler) ends and
    reaps it."""

    def __init__(self, pid: int, read: int):
        self.parent, self.pid, self.read, self.started = os.getpid(), pid, read, time.monotonic()
        self.status: int | None = None  # its wait status once reaped; -1: reaped by someone else
        self._ended = False

    def verdicts(self) -> list | None:
        """Asked once the parent's own work is done; None when the child failed, died, printed
        anything (the parent then prints it as the serial run would) or took too long."""
        deadline = self.started + max(_PATIENCE_FLOOR_S, _PATIENCE * (time.monotonic() - self.started))
        blob = b""
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.read], [], [], left)[0]:
                self.end()  # taken for hung
                return None
            chunk = os.read(self.read, 1 << 20)
            if not chunk:
                break
            blob += chunk
        self.end(kill=False)  # it closed the pipe: it is exiting, its status says how
        if self.status is None or not os.WIFEXITED(self.status) or os.WEXITSTATUS(self.status) != 0:
            return None
        try:
            return pickle.loads(blob)
        except Exception:  # a blob cut short: judged here instead
            return None

    def end(self, kill: bool = True) -> None:
        if os.getpid() != self.parent or self._ended:
            return  # a copy inherited by a process forked later, or ended already (or being ended)
        self._ended = True
        if kill:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.close(self.read)
        try:
            _, self.status = os.waitpid(self.pid, 0)
        except ChildProcessError:
            self.status = -1


def start(path: Path, shown: str, pack, levels: dict, on_start) -> Child | None:
    """The forked child (`on_start(child.end)` before a stop can reach the parent), or None where
    forking would not help or is not safe."""
    from preview import fleet

    if (
        not hasattr(os, "fork")
        or fleet.default_jobs() < 2
        or threading.active_count() > 1  # a fork copies only this thread, and the locks others hold
        or signal.getsignal(signal.SIGCHLD) != signal.SIG_DFL  # ignored: the kernel reaps it, waitpid fails
        or sys.warnoptions
        or sys.flags.dev_mode  # warnings the child would print (it prints nothing)
    ):
        return None
    # No stop between the fork and the hooks: the parent's ends the child, the child's is quiet.
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    try:
        try:
            read, write = os.pipe()
        except OSError:
            return None
        try:
            pid = os.fork()
        except OSError:  # no process to spare (ulimit, cgroup pids, memory): one after the other
            os.close(read)
            os.close(write)
            return None
        if pid == 0:
            os.close(read)
            _judge_and_exit(path, shown, pack, levels, write)
        os.close(write)
        child = Child(pid, read)
        on_start(child.end)
        return child
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)


def _judge_and_exit(path: Path, shown: str, pack, levels: dict, write: int) -> None:
    code = 3
    try:
        from preview import fleet

        fleet.quiet_stops()  # the parent says "interrupted", once
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _STOPS)
        # What it prints goes to a file: printed anything, it gives no verdicts, and the parent's own
        # run of the first preview prints it where the serial run would.
        printed = tempfile.TemporaryFile()  # noqa: SIM115 (open until os._exit)
        os.dup2(printed.fileno(), 1)
        os.dup2(printed.fileno(), 2)
        from preview.offline import analyze, engine

        recording = engine.run(path, mode=engine.FIRST_PREVIEW, shown=shown)
        blob = pickle.dumps(analyze.analyze(recording, pack, levels))
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        if os.fstat(printed.fileno()).st_size == 0:
            with os.fdopen(write, "wb") as out:
                out.write(blob)
            code = 0
    except BaseException:  # the parent judges it itself and shows what went wrong
        pass
    os._exit(code)
