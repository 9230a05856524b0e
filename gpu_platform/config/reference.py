"""The configuration reference (docs/configuration.md), rendered from the models: every section and
every key with its type, default and description. The descriptions are the documentation: edit
them in the section's module, then `make docs`."""

from __future__ import annotations

import collections.abc
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types
import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from gpu_platform.config.messages import model_in
from gpu_platform.config.stack import StackConfig

DOC = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
# Keys that stand for many: what the stack file writes, and what it holds.
_AS_WRITTEN = {"aws:*": ("aws:<setting>", "as the AWS provider reads it", "unset")}

_HEADER = """# Configuration reference

<!-- generated from the config models (gpu_platform/config/) by `make docs`; CI fails when it is stale -->

The keys a stack file (`stacks/Pulumi.<stack>.yaml`, under `config:`) may hold. Any other key is an
error, and so is a key given null: leave a key out for its default. Each section below is one
top-level key; `[]` marks a list item.
"""


def _key(name: str, field: FieldInfo) -> str:
    alias = field.alias or name
    return _AS_WRITTEN[alias][0] if alias in _AS_WRITTEN else alias


def _bounds(field: FieldInfo) -> str:
    ge = next((m.ge for m in field.metadata if isinstance(m, annotated_types.Ge)), None)
    le = next((m.le for m in field.metadata if isinstance(m, annotated_types.Le)), None)
    items = next((m.min_length for m in field.metadata if isinstance(m, annotated_types.MinLen)), None)
    if ge is not None and le is not None:
        return f", {ge} to {le}"
    if ge is not None:
        return f", at least {ge}"
    if items:
        return ", not empty" if field.annotation is str else f", {items} or more"
    return ""


_NOUNS = {bool: ("boolean", "booleans"), int: ("integer", "integers"), str: ("string", "strings")}


def _type(annotation: Any, plural: bool = False) -> str:
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _type(args[0], plural)
    if origin in (Union, types.UnionType):  # Optional[X] and X | None
        return _type(next(a for a in args if a is not type(None)), plural)
    if origin is Literal:
        return "one of " + ", ".join(f"`{a}`" for a in args)
    if origin is tuple:
        return "list of " + _type(args[0], plural=True)
    if origin in (collections.abc.Mapping, dict):
        return f"map of {_type(args[0])} to {_type(args[1])}"
    return _NOUNS.get(annotation, ("map (below)", "maps (below)"))[plural]


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if value is None:
        return "unset"
    if isinstance(value, BaseModel):
        return "each key's default"
    value = (
        list(value)
        if isinstance(value, tuple)
        else dict(value)
        if isinstance(value, collections.abc.Mapping)
        else value
    )
    return "`" + yaml.safe_dump(value, default_flow_style=True, width=1000).strip().removesuffix("...").strip() + "`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _table(model: type[BaseModel]) -> list[str]:
    lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        key, kind, default = _AS_WRITTEN.get(field.alias or name) or (
            _key(name, field),
            _type(field.annotation) + _bounds(field),
            _default(field),
        )
        lines.append(f"| `{key}` | {kind} | {default} | {_cell(field.description or '')} |")
    return lines


def _sections(model: type[BaseModel], path: str) -> Iterator[tuple[str, FieldInfo, type[BaseModel]]]:
    """Every section model below `model`, with the key path that holds it, depth first."""
    for name, field in model.model_fields.items():
        inner = model_in(field.annotation)
        if inner is not None:
            list_item = get_origin(field.annotation) is tuple
            key = f"{path}{'.' if path else ''}{_key(name, field)}{'[]' if list_item else ''}"
            yield key, field, inner
            yield from _sections(inner, key)


def render() -> str:
    lines = [_HEADER, "## Top-level keys", "", *_table(StackConfig)]
    for key, field, model in _sections(StackConfig, ""):
        lines += ["", f"## `{key}`", "", field.description or "", "", *_table(model)]
    return "\n".join(lines) + "\n"


def stale(doc: Path = DOC) -> list[str]:
    if not doc.is_file() or doc.read_text() != render():
        return [f"{doc.parent.name}/{doc.name}: the configuration reference is stale"]
    return []


def write(doc: Path = DOC) -> None:
    doc.write_text(render())
