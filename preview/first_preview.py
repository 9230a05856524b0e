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
import threading
import time
from pathlib import Path

# The child does what the parent does in the meantime; past this multiple of the parent's own time
# (and at least the floor), it is taken for hung and the parent judges the first preview itself.
_PATIENCE, _PATIENCE_FLOOR_S = 3.0, 20.0


class Child:
    """The forked child: its verdicts, once; `end()` (idempotent) ends and reaps it."""

    def __init__(self, pid: int, read: int):
        self.parent, self.pid, self.read, self.started = os.getpid(), pid, read, time.monotonic()
        self.status: int | None = None

    def verdicts(self) -> list | None:
        """Asked once the parent's own work is done; None when the child failed, died or took too long."""
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
        self.end()
        if self.status is None or not os.WIFEXITED(self.status) or os.WEXITSTATUS(self.status) != 0:
            return None
        return pickle.loads(blob)

    def end(self) -> None:
        if os.getpid() != self.parent or self.status is not None:
            return  # a copy inherited by a process forked later, or ended already
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)  # gone already when it wrote its verdicts and exited
        os.close(self.read)
        _, self.status = os.waitpid(self.pid, 0)


def start(path: Path, shown: str, pack, levels: dict) -> Child | None:
    """The forked child, or None where forking would not help or is not safe."""
    from preview import fleet

    if not hasattr(os, "fork") or fleet.default_jobs() < 2 or threading.active_count() > 1:
        return None  # one core: nothing runs beside; another thread: a fork would copy its locks held
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        _judge_and_exit(path, shown, pack, levels, write)
    os.close(write)
    return Child(pid, read)


def _judge_and_exit(path: Path, shown: str, pack, levels: dict, write: int) -> None:
    from preview import fleet
    from preview.offline import analyze, engine

    fleet.quiet_stops()  # the parent says "interrupted", once
    code = 3
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.dup2(devnull, 2)
        recording = engine.run(path, mode=engine.FIRST_PREVIEW, shown=shown)
        blob = pickle.dumps(analyze.analyze(recording, pack, levels))
        with os.fdopen(write, "wb") as out:
            out.write(blob)
        code = 0
    except BaseException:  # the parent judges it itself and shows what went wrong
        pass
    os._exit(code)
