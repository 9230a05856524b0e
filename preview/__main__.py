"""`python -m preview`: see exactly what a stack would create, and whether it passes policy, with no
credentials and no network.

    python -m preview [--stack NAME | --config FILE] [--json FILE] [--manifests DIR]
                      [--policy-config FILE] [--analyzer in-process|grpc]
                      [--audit FILE [--audit-against OLD]] [--graph FILE] [--against OLD.json] [--debug]

The program runs twice under the recording engine: as `pulumi up` sees it (every value known) and as
the first `pulumi preview` of a new stack sees it (ids and computed outputs unknown); the policy pack
judges both, through pulumi_policy's own analyzer.

Exit 0: no mandatory violation; 1: mandatory violations; 2: invalid configuration or invocation
(the error names the key path or flag and what would be valid; nothing is registered or written);
3: an internal error (the policy pack failed to start or answer, or a bug); 130: interrupted (Ctrl-C).
The summary on stdout and the reports are one output: all of it, or none.

    python -m preview --all [PATH ...] [--out DIR] [--jobs N] [--policy-config FILE] [--analyzer ...]

Many stacks in one process (`preview/fleet.py`): one verdict line per stack and the total; the exit
code is the worst verdict (3 before 2 before 1).

    python -m preview verify-ami [--stack NAME | --config FILE] [--debug]

The pre-flight check of a pinned AMI (`nodeImage.source: ami`) against AWS: `preview/verify_ami.py`.
"""

from __future__ import annotations

import os
import signal
import sys

EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # the shell's convention for SIGINT
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_ON_STOP: set[Callable[[], None]] = set()  # what a stop must end first: the pack subprocess
_AS_CLI = False  # run as `python -m preview` (not main() called in-process)


def _exit_now(signum: int, _frame) -> None:
    """Ctrl-C or SIGTERM under `python -m preview`, at any moment: end what the run started (the
    pack subprocess, its reports' temporary files), say so in one line, exit. Not by raising
    KeyboardInterrupt where the run happens to be: Pulumi's event loop turns that into tracebacks of
    its tasks, a finalizer prints and drops it, and the SDK's own `except BaseException` drops it."""
    # Nothing here may raise: an exception from a handler surfaces wherever the run was (exit 3).
    # A module the signal caught half-imported has no `discard_unfinished` yet, and nothing to discard.
    try:
        for stop in list(_ON_STOP):
            stop()
        discard = getattr(sys.modules.get("preview.writing"), "discard_unfinished", None)
        if discard is not None:
            discard()
    except BaseException:
        pass
    if signum == signal.SIGINT:
        try:  # noqa: SIM105 (contextlib is imported after the signal handlers)
            os.write(2, b"interrupted\n")
        except OSError:
            pass
    os._exit(128 + signum)


if __name__ == "__main__":
    _AS_CLI = True
    # Before the imports below (argparse alone takes 15 ms): Ctrl-C is one line from the start.
    # A signal ignored when we start stays ignored, as the interpreter itself leaves it: a shell
    # script's `python -m preview &` is started with SIGINT ignored (POSIX, job control off), so that
    # a Ctrl-C meant for the script's foreground command does not end its background jobs.
    for _signum in STOP_SIGNALS:
        if signal.getsignal(_signum) != signal.SIG_IGN:
            signal.signal(_signum, _exit_now)

import argparse  # noqa: E402 (after the signal handlers above)
import contextlib  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable, Iterator, Sequence  # noqa: E402
from pathlib import Path  # noqa: E402

ANALYZERS = ("in-process", "grpc")


class InvalidInput(Exception):
    """Invalid input or invocation (exit 2): the message names the flag or the key path."""


def _path(text: str) -> Path:
    # Path("") is ".", which would read as "is a directory".
    if not text:
        raise argparse.ArgumentTypeError("the path is empty")
    if text == "-":  # the usual spelling of stdout or stdin, which no flag here reads or writes
        raise argparse.ArgumentTypeError(
            "'-' (stdin or stdout) is not supported; give a file path (the summary goes to stdout)"
        )
    return Path(text)


def _stack_flags(parser: argparse.ArgumentParser, fleet: bool = False) -> None:
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", default=None, help="stack name: reads stacks/Pulumi.<NAME>.yaml (default: dev)")
    source.add_argument("--config", type=_path, help="any stack file (Pulumi.<stack>.yaml format)")
    if fleet:
        source.add_argument(
            "--all",
            nargs="*",
            type=_path,
            metavar="PATH",
            action="extend",
            help="preview many stacks in one process, one verdict line each: the stack files and "
            "directories given (default: stacks/); see --out and --jobs",
        )
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error (exit 3)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    _stack_flags(parser, fleet=True)
    parser.add_argument("--json", type=_path, help="write the JSON report (resources and violations) here")
    parser.add_argument("--manifests", type=_path, help="write every Kubernetes object as YAML into this directory")
    parser.add_argument("--policy-config", type=_path, help="policy-pack config JSON: enforcement level per policy")
    parser.add_argument("--tree", action="store_true", help="also print every resource, as a tree under its component")
    parser.add_argument(
        "--analyzer",
        choices=ANALYZERS,
        default="in-process",
        help="run the policy pack in this process (default) or as the CLI starts it: a subprocess over gRPC",
    )
    parser.add_argument("--audit", type=_path, help="write the Markdown audit report of every privilege here")
    parser.add_argument(
        "--audit-against",
        type=_path,
        metavar="OLD",
        help="with --audit: add the diff of privileges against an older audit report",
    )
    parser.add_argument(
        "--graph", type=_path, help="write the rollout picture: Mermaid (.md/.mmd) or DOT (.dot/.gv), by extension"
    )
    parser.add_argument(
        "--against", type=_path, metavar="OLD.json", help="list what changes against an older --json report"
    )
    parser.add_argument(
        "--as-of",
        type=_day,
        metavar="YYYY-MM-DD",
        help="judge EKS support dates as of this day (default: SOURCE_DATE_EPOCH when set, else today in UTC)",
    )
    parser.add_argument(
        "--out",
        type=_path,
        metavar="DIR",
        help="with --all: write each stack's report.json, manifests/, audit.md and rollout.md under DIR/<stack>/",
    )
    parser.add_argument(
        "--jobs", type=_jobs, metavar="N", help="with --all: preview N stacks at a time (default: one per core)"
    )
    return parser


def _day(text: str):
    import datetime as dt

    try:
        if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            raise ValueError(text)
        day = dt.date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date as YYYY-MM-DD (e.g. 2026-11-30)") from None
    if day.year < 1970:
        raise argparse.ArgumentTypeError(f"{text!r} is before 1970")
    return day


def _as_of(args: argparse.Namespace) -> None:
    """The day support dates are judged on, for this process and the pack's (it inherits the
    environment, as it does under the Pulumi CLI): --as-of sets SOURCE_DATE_EPOCH; a malformed one
    from the environment is invalid input, before anything runs."""
    from gpu_platform.catalog import eks_lifecycle

    if args.as_of is not None:
        os.environ[eks_lifecycle.EPOCH_VARIABLE] = str(eks_lifecycle.epoch_of(args.as_of))
    try:
        eks_lifecycle.today()
    except eks_lifecycle.AsOfError as exc:
        if args.as_of is not None and exc.early:
            raise InvalidInput(f"--as-of {args.as_of.isoformat()}: {exc.early}; give a day EKS existed on") from None
        raise InvalidInput(str(exc)) from None


def _jobs(text: str) -> int:
    if not re.fullmatch(r"[0-9]+", text) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return int(text)


# The single-stack flags --all cannot take: each names one file or says something of one stack.
_SINGLE_STACK_FLAGS = ("json", "manifests", "audit", "audit_against", "graph", "against", "tree")


def _verify_parser() -> argparse.ArgumentParser:
    from preview import verify_ami

    parser = argparse.ArgumentParser(
        prog="python -m preview verify-ami", description=verify_ami.__doc__.split("\n\n")[0], allow_abbrev=False
    )
    _stack_flags(parser)
    return parser


def _stack(args: argparse.Namespace) -> tuple[str, Path, str]:
    """The flag that names the stack file, its path, and how output names it."""
    from preview.stack_file import resolve_stack

    flag, given = ("--config", args.config) if args.config is not None else ("--stack", args.stack or "dev")
    try:
        return (flag, *resolve_stack(args.stack, args.config))
    except FileNotFoundError as exc:
        raise InvalidInput(str(exc)) from None
    except OSError as exc:  # a path the OS refuses: a name too long, a loop of links
        raise InvalidInput(f"{flag} {given}: {exc.strerror or exc}") from None


@contextlib.contextmanager
def _reading(shown: str) -> Iterator[None]:
    """While the run reads its inputs, their errors are invalid input (exit 2), said as the preview
    says them: a configuration error after the stack file's name, the others naming their flag."""
    from gpu_platform.config import ConfigError

    try:
        yield
    except ConfigError as exc:
        raise InvalidInput(f"{shown}: {exc}") from None
    except (FileNotFoundError, ValueError) as exc:
        raise InvalidInput(str(exc)) from None


# How large each input file may be: ten times the largest one the preview writes for a shipped stack
# (the prod --json report is about 0.3 MB, its audit report 30 KB), so a wrong file is refused in
# milliseconds instead of being parsed for seconds.
MAX_INPUT_BYTES = {"--against": 16 * 1024 * 1024, "--audit-against": 4 * 1024 * 1024, "--policy-config": 1024 * 1024}


def read_text(flag: str, path: Path) -> str:
    """An input file's text, or a ValueError naming the flag (exit 2)."""
    try:
        if not path.exists():
            raise ValueError(f"{flag} {path}: no such file")
        if not path.is_file():
            raise ValueError(
                f"{flag} {path}: is {'a directory' if path.is_dir() else 'not a regular file'}; give a file"
            )
        limit = MAX_INPUT_BYTES.get(flag)
        with path.open("rb") as stream:
            data = stream.read(limit + 1 if limit else -1)
        if limit and len(data) > limit:
            raise ValueError(
                f"{flag} {path}: larger than {limit // 1024 // 1024} MB; "
                f"{'a --json report' if flag == '--against' else 'an audit report' if flag == '--audit-against' else 'a policy config'} "
                "is far smaller (is it the right file?)"
            )
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{flag} {path}: is not a UTF-8 text file") from None
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot be read ({exc.strerror or exc})") from None


def _check_outputs(args: argparse.Namespace, inputs: Sequence[tuple[str, Path | None]]) -> None:
    """Refuse unusable output paths before the run, so a typo never costs a half-written set of
    reports (and never reads as exit 1, which means policy violations)."""
    from preview import writing

    outputs = [("--json", args.json), ("--audit", args.audit), ("--graph", args.graph), ("--manifests", args.manifests)]
    for flag, path in outputs:
        if path is not None:
            writing.check(flag, path, directory=flag == "--manifests", inputs=inputs)
    writing.check_distinct(outputs)
    from preview.outcome import GRAPH_SUFFIXES

    if args.graph is not None and args.graph.suffix not in GRAPH_SUFFIXES:
        raise ValueError(f"--graph {args.graph}: unknown format (valid endings: {', '.join(GRAPH_SUFFIXES)})")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify-ami"]:
        # A subcommand beside the flags, so `python -m preview --stack dev` keeps its meaning.
        args = _verify_parser().parse_args(argv[1:])
        return _guarded(args.debug, lambda: _verify_ami(args))
    parser = _parser()
    args = parser.parse_args(argv)
    if args.audit_against and not args.audit:
        parser.error("--audit-against goes with --audit")
    if args.all is None:
        for flag, value in (("--out", args.out), ("--jobs", args.jobs)):
            if value is not None:
                parser.error(f"{flag} goes with --all")
        return _guarded(args.debug, lambda: _run_preview(args, _preview))
    for name in _SINGLE_STACK_FLAGS:
        if getattr(args, name):
            parser.error(
                f"--{name.replace('_', '-')} previews one stack; with --all, --out DIR writes every stack's reports"
            )
    if args.analyzer == "grpc" and (args.jobs or 1) > 1:
        parser.error("--analyzer grpc runs one pack subprocess: give --jobs 1")
    return _guarded(args.debug, lambda: _run_preview(args, _fleet))


@contextlib.contextmanager
def _raising() -> Iterator[None]:
    """Under `python -m preview`, a stop in this block raises (KeyboardInterrupt, SIGTERM as
    SystemExit) instead of exiting at once: for what only the block's own `except` can end, such as a
    subprocess that is started but not yet handed back. Once: a second Ctrl-C must not cut that short."""
    if signal.getsignal(signal.SIGINT) is not _exit_now:
        yield  # in-process, Ctrl-C raises KeyboardInterrupt anyway
        return

    def stop(signum: int, _frame) -> None:
        for each in STOP_SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        raise KeyboardInterrupt if signum == signal.SIGINT else SystemExit(128 + signum)

    previous = {signum: signal.signal(signum, stop) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _guarded(debug: bool, command: Callable[[], int]) -> int:
    """A command under the contract of the exit codes: invalid input is 2 and a bug 3, each in one
    line (the traceback of a bug with --debug), Ctrl-C is 130 and "interrupted", SIGTERM 143."""
    try:
        return command()
    except InvalidInput as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # SIGTERM, in _raising
        return exc.code
    except Exception as exc:
        if debug:
            traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        print(
            f"internal error: {type(exc).__name__}: {first} (a bug in gpu-platform, please report it; "
            f"--debug prints the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _run_preview(args: argparse.Namespace, body: Callable[[argparse.Namespace, object], int]) -> int:
    from preview.offline import analyze

    _as_of(args)  # before the pack starts: a subprocess pack reads it from its environment
    close: Callable[[], None] | None = None  # the pack's, when it is a subprocess
    try:
        with _raising():
            # Started first: as a subprocess it comes up while the program runs.
            pack = analyze.PackProcess() if args.analyzer == "grpc" else analyze.in_process()
            close = getattr(pack, "close", None)
            if close is not None:
                _ON_STOP.add(close)
        return body(args, pack)
    except analyze.PackError as exc:
        print(f"internal error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        if close is not None:
            from preview.writing import stops_deferred

            with stops_deferred():  # a stop in the middle of close() would end the process before the pack
                close()
                _ON_STOP.discard(close)


def _ledger(path: Path):
    """The privilege ledger of an older audit report; a file without one is refused before the run
    (exit 2): a diff against nothing would read as "everything is new"."""
    from preview.reports import ledger

    rows = ledger.checked(read_text("--audit-against", path), f"--audit-against {path}")
    if rows is None:
        raise ValueError(
            f"--audit-against {path}: has no privilege ledger (the lines between {ledger.BEGIN} and "
            f"{ledger.END}); give a report written by --audit"
        )
    return rows


def _levels(args: argparse.Namespace, pack) -> dict:
    """The enforcement levels of --policy-config, checked against the pack's policies."""
    from preview.offline import analyze, policy_config

    if not args.policy_config:
        return {}
    where = f"--policy-config {args.policy_config}"
    levels = policy_config.parse(read_text("--policy-config", args.policy_config), where)
    policy_config.validate(levels, analyze.policy_names(pack), where)
    return levels


def _fleet(args: argparse.Namespace, pack) -> int:
    from preview import fleet, writing

    with _reading("--all"):
        found = fleet.stacks(args.all)
        levels = _levels(args, pack)
        if args.out is not None:
            inputs = [("--all", s.path) for s in found] + [("--policy-config", args.policy_config)]
            writing.check("--out", args.out, directory=True, inputs=inputs)
            # Every report goes somewhere under --out: no input may live there.
            root = args.out.resolve()
            for flag, path in inputs:
                if path is not None and path.resolve().is_relative_to(root):
                    raise ValueError(
                        f"--out {args.out}: holds {path}, an input of this run ({flag}); "
                        "write the reports to a directory that holds no input"
                    )
    jobs = args.jobs or (1 if args.analyzer == "grpc" else fleet.default_jobs())
    return fleet.run(found, pack, levels, args.out, jobs, on_start=_ON_STOP.add, print_line=_print_line)


def _print_line(text: str) -> None:
    print(text, flush=True)


def _may_fork(args: argparse.Namespace) -> bool:
    """Under `python -m preview`, with the in-process pack: a child shares it."""
    return _AS_CLI and args.analyzer != "grpc"


def _record_and_judge(args: argparse.Namespace, pack, levels: dict, path: Path, shown: str):
    """Both engine modes recorded (their errors are the stack's: `_reading`) and judged. Under
    `python -m preview` with the in-process pack, the first preview is judged in a forked child
    beside `pulumi up` (preview/first_preview.py); without one, one after the other."""
    from preview import first_preview, outcome
    from preview.offline import analyze, engine

    child = first_preview.start(path, shown, pack, levels, _ON_STOP.add) if _may_fork(args) else None
    if child is None:
        with _reading(shown):
            recordings = outcome.record(path, shown)
        return outcome.judge(recordings, pack, levels)
    try:
        with _reading(shown):
            recordings = outcome.record(path, shown, (engine.UP,))
        try:
            judged = outcome.judge(recordings, pack, levels, first=[])
        except Exception:
            # One after the other, the first preview is recorded before either is judged: its error first.
            if child.verdicts() is None:
                with _reading(shown):
                    outcome.record(path, shown, (engine.FIRST_PREVIEW,))
            raise
        first = child.verdicts()
    finally:
        child.end()
        _ON_STOP.discard(child.end)
    if first is None:  # the child failed: the first preview here, as without a child (its error raised here)
        with _reading(shown):
            recording = outcome.record(path, shown, (engine.FIRST_PREVIEW,))[engine.FIRST_PREVIEW]
        first = analyze.analyze(recording, pack, levels)
    return dataclasses.replace(judged, first=first)


def _preview(args: argparse.Namespace, pack) -> int:
    from preview import outcome, writing
    from preview.reports import report

    flag, path, shown = _stack(args)
    with _reading(shown):
        audit_against = _ledger(args.audit_against) if args.audit_against else None
        levels = _levels(args, pack)
        old_report = None
        if args.against:
            from preview.reports import changes

            old_report = changes.parse(read_text("--against", args.against), f"--against {args.against}")
        _check_outputs(
            args,
            [
                (flag, path),
                ("--policy-config", args.policy_config),
                ("--against", args.against),
                ("--audit-against", args.audit_against),
            ],
        )
    judged = _record_and_judge(args, pack, levels, path, shown)
    summary = report.summary(
        judged.recording,
        judged.violations,
        shown,
        first_preview=judged.first,
        tree=args.tree,
        disabled=tuple(name for name, entry in levels.items() if entry.level == "disabled"),
        lifecycle=judged.lifecycle,
    )
    if old_report is not None:
        from preview.reports import changes, rollouts

        new_report = json.loads(report.as_json(judged.recording, judged.violations))
        summary += changes.describe(changes.compare(old_report, new_report))
        summary += rollouts.describe(rollouts.compare(old_report, new_report))
    if audit_against is not None:
        from preview.reports import ledger

        summary += "\n" + ledger.baseline(audit_against, judged.recording, args.audit_against) + "\n"
    paths = {flag: getattr(args, flag[2:]) for flag in outcome.OUTPUT_FLAGS}
    try:
        writing.write_all(list(outcome.outputs(judged, paths, audit_against)), summary)
    except writing.OutputError as exc:
        raise InvalidInput(f"{exc}; no report was written") from None
    return EXIT_VIOLATIONS if judged.fails() else EXIT_OK


def _verify_ami(args: argparse.Namespace) -> int:
    from gpu_platform.config import parse
    from preview import verify_ami
    from preview.offline import engine

    _, path, shown = _stack(args)
    with _reading(shown):
        # A stack that pins no AMI is answered from its config alone, without the program run.
        config = parse(engine.read_stack_file(path, shown))
        pools = efa = None
        if config.node_image.source == "ami":
            # Checked as the preview checks it, the program's own checks included (a pool's instance
            # type, the admins' partition), before AWS is asked about the stack.
            recording = engine.run(path, mode=engine.UP, shown=shown)
            config = parse(recording.config)
            pools = verify_ami.pool_gpus(config, recording)
            efa = verify_ami.efa_pools(config, recording)
    return verify_ami.verify(config, shown, pools, efa)


if __name__ == "__main__":
    try:
        code = main()
    except SystemExit as exc:  # argparse: --help, a flag it refuses
        code = exc.code or 0
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):  # closed, or already failed
            stream.flush()
    # Out without the interpreter's teardown: it takes a good part of a second with Pulumi and gRPC
    # loaded, Python resets the signal handlers for it (a Ctrl-C then killed the process without a
    # word), and collecting the SDK's event loop left open printed "Exception ignored" tracebacks.
    os._exit(code)
