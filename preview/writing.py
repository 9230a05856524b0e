"""All-or-nothing output for the preview: every report is rendered first, then written to a
temporary file beside its target; then the summary goes to stdout; only when it is there are the
reports moved into place. A failure (a full disk, a read-only or pseudo file system, a closed stdout)
or an interrupt removes the temporary files and the directories this run made, and the error names
the flag: no run leaves half a set of reports, an old report beside a new one, or reports without
the summary that says what they hold."""

from __future__ import annotations

import contextlib
import fnmatch
import os
import signal
import stat
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

MANIFEST_GLOB = "[0-9][0-9]-*.yaml"
# The manifests a run wrote into a --manifests directory: the next run deletes those it no longer
# writes, and nothing else (a user's own `10-my-app.yaml` beside them stays).
MANIFEST_INDEX = ".preview-manifests"


class OutputError(ValueError):
    """An output that cannot be written: invalid invocation (exit 2)."""


@dataclass(frozen=True)
class Output:
    flag: str
    path: Path
    render: Callable[[], str | dict[str, str]]  # one file's text, or a directory's files by name

    @property
    def is_directory(self) -> bool:
        return self.flag == "--manifests"


def _existing_ancestor(path: Path) -> Path:
    for parent in (path, *path.parents):
        if parent.exists():
            return parent
    return Path("/")


def check(flag: str, path: Path, directory: bool = False, inputs: Sequence[tuple[str, Path | None]] = ()) -> None:
    """Refuse, before anything runs, an output that cannot be one: a directory for a file (or a file
    for a directory), a device or other special file, a path under a file, a place this user cannot
    write, a path that is also one of the run's inputs, a --manifests directory that holds one (a
    file there could be replaced), a path the OS refuses (a name too long, a loop of links)."""
    try:
        _check(flag, path, directory, inputs)
    except OSError as exc:
        raise OutputError(f"{flag} {path}: {exc.strerror or exc}") from None


def _check(flag: str, path: Path, directory: bool, inputs: Sequence[tuple[str, Path | None]]) -> None:
    for other_flag, other in inputs:
        if other is not None and other.resolve() == path.resolve():
            raise OutputError(f"{flag} {path}: is also the input of {other_flag}; write the report elsewhere")
        if directory and other is not None and other.resolve().parent == path.resolve():
            raise OutputError(
                f"{flag} {path}: holds {other_flag} {other}, an input of this run; write the manifests elsewhere"
            )
    if directory:
        if path.exists() and not path.is_dir():
            raise OutputError(f"{flag} {path}: is a file; give a directory")
    elif path.is_dir():
        raise OutputError(f"{flag} {path}: is a directory; give a file name")
    elif path.exists() and not path.is_file():
        raise OutputError(f"{flag} {path}: is not a regular file (a device, a pipe or a socket); give a file name")
    # What must be a writable directory: the output's own for --manifests, else the one it goes in
    # (an existing report is replaced, so the file itself may exist).
    ancestor = _existing_ancestor(path if directory else path.parent)
    if not ancestor.is_dir():
        raise OutputError(f"{flag} {path}: {ancestor} is a file, not a directory")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {path}: {ancestor} is not writable")


def check_distinct(outputs: Sequence[tuple[str, Path | None]]) -> None:
    """Refuse two outputs on one path: the second would silently replace the first."""
    seen: dict[Path, str] = {}
    for flag, path in outputs:
        if path is None:
            continue
        try:
            resolved = path.resolve()
        except OSError as exc:
            raise OutputError(f"{flag} {path}: {exc.strerror or exc}") from None
        if resolved in seen:
            raise OutputError(f"{seen[resolved]} and {flag} name the same path {path}; give each its own")
        seen[resolved] = flag


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """SIGINT and SIGTERM wait for the end of the block, then act as they would have: an interrupt
    never falls between creating a temporary file and noting it down, or between two moves into
    place. (Python runs signal handlers in the main thread only; elsewhere nothing can be held.)"""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        s: signal.signal(s, lambda signum, _frame: caught.append(signum)) for s in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        for signum in dict.fromkeys(caught):
            signal.raise_signal(signum)


def _temporary(directory: Path, text: str) -> Path:
    """A new file beside the target, 0666 less the umask as open() would make it (mkstemp's 0600
    would lock the group out of every report)."""
    path = directory / f".preview-{os.getpid()}-{uuid.uuid4().hex[:8]}.tmp"
    stream = open(path, "x", encoding="utf-8")  # noqa: SIM115 (closed below, the file removed on failure)
    try:
        with stream:
            stream.write(text)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return path


_unfinished: set[_Staging] = set()  # stagings neither moved into place nor taken back yet


class _Staging:
    """What one run has put on disk so far, to move into place or to take back."""

    def __init__(self) -> None:
        _unfinished.add(self)
        self.made: list[Path] = []  # directories this run created, deepest first
        self.staged: dict[Path, tuple[str, Path]] = {}  # target -> (flag, temporary)
        self.stale: list[Path] = []  # manifests an earlier run wrote that this one does not

    def add(self, output: Output, content: str | dict[str, str]) -> None:
        if not output.is_directory:
            self._mkdir(output.path.parent)
            self._stage(output.flag, output.path, content)
            return
        self._mkdir(output.path)
        for name, text in content.items():
            self._stage(output.flag, output.path / name, text)
        self._stage(output.flag, output.path / MANIFEST_INDEX, "".join(f"{name}\n" for name in content))
        self.stale += [output.path / name for name in _indexed(output.path) if name not in content]

    def _mkdir(self, directory: Path) -> None:
        missing = [d for d in (directory, *directory.parents) if not d.exists()]
        self.made = missing + self.made
        directory.mkdir(parents=True, exist_ok=True)

    def _stage(self, flag: str, target: Path, text: str) -> None:
        if target in self.staged:
            raise OutputError(f"{flag} {target}: is also written by {self.staged[target][0]}; give each its own path")
        temporary = _temporary(target.parent, text)
        self.staged[target] = (flag, temporary)
        if target.is_file():
            # Replacing a report keeps the mode its owner gave it.
            temporary.chmod(stat.S_IMODE(target.stat().st_mode))

    def discard(self) -> None:
        for _, temporary in self.staged.values():
            temporary.unlink(missing_ok=True)
        for directory in self.made:
            with contextlib.suppress(OSError):
                directory.rmdir()
        _unfinished.discard(self)

    def commit(self) -> None:
        for old in self.stale:
            if old not in self.staged:
                old.unlink(missing_ok=True)
        for target, (_, temporary) in self.staged.items():
            os.replace(temporary, target)
        _unfinished.discard(self)


def discard_unfinished() -> None:
    """For a process about to exit at once (a signal handler): take back what is not in place yet."""
    for staging in list(_unfinished):
        staging.discard()


def _indexed(directory: Path) -> list[str]:
    """The manifests an earlier run wrote here, by its index; only plain manifest names, so an index
    edited by hand never deletes anything else."""
    try:
        names = (directory / MANIFEST_INDEX).read_text(encoding="utf-8", errors="replace").splitlines()
    except FileNotFoundError:
        return []
    return [n for n in names if Path(n).name == n and fnmatch.fnmatchcase(n, MANIFEST_GLOB)]


def _print(text: str) -> None:
    stream = sys.stdout
    try:
        if stream is None:  # started with stdout closed (`>&-`)
            raise OSError("stdout is closed")
        stream.write(text)
        stream.flush()
    except OSError as exc:
        _drop(stream)
        raise OutputError(f"cannot write the summary to stdout: {exc.strerror or exc}") from None


def _drop(stream) -> None:
    """What stays in stdout's buffer after a failed write goes to /dev/null: the interpreter flushes
    stdout again at exit, and a second failure would print its own error (and make the exit 120)."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, stream.fileno())
        os.close(null)


def write_all(outputs: Sequence[Output], summary: str | None = None) -> None:
    """Render every output, write each to a temporary file beside its target, write the summary
    (when given) to stdout, then move them all into place (an earlier run's manifests that this one
    does not write go only then). Raises OutputError naming the flag, or stdout; nothing of this run
    stays behind, whatever stops it (an error, Ctrl-C, SIGTERM)."""
    rendered = [(o, o.render()) for o in outputs]
    staging = _Staging()
    try:
        with stops_deferred():
            for output, content in rendered:
                try:
                    staging.add(output, content)
                except OSError as exc:
                    raise OutputError(
                        f"{output.flag} {output.path}: cannot be written ({exc.strerror or exc})"
                    ) from None
        # Not held: Ctrl-C must still end a run whose stdout (a pipe nobody reads) blocks.
        if summary is not None:
            _print(summary)
    except BaseException:
        staging.discard()
        raise
    with stops_deferred():
        staging.commit()
