"""`python -m preview --all [PATH ...]`: preview many stacks in one process, paying the SDK import
floor once, and say one verdict per stack plus the total.

Each stack goes through exactly what `python -m preview --config FILE` does to it (both engine modes,
the same policy pack, the same reports under `--out DIR/<stack>/`); only its summary is cut to one
line. Stacks are independent, so after the imports the work is split over forked workers
(`--jobs`, default one per core); lines are printed in stack order whatever finishes first, so the
output of the same files is byte-identical.

The exit code is the worst verdict: 3 if any stack hit an internal error, else 2 if any stack file
is invalid, else 1 if any stack has a mandatory violation, else 0.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import re
import select
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from preview.stack_file import ROOT, STACKS, stack_name

EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG, EXIT_INTERNAL = 0, 1, 2, 3
VERDICTS = {EXIT_OK: "PASS", EXIT_VIOLATIONS: "FAIL", EXIT_CONFIG: "INVALID", EXIT_INTERNAL: "ERROR"}
# What each output of a stack is called under --out DIR/<stack>/ (the names `make preview-all` used).
OUT_FILES = {"--json": "report.json", "--manifests": "manifests", "--audit": "audit.md", "--graph": "rollout.md"}


@dataclass(frozen=True)
class Stack:
    name: str  # how the lines and --out name it: the stack name of Pulumi.<name>.yaml, else the file's stem
    path: Path
    shown: str  # the path as reports show it, relative to the clone where it is inside it


@dataclass(frozen=True)
class Verdict:
    stack: str
    code: int
    detail: str

    def line(self, width: int) -> str:
        # One line per stack, whatever the detail: a configuration error can be a paragraph.
        detail = " ".join(part.strip() for part in self.detail.splitlines())
        return f"{VERDICTS[self.code]:<7} {self.stack:<{width}}  {detail}"


def _shown(path: Path) -> str:
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


# A stack's name becomes a directory under --out: a word, never `.`, `..` or a path.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
PROJECT_FILE = "Pulumi.yaml"  # the project, not a stack


def _files(given: Path) -> list[Path]:
    try:
        if given.is_dir():
            files = sorted(given.glob("Pulumi.*.yaml")) or sorted(
                p for p in given.glob("*.yaml") if p.name != PROJECT_FILE
            )
            if not files:
                raise ValueError(f"--all {given}: has no stack files (Pulumi.<stack>.yaml or *.yaml)")
            return files
        if given.is_file():
            return [given]
        if given.is_symlink():
            given.stat()  # a dangling link or a loop says which
    except OSError as exc:
        raise ValueError(f"--all {given}: {exc.strerror or exc}") from None
    raise ValueError(f"--all {given}: no such file or directory")


def stacks(paths: Sequence[Path]) -> list[Stack]:
    """The stack files named (a directory: its Pulumi.*.yaml, or its *.yaml when it has none), in the
    order given, each directory's sorted. ValueError (exit 2) for a path that is missing, a directory
    without stack files, a file whose stack name cannot name a report directory, or two files that
    would share a name in the output."""
    found: list[Stack] = []
    for given in paths or [STACKS]:
        for f in _files(given):
            name = stack_name(f)
            if not _NAME.fullmatch(name) or name in (".", ".."):
                raise ValueError(
                    f"--all {_shown(f)}: its stack name {name!r} cannot name a report directory "
                    "(letters, digits, '_', '.' and '-', not starting with '.' or '-')"
                )
            found.append(Stack(name, f, _shown(f)))
    seen: dict[str, Stack] = {}
    for stack in found:
        other = seen.setdefault(stack.name, stack)
        if other is not stack:
            if other.path.resolve() == stack.path.resolve():
                raise ValueError(f"--all: {stack.shown} is named twice")
            raise ValueError(
                f"--all: {other.shown} and {stack.shown} would both be reported as {stack.name!r}; "
                "preview them in separate runs"
            )
    return list(seen.values())


def _counts(violations) -> str:
    mandatory = sorted({v.policy for v in violations if v.enforcement_level == "mandatory"})
    advisory = sum(1 for v in violations if v.enforcement_level != "mandatory")
    text = f"{len([v for v in violations if v.enforcement_level == 'mandatory'])} mandatory"
    if mandatory:
        text += f" ({', '.join(mandatory)})"
    return f"{text}, {advisory} advisory"


def preview_one(stack: Stack, pack, levels: dict, out: Path | None) -> Verdict:
    """One stack as `python -m preview --config FILE` sees it; never raises for the stack's own faults."""
    from gpu_platform.config import ConfigError
    from preview import outcome, writing
    from preview.offline import analyze
    from preview.reports import report

    try:
        try:
            recordings = outcome.record(stack.path, stack.shown)
        except ConfigError as exc:
            return Verdict(stack.name, EXIT_CONFIG, f"{stack.shown}: {exc}")
        except (FileNotFoundError, ValueError) as exc:
            return Verdict(stack.name, EXIT_CONFIG, str(exc))
        judged = outcome.judge(recordings, pack, levels)
        if out is not None:
            paths = {flag: out / stack.name / name for flag, name in OUT_FILES.items()}
            try:
                writing.write_all(list(outcome.outputs(judged, paths)))
            except writing.OutputError as exc:
                return Verdict(stack.name, EXIT_CONFIG, f"{exc}; no report of this stack was written")
        extra = {(v.policy, v.message) for v in judged.first if v.enforcement_level == "mandatory"} - {
            (v.policy, v.message) for v in judged.violations if v.enforcement_level == "mandatory"
        }
        detail = f"{len(judged.recording.resources)} resources, {_counts(judged.violations)}"
        if extra:
            detail += f"; {len(extra)} more mandatory in the first preview of a new stack"
        stuck = report.stuck(judged.lifecycle)
        if stuck:
            detail += f"; node lifecycle: {len(stuck)} scenarios end stuck"
        return Verdict(stack.name, EXIT_VIOLATIONS if judged.fails() else EXIT_OK, detail)
    except analyze.PackError:
        raise  # the pack, not the stack: the whole run stops (exit 3)
    except Exception as exc:
        first_line = (str(exc).strip().splitlines() or [""])[0][:200]
        return Verdict(
            stack.name,
            EXIT_INTERNAL,
            f"internal error: {type(exc).__name__}: {first_line} (a bug in "
            f"gpu-platform; python -m preview --config {stack.shown} --debug shows it)",
        )


def _in_workers(
    work: Callable[[int], Verdict], names: Sequence[str], jobs: int, on_start: Callable[[Callable[[], None]], None]
) -> Iterator[Verdict]:
    """work(0..count-1) in `jobs` forked workers (worker k takes k, k+jobs, ...), yielded in index
    order. Forked after the imports, so each starts warm and inherits the in-process pack. A worker
    that dies (the OOM killer, a signal) costs its unfinished stacks an ERROR line, never a hang.

    Forked before any stack has run, never after: a run leaves the SDK's threads (its event loop's
    executor, gRPC) behind, and a fork copies their locks held; a worker forked after one run hung at
    its first stack (tried 2026-11-30). Each worker therefore pays the first run's imports of the
    providers' submodules (about a second, docs/benchmarks.md). Importing them in the parent
    before the fork would not shorten the run where workers are one per core: the workers import
    in parallel what the parent would import alone (measured 2026-11-30, two cores)."""
    parent, count = os.getpid(), len(names)
    workers: dict[int, tuple[int, list[int]]] = {}  # read end -> (pid, the indices it owes)

    def stop() -> None:
        if os.getpid() != parent:
            return  # a worker that inherited this hook has nothing to stop
        for pid, _ in workers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    on_start(stop)
    for k in range(jobs):
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the worker
            os.close(read)
            quiet_stops()
            code = 0
            try:
                with os.fdopen(write, "wb") as out:
                    for index in range(k, count, jobs):
                        blob = pickle.dumps((index, work(index)))
                        out.write(len(blob).to_bytes(8, "big") + blob)
                        out.flush()
            except BaseException:
                code = 3
            os._exit(code)
        os.close(write)
        workers[read] = (pid, list(range(k, count, jobs)))
    done: dict[int, Verdict] = {}
    buffers = dict.fromkeys(workers, b"")
    following = 0
    try:
        while workers:
            ready, _, _ = select.select(list(workers), [], [])
            for fd in ready:
                chunk = os.read(fd, 1 << 20)
                if chunk:
                    buffers[fd] += chunk
                    while len(buffers[fd]) >= 8 and len(buffers[fd]) >= 8 + int.from_bytes(buffers[fd][:8], "big"):
                        size = int.from_bytes(buffers[fd][:8], "big")
                        index, verdict = pickle.loads(buffers[fd][8 : 8 + size])
                        buffers[fd] = buffers[fd][8 + size :]
                        done[index] = verdict
                        workers[fd][1].remove(index)
                    continue
                pid, owed = workers.pop(fd)
                os.close(fd)
                _, status = os.waitpid(pid, 0)
                for index in owed:  # the worker ended before previewing these
                    done[index] = _lost(names[index], status)
            while following in done:
                yield done.pop(following)
                following += 1
    finally:
        stop()
        for fd, (pid, _) in workers.items():
            os.close(fd)
            os.waitpid(pid, 0)


def _lost(stack: str, status: int) -> Verdict:
    how = (
        f"killed by signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"exited with {os.WEXITSTATUS(status)}"
    )
    return Verdict(
        stack,
        EXIT_INTERNAL,
        f"internal error: the worker previewing it ended ({how}) before it was done, e.g. out of memory; "
        f"preview it alone with --config",
    )


def quiet_stops() -> None:
    """In a worker: a stop ends it at once, its unfinished reports discarded, without a word (the
    parent says "interrupted" once)."""

    def end(signum: int, _frame) -> None:
        discard = getattr(sys.modules.get("preview.writing"), "discard_unfinished", None)
        try:
            if discard is not None:
                discard()
        finally:
            os._exit(128 + signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) != signal.SIG_IGN:  # ignored in the parent: ignored here too
            signal.signal(signum, end)


def run(
    found: Sequence[Stack],
    pack,
    levels: dict,
    out: Path | None,
    jobs: int,
    on_start: Callable[[Callable[[], None]], None] = lambda stop: None,
    print_line: Callable[[str], None] = print,
) -> int:
    """Preview every stack, print its line as soon as it and every stack before it are done, then the
    total; the worst verdict's exit code."""
    jobs = max(1, min(jobs, len(found)))
    work = lambda i: preview_one(found[i], pack, levels, out)  # noqa: E731
    results: Iterable[Verdict] = (
        (work(i) for i in range(len(found)))
        if jobs == 1
        else _in_workers(work, [stack.name for stack in found], jobs, on_start)
    )
    width = max(len(s.name) for s in found)
    codes = []
    for verdict in results:
        print_line(verdict.line(width))
        codes.append(verdict.code)
    tally = ", ".join(f"{codes.count(code)} {VERDICTS[code].lower()}" for code in VERDICTS if codes.count(code))
    print_line(f"{len(found)} stack{'s' if len(found) != 1 else ''}: {tally}")
    return max(codes)


def default_jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
