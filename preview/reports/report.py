"""What the preview prints and writes: the human summary and the JSON report. Both are functions of
the recording alone (sorted, secrets redacted, whole numbers as ints), so the same stack file gives
byte-identical output."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from typing import Any

from pulumi.runtime import rpc

from preview.offline.analyze import Violation
from preview.recording import Recording, Registration

REDACTED = "[secret]"
_OPERAND_PREFIX = "gpu-platform:operands:"


def clean(value: Any) -> Any:
    if rpc.is_rpc_secret(value):
        return REDACTED
    if isinstance(value, dict):
        return {k: clean(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [clean(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def fails(violations: list[Violation], first_preview: list[Violation] | None = None, lifecycle: Sequence = ()) -> bool:
    """A mandatory violation in either view fails: `pulumi up` would stop at it, and a real first
    `pulumi preview` would report it. So does a node-lifecycle scenario that ends stuck: no policy of
    the pack sees it (the model is the preview's), and a node that waits forever is a broken cluster."""
    return _mandatory(violations, first_preview) or bool(stuck(lifecycle))


def _mandatory(violations: list[Violation], first_preview: list[Violation] | None) -> bool:
    return any(v.enforcement_level == "mandatory" for v in (*violations, *(first_preview or ())))


def stuck(lifecycle: Sequence) -> list:
    """The lifecycle outcomes (preview.lifecycle.scenarios.Outcome) that end with a pod waiting forever."""
    return [o for o in lifecycle if not o.live]


def _verdict(violations: list[Violation], first_preview: list[Violation] | None, lifecycle: Sequence) -> str:
    why = [
        *(["mandatory policy violations"] if _mandatory(violations, first_preview) else []),
        *([f"node lifecycle: {len(stuck(lifecycle))} scenarios end stuck"] if stuck(lifecycle) else []),
    ]
    return f"FAIL ({'; '.join(why)})" if why else "PASS"


def differences(up: list[Violation], first: list[Violation], stack_urn: str):
    """How the first preview's verdicts differ from `pulumi up`'s: (what it cannot decide yet, what
    only `pulumi up` finds although the first preview decided it, what only the first preview finds)."""
    undecided = [v for v in first if v.undecided]
    cannot = {(v.policy, v.urn) for v in undecided}
    key = lambda v: (v.policy, v.urn, v.enforcement_level, v.message)  # noqa: E731
    decided, found = {key(v) for v in first if not v.undecided}, {key(v) for v in up}
    only_up = [v for v in up if key(v) not in decided and not {(v.policy, v.urn), (v.policy, stack_urn)} & cannot]
    only_first = [v for v in first if not v.undecided and key(v) not in found]
    return undecided, only_up, only_first


def as_of() -> str:
    """The day EKS support dates are judged on, and where it came from (gpu_platform/catalog/eks_lifecycle.py:
    the policy pack reads the same environment)."""
    from gpu_platform.catalog import eks_lifecycle

    day, source = eks_lifecycle.today()
    return f"{day.isoformat()}, from {source}"


def as_json(
    recording: Recording,
    violations: list[Violation],
    first_preview: list[Violation] | None = None,
    lifecycle: Sequence | None = None,
) -> str:
    document = {
        "stack": recording.stack,
        "asOf": as_of().split(",", 1)[0],
        "resources": [
            {
                "urn": r.urn,
                "type": r.type,
                "name": r.name,
                "parent": r.parent,
                "dependencies": list(r.dependencies),
                "propertyDependencies": {key: sorted(urns) for key, urns in sorted(r.property_dependencies) if urns},
                "ignoreChanges": list(r.ignore_changes),
                "replaceOnChanges": list(r.replace_on_changes),
                "inputs": clean(r.inputs),
            }
            for r in sorted(recording.resources, key=lambda r: r.urn)
        ],
        "violations": [v.as_dict() for v in violations],
        "warnings": list(recording.warnings),
        "privilegeLedger": _ledger(recording),
    }
    if first_preview is not None:
        document["firstPreview"] = {"violations": [v.as_dict() for v in first_preview]}
    if lifecycle is not None:
        # Only what ends stuck: a live outcome says nothing a reader or the gate acts on.
        document["lifecycleStuck"] = [
            {"pool": o.pool, "scenario": o.scenario, "problems": list(o.problems)}
            for o in sorted(stuck(lifecycle), key=lambda o: (o.pool, o.scenario))
        ]
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _ledger(recording: Recording) -> dict:
    from gpu_platform.privileges import ledger as canonical
    from preview.reports import ledger

    rows = ledger.of(recording)
    return {
        "canonicalForm": canonical.CANONICAL_VERSION,
        "hash": canonical.digest(rows),
        "approved": ledger.approved(recording),
        "rows": [list(row) for row in rows],
    }


def operand_order(recording: Recording) -> list[Registration]:
    """Operand components in creation order: each waits for the one before it."""
    operands = [r for r in recording.resources if r.type.startswith(_OPERAND_PREFIX)]
    by_urn = {r.urn: r for r in operands}
    ordered: list[Registration] = []
    remaining = dict(by_urn)
    while remaining:
        ready = sorted(
            (r for r in remaining.values() if not any(d in remaining for d in _operand_waits(recording, r, by_urn))),
            key=lambda r: r.urn,
        )
        if not ready:  # a cycle cannot happen in Pulumi; keep the report total anyway
            ready = sorted(remaining.values(), key=lambda r: r.urn)
        for r in ready:
            ordered.append(r)
            del remaining[r.urn]
    return ordered


def _operand_waits(recording: Recording, operand: Registration, operands: dict[str, Registration]) -> set[str]:
    """The operand components whose children this operand depends on."""
    owners = (recording.owner(dep, operands) for dep in operand.dependencies)
    return {node.urn for node in owners if node is not None}


def _tree(recording: Recording) -> list[str]:
    lines = ["Resource tree:"]
    children: dict[str, list[Registration]] = {}
    for r in sorted(recording.resources, key=lambda r: (r.type, r.name)):
        children.setdefault(r.parent, []).append(r)
    known = {r.urn for r in recording.resources}

    def walk(urn: str, depth: int) -> None:
        for child in children.get(urn, []):
            lines.append(f"{'  ' * depth}{child.type} {child.name}")
            walk(child.urn, depth + 1)

    for root in sorted((p for p in children if p not in known), key=str):
        walk(root, 1)
    return lines


def summary(
    recording: Recording,
    violations: list[Violation],
    source: str,
    first_preview: list[Violation] | None = None,
    tree: bool = False,
    disabled: tuple[str, ...] = (),
    lifecycle: Sequence | None = None,
) -> str:
    """`lifecycle`: the scenarios' outcomes on the recording (run here when not given)."""
    from preview.lifecycle import scenarios, stack
    from preview.reports.plan import plan

    if lifecycle is None:
        lifecycle = scenarios.run(stack.view(recording))
    lines = [f"Stack {recording.stack} ({source}): {len(recording.resources)} resources", ""]
    lines += plan(recording, operand_order(recording), lifecycle)
    if tree:
        lines += ["", *_tree(recording)]
    if recording.warnings:
        lines += ["", "Warnings from the program (pulumi up prints them too):"]
        # Wrapped for a terminal: a warning is a paragraph, and a line of 350 characters is not read.
        lines += [
            line
            for w in recording.warnings
            for line in textwrap.wrap(
                w,
                width=120,
                initial_indent="  ",
                subsequent_indent="    ",
                break_long_words=False,
                break_on_hyphens=False,
            )
        ]
    mandatory = [v for v in violations if v.enforcement_level == "mandatory"]
    advisory = [v for v in violations if v.enforcement_level != "mandatory"]
    lines += [
        "",
        f"Policy violations (every value known, as pulumi up checks the stack): {len(mandatory)} mandatory, {len(advisory)} advisory",
        f"  (EKS support dates as of {as_of()})",
    ]
    for v in violations:
        lines.append(f"  [{v.enforcement_level}] {v.policy}: {v.message}")
        if v.fix:
            lines.append(f"      change: {v.fix}")
    if mandatory:
        lines.append(
            "  (pulumi up stops at the first resource with a mandatory violation, before creating it; "
            "what was created before it stays, and stack policies run only when every resource passed)"
        )
    if first_preview is not None:
        undecided, only_up, only_first = differences(violations, first_preview, recording.stack_urn)
        same = not (undecided or only_up or only_first)
        lines += [
            "",
            "First pulumi preview of a new stack (ids and computed outputs unknown): "
            + ("the same verdicts" if same else "differs"),
        ]
        for v in undecided:
            lines.append(f"  [cannot decide until the values exist; pulumi up decides] {v.policy}: {v.message}")
        for v in only_up:
            lines.append(f"  [{v.enforcement_level}, found only by pulumi up] {v.policy}: {v.message}")
        for v in only_first:
            lines.append(f"  [{v.enforcement_level}, found only by the first preview] {v.policy}: {v.message}")
    from preview.reports import ledger

    lines += ["", ledger.status(recording)]
    if disabled:
        # A PASS with a policy switched off is not the gate's PASS: say which were not judged.
        lines += [f"Not judged (disabled by --policy-config): {', '.join(sorted(disabled))}"]
    lines += ["Verdict: " + _verdict(violations, first_preview, lifecycle)]
    return "\n".join(lines) + "\n"
