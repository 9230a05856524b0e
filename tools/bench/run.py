"""Benchmarks of the offline preview and the test suite (`make bench`).

Each figure is the median of N runs of a fresh process (wall time, and the peak resident memory of
that process from wait4's rusage), so imports are paid every time, as in CI. The import floor is a
process that imports only the SDK modules the program uses: the preview cannot be faster than that.
Writes the table to docs/benchmarks.md with the machine it ran on; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import copy
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
# The SDK modules the program uses, loaded for real: pulumi_aws and pulumi_kubernetes import their
# submodules lazily, so `import pulumi_aws` alone costs nothing and would make a false floor. Each
# attribute below forces its package (e.g. all of pulumi_aws.ec2) as the program does: one per
# package of a resource type the dev and prod previews register (`python -X importtime` lists them).
FLOOR = "; ".join(
    (
        "import pulumi, pulumi_policy, pydantic, yaml, pulumi_aws as aws, pulumi_kubernetes as k8s",
        "aws.eks.Cluster, aws.ec2.LaunchTemplate, aws.iam.Role, aws.imagebuilder.Image, aws.kms.Key, aws.ssm.get_parameter",
        "aws.vpc.SecurityGroupIngressRule",
        "k8s.core.v1.Namespace, k8s.apps.v1.DaemonSet, k8s.rbac.v1.Role, k8s.node.v1.RuntimeClass",
        "k8s.apiextensions.CustomResource, k8s.apiextensions.v1.CustomResourceDefinition",
        "k8s.networking.v1.NetworkPolicy, k8s.admissionregistration.v1.ValidatingAdmissionPolicy, k8s.meta.v1.ObjectMetaArgs",
    )
)
# The floor as it was until the program registered NetworkPolicies, admission policies and VPC rules:
# kept so figures stay comparable with earlier runs of this file.
FLOOR_BEFORE = FLOOR.replace("; aws.vpc.SecurityGroupIngressRule", "").rsplit("; ", 1)[0]
NOTES = "## Notes"
# GPU instance types cycled through generated pools, so large stacks are not one pool copied.
# No g5: its image turns the GSP firmware off, so a g5 pool cannot share the stack's image with others.
_POOL_TYPES = ("g6.2xlarge", "g6e.12xlarge", "g6.12xlarge", "p5.48xlarge", "p4de.24xlarge")


@dataclass(frozen=True)
class Measure:
    name: str
    seconds: float
    peak_mib: float
    resources: int = 0


def _run_once(argv: list[str], ok: tuple[int, ...] = (0, 1)) -> tuple[float, float]:
    start = time.perf_counter()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    elapsed = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in ok:
        raise SystemExit(f"{' '.join(argv)} failed ({process.returncode}): {process.stderr.read().decode()[-2000:]}")
    return elapsed, usage.ru_maxrss / 1024  # KiB -> MiB on Linux


def measure(name: str, argv: list[str], runs: int, resources: int = 0, ok: tuple[int, ...] = (0, 1)) -> Measure:
    samples = [_run_once(argv, ok) for _ in range(runs)]
    return Measure(
        name,
        statistics.median(s for s, _ in samples),
        statistics.median(m for _, m in samples),
        resources,
    )


def generated_stack(directory: Path, pools: int) -> Path:
    config = yaml.safe_load((ROOT / "stacks" / "Pulumi.dev.yaml").read_text())["config"]
    template = config["gpu-platform:nodePools"][0]
    config["gpu-platform:nodePools"] = [
        {**copy.deepcopy(template), "name": f"pool-{n:02d}", "instanceType": _POOL_TYPES[n % len(_POOL_TYPES)]}
        for n in range(pools)
    ]
    path = directory / f"Pulumi.pools{pools}.yaml"
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


def resource_count(stack_args: list[str]) -> int:
    import json

    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "r.json"
        done = subprocess.run(
            [PYTHON, "-m", "preview", *stack_args, "--json", str(report)], cwd=ROOT, capture_output=True, text=True
        )
        if done.returncode not in (0, 1):  # 1: policy violations, still a full run
            raise SystemExit(
                f"bench: preview {' '.join(stack_args)} failed (exit {done.returncode}): {done.stderr.strip()}"
            )
        return len(json.loads(report.read_text())["resources"])


def machine() -> str:
    cpu = "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        kib = int(Path("/proc/meminfo").read_text().split()[1])
        memory = f", {kib / 1024 / 1024:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores ({cpu}){memory}, Python {platform.python_version()}"


def targets(results: dict[str, Measure]) -> list[tuple[str, str, bool]]:
    floor = results["floor"].seconds
    small, large = results["pools5"], results["pools25"]
    growth = (large.seconds - floor) / max(small.seconds - floor, 1e-9)
    resource_growth = large.resources / max(small.resources, 1)
    peak = max(m.peak_mib for k, m in results.items() if k.startswith(("dev", "prod", "pools")))
    return [
        # issue 29: both previews within 1.6x the floor (they were 1.4x/1.5x before the two views).
        (
            "dev preview <= 1.6x import floor",
            f"{results['dev'].seconds / floor:.2f}x",
            results["dev"].seconds <= 1.6 * floor,
        ),
        (
            "prod preview <= 1.6x import floor",
            f"{results['prod'].seconds / floor:.2f}x",
            results["prod"].seconds <= 1.6 * floor,
        ),
        (
            "25 vs 5 pools no worse than linear in resources",
            f"time above floor x{growth:.2f} for resources x{resource_growth:.2f}",
            growth <= resource_growth,
        ),
        ("peak memory of a preview < 300 MB", f"{peak:.0f} MiB", peak < 300),
        (
            "fleet preview of every shipped and fixture stack <= 3x one preview (dev)",
            f"{results['fleet'].seconds / results['dev'].seconds:.2f}x",
            results["fleet"].seconds <= 3 * results["dev"].seconds,
        ),
        ("full test suite < 60 s", f"{results['tests'].seconds:.1f} s", results["tests"].seconds < 60),
    ]


def render(results: dict[str, Measure], checks: list[tuple[str, str, bool]], runs: int, test_runs: int) -> str:
    floor = results["floor"].seconds
    lines = [
        "# Benchmarks",
        "",
        f'Written by `make bench` (tools/bench/run.py) down to the section "{NOTES[3:]}", which is kept as written.',
        "",
        (
            f"Machine: {machine()}. Each figure is the median of {runs} fresh processes "
            f"(the test suite: {test_runs}); the 5/15/25-pool stacks are the dev stack with generated pools (25: a managed node group each, under EKS's default quota of 30 per cluster)."
        ),
        "",
        "| run | resources | wall time | vs import floor | peak memory |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for m in results.values():
        lines.append(
            f"| {m.name} | {m.resources or ''} | {m.seconds:.2f} s | {m.seconds / floor:.2f}x | {m.peak_mib:.0f} MiB |"
        )
    lines += ["", "| target | measured | holds |", "| --- | --- | --- |"]
    lines += [f"| {name} | {value} | {'yes' if ok else 'NO'} |" for name, value, ok in checks]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--test-runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "benchmarks.md")
    args = parser.parse_args()
    results: dict[str, Measure] = {}
    results["floor"] = measure("import floor (SDK modules only)", [PYTHON, "-c", FLOOR], args.runs)
    results["floor_before"] = measure(
        "import floor without networking, admission, vpc", [PYTHON, "-c", FLOOR_BEFORE], args.runs
    )
    for stack in ("dev", "prod"):
        results[stack] = measure(
            f"preview --stack {stack}",
            [PYTHON, "-m", "preview", "--stack", stack],
            args.runs,
            resource_count(["--stack", stack]),
        )
    with tempfile.TemporaryDirectory() as tmp:
        for pools in (5, 15, 25):
            path = generated_stack(Path(tmp), pools)
            results[f"pools{pools}"] = measure(
                f"preview, {pools} GPU pools",
                [PYTHON, "-m", "preview", "--config", str(path)],
                args.runs,
                resource_count(["--config", str(path)]),
            )
    # Every shipped and fixture stack, the invalid ones included (exit 2: some stack file is invalid);
    # the rows of the fixture tables written out as stack files by tests/fixture_stacks.py.
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([PYTHON, "-m", "tests.fixture_stacks", tmp], cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
        fleet = ["stacks", "tests/fixtures/passing", f"{tmp}/violating", f"{tmp}/bad_stacks"]
        count = sum(len(list((ROOT / d).glob("*.yaml"))) for d in fleet)
        results["fleet"] = measure(
            f"preview --all: {count} stack files ({os.cpu_count()} workers)",
            [PYTHON, "-m", "preview", "--all", *fleet],
            args.runs,
            ok=(2,),
        )
    results["tests"] = measure(
        "test suite (pytest)", [PYTHON, "-m", "pytest", "-q", "-p", "no:cacheprovider"], args.test_runs, ok=(0,)
    )
    checks = targets(results)
    text = render(results, checks, args.runs, args.test_runs)
    # What follows NOTES in the file is written by hand (measurements under load, what moved a figure): kept.
    if args.out.exists() and NOTES in args.out.read_text():
        text += "\n" + NOTES + args.out.read_text().split(NOTES, 1)[1]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    sys.stdout.write(text)
    return 0 if all(ok for _, _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
