"""The test suite's time and where it goes (`make bench-suite`): one run of pytest as `make test` runs
it (pytest.ini: two workers), its wall time, the machine's load before and after (other processes on
the same cores stretch every figure), the engine runs the shared recordings made (tests/recordings.py)
and the slowest tests. Prints Markdown; exits with pytest's code.

    python tools/bench/suite.py [--slowest N] [pytest arguments ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slowest", type=int, default=25)
    args, extra = parser.parse_known_args()
    before = load()
    start = time.perf_counter()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--durations={args.slowest}",
            "--durations-min=0",
            *extra,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    out = done.stdout
    outcome = next(
        (line.strip("= ") for line in reversed(out.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "?"
    )
    shared = next((line for line in out.splitlines() if line.startswith("shared recordings:")), "shared recordings: ?")
    slow = re.findall(r"^([0-9.]+)s (call|setup|teardown) +(\S+)", out, re.MULTILINE)
    lines = [
        f"Test suite: {wall:.1f} s wall on {os.cpu_count()} cores ({outcome}); load average before {before}, after {load()}",
        f"({shared}).",
        "",
        "| seconds | phase | test |",
        "| ---: | --- | --- |",
        *(f"| {seconds} | {phase} | `{test}` |" for seconds, phase, test in slow),
    ]
    print("\n".join(lines))
    if done.returncode:
        sys.stderr.write(out[-3000:] + done.stderr[-2000:])
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
