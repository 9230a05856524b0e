"""The rollout picture shows exactly the recorded dependencies, in the recorded order, every time."""

from __future__ import annotations

import itertools
import re

from preview.__main__ import main
from preview.offline import engine
from preview.recording import Recording
from preview.reports import graph

OPERAND = "gpu-platform:operands:"
DECLARED = re.compile(r'^\s+(n_\w+)\["(?:\d+\. )?([^<"]+)<br/>')
ARROW = re.compile(r"^\s+(n_\w+) --> (n_\w+)$")
DOT_NODE = re.compile(r'^\s+"([^"]+)" \[label="[^"]*"\];$')
DOT_EDGE = re.compile(r'^\s+"([^"]+)" -> "([^"]+)";$')


def drawn_edges(mermaid: str) -> set[tuple[str, str]]:
    names = dict(m.groups() for m in map(DECLARED.match, mermaid.splitlines()) if m)
    return {(names[a], names[b]) for a, b in (m.groups() for m in map(ARROW.match, mermaid.splitlines()) if m)}


def component_of(rec: Recording, urn: str) -> str:
    return rec.by_urn()[rec.by_urn()[urn].parent].name


def recorded_chain(rec: Recording) -> list[str]:
    """The operands, first to last, by following each operand component's own `depends_on`."""
    operands = [r for r in rec.resources if r.type.startswith(OPERAND)]
    after = {}
    for op in operands:
        before = {component_of(rec, d) for d in op.dependencies} & {o.name for o in operands}
        after[before.pop() if before else None] = op.name
    chain, current = [], None
    while current in after:
        current = after[current]
        chain.append(current)
    return chain


def expected_edges(rec: Recording) -> set[tuple[str, str]]:
    """Built from the recording by hand: the image and the cluster feed each pool's launch template
    and node group, the cluster's Kubernetes provider feeds the namespace, the namespace feeds the
    admission policies, the pools and the admission policies feed the first operand (the namespace
    too, but through the admission policies), and each operand feeds the next."""
    index = rec.by_urn()
    edges = set()
    for lt in rec.of_type("aws:ec2/launchTemplate:LaunchTemplate"):
        pool = index[lt.parent]
        if pool.type != "gpu-platform:aws:GpuNodePool":
            continue
        for dep in map(index.get, lt.dependencies):
            if dep.type == "aws:imagebuilder/image:Image":
                edges.add((component_of(rec, dep.urn), pool.name))
            if dep.type == "aws:eks/cluster:Cluster":
                edges.add((component_of(rec, dep.urn), pool.name))
    namespace = rec.one("kubernetes:core/v1:Namespace", "gpu-namespace")
    provider = index[namespace.provider.rsplit("::", 1)[0]]
    edges.add((component_of(rec, provider.urn), component_of(rec, namespace.urn)))
    chain = recorded_chain(rec)
    first = next(r for r in rec.resources if r.type.startswith(OPERAND) and r.name == chain[0])
    edges |= {(component_of(rec, d), chain[0]) for d in first.dependencies}
    admission = rec.one("gpu-platform:kubernetes:AdmissionPolicies", "gpu-admission")
    assert (admission.name, chain[0]) in edges
    edges.add((component_of(rec, namespace.urn), admission.name))
    edges.discard((component_of(rec, namespace.urn), chain[0]))
    edges |= set(itertools.pairwise(chain))
    return edges


def test_picture_draws_exactly_the_recorded_dependencies(stack):
    assert drawn_edges(graph.mermaid(stack)) == expected_edges(stack)


def test_operands_are_numbered_in_the_recorded_depends_on_order(stack):
    numbered = re.findall(r'\["(\d+)\. ([^<]+)<br/>', graph.mermaid(stack))
    assert [name for _, name in numbered] == recorded_chain(stack)
    assert [int(n) for n, _ in numbered] == list(range(1, len(numbered) + 1))


def test_every_pool_waits_for_the_node_image_and_feeds_the_first_operand(prod):
    edges = drawn_edges(graph.mermaid(prod))
    pools = [r.name for r in prod.of_type("gpu-platform:aws:GpuNodePool")]
    assert sorted(pools) == ["gpu-pool-h100-mig", "gpu-pool-l40s"]
    for pool in pools:
        assert ("gpu-node-image", pool) in edges
        assert (pool, "gpu-node-feature-discovery") in edges


def test_an_arrow_implied_by_a_longer_path_is_left_out(prod):
    """The first operand waits for the cluster (its provider), but through the namespace and the pools."""
    picture = graph.picture(prod)
    urn = {n.name: n.urn for n in picture.nodes}
    assert urn["gpu-cluster"] in picture.waits[urn["gpu-node-feature-discovery"]]
    assert ("gpu-cluster", "gpu-node-feature-discovery") not in drawn_edges(graph.mermaid(prod))


def test_the_picture_is_byte_identical_across_runs(prod):
    again = engine.run(engine.stack_file("prod"))
    assert graph.mermaid(again) == graph.mermaid(prod)
    assert graph.dot(again) == graph.dot(prod)
    assert graph.doc(again) == graph.doc(prod)


def test_dot_is_a_digraph_with_the_same_nodes_and_edges(stack):
    text = graph.dot(stack)
    lines = text.splitlines()
    assert lines[0] == f'digraph "rollout-{stack.stack}" {{' and lines[-1] == "}"
    assert text.count("{") == text.count("}")
    nodes = {m.group(1) for m in map(DOT_NODE.match, lines) if m}
    edges = {m.groups() for m in map(DOT_EDGE.match, lines) if m}
    assert {a for e in edges for a in e} <= nodes
    assert edges == drawn_edges(graph.mermaid(stack))
    statements = [ln for ln in lines[1:-1] if ln.strip() not in ("}", "subgraph cluster_operands {")]
    assert all(ln.rstrip().endswith(";") for ln in statements)


def test_cli_writes_mermaid_or_dot_by_extension(tmp_path):
    assert main(["--stack", "prod", "--graph", str(tmp_path / "g.dot")]) == 0
    assert (tmp_path / "g.dot").read_text().startswith("digraph ")
    assert main(["--stack", "prod", "--graph", str(tmp_path / "g.md")]) == 0
    assert (tmp_path / "g.md").read_text().startswith("flowchart TD\n")


def test_write_docs_rewrites_only_the_marked_block(prod, tmp_path):
    page, doc = tmp_path / "docs" / "what-gets-created.md", tmp_path / "docs" / "rollout-prod.md"
    page.parent.mkdir()
    page.write_text(f"# title\n\n{graph.BEGIN}\nold picture\n{graph.END}\n\n## next\n")
    assert len(graph.stale(prod, page, doc)) == 2
    graph.write_docs(prod, page, doc)
    assert graph.stale(prod, page, doc) == []
    text = page.read_text()
    assert text.startswith("# title\n\n") and text.endswith("\n\n## next\n") and "old picture" not in text
    assert "```mermaid\nflowchart TD\n" in text


def test_a_page_without_the_markers_is_reported(prod, tmp_path):
    page = tmp_path / "what-gets-created.md"
    page.write_text("# title\n")
    assert any("no <!-- rollout:begin -->" in problem for problem in graph.stale(prod, page, tmp_path / "doc.md"))


def test_the_block_links_the_full_list_beside_its_page(prod):
    # The block sits in docs/, next to docs/rollout-prod.md: a link relative to the page, not the root.
    assert graph.DOC.parent == graph.PAGE.parent
    assert "[rollout-prod.md](rollout-prod.md)" in graph.page_block(prod)
