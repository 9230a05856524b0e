"""Bring mutants/ up to date with the work tree before `mutmut run` (make mutation).

mutmut 3.8.1 regenerates a mutated source only when its .py changed, copies the tests and
setup.cfg's `also_copy` without ever deleting there, and keeps its first copy of every other file of
a source path (it warns "non-Python file(s) changed ... cached results were kept"). So a test removed
since the last run lingers and fails the clean run, and a data file read by the code under test
(gpu_platform/*.yaml) stays as it was: the tests then run against data the work tree no longer has.
Here: the tests and the `also_copy` paths are removed (mutmut copies them afresh), and every
non-Python file of the source paths is copied over its stale copy; mutated sources and their
results (*.meta) stay, except that a run at another commit collects coverage again and retries
the survivors (recover()).
"""

from __future__ import annotations

import configparser
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "setup.cfg"
KEPT = (".py", ".meta", ".pyc")


def _paths(value: str) -> list[str]:
    return [line.strip().rstrip("/") for line in value.splitlines() if line.strip()]


def settings(path: Path = SETTINGS) -> tuple[list[str], list[str]]:
    """(source_paths, also_copy) of the [mutmut] section."""
    parser = configparser.ConfigParser()
    parser.read(path)
    section = parser["mutmut"]
    return _paths(section.get("source_paths", "")), _paths(section.get("also_copy", ""))


def refresh(root: Path = ROOT) -> list[str]:
    """What was done, one line each; nothing when mutants/ does not exist yet (mutmut makes it)."""
    mutants = root / "mutants"
    if not mutants.is_dir():
        return []
    sources, also_copy = settings(root / "setup.cfg")
    done = []
    for name in ["tests", *also_copy]:
        target = mutants / name
        if target.is_dir():
            shutil.rmtree(target)
            done.append(f"removed mutants/{name}/")
        elif target.exists():
            target.unlink()
            done.append(f"removed mutants/{name}")
    for source in sources:
        for file in sorted((root / source).rglob("*")):
            if not file.is_file() or file.suffix in KEPT or "__pycache__" in file.parts:
                continue
            copy = mutants / file.relative_to(root)
            if not copy.exists() or copy.read_bytes() != file.read_bytes():
                copy.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(file, copy)
                done.append(f"copied {file.relative_to(root)}")
    return done


RUN_FILE = "gpu-platform-run.json"  # in mutants/: the commit the latest `make mutation` ran at


def record_commit(root: Path = ROOT) -> str | None:
    """Write the work tree's commit into mutants/ (mutmut's own `git_commit` is the baseline of its
    last full coverage pass, not of the latest run)."""
    import json

    mutants = root / "mutants"
    commit = _head(root) if mutants.is_dir() else None
    if commit is None:
        return None
    (mutants / RUN_FILE).write_text(json.dumps({"commit": commit}) + "\n")
    return commit


STATS = "mutmut-stats.json"  # in mutants/: mutmut's coverage pass, which tests reach which function


def _last_commit(mutants: Path) -> str | None:
    import json

    try:
        return json.loads((mutants / RUN_FILE).read_text())["commit"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def recover(root: Path = ROOT, commit: str | None = None) -> list[str]:
    """Start the coverage pass over when the code or the tests changed since the last run, and try the
    survivors again. mutmut 3.8.1's pass after a change runs only the tests it has not seen, so an
    older test that now reaches new or changed code is never chosen for its mutants: they "survive"
    a test never tried (the EFA device plugin's mutants survived the strict manifest test written
    before the plugin). Without mutmut-stats.json the next run collects coverage over the whole
    suite; a survivor's result (exit code 0) is cleared so it runs against the tests that reach it
    now. Kills stand: a test failed on them."""
    import json

    mutants = root / "mutants"
    last = _last_commit(mutants) if mutants.is_dir() else None
    if last is None or commit is None or last == commit:
        return []
    done = []
    if (mutants / STATS).exists():
        (mutants / STATS).unlink()
        done.append(f"removed mutants/{STATS} (the code changed since {last[:12]}: coverage is collected again)")
    cleared = 0
    for meta in sorted(mutants.rglob("*.py.meta")):
        data = json.loads(meta.read_text())
        codes = data.get("exit_code_by_key") or {}
        survivors = [key for key, code in codes.items() if code == 0]
        for key in survivors:
            codes[key] = None
        if survivors:
            meta.write_text(json.dumps(data, indent=4))
            cleared += len(survivors)
    if cleared:
        done.append(f"{cleared} surviving mutants to run again")
    return done


def _head(root: Path) -> str | None:
    import subprocess

    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def main() -> int:
    for line in [*refresh(), *recover(ROOT, _head(ROOT))]:
        print(f"mutation: {line}")
    record_commit()
    return 0


if __name__ == "__main__":
    sys.exit(main())
