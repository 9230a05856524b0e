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
import sys
import traceback
from pathlib import Path
from typing import Optional, Sequence

import yaml

EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG, EXIT_INTERNAL = 0, 1, 2, 3
ANALYZERS = ("in-process", "grpc")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", default=None, help="stack name: reads stacks/Pulumi.<NAME>.yaml (default: dev)")
    source.add_argument("--config", type=Path, help="any stack file (Pulumi.<stack>.yaml format)")
    parser.add_argument("--json", type=Path, help="write the JSON report (resources and violations) here")
    parser.add_argument("--manifests", type=Path, help="write every Kubernetes object as YAML into this directory")
    parser.add_argument("--policy-config", type=Path, help="policy-pack config JSON: enforcement level per policy")
    parser.add_argument("--analyzer", choices=ANALYZERS, default="in-process",
                        help="run the policy pack in this process (default) or as the CLI starts it: a subprocess over gRPC")
    parser.add_argument("--audit", type=Path, help="write the Markdown audit report of every privilege here")
    parser.add_argument("--audit-against", type=Path, metavar="OLD", help="with --audit: add the diff of privileges against an older audit report")
    parser.add_argument("--graph", type=Path, help="write the rollout picture: Mermaid (.md/.mmd) or DOT (.dot/.gv), by extension")
    parser.add_argument("--against", type=Path, metavar="OLD.json", help="list what changes against an older --json report")
    return parser


_GRAPH_SUFFIXES = (".md", ".mmd", ".dot", ".gv")


def _check_outputs(args: argparse.Namespace) -> None:
    """Refuse unwritable output paths before the run, so a typo never costs a half-written set of
    reports (and never reads as exit 1, which means policy violations)."""
    for flag, path in (("--json", args.json), ("--audit", args.audit), ("--graph", args.graph)):
        if path is None:
            continue
        if path.is_dir():
            raise ValueError(f"{flag} {path}: is a directory; give a file name")
        if any(parent.exists() and not parent.is_dir() for parent in path.parents):
            raise ValueError(f"{flag} {path}: a parent of it is a file")
    if args.graph is not None and args.graph.suffix not in _GRAPH_SUFFIXES:
        raise ValueError(f"--graph {args.graph}: unknown format (valid endings: {', '.join(_GRAPH_SUFFIXES)})")
    if args.manifests is not None and args.manifests.exists() and not args.manifests.is_dir():
        raise ValueError(f"--manifests {args.manifests}: is a file; give a directory")


def _outputs(args: argparse.Namespace, recording, violations):
    """(path, text producer) for the optional reports; modules are imported only when asked for."""
    if args.audit:
        from preview import audit

        old = args.audit_against.read_text() if args.audit_against else None
        yield args.audit, lambda: audit.report(recording, against=old)
    if args.graph:
        from preview import graph

        as_dot = args.graph.suffix in (".dot", ".gv")
        yield args.graph, lambda: graph.dot(recording) if as_dot else graph.mermaid(recording)


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
    from preview import analyze

    pack = None
    try:
        # Started first: as a subprocess it comes up while the program runs.
        pack = analyze.PackProcess() if args.analyzer == "grpc" else analyze.in_process()
        return _preview(args, pack)
    except analyze.PackError as exc:
        print(f"internal error: {exc}", file=sys.stderr)
        return EXIT_INTERNAL
    except Exception:  # noqa: BLE001 a bug: never exit 1, which means policy violations
        traceback.print_exc()
        print("internal error: the preview failed (the traceback above); please report it", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        close = getattr(pack, "close", None)
        if close is not None:
            close()


def _preview(args: argparse.Namespace, pack) -> int:
    from gpu_platform.config import ConfigError
    from preview import analyze, engine, manifests, policy_config, report

    shown = str(args.config or f"stacks/Pulumi.{args.stack or 'dev'}.yaml")
    try:
        path, shown = engine.resolve_stack(args.stack, args.config)
        for flag, old in (("--audit-against", args.audit_against), ("--against", args.against)):
            if old is not None and not old.is_file():
                raise FileNotFoundError(f"{flag} {old}: no such file")
        levels = policy_config.load(args.policy_config)
        policy_config.validate(levels, analyze.policy_names(pack), f"--policy-config {args.policy_config}")
        _check_outputs(args)
        old_report = None
        if args.against:
            from preview import changes

            old_report = changes.load(args.against)  # a ValueError names the file: exit 2
        recordings = {mode: engine.run(path, mode=mode) for mode in engine.MODES}
    except ConfigError as exc:
        print(f"error: {shown}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (FileNotFoundError, yaml.YAMLError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    verdicts = {mode: analyze.analyze(recording, pack, levels) for mode, recording in recordings.items()}
    recording, violations = recordings[engine.UP], verdicts[engine.UP]
    first = verdicts[engine.FIRST_PREVIEW]
    sys.stdout.write(report.summary(recording, violations, shown, first_preview=first))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(report.as_json(recording, violations, first_preview=first))
    if args.manifests:
        manifests.write(recording, args.manifests)
    for path, write in _outputs(args, recording, violations):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(write())
    if old_report is not None:
        from preview import changes

        sys.stdout.write(changes.describe(changes.compare(old_report, json.loads(report.as_json(recording, violations)))))
    return EXIT_VIOLATIONS if report.fails(violations, first) else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
