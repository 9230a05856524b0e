"""The generated parts of docs/, so they cannot drift from the code:

- the policy table in docs/policy-pack.md, from the policy declarations (policy/declare.py, in the
  pack's order);
- the operand table in docs/what-gets-created.md, from the operand registry
  (gpu_platform/catalog/operands.yaml) and what the prod stack (and its twin with the toolkit DaemonSet) really
  renders;
- the prod rollout picture (a block in docs/what-gets-created.md, and docs/rollout-prod.md), from the
  recorded graph;
- the configuration reference, docs/configuration.md, from the config models' field descriptions
  (gpu_platform/config/reference.py);
- the offline answers to the EKS AMI parameters (preview/offline/fixtures/eks_ami_parameters.yaml),
  from what AWS published (gpu_platform/catalog/eks_amis.yaml).

    python -m preview.docs --write   # rewrite them (make docs)
    python -m preview.docs --check   # exit 1 when any is stale (make lint, CI)
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from preview.stack_file import ROOT

POLICY_PAGE = ROOT / "docs" / "policy-pack.md"
OPERAND_PAGE = ROOT / "docs" / "what-gets-created.md"
REGENERATE = "make docs"
POLICIES_BEGIN, POLICIES_END = "<!-- policies:begin -->", "<!-- policies:end -->"
OPERANDS_BEGIN, OPERANDS_END = "<!-- operands:begin -->", "<!-- operands:end -->"


def policy_table() -> str:
    from policy.pack import DECLARATIONS

    lines = [
        POLICIES_BEGIN,
        f"<!-- generated from the policy declarations (policy/*.py) by `{REGENERATE}`; CI fails when it is stale -->",
        "| policy | kind | level | runs | checks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for d in DECLARATIONS:
        runs = (
            f"before each of {d.targets.label} is created or updated"
            if d.targets
            else "once every resource's step is done (after the deployment, under `--skip-preview`)"
        )
        level = d.policy.enforcement_level.value
        lines.append(f"| `{d.policy.name}` | {d.kind} | {level} | {runs} | {d.policy.description} |")
    lines.append(POLICIES_END)
    return "\n".join(lines)


def _recordings():
    """The prod stack, its twin with the toolkit DaemonSet (the one operand prod leaves out), and the
    dra stack (the DRA driver, which only allocation mode dra runs)."""
    import tempfile

    import yaml

    from preview.offline import engine

    prod = engine.run(engine.stack_file("prod"))
    config = engine.read_stack_file(engine.stack_file("prod"))
    config["gpu-platform:nodeImage"] = {**config["gpu-platform:nodeImage"], "toolkitBaked": False}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "Pulumi.prod.yaml"
        path.write_text(yaml.safe_dump({"config": config}))
        twin = engine.run(path)
    return prod, twin, engine.run(engine.stack_file("dra"))


def operand_table(recordings=None) -> str:
    from gpu_platform.catalog import operands
    from gpu_platform.interface import contract, workloads

    recordings = recordings or _recordings()
    lines = [
        OPERANDS_BEGIN,
        f"<!-- generated from gpu_platform/catalog/operands.yaml and the prod and dra stacks' manifests by `{REGENERATE}`; CI fails when it is stale -->",
        "| stage | operand | runs on | gate label | waits on its node for | privileges kept (prod; the toolkit: with `toolkitBaked: false`; the DRA driver: the dra stack) | API token |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for number, row in enumerate(operands.rows(), 1):
        # The first recording that runs it; a MIG reader has a second DaemonSet there, its MIG pools'
        # (components/kubernetes/operands/mig_access.py), listed after its own.
        found: list = []
        for rec in recordings:
            daemonsets = rec.of_type("kubernetes:apps/v1:DaemonSet")
            found = sorted(
                (ds for ds in daemonsets if ds.inputs["metadata"]["labels"].get(contract.OPERAND_KEY) == row.operand),
                key=lambda ds: ds.inputs["metadata"]["name"],
            )
            if found:
                break
        kept = []
        for ds in found:
            pod = ds.inputs["spec"]["template"]["spec"]
            text = ", ".join(workloads.privileges(pod)) or "none"
            paths = workloads.host_path_modes(pod)
            if paths:
                text += " (" + ", ".join(f"{p} {m}" for p, m in paths.items()) + ")"
            kept.append(text if ds is found[0] else f"MIG pools: {text}")
        gate = f"`{contract.gate_label(row.gate)}`" if row.gate else "none"
        names = [f"`{ds.inputs['metadata']['name']}`" for ds in found]
        name = (names[0] + "".join(f" and {n} (MIG pools)" for n in names[1:])) if found else row.operand
        pod = found[0].inputs["spec"]["template"]["spec"] if found else {}
        token = "yes" if pod.get("automountServiceAccountToken") else "no"
        waits = row.waits_for or "nothing"
        if row.on == "gpu-nodes" and row.marker(dra=True) != row.waits_for:
            waits += f" (`allocation.mode: dra`: {row.marker(dra=True) or 'nothing'})"
        lines.append(
            f"| {number} | {name} | {operands.PLACEMENTS[row.on].where} | {gate} | {waits} | {'; '.join(kept) or 'none'} | {token} |"
        )
    lines.append(OPERANDS_END)
    return "\n".join(lines)


def replace_block(text: str, begin: str, end: str, block: str) -> str:
    start, stop = text.find(begin), text.find(end)
    if start < 0 or stop < start:
        raise ValueError(f"no {begin} ... {end} block")
    return text[:start] + block + text[stop + len(end) :]


def _stale_block(page: Path, what: str, begin: str, end: str, block: str) -> list[str]:
    try:
        text = page.read_text()
        return [f"{page.name}: the {what} is stale"] if replace_block(text, begin, end, block) != text else []
    except (FileNotFoundError, ValueError) as exc:
        return [f"{page.name}: {exc}"]


def stale(policy_page: Path = POLICY_PAGE, operand_page: Path = OPERAND_PAGE) -> list[str]:
    from gpu_platform.config import reference
    from preview.offline import eks_ami_answers, engine
    from preview.reports import graph

    found = _stale_block(policy_page, "policy table", POLICIES_BEGIN, POLICIES_END, policy_table())
    found += _stale_block(operand_page, "operand table", OPERANDS_BEGIN, OPERANDS_END, operand_table())
    found += eks_ami_answers.stale()
    found += graph.stale(engine.run(engine.stack_file(graph.DOCS_STACK)), operand_page)
    found += reference.stale()
    return found


def write(policy_page: Path = POLICY_PAGE, operand_page: Path = OPERAND_PAGE) -> None:
    from gpu_platform.config import reference
    from preview.offline import eks_ami_answers, engine
    from preview.reports import graph

    reference.write()  # docs/configuration.md

    eks_ami_answers.write()  # first: the recordings below read it
    policy_page.write_text(replace_block(policy_page.read_text(), POLICIES_BEGIN, POLICIES_END, policy_table()))
    operand_page.write_text(replace_block(operand_page.read_text(), OPERANDS_BEGIN, OPERANDS_END, operand_table()))
    graph.write_docs(engine.run(engine.stack_file(graph.DOCS_STACK)), operand_page)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m preview.docs", description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--write", action="store_true", help="rewrite the generated blocks of docs/ and docs/rollout-prod.md"
    )
    mode.add_argument("--check", action="store_true", help="exit 1 when any of them is stale")
    args = parser.parse_args(argv)
    if args.write:
        write()
        return 0
    problems = stale()
    for problem in problems:
        print(f"error: {problem}; run `{REGENERATE}`", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
