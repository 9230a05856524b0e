"""One stack previewed: both engine modes recorded, both judged by the pack, and the reports written
from them. `python -m preview` and the fleet (`--all`) go through these two functions, so a stack
gets the same verdict and the same report files whichever way it is previewed."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

# The report each output flag writes; the fleet names them so under --out DIR/<stack>/ (the names
# `make preview-all` used before it).
OUTPUT_FLAGS = ("--json", "--manifests", "--audit", "--graph")
GRAPH_SUFFIXES = (".md", ".mmd", ".dot", ".gv")  # Mermaid (GitHub renders it) or Graphviz


@dataclass(frozen=True)
class Outcome:
    recording: object  # the recording of `pulumi up` (preview.recording.Recording)
    violations: list  # the pack's verdicts on it
    first: list  # its verdicts on the first preview of a new stack (ids and outputs unknown)
    lifecycle: list  # the node-lifecycle scenarios' outcomes on it (preview.lifecycle.scenarios.Outcome)

    def fails(self) -> bool:
        from preview.reports import report

        return report.fails(self.violations, self.first, self.lifecycle)


def record(path: Path, shown: str, modes: tuple[str, ...] | None = None) -> dict:
    """The program run under each engine mode (or those given); ConfigError, FileNotFoundError and
    ValueError are the stack file's faults (the callers make them exit 2)."""
    from preview.offline import engine

    return {mode: engine.run(path, mode=mode, shown=shown) for mode in modes or engine.MODES}


def judge(recordings: dict, pack, levels: dict, first: list | None = None) -> Outcome:
    """Both recordings judged; `first`: the first preview's verdicts, judged already (preview/first_preview.py)."""
    from preview.lifecycle import scenarios, stack
    from preview.offline import analyze, engine

    verdicts = {mode: analyze.analyze(recording, pack, levels) for mode, recording in recordings.items()}
    if first is not None:
        verdicts[engine.FIRST_PREVIEW] = first
    up = recordings[engine.UP]
    return Outcome(up, verdicts[engine.UP], verdicts[engine.FIRST_PREVIEW], scenarios.run(stack.view(up)))


def outputs(outcome: Outcome, paths: Mapping[str, Path | None], audit_against: str | None = None) -> Iterator:
    """The reports asked for (output flag -> path; a flag absent or None is not written), each rendered
    only when it is written; report modules are imported only when asked for."""
    from preview.writing import Output

    recording, violations, first, lifecycle = outcome.recording, outcome.violations, outcome.first, outcome.lifecycle
    unknown = set(paths) - set(OUTPUT_FLAGS)
    if unknown:
        raise KeyError(f"not an output flag: {', '.join(sorted(unknown))}")  # a caller's bug
    for flag in OUTPUT_FLAGS:
        path = paths.get(flag)
        if path is None:
            continue
        if flag == "--json":
            from preview.reports import report

            yield Output(
                flag, path, lambda: report.as_json(recording, violations, first_preview=first, lifecycle=lifecycle)
            )
        elif flag == "--manifests":
            from preview.reports import manifests

            yield Output(flag, path, lambda: manifests.files(recording))
        elif flag == "--audit":
            from preview.reports import audit

            yield Output(flag, path, lambda: audit.report(recording, against=audit_against))
        else:
            from preview.reports import graph

            as_dot = path.suffix in (".dot", ".gv")
            yield Output(flag, path, lambda as_dot=as_dot: graph.dot(recording) if as_dot else graph.mermaid(recording))
