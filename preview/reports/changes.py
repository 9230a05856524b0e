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


@dataclass(frozen=True)
class Resource:
    urn: str
    type: str
    name: str


@dataclass(frozen=True)
class Changed:
    resource: Resource
    keys: tuple[str, ...]


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


def identity(urn: str) -> str:
    """A URN without its stack: `urn:pulumi:<stack>::<project>::<type chain>::<name>`."""
    head, sep, rest = urn.partition("::")
    return (head.rsplit(":", 1)[0] + sep + rest) if sep else urn


def _resources(report: Any, which: str) -> dict[str, dict[str, Any]]:
    if not isinstance(report, dict) or not isinstance(report.get("resources"), list):
        raise ValueError(f"{which}: not a preview report (no 'resources' list)")
    found = {}
    for i, r in enumerate(report["resources"]):
        if not isinstance(r, dict) or not all(isinstance(r.get(k), str) for k in ("urn", "type", "name")):
            raise ValueError(f"{which}: resources[{i}] has no urn, type and name")
        found[identity(r["urn"])] = r
    return found


def parse(text: str, which: str) -> dict[str, Any]:
    """An older `--json` report's text, checked to be one: a ValueError starting with `which` (the
    flag and the file) says what is wrong."""
    try:
        report = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise ValueError(f"{which}: not JSON ({str(exc)[:120]})") from None
    _resources(report, which)
    return report


def load(path: Path) -> dict[str, Any]:
    return parse(path.read_text(), str(path))


def changed_keys(old: Any, new: Any, path: str = "") -> list[str]:
    """Dotted paths where two input values differ: dict keys joined with '.', list items as
    `[i]`; a list that changes length is one change at its own path."""
    if isinstance(old, dict) and isinstance(new, dict):
        keys = []
        for key in sorted(set(old) | set(new)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old or key not in new:
                keys.append(sub)
            else:
                keys += changed_keys(old[key], new[key], sub)
        return keys
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [k for i, (a, b) in enumerate(zip(old, new)) for k in changed_keys(a, b, f"{path}[{i}]")]
    return [] if old == new else [path or "."]


def _resource(r: dict[str, Any]) -> Resource:
    return Resource(r["urn"], r["type"], r["name"])


def compare(old_report: dict[str, Any], new_report: dict[str, Any]) -> Changes:
    old, new = _resources(old_report, "old report"), _resources(new_report, "new report")

    def ordered(items):
        return tuple(sorted(items, key=lambda r: (r.type, r.name, r.urn)))

    changed = []
    for key in set(old) & set(new):
        keys = changed_keys(old[key].get("inputs", {}), new[key].get("inputs", {}))
        if keys:
            changed.append(Changed(_resource(new[key]), tuple(sorted(keys))))
    return Changes(
        old_stack=str(old_report.get("stack", "?")),
        new_stack=str(new_report.get("stack", "?")),
        added=ordered(_resource(new[k]) for k in set(new) - set(old)),
        removed=ordered(_resource(old[k]) for k in set(old) - set(new)),
        changed=tuple(sorted(changed, key=lambda c: (c.resource.type, c.resource.name, c.resource.urn))),
        unchanged=len(set(old) & set(new)) - len(changed),
    )


def describe(changes: Changes) -> str:
    stacks = (changes.new_stack if changes.old_stack == changes.new_stack
              else f"{changes.old_stack} -> {changes.new_stack}")
    lines = ["", f"Changes against the old report ({stacks}): "
             + ("no changes" if changes.empty else
                f"{len(changes.added)} added, {len(changes.removed)} removed, {len(changes.changed)} changed")
             + f", {changes.unchanged} unchanged"]
    lines += [f"  + {r.type} {r.name}" for r in changes.added]
    lines += [f"  - {r.type} {r.name}" for r in changes.removed]
    for c in changes.changed:
        lines.append(f"  ~ {c.resource.type} {c.resource.name}")
        lines += [f"      {key}" for key in c.keys]
    return "\n".join(lines) + "\n"
