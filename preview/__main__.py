"""`python -m preview`: see exactly what a stack would create, and whether it passes policy, with no
credentials and no network.

    python -m preview [--stack NAME | --config FILE] [--json FILE] [--manifests DIR]
                      [--policy-config FILE]

Exit 0: no mandatory violation; 1: mandatory violations; 2: invalid configuration (the error names
the key path and what would be valid; nothing is registered).

    python -m preview verify-ami [--stack NAME | --config FILE]

The pre-flight check of a pinned AMI (`nodeImage.source: ami`) against AWS: `preview/verify_ami.py`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

import yaml

EXIT_OK, EXIT_VIOLATIONS, EXIT_CONFIG = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m preview", description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--stack", default=None, help="stack name: reads stacks/Pulumi.<NAME>.yaml (default: dev)")
    source.add_argument("--config", type=Path, help="any stack file (Pulumi.<stack>.yaml format)")
    parser.add_argument("--json", type=Path, help="write the JSON report (resources and violations) here")
    parser.add_argument("--manifests", type=Path, help="write every Kubernetes object as YAML into this directory")
    parser.add_argument("--policy-config", type=Path, help="policy-pack config JSON: enforcement level per policy")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["verify-ami"]:
        # A subcommand beside the flags, so `python -m preview --stack dev` keeps its meaning.
        from preview import verify_ami

        return verify_ami.main(argv[1:])
    args = _parser().parse_args(argv)
    # Imported here so `--help` stays instant.
    from gpu_platform.config import ConfigError
    from policy.pack import POLICIES
    from preview import analyze, engine, manifests, report

    shown = str(args.config or f"stacks/Pulumi.{args.stack or 'dev'}.yaml")
    try:
        path, shown = engine.resolve_stack(args.stack, args.config)
        levels = analyze.load_policy_config(args.policy_config)
        recording = engine.run(path)
    except ConfigError as exc:
        print(f"error: {shown}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except (FileNotFoundError, yaml.YAMLError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    violations = analyze.analyze(recording, POLICIES, levels)
    sys.stdout.write(report.summary(recording, violations, shown))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(report.as_json(recording, violations))
    if args.manifests:
        manifests.write(recording, args.manifests)
    mandatory = any(v.enforcement_level == "mandatory" for v in violations)
    return EXIT_VIOLATIONS if mandatory else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
