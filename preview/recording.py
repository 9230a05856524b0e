"""A recording of one run of the program: every resource as the engine sees it when it is
registered (type, name, URN, parent, dependencies, provider, inputs, options) and the state the
provider answered with. The offline engine (preview/offline/engine.py) writes it; the reports
(preview/reports/) and the analyzer's requests (preview/offline/requests.py) read it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format, struct_pb2

from gpu_platform.config import PROJECT

UP, FIRST_PREVIEW = "up", "first-preview"
MODES = (UP, FIRST_PREVIEW)
STACK_TYPE = "pulumi:pulumi:Stack"


@dataclass(frozen=True)
class Registration:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    dependencies: tuple[str, ...]
    provider: str
    # The inputs as plain data (secrets still wrapped, unknowns left out) for the reports; the
    # analyzer reads `sent` instead, which keeps the unknowns.
    inputs: dict[str, Any]
    ignore_changes: tuple[str, ...] = ()
    # What the engine keeps of the request and the provider's answer (preview/offline/requests.py hands
    # them to the policy pack): the inputs exactly as the SDK serialized them, the resulting state.
    sent: struct_pb2.Struct = field(default_factory=struct_pb2.Struct, compare=False, repr=False)
    state: struct_pb2.Struct = field(default_factory=struct_pb2.Struct, compare=False, repr=False)
    property_dependencies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    version: str = ""  # the SDK package's version: names the engine's default provider
    protect: bool = False
    delete_before_replace: bool | None = None
    replace_on_changes: tuple[str, ...] = ()  # the resource's replaceOnChanges option
    additional_secret_outputs: tuple[str, ...] = ()
    custom_timeouts: tuple[str, str, str] = ("", "", "")  # create, update, delete, as the SDK sent them

    @property
    def is_provider(self) -> bool:
        return self.type.startswith("pulumi:providers:")

    def with_inputs(self, inputs: dict[str, Any]) -> Registration:
        """The same registration with other inputs (and state), as if the program had sent them:
        for tests of what no valid stack file produces."""
        sent = struct_pb2.Struct()
        json_format.ParseDict(inputs, sent)
        state = struct_pb2.Struct()
        state.CopyFrom(self.state)
        state.update(json_format.MessageToDict(sent))
        return dataclasses.replace(self, inputs=inputs, sent=sent, state=state)


@dataclass
class Recording:
    stack: str
    config: dict[str, Any]
    resources: list[Registration] = field(default_factory=list)
    mode: str = UP
    project: str = PROJECT
    # The root stack's outputs (the program's exports) and each component's registered outputs.
    stack_outputs: struct_pb2.Struct = field(default_factory=struct_pb2.Struct, repr=False)
    component_outputs: dict[str, struct_pb2.Struct] = field(default_factory=dict, repr=False)
    warnings: tuple[str, ...] = ()  # what the program logged as warnings (pulumi up shows them too)

    @property
    def stack_urn(self) -> str:
        return f"urn:pulumi:{self.stack}::{self.project}::{STACK_TYPE}::{self.project}-{self.stack}"

    def by_urn(self) -> dict[str, Registration]:
        return {r.urn: r for r in self.resources}

    def of_type(self, type_: str) -> list[Registration]:
        return [r for r in self.resources if r.type == type_]

    def one(self, type_: str, name: str) -> Registration:
        found = [r for r in self.resources if r.type == type_ and r.name == name]
        if len(found) != 1:
            raise KeyError(f"{len(found)} registrations of {type_} named {name!r}")
        return found[0]

    def children(self, urn: str) -> list[Registration]:
        return [r for r in self.resources if r.parent == urn]

    def descendants(self, urn: str) -> list[Registration]:
        found, frontier = [], [urn]
        while frontier:
            kids = [r for r in self.resources if r.parent in frontier]
            found.extend(kids)
            frontier = [k.urn for k in kids]
        return found

    def replaced(self, type_: str, name: str, change) -> Recording:
        """A copy in which `change(inputs)` edited one resource's inputs (a deep copy of them). A
        type and name that match nothing is a KeyError: a variant that changed nothing tests nothing."""
        if not any(r.type == type_ and r.name == name for r in self.resources):
            raise KeyError(f"no {type_} named {name!r} in the recording")
        resources = [
            r.with_inputs(_edited(r.inputs, change)) if r.type == type_ and r.name == name else r
            for r in self.resources
        ]
        return dataclasses.replace(self, resources=resources)

    def owner(self, urn: str, among: Iterable[str]) -> Registration | None:
        """The resource itself, or its nearest ancestor, whose URN is one of `among` (the operand
        component that owns a DaemonSet, say); None when none is."""
        wanted, index = set(among), self.by_urn()
        node = index.get(urn)
        while node is not None and node.urn not in wanted:
            node = index.get(node.parent)
        return node

    def waits_for(self, urn: str) -> set[str]:
        """Every URN a resource waits for before it is created: its own dependencies and those of
        each ancestor (a child of a component with `depends_on` carries none of its own)."""
        index = self.by_urn()
        waits: set[str] = set()
        current: Registration | None = index.get(urn)
        while current is not None:
            waits.update(current.dependencies)
            current = index.get(current.parent)
        return waits


def _edited(inputs: dict[str, Any], change) -> dict[str, Any]:
    edited = copy.deepcopy(inputs)
    change(edited)
    return edited
