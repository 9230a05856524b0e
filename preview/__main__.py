"""`python -m preview`: see exactly what a stack would create, and whether it passes policy, with no
credentials and no network.

    python -m preview [--stack NAME | --config FILE] [--json FILE] [--manifests DIR]
                      [--policy-config FILE] [--analyzer in-process|grpc]
                      [--audit FILE [--audit-against OLD]] [--graph FILE] [--against OLD.json]

The program runs twice under the recording engine: as `pulumi up` sees it (every value known) and as
the first `pulumi preview` of a new stack sees it (ids and computed outputs unknown); the policy pack
judges both, through pulumi_policy's own analyzer.

Exit 0: no mandatory violation; 1: mandatory violations; 2: invalid configuration or invocation
(the error names the key path or flag and what would be valid; nothing is registered or written);
3: an internal error (the policy pack failed to start or answer, or a bug).

    python -m preview verify-ami [--stack NAME | --config FILE]

The pre-flight check of a pinned AMI (`nodeImage.source: ami`) against AWS: `preview/verify_ami.py`.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import traceback
from pathlib import Path
from typing import Optional, Sequence


EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_INTERRUPTED = 130  # the shell's convention for SIGINT
ANALYZERS = ("in-process", "grpc")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", default=None, help="stack name: reads stacks/Pulumi.<NAME>.yaml (default: dev)")
    source.add_argument("--config", type=Path, help="any stack file (Pulumi.<stack>.yaml format)")
    parser.add_argument("--json", type=Path, help="write the JSON report (resources and violations) here")
    parser.add_argument("--manifests", type=Path, help="write every Kubernetes object as YAML into this directory")
    parser.add_argument("--policy-config", type=Path, help="policy-pack config JSON: enforcement level per policy")
    parser.add_argument("--tree", action="store_true", help="also print every resource, as a tree under its component")
    parser.add_argument("--debug", action="store_true", help="print the traceback of an internal error (exit 3)")
    parser.add_argument("--analyzer", choices=ANALYZERS, default="in-process",
                        help="run the policy pack in this process (default) or as the CLI starts it: a subprocess over gRPC")
    parser.add_argument("--audit", type=Path, help="write the Markdown audit report of every privilege here")
    parser.add_argument("--audit-against", type=Path, metavar="OLD", help="with --audit: add the diff of privileges against an older audit report")
    parser.add_argument("--graph", type=Path, help="write the rollout picture: Mermaid (.md/.mmd) or DOT (.dot/.gv), by extension")
    parser.add_argument("--against", type=Path, metavar="OLD.json", help="list what changes against an older --json report")
    return parser


_GRAPH_SUFFIXES = (".md", ".mmd", ".dot", ".gv")


def _inputs(args: argparse.Namespace) -> list[tuple[str, Optional[Path]]]:
    return [("--config", args.config), ("--policy-config", args.policy_config),
            ("--against", args.against), ("--audit-against", args.audit_against)]


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse unusable output paths before the run, so a typo never costs a half-written set of
    reports (and never reads as exit 1, which means policy violations)."""
    from preview import writing

    for flag, path in (("--json", args.json), ("--audit", args.audit), ("--graph", args.graph), ("--manifests", args.manifests)):
        if path is not None:
            writing.check(flag, path, directory=flag == "--manifests", inputs=_inputs(args))
    if args.graph is not None and args.graph.suffix not in _GRAPH_SUFFIXES:
        raise ValueError(f"--graph {args.graph}: unknown format (valid endings: {', '.join(_GRAPH_SUFFIXES)})")


def read_text(flag: str, path: Path) -> str:
    """An input file's text, or a ValueError naming the flag (exit 2)."""
    if not path.exists():
        raise ValueError(f"{flag} {path}: no such file")
    if not path.is_file():
        raise ValueError(f"{flag} {path}: is {'a directory' if path.is_dir() else 'not a regular file'}; give a file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{flag} {path}: is not a UTF-8 text file") from None
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot be read ({exc.strerror or exc})") from None


def _outputs(args: argparse.Namespace, recording, violations, first, audit_against: Optional[str]):
    """What this run writes, each rendered only when every input was good; modules are imported only
    when asked for."""
    from preview.reports import manifests, report
    from preview.writing import Output

    if args.json:
        yield Output("--json", args.json, lambda: report.as_json(recording, violations, first_preview=first))
    if args.manifests:
        yield Output("--manifests", args.manifests, lambda: manifests.files(recording))
    if args.audit:
        from preview.reports import audit

        yield Output("--audit", args.audit, lambda: audit.report(recording, against=audit_against))
    if args.graph:
        from preview.reports import graph

        as_dot = args.graph.suffix in (".dot", ".gv")
        yield Output("--graph", args.graph, lambda: graph.dot(recording) if as_dot else graph.mermaid(recording))


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify-ami"]:
        # A subcommand beside the flags, so `python -m preview --stack dev` keeps its meaning.
        from preview import verify_ami

        return verify_ami.main(argv[1:])
    args = _parser().parse_args(argv)
    if args.audit_against and not args.audit:
        _parser().error("--audit-against goes with --audit")
    # Imported here so `--help` stays instant.
    from preview.offline import analyze

    pack = None
    # A terminated preview still stops its pack subprocess (the finally below): SIGTERM ends the run
    # like an exception would.
    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        # Started first: as a subprocess it comes up while the program runs.
        pack = analyze.PackProcess() if args.analyzer == "grpc" else analyze.in_process()
        return _preview(args, pack)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except analyze.PackError as exc:
        print(f"internal error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception as exc:  # noqa: BLE001 a bug: never exit 1, which means policy violations
        if args.debug:
            traceback.print_exc()
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        print(f"internal error: {type(exc).__name__}: {first} (a bug in gpu-platform, please report it; "
              f"--debug prints the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)
        close = getattr(pack, "close", None)
        if close is not None:
            close()


def _terminated(signum, _frame) -> None:
    raise SystemExit(128 + signum)


def _preview(args: argparse.Namespace, pack) -> int:
    from gpu_platform.config import ConfigError
    from preview.offline import analyze, engine, policy_config
    from preview.reports import report
    from preview import writing

    shown = str(args.config or f"stacks/Pulumi.{args.stack or 'dev'}.yaml")
    try:
        path, shown = engine.resolve_stack(args.stack, args.config)
        audit_against = read_text("--audit-against", args.audit_against) if args.audit_against else None
        levels = policy_config.parse(read_text("--policy-config", args.policy_config), f"--policy-config {args.policy_config}") \
            if args.policy_config else {}
        policy_config.validate(levels, analyze.policy_names(pack), f"--policy-config {args.policy_config}")
        _check_outputs(args)
        old_report = None
        if args.against:
            from preview.reports import changes

            old_report = changes.parse(read_text("--against", args.against), f"--against {args.against}")
        recordings = {mode: engine.run(path, mode=mode, shown=shown) for mode in engine.MODES}
    except ConfigError as exc:
        print(f"error: {shown}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    verdicts = {mode: analyze.analyze(recording, pack, levels) for mode, recording in recordings.items()}
    recording, violations = recordings[engine.UP], verdicts[engine.UP]
    first = verdicts[engine.FIRST_PREVIEW]
    try:
        writing.write_all(list(_outputs(args, recording, violations, first, audit_against)))
    except writing.OutputError as exc:
        print(f"error: {exc}; no report was written", file=sys.stderr)
        return EXIT_CONFIG
    sys.stdout.write(report.summary(recording, violations, shown, first_preview=first, tree=args.tree))
    if old_report is not None:
        from preview.reports import changes, rollouts

        new_report = json.loads(report.as_json(recording, violations))
        sys.stdout.write(changes.describe(changes.compare(old_report, new_report)))
        sys.stdout.write(rollouts.describe(rollouts.compare(old_report, new_report)))
    return EXIT_VIOLATIONS if report.fails(violations, first) else EXIT_OK


def _close_event_loop() -> None:
    """The Pulumi SDK runs the program on asyncio's default loop and leaves it open; closed here, so
    interpreter exit never collects it half torn down (an "Exception ignored ... BaseEventLoop.__del__"
    after an error once printed after the message)."""
    import asyncio
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
    if not loop.is_running() and not loop.is_closed():
        loop.close()


if __name__ == "__main__":
    code = main()
    _close_event_loop()
    sys.exit(code)
