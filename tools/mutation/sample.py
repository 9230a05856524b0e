"""A fixed random sample of the mutants not yet run, for `make mutation SAMPLE=N`.

All ~9,500 mutants take hours on two cores; a sample of a few hundred measures the kill rate within a
few points in one sitting, and a later run resumes from there (mutmut keeps each result). The sample
is drawn per package in proportion to the mutants it still has not run, with a fixed seed, so the same
mutants/ gives the same sample. Names come from mutmut's own records (mutants/**/*.py.meta): mutmut
generates every mutant on its first run, whatever part it is asked to run.

Prints the names one per line (what `mutmut run NAME ...` takes). Exit 2 when there is nothing to
sample from."""

from __future__ import annotations

import argparse
import random
import sys

from tools.mutation.report import MUTANTS, Mutant, read_results

SEED = 16  # the issue that asked for mutation testing


def sample(mutants: list[Mutant], size: int, seed: int = SEED) -> list[str]:
    """`size` names of mutants not yet run, each package's share in proportion to what it has not
    run (largest remainders), drawn with `seed`; sorted."""
    pending: dict[str, list[str]] = {}
    for m in mutants:
        if m.status == "not run":
            pending.setdefault(m.package, []).append(m.name)
    total = sum(len(names) for names in pending.values())
    size = min(size, total)
    if size <= 0:
        return []
    exact = {package: size * len(names) / total for package, names in sorted(pending.items())}
    shares = {package: int(value) for package, value in exact.items()}
    by_remainder = sorted(exact, key=lambda package: (-(exact[package] - shares[package]), package))
    for package in by_remainder[: size - sum(shares.values())]:
        shares[package] += 1
    rng = random.Random(seed)
    chosen: list[str] = []
    for package in sorted(pending):
        chosen += rng.sample(sorted(pending[package]), shares[package])
    return sorted(chosen)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.mutation.sample", description=__doc__.split("\n")[0])
    parser.add_argument("size", type=int, help="how many mutants (at most those not yet run)")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args(argv)
    if args.size < 1:
        parser.error(f"size {args.size}: give a positive number of mutants")
    names = sample(read_results(MUTANTS), args.size, args.seed)
    if not names:
        print(
            "mutation.sample: no mutant left to run under mutants/: none generated yet (a first "
            "`make mutation MUTANTS='policy.*'` generates them all), or every one has run",
            file=sys.stderr,
        )
        return 2
    sys.stdout.write("".join(f"{name}\n" for name in names))
    return 0


if __name__ == "__main__":
    sys.exit(main())
