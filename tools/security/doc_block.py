"""The "Security scan" block of docs/ci-and-supply-chain.md, generated from tools/security/accepted.yaml (so
it cannot drift: tests/tools/security/test_doc_block.py fails when it is stale, `make scan-accept` rewrites
it).

The headline compares like with like: checkov's failures on the prod operand DaemonSets (graph
checks on the Pods of their templates included) against the same count over the GPU Operator's own
operand DaemonSet assets.
"""

from __future__ import annotations

from pathlib import Path

from tools.security.accepted import REGENERATE, Check, reason_of

PAGE = Path(__file__).resolve().parents[2] / "docs" / "ci-and-supply-chain.md"
BEGIN, END = "<!-- scan:begin -->", "<!-- scan:end -->"
FIGURE_STACK = "prod"

# Measured here, not only taken from issue 11 (which gives the same 121): the six operand DaemonSet
# assets of NVIDIA/gpu-operator at tag v25.10.1 (assets/state-container-toolkit/0500_daemonset.yaml,
# state-operator-validation/0500, state-device-plugin/0500, gpu-feature-discovery/0500,
# state-dcgm-exporter/0800, state-mig-manager/0600), one file each in a directory, scanned with
# checkov 3.3.30 exactly as `make scan` scans ours (`--framework kubernetes`): 121 failed, 409 passed.
UPSTREAM_RELEASE = "v25.10.1"
UPSTREAM_FAILED = 121
UPSTREAM_DAEMONSETS = "container toolkit, validator, device plugin, GPU feature discovery, DCGM exporter, MIG manager"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _short(resource: str) -> str:
    kind, *rest = resource.split("/")
    return f"{kind} {rest[-1]}" if rest else resource


def block(checks: dict[str, Check]) -> str:
    prod_ds = sorted(
        {
            name
            for c in checks.values()
            for name, r in c.resources.items()
            if FIGURE_STACK in r.stacks and name.startswith("DaemonSet/")
        }
    )
    figure = sum(
        1
        for c in checks.values()
        for name, r in c.resources.items()
        if FIGURE_STACK in r.stacks and name.startswith("DaemonSet/")
    )
    prod_all = sum(1 for c in checks.values() for r in c.resources.values() if FIGURE_STACK in r.stacks)
    stacks = sorted({s for c in checks.values() for r in c.resources.values() for s in r.stacks})
    lines = [
        BEGIN,
        f"<!-- generated from tools/security/accepted.yaml by `{REGENERATE}`; the tests fail when it is stale -->",
        (
            f"**{figure} checks failed on the {FIGURE_STACK} operand DaemonSets** "
            f"({len(prod_ds)} DaemonSets with a failure: {', '.join(n.rsplit('/', 1)[-1] for n in prod_ds) or 'none'}), "
            f"against **{UPSTREAM_FAILED}** on the six operand DaemonSets of the GPU Operator's own assets at "
            f"{UPSTREAM_RELEASE} ({UPSTREAM_DAEMONSETS}). That figure is issue 11's, and was measured here too: the six "
            f"`assets/*/0*_daemonset.yaml` files at the tag, scanned by checkov 3.3.30 the same way. "
            f"On every {FIGURE_STACK} object (NFD's Deployments and the RBAC included): {prod_all} failed checks."
        ),
        "",
        f"Accepted failures, per check (stacks: {', '.join(stacks) or 'none'}):",
        "",
        "| check | what checkov asks | fails on | why it is accepted |",
        "| --- | --- | --- | --- |",
    ]
    for cid, check in checks.items():
        by_reason: dict[str, list[str]] = {}
        for name, res in check.resources.items():
            where = _short(name) + ("" if res.stacks == stacks else f" ({', '.join(res.stacks)})")
            by_reason.setdefault(reason_of(check, name), []).append(where)
        for reason, where in by_reason.items():
            lines.append(f"| `{cid}` | {_cell(check.title)} | {_cell(', '.join(where))} | {_cell(reason)} |")
    lines.append(END)
    return "\n".join(lines)


def replace_block(text: str, new: str) -> str:
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        raise ValueError(f"no {BEGIN} ... {END} block")
    return text[:start] + new + text[stop + len(END) :]


def stale(checks: dict[str, Check], page: Path = PAGE) -> bool:
    text = page.read_text()
    return replace_block(text, block(checks)) != text


def write(checks: dict[str, Check], page: Path = PAGE) -> None:
    page.write_text(replace_block(page.read_text(), block(checks)))
