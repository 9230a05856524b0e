"""What a changed input does to its resource when `pulumi up` applies it: replace it (delete and
create again), maybe replace it, roll the nodes of a node group, or update it in place. The
providers decide that, not us; `replacements.yaml` writes down what they decide per resource type,
each clause with the provider source it comes from, and this module reads it for `--against`.

A changed key is a dotted path as preview/reports/changes.py writes it (`instanceTypes[0]`,
`spec.selector.matchLabels.app`); list positions are dropped before matching, and a key at or below
a listed path matches it. A key of a type the data does not know is "unknown", never "update".
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.catalog import yaml_files

DATA = Path(__file__).with_name("replacements.yaml")

REPLACES, MAY_REPLACE, ROLLS_NODES, UPDATE, UNKNOWN = "replaces", "may replace", "rolls the nodes", "update", "unknown"
REFUSED = "refused"  # the API refuses the update Pulumi plans: pulumi up fails
NO_OP = "no API call"  # the plan says update; the provider calls nothing and AWS keeps the old value
NO_CHANGE = "no change"  # every changed key is covered by ignoreChanges
# The resource's verdict is its strongest key's.
STRENGTH = (UNKNOWN, REFUSED, REPLACES, MAY_REPLACE, ROLLS_NODES, UPDATE, NO_OP)
_INDEX = re.compile(r"\[\d+\]")


@dataclass(frozen=True)
class Effect:
    kind: str
    why: str = ""  # for "may replace": when it does


@dataclass(frozen=True)
class TypeRule:
    replaces_on: tuple[str, ...]
    replaces_if: tuple[tuple[str, str], ...]  # (path, when)
    rolls_nodes: tuple[str, ...]
    all_inputs: bool
    all_inputs_except: tuple[str, ...]
    new_version_on: tuple[str, ...] = ()  # keys whose change gives the resource a new version (an output)
    # input key -> (the key that changes when what it refers to is replaced, ... when it is updated)
    follows: tuple[tuple[str, str, str], ...] = ()
    refused_on: tuple[tuple[str, str], ...] = ()  # (path, why)
    no_op: tuple[tuple[str, str], ...] = ()  # (path, why)

    def new_version(self, keys: Iterable[str]) -> bool:
        """Whether changes at `keys` give the resource a new version (a launch template's latestVersion)."""
        return any(_at_or_below(_INDEX.sub("", k), p) for k in keys for p in self.new_version_on)

    def effect(self, key: str) -> Effect:
        path = _INDEX.sub("", key)
        for listed, why in self.refused_on:
            if _at_or_below(path, listed):
                return Effect(REFUSED, why)
        if self.all_inputs and not any(_at_or_below(path, p) for p in self.all_inputs_except):
            return Effect(REPLACES)
        if any(_at_or_below(path, p) for p in self.replaces_on):
            return Effect(REPLACES)
        for listed, when in self.replaces_if:
            if path == listed:  # the conditions are about the block itself (added, removed, moved back)
                return Effect(MAY_REPLACE, when)
        if any(_at_or_below(path, p) for p in self.rolls_nodes):
            return Effect(ROLLS_NODES)
        for listed, why in self.no_op:
            if _at_or_below(path, listed):
                return Effect(NO_OP, why)
        # A whole block added or removed above a replacing path (e.g. `remoteAccess` itself when only
        # `remoteAccess.ec2SshKey` is listed) may replace.
        if any(_at_or_below(p, path) for p in self.replaces_on):
            return Effect(
                MAY_REPLACE, f"if {path} holds one of {', '.join(p for p in self.replaces_on if _at_or_below(p, path))}"
            )
        return Effect(UPDATE)


def _at_or_below(path: str, listed: str) -> bool:
    return path == listed or path.startswith(listed + ".")


def _paths(clauses: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    return tuple(p for clause in clauses for p in clause["paths"])


def _rule(entry: Mapping[str, Any]) -> TypeRule:
    return TypeRule(
        replaces_on=_paths(entry.get("replaces_on", [])),
        replaces_if=tuple((p, clause["when"]) for clause in entry.get("replaces_if", []) for p in clause["paths"]),
        rolls_nodes=_paths(entry.get("rolls_nodes", [])),
        all_inputs=bool(entry.get("all_inputs", False)),
        all_inputs_except=tuple(entry.get("except", [])),
        new_version_on=_paths(entry.get("new_version_on", [])),
        follows=tuple(
            (f["input"], f.get("on_replace", f["input"]), f.get("on_update", "")) for f in entry.get("follows", [])
        ),
        refused_on=tuple((p, c.get("note", "")) for c in entry.get("refused_on", []) for p in c["paths"]),
        no_op=tuple((p, c.get("note", "")) for c in entry.get("no_op", []) for p in c["paths"]),
    )


@functools.cache
def rules() -> dict[str, TypeRule]:
    data = yaml_files.load(DATA.read_text())
    return {token: _rule(entry) for token, entry in data["types"].items()}


def rule_for(resource_type: str) -> TypeRule | None:
    known = rules()
    if resource_type in known:
        return known[resource_type]
    if resource_type.startswith("kubernetes:") and not resource_type.startswith("pulumi:providers:"):
        return known.get("kubernetes:*")
    return None


def effect(resource_type: str, key: str) -> Effect:
    rule = rule_for(resource_type)
    return rule.effect(key) if rule else Effect(UNKNOWN)


def ignored(key: str, ignore_changes: Iterable[str]) -> bool:
    """A changed key the resource's ignoreChanges option covers: the engine keeps the old value."""
    path = _INDEX.sub("", key)
    return any(_at_or_below(path, _INDEX.sub("", p)) for p in ignore_changes)


def verdict(effects: Iterable[Effect]) -> str:
    kinds = {e.kind for e in effects}
    return next((k for k in STRENGTH if k in kinds), NO_CHANGE)


def follows(
    dependent_type: str, key: str, source_type: str, source_verdict: str, source_keys: Iterable[str]
) -> str | None:
    """The key of a dependent's input `key` that changes when the resource it refers to (of
    `source_type`, changed at `source_keys`) gets `source_verdict`; None when nothing it reads changes."""
    rule = rule_for(dependent_type)
    narrowed = next((f for f in rule.follows if f[0] == key), None) if rule else None
    if source_verdict in (REPLACES, MAY_REPLACE):
        return narrowed[1] if narrowed else key
    source = rule_for(source_type)
    if (
        source_verdict in (UPDATE, ROLLS_NODES)
        and source
        and source.new_version(source_keys)
        and narrowed
        and narrowed[2]
    ):
        return narrowed[2]
    return None


def followed(dependent_type: str, key: str, source_verdict: str) -> Effect:
    """The effect on the dependent of that key changing; only as certain as the source's verdict."""
    found = effect(dependent_type, key)
    if source_verdict == MAY_REPLACE and found.kind == REPLACES:
        return Effect(MAY_REPLACE, "if what it refers to is replaced")
    return found
