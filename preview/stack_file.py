"""The stack file: where it is (`--stack NAME` or `--config FILE`), how the commands name it, and
its `config:` map as Pulumi reads it. The one front door for a user's YAML: nothing else parses it.

Read as Pulumi reads it. Pulumi parses stack files with go-yaml v3, a port of libyaml: the same
grammar as libyaml, which parses here too (PyYAML's C parser), with go-yaml's resolution of plain
scalars, YAML 1.2's (`yes`, `on`, `0777` and `1:30` are text; true/false, 0o17, 0x1F, .inf are
not; go-yaml v3 resolve.go), and a duplicated key refused, as go-yaml refuses it. Only values a
stack's config can hold pass (text, numbers, booleans, null, lists and objects with text keys; a
date, `!!binary` or `!!set` is none). Bounded before anything is built: the file's size, its
nesting, and how far its aliases expand (a small file of nested aliases can expand to billions of
values). A value given as JSON text (`'{"name": ...}'`) is decoded here, as the program decodes it,
so every reader sees the same object.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any, Optional

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

ROOT = Path(__file__).resolve().parent.parent
STACKS = ROOT / "stacks"
MAX_BYTES = 256 * 1024
MAX_VALUES = 100_000  # values after alias expansion: a stack file has a few hundred
MAX_DEPTH = 32
MAX_INT_DIGITS = 18  # beyond int64 no config value of this program is meaningful
# The keys of a Pulumi stack file (Pulumi's ProjectStack): everything but `config` is Pulumi's own.
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")


class StackFileError(ValueError):
    """A stack file that cannot be read as Pulumi reads it: the message starts with the file."""


def stack_file(stack: str) -> Path:
    return STACKS / f"Pulumi.{stack}.yaml"


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser with YAML 1.2's core schema for plain scalars, duplicate keys refused."""

    yaml_implicit_resolvers: dict = {}

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            hashable = key if isinstance(key, (str, int, float, bool, type(None))) else repr(key)
            if hashable in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark, f"found duplicate key {key!r}", key_node.start_mark)
            seen[hashable] = key_node
        return super().construct_mapping(node, deep=deep)


# YAML 1.2 core schema (yaml.org/spec/1.2.2 10.3.2), as go-yaml v3 resolves untagged plain scalars;
# timestamps too, which go-yaml resolves and a stack's config cannot hold (refused, with a hint).
for _tag, _pattern, _first in (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("tag:yaml.org,2002:float",
     r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
     list("-+.0123456789")),
    ("tag:yaml.org,2002:timestamp", r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt ]|$)", list("0123456789")),
):
    _Loader.add_implicit_resolver(_tag, re.compile(_pattern), _first)


def _int12(loader: _Loader, node: Node) -> int:
    text = loader.construct_scalar(node)
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text)


_Loader.add_constructor("tag:yaml.org,2002:int", _int12)


def _where(error: yaml.MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _count(node: Node, shown: str, budget: list[int], depth: int = 0) -> None:
    """Walk the composed document as its aliases expand, until the budget or the depth runs out."""
    budget[0] -= 1
    if budget[0] < 0:
        raise StackFileError(f"{shown}: expands to more than {MAX_VALUES} values (nested aliases?); a stack file has a few hundred")
    if depth > MAX_DEPTH:
        raise StackFileError(f"{shown}: nested deeper than {MAX_DEPTH} levels; no key of a stack file is")
    if isinstance(node, MappingNode):
        for key, value in node.value:
            _count(key, shown, budget, depth + 1)
            _count(value, shown, budget, depth + 1)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _count(item, shown, budget, depth + 1)


def _key_path(path: str, key: Any) -> str:
    return f"{path}.{key}" if path else str(key)


def _plain(value: Any, shown: str, path: str) -> Any:
    """The value in the types a stack's config holds, or a StackFileError naming the key."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        if len(str(abs(value))) > MAX_INT_DIGITS:
            raise StackFileError(f"{shown}: {path}: a {len(str(abs(value)))}-digit number; no setting takes one")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise StackFileError(f"{shown}: {path}: {value} is not a number a stack's config holds")
        return value
    if isinstance(value, dict):
        plain = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise StackFileError(f"{shown}: {_key_path(path, repr(key))}: a key must be text (got {type(key).__name__} {key!r}); quote it")
            plain[key] = _plain(item, shown, _key_path(path, key))
        return plain
    if isinstance(value, list):
        return [_plain(item, shown, f"{path}[{i}]") for i, item in enumerate(value)]
    kind = {"date": "a date", "datetime": "a timestamp", "bytes": "binary data (!!binary)", "set": "a set (!!set)"}.get(
        type(value).__name__, f"a {type(value).__name__}")
    raise StackFileError(f"{shown}: {path}: {kind} is not a value a stack's config holds (text, number, boolean, "
                         f"list, object); quote it to give text")


def _decoded(value: Any, shown: str, key: str) -> Any:
    """A value given as JSON text, decoded as the program decodes it (gpu_platform/config.py)."""
    if not (isinstance(value, str) and value[:1] in "[{"):
        return value
    try:
        decoded = json.loads(value)
    except (json.JSONDecodeError, RecursionError):
        return value
    return _plain(decoded, shown, key)


def parse(text: str, shown: str) -> dict[str, Any]:
    """The `config:` map of a stack file's text; `shown` names the file in every error."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        if node is not None:
            _count(node, shown, [MAX_VALUES])
        document = yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as exc:
        problem = (exc.problem or str(exc)).strip()
        raise StackFileError(f"{shown}: {_where(exc)}{problem}") from None
    except yaml.YAMLError as exc:
        raise StackFileError(f"{shown}: not YAML ({str(exc).strip()[:200]})") from None
    except RecursionError:
        raise StackFileError(f"{shown}: nested deeper than {MAX_DEPTH} levels; no key of a stack file is") from None
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise StackFileError(f"{shown}: a stack file is a mapping with a 'config:' mapping (got {type(document).__name__})")
    document = _plain(document, shown, "")
    unknown = sorted(set(document) - set(STACK_FILE_KEYS))
    if unknown:
        raise StackFileError(f"{shown}: {unknown[0]}: not a key of a Pulumi stack file (valid: {', '.join(STACK_FILE_KEYS)})")
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise StackFileError(f"{shown}: config: a mapping of namespace:key to value (got {type(config).__name__})")
    for key, value in config.items():
        if isinstance(value, dict) and set(value) == {"secure"}:
            raise StackFileError(f"{shown}: config.{key}: an encrypted secret; the offline preview cannot decrypt it")
    return {key: _decoded(value, shown, f"config.{key}") for key, value in config.items()}


def read_stack_file(path: Path, shown: Optional[str] = None) -> dict[str, Any]:
    """The `config:` map of a stack file, as Pulumi reads it."""
    shown = shown or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise StackFileError(f"{shown}: {size} bytes; a stack file is a few KB (at most {MAX_BYTES // 1024} KB here)")
        raw = path.read_bytes()
    except OSError as exc:
        raise StackFileError(f"{shown}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StackFileError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    return parse(text, shown)


def resolve_stack(stack: Optional[str], config: Optional[Path]) -> tuple[Path, str]:
    """The stack file a command reads (`--config FILE`, else `--stack NAME`, default dev), and how
    to name it in output: relative, so reports do not depend on where the clone lives."""
    if config is not None:
        if not config.exists():
            raise FileNotFoundError(f"--config {config}: no such stack file")
        if not config.is_file():
            raise FileNotFoundError(f"--config {config}: is {'a directory' if config.is_dir() else 'not a regular file'}; give a stack file")
        return config, str(config)
    known = sorted(p.name.split(".")[1] for p in STACKS.glob("Pulumi.*.yaml"))
    name = "dev" if stack is None else stack
    if not name or "/" in name or name.startswith("."):
        raise FileNotFoundError(f"--stack {name!r}: not a stack name (stacks: {', '.join(known)})")
    path = stack_file(name)
    if not path.is_file():
        raise FileNotFoundError(f"--stack {name}: no stacks/Pulumi.{name}.yaml (stacks: {', '.join(known)})")
    return path, f"stacks/{path.name}"


def stack_name(path: Path) -> str:
    name = path.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name.split(".", 1)[1].rsplit(".", 1)[0]
    return path.stem
