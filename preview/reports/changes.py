"""What changes between two preview reports (`--json`): resources added, removed, and changed with
the input keys that differ, as dotted paths. The blast radius of a PR, from the reports alone.

A resource is matched by its URN without the stack segment, so two stacks' reports compare too
(`dev` against `prod`). Inputs are compared as the reports hold them: secrets are redacted in both,
so a changed secret value does not show, and a computed input the offline engine fills with the
same placeholder either way (an image's ARN, a launch template's id) does not either.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from preview.reports import replacements
from preview.stack_file import json_error, printable


@dataclass(frozen=True)
class Resource:
    urn: str
    type: str
    name: str


@dataclass(frozen=True)
class KeyChange:
    key: str
    old: Any  # MISSING where the key is absent
    new: Any
    effect: replacements.Effect
    ignored: bool = False  # the resource's ignoreChanges covers it: pulumi up keeps the old value
    because: str = ""  # a cascade: the name of the resource whose replacement or update changes this key


@dataclass(frozen=True)
class Changed:
    resource: Resource
    entries: tuple[KeyChange, ...]

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(e.key for e in self.entries if not e.because)

    @property
    def verdict(self) -> str:
        """What pulumi up does to the resource: its strongest key's effect; a resource whose only
        changes are ignored does not change."""
        return replacements.verdict(e.effect for e in self.entries if not e.ignored)


@dataclass(frozen=True)
class Changes:
    old_stack: str
    new_stack: str
    added: tuple[Resource, ...]
    removed: tuple[Resource, ...]
    changed: tuple[Changed, ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        return not (self.added or self.removed or self.changed)


class _Missing:
    def __repr__(self) -> str:
        return "(absent)"


MISSING = _Missing()


def identity(urn: str) -> str:
    """A URN without its stack: `urn:pulumi:<stack>::<project>::<type chain>::<name>`."""
    head, sep, rest = urn.partition("::")
    return (head.rsplit(":", 1)[0] + sep + rest) if sep else urn


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _resource_problem(r: Any) -> str:
    """What makes `r` not a resource of a --json report, or ""."""
    if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("urn", "type", "name")):
        return "has no urn, type and name"
    if not isinstance(r.get("inputs", {}), dict):
        return "has inputs that are not an object"
    deps = r.get("propertyDependencies", {})
    if not (isinstance(deps, dict) and all(_strings(v) for v in deps.values())):
        return "has propertyDependencies that are not an object of URN lists"
    if not all(_strings(r.get(k, [])) for k in ("ignoreChanges", "replaceOnChanges")):
        return "has ignoreChanges or replaceOnChanges that are not lists of paths"
    return ""


def _resources(report: Any, which: str) -> dict[str, dict[str, Any]]:
    if not isinstance(report, dict) or not isinstance(report.get("resources"), list):
        raise ValueError(f"{which}: not a preview report (no 'resources' list)")
    if not isinstance(report.get("stack", ""), str):
        raise ValueError(f"{which}: not a preview report ('stack' is not text)")
    found = {}
    for i, r in enumerate(report["resources"]):
        problem = _resource_problem(r)
        if problem:
            raise ValueError(f"{which}: resources[{i}] {problem}")
        found[identity(r["urn"])] = r
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse(text: str, which: str) -> dict[str, Any]:
    """An older `--json` report's text, checked to be one: a ValueError starting with `which` (the
    flag and the file) says what is wrong."""
    try:
        report = json.loads(text, parse_constant=_no_constant)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{which}: not JSON ({json_error(exc)})") from None
    _resources(report, which)
    return report


def load(path: Path) -> dict[str, Any]:
    return parse(path.read_text(), str(path))


def _differences(old: Any, new: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    if isinstance(old, dict) and isinstance(new, dict):
        found = []
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                found.append((sub, old.get(key, MISSING), new.get(key, MISSING)))
            else:
                found += _differences(old[key], new[key], sub)
        return found
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [d for i, (a, b) in enumerate(zip(old, new, strict=True)) for d in _differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [(path or ".", old, new)]


def changed_keys(old: Any, new: Any) -> list[str]:
    """Dotted paths where two input values differ: dict keys joined with '.', list items as
    `[i]`; a list that changes length is one change at its own path."""
    return [key for key, _, _ in _differences(old, new)]


def _resource(r: dict[str, Any]) -> Resource:
    return Resource(r["urn"], r["type"], r["name"])


def _effect(resource: dict[str, Any], key: str, source_verdict: str = "") -> replacements.Effect:
    """What a change at `key` does to `resource`: its own replaceOnChanges option first (the engine
    replaces on a change at or below those paths), then the provider's rules."""
    if replacements.ignored(key, resource.get("replaceOnChanges") or []):
        return replacements.Effect(replacements.REPLACES, "its replaceOnChanges option")
    if source_verdict:
        return replacements.followed(resource["type"], key, source_verdict)
    return replacements.effect(resource["type"], key)


def _direct(old: dict[str, Any], new: dict[str, Any]) -> list[KeyChange]:
    ignore = new.get("ignoreChanges") or []
    return [
        KeyChange(key, a, b, _effect(new, key), ignored=replacements.ignored(key, ignore))
        for key, a, b in _differences(old.get("inputs", {}), new.get("inputs", {}))
    ]


def _cascade(new: dict[str, dict[str, Any]], entries: dict[str, list[KeyChange]]) -> None:
    """What follows from a replaced or updated resource, as pulumi up will find it: a replaced
    resource gets a new id and ARN, so every input that refers to it changes; an update changes the
    outputs its type lists (a launch template's latestVersion). Offline those outputs are
    placeholders that never change, so the report shows the consequence instead of the value."""
    by_urn = {r["urn"]: identity(r["urn"]) for r in new.values()}
    dependents: dict[str, list[tuple[str, str]]] = {}
    for ident, r in new.items():
        for key, urns in (r.get("propertyDependencies") or {}).items():
            for urn in urns:
                if urn in by_urn:
                    dependents.setdefault(by_urn[urn], []).append((ident, key))
    pending = sorted(entries)
    while pending:
        source = pending.pop(0)
        live = [e for e in entries[source] if not e.ignored]
        kind = replacements.verdict(e.effect for e in live)
        source_type = new[source]["type"]
        for ident, key in sorted(dependents.get(source, [])):
            changed_key = replacements.follows(new[ident]["type"], key, source_type, kind, [e.key for e in live])
            if changed_key is None:
                continue
            how = "is replaced" if kind in (replacements.REPLACES, replacements.MAY_REPLACE) else "gets a new version"
            because = f"{new[source]['name']} {how}"
            listed = entries.setdefault(ident, [])
            if any(e.because == because and e.key == changed_key for e in listed):
                continue
            before = replacements.verdict(e.effect for e in listed if not e.ignored)
            listed.append(
                KeyChange(changed_key, MISSING, MISSING, _effect(new[ident], changed_key, kind), because=because)
            )
            if replacements.verdict(e.effect for e in listed if not e.ignored) != before:
                pending.append(ident)


def compare(old_report: dict[str, Any], new_report: dict[str, Any]) -> Changes:
    old, new = _resources(old_report, "old report"), _resources(new_report, "new report")

    def ordered(items):
        return tuple(sorted(items, key=lambda r: (r.type, r.name, r.urn)))

    entries = {key: found for key in set(old) & set(new) if (found := _direct(old[key], new[key]))}
    _cascade({k: v for k, v in new.items() if k in old}, entries)
    changed = [Changed(_resource(new[key]), tuple(found)) for key, found in entries.items()]
    return Changes(
        old_stack=str(old_report.get("stack", "?")),
        new_stack=str(new_report.get("stack", "?")),
        added=ordered(_resource(new[k]) for k in set(new) - set(old)),
        removed=ordered(_resource(old[k]) for k in set(old) - set(new)),
        changed=tuple(sorted(changed, key=lambda c: (c.resource.type, c.resource.name, c.resource.urn))),
        unchanged=len(set(old) & set(new)) - len(changed),
    )


_VERDICTS = {
    replacements.REPLACES: "REPLACED (deleted and created again)",
    replacements.MAY_REPLACE: "MAY BE REPLACED",
    replacements.ROLLS_NODES: "ROLLS ITS NODES (a rolling replacement inside the node group)",
    replacements.UPDATE: "updated in place",
    replacements.UNKNOWN: "unknown whether it is replaced (no data for this type in preview/reports/replacements.yaml)",
    replacements.REFUSED: "REFUSED: the API refuses this update, so pulumi up fails",
    replacements.NO_OP: "planned as an update, but the provider makes no API call (AWS keeps the old value)",
    replacements.NO_CHANGE: "no change (only keys its ignoreChanges covers)",
}
# A GPU pool's node group (a GpuNodePool's child) is replaced create-before-delete
# (components/aws/node_pool.py: a name prefix, never deleteBeforeReplace), a blue-green pool's with its
# readiness gate in between: "deleted and created again" would read as delete-first. (The cluster's
# system group has a fixed name, so not it.)
_POOL_NODE_GROUP = "$gpu-platform:aws:GpuNodePool$aws:eks/nodeGroup:NodeGroup::"
_POOL_NODE_GROUP_REPLACED = (
    "REPLACED (create-before-delete: the new node group is created beside the old one, "
    "which is deleted with its nodes at the end of the update)"
)
_SHOWN = 60


def _text(value: Any) -> str:
    return repr(value) if value is MISSING else json.dumps(value, sort_keys=True)


def _shown(old: Any, new: Any) -> str:
    """`old -> new`; two long values are cut to where they first differ, so the change shows."""
    a, b = _text(old), _text(new)
    if len(a) <= _SHOWN and len(b) <= _SHOWN:
        return f"{a} -> {b}"
    start = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    start = max(0, start - 12)

    def cut(text: str, value: Any) -> str:
        part = text[start : start + _SHOWN // 2]
        size = len(value) if isinstance(value, str) else len(text)
        return f"{'...' if start else ''}{part}{'...' if start + len(part) < len(text) else ''} ({size} chars)"

    return f"{cut(a, old)} -> {cut(b, new)}"


def _entry(e: KeyChange) -> str:
    key = "(all inputs)" if e.key == "." else printable(e.key)
    if e.because:
        line = f"      {key}: changes because {printable(e.because)}"
    else:
        line = f"      {key}: {_shown(e.old, e.new)}"
    if e.ignored:
        return line + "  (ignored: ignoreChanges keeps the old value)"
    if e.effect.kind == replacements.UPDATE and not e.effect.why:
        return line
    return line + f"  [{e.effect.kind}{': ' + e.effect.why if e.effect.why else ''}]"


def describe(changes: Changes) -> str:
    stacks = (
        printable(changes.new_stack)
        if changes.old_stack == changes.new_stack
        else f"{printable(changes.old_stack)} -> {printable(changes.new_stack)}"
    )
    verdicts = [c.verdict for c in changes.changed]
    counted = [
        f"{verdicts.count(k)} {label}"
        for k, label in (
            (replacements.REFUSED, "refused"),
            (replacements.REPLACES, "replaced"),
            (replacements.MAY_REPLACE, "may be replaced"),
            (replacements.ROLLS_NODES, "rolling their nodes"),
            (replacements.UNKNOWN, "unknown"),
        )
        if verdicts.count(k)
    ]
    lines = [
        "",
        f"Changes against the old report ({stacks}): "
        + (
            "no changes"
            if changes.empty
            else f"{len(changes.added)} added, {len(changes.removed)} removed, {len(changes.changed)} changed"
            + (f" ({', '.join(counted)})" if counted else "")
        )
        + f", {changes.unchanged} unchanged",
    ]
    lines += [f"  + {printable(r.type)} {printable(r.name)}" for r in changes.added]
    lines += [f"  - {printable(r.type)} {printable(r.name)}" for r in changes.removed]
    for c in changes.changed:
        verdict = (
            _POOL_NODE_GROUP_REPLACED
            if c.verdict == replacements.REPLACES and _POOL_NODE_GROUP in c.resource.urn
            else _VERDICTS[c.verdict]
        )
        lines.append(f"  ~ {printable(c.resource.type)} {printable(c.resource.name)}: {verdict}")
        lines += [_entry(e) for e in c.entries]
    return "\n".join(lines) + "\n"
