"""Scan what the stacks would create with checkov, against the accepted-failures list.

    python -m tools.security.scan [--checkov PATH] [--keep DIR]   # make scan: exit 1 on any difference
    python -m tools.security.scan --accept                         # make scan-accept: rewrite the list and the docs block

Every stack in stacks/ is rendered by the offline preview (`python -m preview --manifests`) into a
temporary directory and scanned by checkov's Kubernetes framework, each stack in its own process,
all at once. checkov runs from its own virtualenv (.venv-checkov), never imported here. It is kept
off the network: no update check (SKIP_PACKAGE_UPDATE_CHECK), no download of platform mappings
and policies (BC_SKIP_MAPPING, --skip-download); with no API key it uploads nothing.

Exit codes: 0 the failures are exactly the accepted ones, each with a reason; 1 they differ (each
difference on stderr, with what to do); 2 the scan could not run (no checkov, a stack that does not
render, output checkov could not produce or this code cannot read).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from tools.security import accepted, doc_block, findings

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
CHECKOV_ENV = {"SKIP_PACKAGE_UPDATE_CHECK": "true", "BC_SKIP_MAPPING": "TRUE", "LOG_LEVEL": "ERROR"}


class ScanError(Exception):
    pass


def stacks() -> list[str]:
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in (ROOT / "stacks").glob("Pulumi.*.yaml"))


def _wait(procs: dict[str, subprocess.Popen], what: str, ok: Sequence[int]) -> dict[str, str]:
    out = {}
    for stack, proc in procs.items():
        stdout, stderr = proc.communicate()
        if proc.returncode not in ok:
            tail = "\n".join(stderr.strip().splitlines()[-5:])
            raise ScanError(f"{stack}: {what} exited {proc.returncode}:\n{tail}")
        out[stack] = stdout
    return out


def render(names: Sequence[str], into: Path) -> dict[str, Path]:
    dirs = {s: into / s for s in names}
    # Exit 1 is a mandatory policy violation: the manifests are written all the same, and the
    # preview's own CI step reports it.
    _wait(
        {
            s: subprocess.Popen(
                [sys.executable, "-m", "preview", "--stack", s, "--manifests", str(d)],
                cwd=ROOT,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            for s, d in dirs.items()
        },
        "the offline preview",
        ok=(0, 1),
    )
    return dirs


def run_checkov(dirs: dict[str, Path], checkov: Path) -> list[findings.Finding]:
    env = {**os.environ, **CHECKOV_ENV}
    procs = {
        s: subprocess.Popen(
            [
                str(checkov),
                "-d",
                str(d),
                "--framework",
                "kubernetes",
                "-o",
                "json",
                "--quiet",
                "--compact",
                "--skip-download",
            ],
            cwd=d,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for s, d in dirs.items()
    }
    out: list[findings.Finding] = []
    for stack, stdout in _wait(procs, "checkov", ok=(0, 1)).items():
        try:
            report = json.loads(stdout)
        except json.JSONDecodeError:
            raise ScanError(f"{stack}: checkov printed no JSON report: {stdout[:300]!r}") from None
        try:
            out += findings.read(report, stack, dirs[stack])
        except findings.ReportError as exc:
            raise ScanError(str(exc)) from None
    return sorted(out)


def scan(checkov: Path, keep: Path | None = None) -> list[findings.Finding]:
    checkov = checkov.absolute()
    if not os.access(checkov, os.X_OK):
        raise ScanError(
            f"no checkov at {checkov}: `make scan` installs it into .venv-checkov "
            f"(from tools/security/requirements-checkov.lock.txt), or pass --checkov PATH"
        )
    if keep:
        return run_checkov(render(stacks(), keep), checkov)
    with tempfile.TemporaryDirectory(prefix="gpu-platform-scan-") as tmp:
        return run_checkov(render(stacks(), Path(tmp)), checkov)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.security.scan", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--accept",
        action="store_true",
        help="rewrite tools/security/accepted.yaml from the current failures (new ones with reason TODO) "
        "and the docs' scan block, then check as usual",
    )
    parser.add_argument("--checkov", type=Path, default=CHECKOV, help=f"the checkov executable (default {CHECKOV})")
    parser.add_argument("--keep", type=Path, help="render the manifests into DIR/<stack>/ and keep them")
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        checks = accepted.load()
        found = scan(args.checkov, args.keep)
    except (ScanError, accepted.ListError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.accept:
        checks = accepted.regenerate(checks, found)
        accepted.PATH.write_text(accepted.dump(checks))
        doc_block.write(checks)
        print(f"wrote {accepted.PATH.relative_to(ROOT)} and the scan block of {doc_block.PAGE.relative_to(ROOT)}")
    problems = accepted.problems(checks, found)
    if doc_block.stale(checks):
        problems.append(
            f'{doc_block.PAGE.relative_to(ROOT)}: the "Security scan" block is stale: run `{accepted.REGENERATE}`'
        )
    for problem in problems:
        # After --accept the only problems left are the TODOs just written: a to-do list, not a failure.
        print(f"{'todo' if args.accept else 'error'}: {problem}", file=sys.stderr)
    per_stack = {s: sum(f.stack == s for f in found) for s in stacks()}
    summary = ", ".join(f"{s} {n}" for s, n in per_stack.items())
    print(
        f"checkov: {len(found)} failed checks ({summary}), {len(problems)} not accepted as listed "
        f"({time.monotonic() - started:.1f}s)"
    )
    return 1 if problems and not args.accept else 0


if __name__ == "__main__":
    sys.exit(main())
