"""The fixture stacks as tables: each row of tests/fixtures/<kind>.yaml is a shipped stack
(stacks/Pulumi.<from>.yaml) with a few keys set or deleted, and what its preview must say. The rows are
written out as stack files (`<temporary directory>/<kind>/<name>.yaml`, once per process) and previewed
like any other, so the messages name that file.

A row's key paths are spelled as the errors spell them (`gpu-platform:nodePools[0].maxSize`), and its
values are read as a stack file's are (preview/stack_file.py: go-yaml's resolution, `yes` is text), so
a row says what a stack file would. To look at the files: `python -m tests.fixture_stacks DIR`.
"""

from __future__ import annotations

import atexit
import copy
import functools
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from preview import stack_file

FIXTURES = Path(__file__).resolve().parent / "fixtures"
KINDS = ("bad_stacks", "violating")
BASES = ("dev", "prod", "dra")
_ROW_KEYS = {"name", "why", "from", "set", "delete"}
_EXPECT = {"bad_stacks": {"error"}, "violating": {"violates", "names"}}


@dataclass(frozen=True)
class Row:
    kind: str
    name: str
    why: str
    base: str
    set: dict[str, Any] = field(default_factory=dict)
    delete: tuple[str, ...] = ()
    expect: dict[str, Any] = field(default_factory=dict)  # the table's own keys (error; violates and names)

    @property
    def path(self) -> Path:
        """This row's stack file (written on first use, with every other row of the process)."""
        return _written() / self.kind / f"{self.name}.yaml"


def _load(text: str) -> Any:
    # The stack file reader's own loader: a value in a row means what it would in a stack file.
    return yaml.load(text, Loader=stack_file._Loader)


@functools.cache
def rows(kind: str) -> tuple[Row, ...]:
    table = FIXTURES / f"{kind}.yaml"
    found = []
    for entry in _load(table.read_text())["rows"]:
        where = f"{table.name}: {entry.get('name')}"
        unknown = set(entry) - _ROW_KEYS - _EXPECT[kind]
        missing = ({"name", "why", "from"} | _EXPECT[kind]) - set(entry)
        assert not unknown and not missing, f"{where}: unknown keys {sorted(unknown)}, missing {sorted(missing)}"
        assert entry["from"] in BASES, f"{where}: from {entry['from']!r} (valid: {', '.join(BASES)})"
        found.append(
            Row(
                kind,
                entry["name"],
                entry["why"],
                entry["from"],
                entry.get("set") or {},
                tuple(entry.get("delete") or ()),
                {k: entry[k] for k in _EXPECT[kind]},
            )
        )
    names = [r.name for r in found]
    assert len(set(names)) == len(names), f"{table.name}: a name used twice"
    return tuple(found)


def row(kind: str, name: str) -> Row:
    (found,) = [r for r in rows(kind) if r.name == name]
    return found


def _steps(path: str) -> list[str | int]:
    """`gpu-platform:nodePools[0].maxSize` -> ["gpu-platform:nodePools", 0, "maxSize"]."""
    found = re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)
    steps: list[str | int] = [int(index) if index else key for key, index in found]
    spelled = "".join(f"[{s}]" if isinstance(s, int) else (f".{s}" if i else s) for i, s in enumerate(steps))
    assert spelled == path and isinstance(steps[0], str), (
        f"{path!r}: not a key path (e.g. gpu-platform:nodePools[0].maxSize)"
    )
    return steps


def _parent(config: dict, path: str) -> tuple[Any, str | int]:
    *walk, last = _steps(path)
    node: Any = config
    for step in walk:
        present = step in node if isinstance(node, dict) else isinstance(step, int) and step < len(node)
        assert present, f"{path}: {step!r} is not in the stack it starts from"
        node = node[step]
    return node, last


def config(r: Row) -> dict[str, Any]:
    """The row's `config:` map: its shipped stack, each `set` path given its value (a new key goes
    last; index len(list) appends), then each `delete` path removed."""
    result = copy.deepcopy(_load(stack_file.stack_file(r.base).read_text())["config"])
    for path, value in r.set.items():
        node, last = _parent(result, path)
        if isinstance(node, list):
            assert isinstance(last, int) and last <= len(node), f"{r.name}: {path}: no such item"
            node[last : last + 1] = [copy.deepcopy(value)]
        else:
            node[last] = copy.deepcopy(value)
    for path in r.delete:
        node, last = _parent(result, path)
        assert (last in node) if isinstance(node, dict) else last < len(node), f"{r.name}: {path}: nothing to delete"
        del node[last]
    return result


def text(r: Row) -> str:
    """The row's stack file: a comment saying what is wrong, then its config."""
    document = {"config": config(r)}
    written = f"# {r.why}\n" + yaml.safe_dump(document, sort_keys=False, allow_unicode=True, width=1000)
    # PyYAML quotes for YAML 1.1, the reader resolves as go-yaml: check the file reads back as meant.
    assert json.dumps(_load(written)) == json.dumps(document), f"{r.name}: its stack file does not read back as its row"
    return written


def write(directory: Path) -> list[Path]:
    """Every row's stack file under directory/<kind>/."""
    paths = []
    for kind in KINDS:
        (directory / kind).mkdir(parents=True, exist_ok=True)
        for r in rows(kind):
            path = directory / kind / f"{r.name}.yaml"
            path.write_text(text(r))
            paths.append(path)
    return paths


@functools.cache
def _written() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="gpu-platform-fixtures-"))
    atexit.register(shutil.rmtree, directory, True)
    write(directory)
    return directory


def paths(kind: str) -> list[Path]:
    return [r.path for r in rows(kind)]


def directory(kind: str) -> Path:
    """The directory of every row's stack file of `kind` (and nothing else), for `--all`."""
    return _written() / kind


if __name__ == "__main__":
    for written in write(Path(sys.argv[1])):
        print(written)
