"""The recordings the suite shares: each stack config is run through the engine once per worker, and
every test that records the same config reads that one recording, frozen.

A run costs about a second and most tests only read what it registered; many of them record the same
variant of a shipped stack (one change, parametrised over what they assert). A recording is keyed by
what the program reads: the stack name, the engine mode, the config map (in its order: the program
renders maps in the order it reads them) and SOURCE_DATE_EPOCH, the one environment variable it reads.
While a test's `monkeypatch` is active (tests/conftest.py), a render may see patched program code, so
it is made fresh and shared with no one.

A shared recording is read-only: its config, its list of resources and every resource's inputs are
frozen, so a test that edits one in place fails there (TypeError) instead of changing what every
later test reads. `copy.deepcopy` of any part gives plain, editable data; `Recording.replaced` gives
an edited twin. (The protobuf copies in `sent` and `state` are not frozen: only the analyzer's
requests read them.)
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import yaml

from preview.offline import engine
from tests import attribution

_READ_ONLY = (
    "a shared recording is read-only (tests/recordings.py): copy.deepcopy what you edit, or use Recording.replaced"
)


def _refuse(self, *_args, **_kwargs):
    raise TypeError(_READ_ONLY)


class FrozenDict(dict):
    """A dict that refuses every edit; json, yaml and pydantic read it as a dict."""

    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __copy__(self) -> dict:
        return dict(self)

    def __deepcopy__(self, memo) -> dict:
        return {copy.deepcopy(k, memo): copy.deepcopy(v, memo) for k, v in self.items()}

    def __reduce__(self):
        return dict, (dict(self),)


class FrozenList(list):
    """A list that refuses every edit."""

    __setitem__ = __delitem__ = __iadd__ = __imul__ = _refuse
    append = clear = extend = insert = pop = remove = reverse = sort = _refuse

    def __copy__(self) -> list:
        return list(self)

    def __deepcopy__(self, memo) -> list:
        return [copy.deepcopy(v, memo) for v in self]

    def __reduce__(self):
        return list, (list(self),)


# The reports dump inputs with yaml.safe_dump (preview/reports/manifests.py), which knows plain types only.
for _dumper in (yaml.SafeDumper, yaml.Dumper):
    _dumper.add_representer(FrozenDict, yaml.representer.SafeRepresenter.represent_dict)
    _dumper.add_representer(FrozenList, yaml.representer.SafeRepresenter.represent_list)


def freeze(value: Any) -> Any:
    if isinstance(value, dict):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, list):
        return FrozenList(freeze(v) for v in value)
    return value


def _frozen(recording: engine.Recording) -> engine.Recording:
    recording.config = freeze(recording.config)
    recording.resources = FrozenList(dataclasses.replace(r, inputs=freeze(r.inputs)) for r in recording.resources)
    return recording


# How many `monkeypatch` fixtures are active (tests/conftest.py counts them): while one is, nothing is shared.
patching = 0
# key -> what to run for it; the cached function below takes the key only (it must be hashable).
_sources: dict[tuple, tuple[Path | None, dict[str, Any]]] = {}
# The engine runs this module made, and the recordings asked of it (tests/conftest.py sums them per run).
runs = {"made": 0, "asked": 0}


def _key(stack: str, config: dict[str, Any], mode: str) -> tuple:
    return stack, mode, json.dumps(config, default=repr), os.environ.get("SOURCE_DATE_EPOCH")


# The engine's own run: `engine.run` itself is the shared one in the suite (tests/conftest.py).
_ENGINE_RUN = engine.run


def _run(path: Path | None, config: dict[str, Any], stack: str, mode: str) -> engine.Recording:
    runs["made"] += 1
    if path is not None:
        return _ENGINE_RUN(path, mode=mode)
    # The stack file lives only as long as the run: the recording keeps the config it read.
    with tempfile.TemporaryDirectory(prefix="recording-") as tmp:
        written = Path(tmp) / f"Pulumi.{stack}.yaml"
        written.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
        return _ENGINE_RUN(written, mode=mode)


@attribution.cached
def _shared(key: tuple) -> engine.Recording:
    path, config = _sources[key]
    return _frozen(_run(path, config, key[0], key[1]))


def _recorded(path: Path | None, config: dict[str, Any], stack: str, mode: str) -> engine.Recording:
    runs["asked"] += 1
    if patching:
        return _run(path, config, stack, mode)
    key = _key(stack, config, mode)
    _sources.setdefault(key, (path, copy.deepcopy(config)))
    return _shared(key)


def of_file(path: Path, mode: str = engine.UP) -> engine.Recording:
    """The recording of a stack file (its stack named after the file, as `python -m preview --config`)."""
    return _recorded(path, engine.read_stack_file(path), engine.stack_name(path), mode)


def of_config(config: dict[str, Any], stack: str, mode: str = engine.UP) -> engine.Recording:
    """The recording of a stack file holding `config`, for the stack named `stack`."""
    return _recorded(None, config, stack, mode)


def engine_run(
    path: Path,
    stack: str | None = None,
    sink: list | None = None,
    mode: str = engine.UP,
    shown: str | None = None,
) -> engine.Recording:
    """`engine.run` as the suite sees it: what the CLI, the fleet and the docs render in-process is
    shared like any recording. A run with its own stack name or sink is the engine's; a stack file the
    program refuses is run again as the engine runs it, so the error names the file as `shown` does."""
    if stack is not None or sink is not None or patching:
        return _ENGINE_RUN(path, stack=stack, sink=sink, mode=mode, shown=shown)
    try:
        return of_file(path, mode)
    except Exception:
        return _ENGINE_RUN(path, mode=mode, shown=shown)
