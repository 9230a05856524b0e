"""The stack file: where it is (`--stack NAME` or `--config FILE`), how the commands name it, and
its `config:` map as Pulumi reads it. The one front door for a user's YAML: nothing else parses it.

Read as Pulumi reads it (sdk/go/common/workspace/loaders.go LoadProjectStackBytes, v3.259.0): with
go-yaml v3.0.1, a port of libyaml, so libyaml's grammar (PyYAML's C parser here) with go-yaml's
resolution of plain scalars (resolve.go: `yes`, `on`, `1:30` are text; `0777` is 511, `0x1F`, `0b101`,
`1_000` numbers), merge keys (`<<`), a duplicated key refused; a key without a namespace put in the
project's; a top-level null handed over as "", a float with no fraction as the integer Go's JSON
writes. Stricter than Pulumi where Pulumi would pass a mistake on silently: a key at the top of the
file that is not a stack file's, a date (Pulumi passes Go's text form of it), `!!binary`, `!!set`,
non-text keys. Bounded before anything is built: the file's size, its nesting, and how far its
aliases expand (a small file of nested aliases can expand to billions of values). A value given as
JSON text (`'{"name": ...}'`) is decoded here, as the program decodes it, so every reader sees the
same object.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from pathlib import Path
from typing import Any, ClassVar

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from gpu_platform.config import PROJECT

ROOT = Path(__file__).resolve().parent.parent
STACKS = ROOT / "stacks"
MAX_BYTES = 256 * 1024
MAX_VALUES = 100_000  # values after alias expansion: a stack file has a few hundred
MAX_DEPTH = 32
# The keys of a Pulumi stack file (Pulumi's ProjectStack): everything but `config` is Pulumi's own.
STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")


class StackFileError(ValueError):
    """A stack file that cannot be read as Pulumi reads it: the message starts with the file."""


def stack_file(stack: str) -> Path:
    return STACKS / f"Pulumi.{stack}.yaml"


_PLAIN = "tag:gpu-platform.io,2026:plain"  # an untagged plain scalar, resolved as go-yaml v3 resolves it
_MERGE = "tag:yaml.org,2002:merge"


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """libyaml's parser; plain scalars resolved by go-yaml v3's rules (`_go_scalar`), merge keys
    (`<<`) merged as go-yaml merges them, duplicate keys refused."""

    yaml_implicit_resolvers: ClassVar[dict] = {}

    def resolve(self, kind, value, implicit):
        if kind is yaml.ScalarNode and implicit[0]:
            return _MERGE if value == "<<" else _PLAIN
        return super().resolve(kind, value, implicit)

    def construct_mapping(self, node, deep=False):
        if not isinstance(node, MappingNode):  # `!!map [a]`: PyYAML would fail inside flatten_mapping
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.tag.rsplit(':', 1)[-1]} tag on a value that is not a mapping", node.start_mark
            )
        # go-yaml v3 refuses a key whose node kind and text repeat an earlier key's (decode.go
        # mapping(), "mapping key %#v already defined at line %d"), comparing the text as written and
        # merge keys too: two `<<` in one mapping are refused; a collection key's text is empty.
        seen: dict[tuple[str, str], Node] = {}
        for key_node, _ in node.value:
            identity = (type(key_node).__name__, key_node.value if isinstance(key_node, ScalarNode) else "")
            if identity in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {identity[1]!r} (first at line {seen[identity].start_mark.line + 1})",
                    key_node.start_mark,
                )
            seen[identity] = key_node
        return super().construct_mapping(node, deep=deep)


class Timestamp(str):
    """A plain scalar go-yaml reads as a timestamp (a stack's config cannot hold one as such)."""


# go-yaml v3.0.1 resolve.go: which plain scalars are what. The map of fixed spellings (35-68), then
# by the first character: a digit or sign tries a timestamp, an integer in Go's base-0 syntax with
# underscores removed (int64, then uint64), a YAML-style float, then 0b/0o forms (191-265); a dot
# tries a float (176-181); anything else is text.
_FIXED = {
    **dict.fromkeys(("true", "True", "TRUE"), True),
    **dict.fromkeys(("false", "False", "FALSE"), False),
    **dict.fromkeys(("", "~", "null", "Null", "NULL"), None),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_YAML_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_GO_INT = re.compile(
    r"(?P<sign>[-+]?)(?:0[xX](?P<hex>[0-9a-fA-F]+)|0[bB](?P<bin>[01]+)|0[oO](?P<oct>[0-7]+)"
    r"|0(?P<old>[0-7]+)|(?P<dec>0|[1-9][0-9]*))"
)
# Go's time.Parse with the layouts go-yaml tries (resolve.go:300-326): fields of one or two digits.
_DATE = r"(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
_TIME = r"(?P<H>[0-9]{1,2}):(?P<M>[0-9]{1,2}):(?P<S>[0-9]{1,2})(?:\.[0-9]+)?"
_TIMESTAMPS = [
    re.compile(_DATE + "[Tt]" + _TIME + r"(?:Z|[+-][0-9]{2}:[0-9]{2})"),
    re.compile(_DATE + " " + _TIME),
    re.compile(_DATE),
]
_INT64, _UINT64 = 2**63, 2**64


def _go_int(text: str) -> int | None:
    """strconv.ParseInt(text, 0, 64), then ParseUint: None where both fail."""
    found = _GO_INT.fullmatch(text)
    if not found:
        return None
    base, digits = next(
        (b, found[g]) for g, b in (("hex", 16), ("bin", 2), ("oct", 8), ("old", 8), ("dec", 10)) if found[g]
    )
    digits = digits.replace("_", "").lstrip("0") or "0"
    if len(digits) > 64:  # more digits than 64 bits hold in any base: Go's range error (and Python's digit limit)
        return None
    value = int(digits, base) * (-1 if found["sign"] == "-" else 1)
    if -_INT64 <= value < _INT64 or (not found["sign"] and 0 <= value < _UINT64):
        return value
    return None


def _go_float(text: str) -> float | None:
    """strconv.ParseFloat of a YAML-style float: None on overflow (Go's range error)."""
    value = float(text)
    return None if math.isinf(value) else value


def _timestamp(text: str) -> bool:
    for layout in _TIMESTAMPS:
        found = layout.fullmatch(text)
        if found:
            fields = found.groupdict()
            try:
                datetime.datetime(
                    int(fields["y"]),
                    int(fields["m"]),
                    int(fields["d"]),
                    int(fields.get("H") or 0),
                    int(fields.get("M") or 0),
                    int(fields.get("S") or 0),
                )
            except ValueError:
                continue
            return True
    return False


def resolve_plain(text: str) -> Any:
    """What go-yaml v3 makes of an untagged plain scalar."""
    if text in _FIXED:
        return _FIXED[text]
    first = text[0]
    if first == ".":
        value = _go_float(text) if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text) else None
        return text if value is None else value
    if first not in "+-0123456789":
        return text
    if _timestamp(text):
        return Timestamp(text)
    plain = text.replace("_", "")
    number = _go_int(plain)
    if number is not None:
        return number
    if _YAML_FLOAT.fullmatch(plain):
        value = _go_float(plain)
        if value is not None:
            return value
    return text


def _go_scalar(loader: _Loader, node: Node) -> Any:
    return resolve_plain(loader.construct_scalar(node))


_Loader.add_constructor(_PLAIN, _go_scalar)


def _kind(value: Any) -> str:
    if isinstance(value, Timestamp):
        return "timestamp"
    return {bool: "bool", int: "int", float: "float", type(None): "null", str: "str"}[type(value)]


def _explicit(wanted: str):
    """A scalar tagged `!!<wanted>`: go-yaml resolves its text as if plain and refuses it unless it
    resolves to that kind ("cannot decode !!str `maybe` as a !!bool"); an int is a float's (resolve.go:133-152)."""

    def construct(loader: _Loader, node: Node) -> Any:
        text = loader.construct_scalar(node)
        value = resolve_plain(text) if text else None
        kind = _kind(value)
        if kind == wanted:
            return value
        if wanted == "float" and kind == "int":
            return float(value)
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot decode !!{kind} `{shown}` as a !!{wanted}", node.start_mark
        )

    return construct


for _wanted in ("bool", "int", "float", "null", "timestamp"):
    _Loader.add_constructor(f"tag:yaml.org,2002:{_wanted}", _explicit(_wanted))


def _where(error: yaml.MarkedYAMLError) -> str:
    mark = error.problem_mark or error.context_mark
    return f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""


def _bounded_nesting(text: str, shown: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH from the parser's events, before anything recursive (the
    C composer would recurse, and 25,000 `[` crash it) builds the document."""
    depth = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                mark = event.start_mark
                raise StackFileError(
                    f"{shown}: line {mark.line + 1}, column {mark.column + 1}: nested deeper than "
                    f"{MAX_DEPTH} levels; no key of a stack file nests that deep"
                )
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1


def _count(node: Node, shown: str, budget: list[int], depth: int = 0) -> None:
    """Walk the composed document as its aliases expand, until the budget or the depth runs out."""
    budget[0] -= 1
    if budget[0] < 0:
        raise StackFileError(
            f"{shown}: expands to more than {MAX_VALUES} values (nested aliases?); a stack file has a few hundred"
        )
    if depth > MAX_DEPTH:
        raise StackFileError(f"{shown}: nested deeper than {MAX_DEPTH} levels; no key of a stack file nests that deep")
    if isinstance(node, MappingNode):
        for key, value in node.value:
            _count(key, shown, budget, depth + 1)
            _count(value, shown, budget, depth + 1)
    elif isinstance(node, SequenceNode):
        for item in node.value:
            _count(item, shown, budget, depth + 1)


def _key_path(path: str, key: Any) -> str:
    return f"{path}.{printable(key)}" if path else printable(key)


def json_error(exc: Exception) -> str:
    """Why a JSON text was refused, in one short line: json's own message, Python's integer digit
    limit said as a fact of the input, the nesting limit as such."""
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    text = str(exc)
    if "integer string conversion" in text:
        return "a number of more than 4300 digits"
    return printable(text)


def printable(text: Any) -> str:
    """Text as a message may show it: control characters (a terminal escape in a key) escaped, and
    shortened."""
    original = str(text)
    text = original if original.isprintable() else json.dumps(original, ensure_ascii=False)[1:-1]
    return text if len(text) <= 120 else f"{text[:100]}... ({len(original)} characters)"


def spelling(value: Any) -> str:
    """A value as YAML spells it, shortened: null, true, [], 'text'."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = json.dumps(value, ensure_ascii=False, default=str) if isinstance(value, (list, tuple, dict)) else repr(value)
    return text if len(text) <= 60 else f"{text[:57]}... ({len(text)} characters)"


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (dict, list)):
            deepest = max(deepest, depth)
            stack += [(sub, depth + 1) for sub in (item.values() if isinstance(item, dict) else item)]
    return deepest


def _plain(value: Any, shown: str, path: str, from_yaml: bool = True) -> Any:
    """The value in the types a stack's config holds, or a StackFileError naming the key. A value
    from the YAML is what the program gets after Pulumi's round trip through Go's encoding/json
    (sdk/go/common/resource/config/object.go MarshalJSON): a float with no fraction below 1e21 is
    written as an integer, so the program reads `maxSize: 4.0` as 4."""
    if isinstance(value, Timestamp):
        raise StackFileError(
            f"{shown}: {path}: {str(value)!r} is a date or time in YAML, which Pulumi would hand over "
            f"in Go's own text form; quote it to give text"
        )
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise StackFileError(
                f"{shown}: {path}: {value} is not a number Pulumi can hand to a program (JSON has none)"
            )
        return int(value) if from_yaml and value.is_integer() and abs(value) < 1e21 else value
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            raise StackFileError(
                f"{shown}: {path}: an encrypted secret (secure:); the offline preview cannot decrypt it: "
                f"preview a copy of the stack file with a placeholder value there"
            )
        plain = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise StackFileError(
                    f"{shown}: {path or 'the top level'}: the key {spelling(key)} is not text; quote it"
                )
            plain[key] = _plain(item, shown, _key_path(path, key), from_yaml)
        return plain
    if isinstance(value, list) and not (value and all(isinstance(item, tuple) for item in value)):
        return [_plain(item, shown, f"{path}[{i}]", from_yaml) for i, item in enumerate(value)]
    if isinstance(value, list):
        value = tuple(value)  # !!omap and !!pairs build lists of pairs
    kind = {
        "bytes": "binary data (!!binary)",
        "set": "a set (!!set)",
        "tuple": "an ordered map (!!omap or !!pairs)",
    }.get(type(value).__name__, f"a {type(value).__name__}")
    raise StackFileError(
        f"{shown}: {path}: {kind} is not a value this program's config takes (text, number, boolean, "
        f"list, object); quote it to give text"
    )


def _decoded(value: Any, shown: str, key: str) -> Any:
    """A value given as JSON text, decoded as the program decodes it (gpu_platform/config/reading.py)."""
    if not (isinstance(value, str) and value[:1] in "[{"):
        return value
    try:
        decoded = json.loads(value, parse_constant=lambda name: math.nan)
    except RecursionError:
        raise StackFileError(
            f"{shown}: {key}: JSON text nested deeper than {MAX_DEPTH} levels; no key of a stack file nests that deep"
        ) from None
    except ValueError:  # not JSON (the program then keeps the text), or an integer of more than 4300 digits
        return value
    if _depth(decoded) > MAX_DEPTH:
        raise StackFileError(
            f"{shown}: {key}: JSON text nested deeper than {MAX_DEPTH} levels; no key of a stack file nests that deep"
        )
    return _plain(decoded, shown, key, from_yaml=False)


def _document(text: str, shown: str) -> Any:
    """The YAML document, bounded, or a StackFileError saying where it cannot be read."""
    try:
        _bounded_nesting(text, shown)
        node = yaml.compose(text, Loader=_Loader)
        if node is not None:
            _count(node, shown, [MAX_VALUES])
        return yaml.load(text, Loader=_Loader)
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise StackFileError(
            f"{shown}: line {line}, column {column}: the character U+{code:04X} is not allowed in YAML "
            f"(a control character)"
        ) from None
    except yaml.MarkedYAMLError as exc:
        problem = (exc.problem or str(exc)).strip()
        raise StackFileError(f"{shown}: {_where(exc)}{problem}") from None
    except yaml.YAMLError as exc:
        raise StackFileError(f"{shown}: not YAML ({str(exc).strip()[:200]})") from None
    except RecursionError:
        raise StackFileError(
            f"{shown}: nested deeper than {MAX_DEPTH} levels; no key of a stack file nests that deep"
        ) from None


def parse(text: str, shown: str) -> dict[str, Any]:
    """The `config:` map of a stack file's text; `shown` names the file in every error. Key paths in
    errors are the config keys as the program names them (`gpu-platform:nodePools[0].maxSize`)."""
    document = _document(text, shown)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise StackFileError(f"{shown}: a stack file is a mapping with a 'config:' mapping (got {spelling(document)})")
    unknown = sorted((printable(k) for k in document if k not in STACK_FILE_KEYS), key=str)
    if unknown:
        hint = "; this looks like a --json report: did you mean --against?" if "resources" in document else ""
        raise StackFileError(
            f"{shown}: {unknown[0]}: not a key of a Pulumi stack file (valid: {', '.join(STACK_FILE_KEYS)}){hint}"
        )
    if document.get("environment"):
        raise StackFileError(
            f"{shown}: environment: Pulumi ESC environments add config values that the offline preview "
            f"cannot read; preview a copy of the stack file with those values written under config:"
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise StackFileError(f"{shown}: config: a mapping of namespace:key to value (got {spelling(config)})")
    namespaced: dict[str, Any] = {}
    written: dict[str, str] = {}  # namespaced key -> how the file spells it
    for key, value in config.items():
        if not isinstance(key, str):
            raise StackFileError(f"{shown}: config: the key {spelling(key)} is not text; quote it")
        # Pulumi puts a key without a namespace in the project's (workspace/loaders.go
        # stackConfigNamespacedWithProject), and hands a top-level null over as "" (checkForEmptyConfig).
        full = key if ":" in key else f"{PROJECT}:{key}"
        if full in namespaced:
            raise StackFileError(
                f"{shown}: {printable(key)}: the same key as {printable(written[full])} (Pulumi puts a key "
                f"without a namespace in the project's, {PROJECT}:); keep one"
            )
        written[full] = key
        path = printable(full)
        namespaced[full] = "" if value is None else _decoded(_plain(value, shown, path), shown, path)
    return namespaced


def read_stack_file(path: Path, shown: str | None = None) -> dict[str, Any]:
    """The `config:` map of a stack file, as Pulumi reads it."""
    shown = shown or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise StackFileError(
                f"{shown}: {size} bytes; a stack file is a few KB (at most {MAX_BYTES // 1024} KB here)"
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise StackFileError(f"{shown}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise StackFileError(f"{shown}: not UTF-8 text (byte {exc.start})") from None
    return parse(text, shown)


def resolve_stack(stack: str | None, config: Path | None) -> tuple[Path, str]:
    """The stack file a command reads (`--config FILE`, else `--stack NAME`, default dev), and how
    to name it in output: relative, so reports do not depend on where the clone lives."""
    if config is not None:
        if not config.exists():
            raise FileNotFoundError(f"--config {config}: no such stack file")
        if not config.is_file():
            raise FileNotFoundError(
                f"--config {config}: is {'a directory' if config.is_dir() else 'not a regular file'}; give a stack file"
            )
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
