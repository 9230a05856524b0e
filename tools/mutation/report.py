"""docs/mutation.md from mutmut's results (mutants/**/*.meta after `mutmut run`).

The kill rate counts what the behaviour tests catch: setup.cfg runs every mutant with
`-m "not golden"`, so a defect only a snapshot notices counts as survived. A surviving mutant is
either killed by a new test or explained in tools/mutation/explained.yaml (why it is equivalent or not
worth a test); the report lists each with its fate, and an explanation whose mutant no longer
survives with the same change is reported stale, like a stale entry of tools/security/accepted.yaml.

Exit codes: 0 target held and every survivor has a fate, 1 otherwise, 2 no results to report."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml

from tools.mutation.fresh_copies import RUN_FILE

ROOT = Path(__file__).resolve().parents[2]
MUTANTS = ROOT / "mutants"
EXPLAINED = Path(__file__).with_name("explained.yaml")
REPORT = ROOT / "docs" / "mutation.md"
SCOPE = ("policy", "gpu_platform", "components")
TARGET = 0.85

# mutmut 3.8.1's exit code -> status (mutmut/stats.py); restated so that the report reads the .meta
# files without importing mutmut's command-line module (which loads its own config on import).
STATUS = {
    1: "killed",
    3: "killed",
    0: "survived",
    5: "no tests",
    33: "no tests",
    34: "skipped",
    35: "suspicious",
    36: "timeout",
    24: "timeout",
    -24: "timeout",
    152: "timeout",
    255: "timeout",
    37: "caught by type check",
    -11: "segfault",
    -9: "segfault",
    2: "interrupted",
    None: "not run",
}
CAUGHT = ("killed", "timeout")
COLUMNS = ("killed", "timeout", "survived", "no tests", "suspicious", "not run")


@dataclass(frozen=True)
class Mutant:
    name: str
    package: str
    status: str


def status_of(code) -> str:
    return STATUS.get(code, "suspicious")


def read_results(mutants: Path = MUTANTS) -> list[Mutant]:
    found = []
    for meta in sorted(mutants.rglob("*.py.meta")):
        relative = meta.relative_to(mutants)
        if relative.parts[0] not in SCOPE:
            continue
        package = "/".join(relative.parts[:2]) if len(relative.parts) > 2 else relative.parts[0]
        for name, code in json.loads(meta.read_text())["exit_code_by_key"].items():
            found.append(Mutant(name, package, status_of(code)))
    return sorted(found, key=lambda m: m.name)


def kill_rate(mutants: list[Mutant]) -> float | None:
    run = [m for m in mutants if m.status != "not run"]
    return sum(m.status in CAUGHT for m in run) / len(run) if run else None


def change_of(name: str) -> str:
    """The mutated line(s) of a mutant as `- old` / `+ new`, from mutmut's own diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant  # mutmut's reader of mutants/

    diff = get_diff_for_mutant(name)
    changed = [line for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]
    return " / ".join(f"{line[0]} {line[1:].strip()}" for line in changed)


def _function(name: str) -> str:
    """`pkg.module.x_function__mutmut_12` -> `pkg.module.x_function`."""
    return name.rsplit("__mutmut_", 1)[0]


def load_explained(path: Path = EXPLAINED) -> dict[str, dict[str, str]]:
    if not path.exists():
        return {}
    return yaml.safe_load(path.read_text()) or {}


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f}%"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def run_commit(mutants: Path = MUTANTS) -> str | None:
    """The commit the latest `make mutation` ran at (tools/mutation/fresh_copies.py records it), else the
    baseline of mutmut's last full coverage pass (mutants/mutmut-stats.json), or None."""
    for name, key in ((RUN_FILE, "commit"), ("mutmut-stats.json", "git_commit")):
        try:
            found = json.loads((mutants / name).read_text()).get(key)
        except (OSError, ValueError):
            continue
        if found:
            return found
    return None


def render(
    mutants: list[Mutant], changes: dict[str, str], explained: dict[str, dict[str, str]], commit: str | None = None
) -> tuple[str, bool]:
    mutants = sorted(mutants, key=lambda m: m.name)
    survivors = [m for m in mutants if m.status in ("survived", "no tests", "suspicious")]
    rate = kill_rate(mutants)
    lines = [
        "# Mutation testing",
        "",
        (
            "Written by `make mutation` (tools/mutation/report.py, mutmut 3.8.1, settings in setup.cfg); "
            "do not edit by hand."
        ),
        "",
        (
            "Each mutant is one small change to the code under `policy/`, `gpu_platform/` and "
            "`components/`, run against the tests that execute the changed function, **golden snapshot "
            'tests excluded** (`-m "not golden and not subprocess"`, docs/ci-and-supply-chain.md, "How the tests are judged"). '
            "Caught = killed or timed out; the rate is over the mutants run (`not run`: generated, not yet "
            "run; `make mutation` resumes where it stopped)."
        ),
        *(
            [
                "",
                (
                    f"Results of the run made at commit `{commit[:12]}`: mutants of code changed since are re-run "
                    "by the next `make mutation`."
                ),
            ]
            if commit
            else []
        ),
        "",
        "| package | mutants | " + " | ".join(COLUMNS) + " | caught |",
        "| --- | ---: | " + " | ".join("---:" for _ in COLUMNS) + " | ---: |",
    ]
    by_package: dict[str, list[Mutant]] = {}
    for m in mutants:
        by_package.setdefault(m.package, []).append(m)
    for package, group in [*sorted(by_package.items()), ("all", mutants)]:
        counts = Counter(m.status for m in group)
        cells = [str(counts.get(c, 0)) for c in COLUMNS]
        label = f"**{package}**" if package == "all" else f"`{package}`"
        lines.append(f"| {label} | {len(group)} | " + " | ".join(cells) + f" | {_percent(kill_rate(group))} |")
    holds = rate is not None and rate >= TARGET
    lines += [
        "",
        (
            f"Target: at least {TARGET:.0%} of the mutants run caught by non-golden tests: "
            f"{_percent(rate)}, {'holds' if holds else 'NOT MET'}."
        ),
        "",
    ]

    open_ones, stale = [], []
    rows = []
    # mutmut numbers a function's mutants in order, so an edit elsewhere in the function renames them:
    # an explanation holds for the survivor of the same function making the same change.
    by_change = {(_function(name), note.get("change")): note for name, note in explained.items()}
    explained_used = set()
    for m in survivors:
        change = changes.get(m.name, "")
        note = by_change.get((_function(m.name), change))
        if note:
            fate = f"explained: {note['why']}"
            explained_used.add((_function(m.name), change))
        else:
            fate = "open"
            open_ones.append(m.name)
        rows.append(f"| `{m.name}` | {m.status} | `{_cell(change)}` | {_cell(fate)} |")
    stale = sorted(
        name for name, note in explained.items() if (_function(name), note.get("change")) not in explained_used
    )
    lines += [f"## Survivors ({len(survivors)}; {len(open_ones)} without a fate)", ""]
    if rows:
        lines += ["| mutant | status | change | fate |", "| --- | --- | --- | --- |", *rows]
    else:
        lines.append("None.")
    if stale:
        lines += [
            "",
            "## Stale explanations (the mutant no longer survives with that change)",
            "",
            *[f"- `{name}`" for name in stale],
        ]
    ok = holds and not open_ones and not stale
    return "\n".join(lines) + "\n", ok


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation.report", description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=REPORT)
    args = parser.parse_args(argv)
    mutants = read_results()
    if not mutants:
        print("no mutation results under mutants/: run `make mutation` first", file=sys.stderr)
        return 2
    survivors = [m.name for m in mutants if m.status in ("survived", "no tests", "suspicious")]
    changes = {name: change_of(name) for name in survivors}
    text, ok = render(mutants, changes, load_explained(), run_commit())
    args.output.write_text(text)
    print(
        f"{args.output.relative_to(ROOT) if args.output.is_relative_to(ROOT) else args.output}: "
        f"caught {_percent(kill_rate(mutants))} of the mutants run; {len(survivors)} survivors"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
