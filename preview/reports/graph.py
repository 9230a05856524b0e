"""The rollout picture: the operand order and what waits for what (node image -> GPU node pools ->
operands), drawn from the recorded graph alone, as Mermaid or DOT.

A component waits for another when anything under it (itself or a descendant) waits for anything
under the other: its recorded dependencies, an ancestor's (`Recording.waits_for`), or its provider
(the engine creates a resource's provider first; that is how the namespace waits for the cluster).
An arrow goes from what is created first to what waits for it. Arrows implied by a longer path are
left out (the transitive reduction of a DAG is unique, so the picture is deterministic); the full
sets are in the table of `docs/rollout-prod.md`, which `make docs` (preview/docs.py) keeps current
with the block in `docs/what-gets-created.md`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from preview.recording import Recording
from preview.reports.report import operand_order
from preview.stack_file import ROOT

OPERAND_PREFIX = "gpu-platform:operands:"
# The components the picture shows, in the order it lists them (operands follow, in rollout order).
KINDS = {
    "gpu-platform:aws:EksCluster": "cluster",
    "gpu-platform:aws:NodeImage": "node image",
    "gpu-platform:aws:GpuNodePool": "GPU node pool",
    "gpu-platform:kubernetes:GpuNamespace": "namespace",
    "gpu-platform:kubernetes:AdmissionPolicies": "admission policies",
}

DOCS_STACK = "prod"
# The page that shows the picture as a block; docs/rollout-prod.md sits beside it (relative links).
PAGE = ROOT / "docs" / "what-gets-created.md"
DOC = ROOT / "docs" / f"rollout-{DOCS_STACK}.md"
BEGIN, END = "<!-- rollout:begin -->", "<!-- rollout:end -->"
REGENERATE = "make docs"


@dataclass(frozen=True)
class Node:
    urn: str
    name: str
    kind: str
    step: int = 0  # the operand's place in the rollout order; 0 for the rest

    @property
    def label(self) -> str:
        title = f"{self.step}. {self.name}" if self.step else self.name
        return f"{title}\n{self.kind}"


@dataclass(frozen=True)
class Picture:
    nodes: tuple[Node, ...]
    order: tuple[Node, ...]
    waits: dict[str, frozenset[str]]  # node urn -> every node urn it waits for
    edges: tuple[tuple[str, str], ...]  # (first, waits for it), transitively reduced, sorted


def picture(recording: Recording) -> Picture:
    shown = sorted(
        (r for r in recording.resources if r.type in KINDS), key=lambda r: (list(KINDS).index(r.type), r.name, r.urn)
    )
    nodes = [Node(r.urn, r.name, KINDS[r.type]) for r in shown]
    order = tuple(
        Node(r.urn, r.name, f"operand {r.type.removeprefix(OPERAND_PREFIX)}", step)
        for step, r in enumerate(operand_order(recording), 1)
    )
    nodes += order
    waits = component_waits(recording, [n.urn for n in nodes])
    position = {n.urn: i for i, n in enumerate(nodes)}
    edges = sorted(((b, a) for a in waits for b in _reduced(waits, a)), key=lambda e: (position[e[0]], position[e[1]]))
    return Picture(tuple(nodes), order, waits, tuple(edges))


def component_waits(recording: Recording, components: Sequence[str]) -> dict[str, frozenset[str]]:
    """For each of `components`, the others it waits for through anything under it."""

    def owner(urn: str) -> str | None:
        found = recording.owner(urn, components)
        return found.urn if found is not None else None

    waits: dict[str, set[str]] = {urn: set() for urn in components}
    for r in recording.resources:
        mine = owner(r.urn)
        if mine is None:
            continue
        targets = set(recording.waits_for(r.urn))
        if r.provider:
            targets.add(r.provider.rsplit("::", 1)[0])  # a provider reference is "<urn>::<id>"
        for target in targets:
            theirs = owner(target)
            if theirs is not None and theirs != mine:
                waits[mine].add(theirs)
    return {urn: frozenset(found) for urn, found in waits.items()}


def _reduced(waits: dict[str, frozenset[str]], node: str) -> set[str]:
    """What `node` waits for directly: drop a prerequisite that another prerequisite already waits
    for. On a cycle (Pulumi cannot record one) nothing is dropped, so the picture stays total."""

    def reach(start: str) -> set[str]:
        seen, frontier = set(), set(waits.get(start, ()))
        while frontier:
            seen |= frontier
            frontier = set().union(*(waits.get(u, frozenset()) for u in frontier)) - seen
        return seen

    if node in reach(node):
        return set(waits[node])
    direct = set(waits[node])
    return {b for b in direct if not any(b in reach(other) for other in direct - {b})}


def _ids(nodes: Sequence[Node]) -> dict[str, str]:
    ids: dict[str, str] = {}
    for n in nodes:
        base = "n_" + re.sub(r"[^A-Za-z0-9_]", "_", n.name)
        ident, suffix = base, 2
        while ident in ids.values():
            ident, suffix = f"{base}_{suffix}", suffix + 1
        ids[n.urn] = ident
    return ids


def mermaid(recording: Recording) -> str:
    pic = picture(recording)
    ids = _ids(pic.nodes)
    operands = {n.urn for n in pic.order}

    def declare(n: Node, indent: str) -> str:
        label = n.label.replace('"', "#quot;").replace("\n", "<br/>")
        return f'{indent}{ids[n.urn]}["{label}"]'

    lines = ["flowchart TD"]
    lines += [declare(n, "  ") for n in pic.nodes if n.urn not in operands]
    if pic.order:
        lines.append('  subgraph operands["operands, in rollout order"]')
        lines += [declare(n, "    ") for n in pic.order]
        lines.append("  end")
    lines += [f"  {ids[a]} --> {ids[b]}" for a, b in pic.edges]
    return "\n".join(lines) + "\n"


def dot(recording: Recording) -> str:
    pic = picture(recording)
    operands = {n.urn for n in pic.order}
    names = {n.urn: n.name for n in pic.nodes}

    def quote(text: str) -> str:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'

    lines = [f"digraph {quote('rollout-' + recording.stack)} {{", "  rankdir=TB;", "  node [shape=box];"]
    lines += [f"  {quote(n.name)} [label={quote(n.label)}];" for n in pic.nodes if n.urn not in operands]
    if pic.order:
        lines.append("  subgraph cluster_operands {")
        lines.append('    label="operands, in rollout order";')
        lines += [f"    {quote(n.name)} [label={quote(n.label)}];" for n in pic.order]
        lines.append("  }")
    lines += [f"  {quote(names[a])} -> {quote(names[b])};" for a, b in pic.edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def _order_line(pic: Picture) -> str:
    return ", ".join(f"{n.step}. `{n.name}`" for n in pic.order)


def page_block(recording: Recording) -> str:
    pic = picture(recording)
    return "\n".join(
        [
            BEGIN,
            f"<!-- generated from stacks/Pulumi.{recording.stack}.yaml by `{REGENERATE}`; CI fails when it is stale -->",
            f"Operands, in rollout order: {_order_line(pic)}.",
            "",
            "An arrow goes from what is created first to what waits for it; arrows implied by a longer path",
            f"are left out (each component's full list: [rollout-{recording.stack}.md](rollout-{recording.stack}.md)).",
            "",
            "```mermaid",
            mermaid(recording).rstrip("\n"),
            "```",
            END,
        ]
    )


def doc(recording: Recording) -> str:
    pic = picture(recording)
    names = {n.urn: n for n in pic.nodes}
    lines = [
        f"# Rollout picture: the {recording.stack} stack",
        "",
        f"<!-- generated from stacks/Pulumi.{recording.stack}.yaml by `{REGENERATE}`; do not edit -->",
        "",
        (
            "Drawn from the recorded graph of the offline preview (`python -m preview --stack "
            f"{recording.stack} --graph FILE` writes the same picture, `.dot` for Graphviz)."
        ),
        "",
        "## Operands, in rollout order",
        "",
        *[f"{n.step}. `{n.name}` ({n.kind.removeprefix('operand ')})" for n in pic.order],
        "",
        "## What waits for what",
        "",
        "An arrow goes from what is created first to what waits for it; arrows implied by a longer",
        "path are left out.",
        "",
        "```mermaid",
        mermaid(recording).rstrip("\n"),
        "```",
        "",
        "| component | kind | waits for (directly or through its resources and provider) |",
        "| --- | --- | --- |",
    ]
    for n in pic.nodes:
        waited = sorted(pic.waits[n.urn], key=lambda u: pic.nodes.index(names[u]))
        listed = ", ".join(f"`{names[u].name}`" for u in waited) or "nothing shown here"
        lines.append(f"| `{n.name}` | {n.kind} | {listed} |")
    return "\n".join(lines) + "\n"


def _replace_block(text: str, block: str) -> str:
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(f"no {BEGIN} ... {END} block")
    return text[:start] + block + text[end + len(END) :]


def stale(recording: Recording, page: Path = PAGE, doc_path: Path = DOC) -> list[str]:
    """The generated files that differ from what the recording gives, each with why."""
    found = []
    try:
        text = page.read_text()
        if _replace_block(text, page_block(recording)) != text:
            found.append(f"{page.name}: the rollout block is stale")
    except (FileNotFoundError, ValueError) as exc:
        found.append(f"{page.name}: {exc}")
    if not doc_path.is_file() or doc_path.read_text() != doc(recording):
        found.append(f"{doc_path.name}: stale or missing")
    return found


def write_docs(recording: Recording, page: Path = PAGE, doc_path: Path = DOC) -> None:
    page.write_text(_replace_block(page.read_text(), page_block(recording)))
    doc_path.parent.mkdir(parents=True, exist_ok=True)
    doc_path.write_text(doc(recording))
