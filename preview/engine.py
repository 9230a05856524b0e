"""Run the real `__main__.py` under Pulumi mocks and record every registration as the engine sees it.

The Pulumi SDK's `MockMonitor` hands `Mocks.new_resource` neither the parent nor the dependencies;
the raw `RegisterResourceRequest` has both, so the recording monitor keeps that request (type, name,
parent, the full dependency set, provider reference, inputs with engine-side names). Computed outputs
are filled by `outputs.fill` and invokes answered by `aws_answers`, so no input silently goes missing.
"""

from __future__ import annotations

import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pulumi
import yaml
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.config import PROJECT
from preview import aws_answers, outputs

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
STACKS = ROOT / "stacks"


@dataclass(frozen=True)
class Registration:
    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    dependencies: tuple[str, ...]
    provider: str
    inputs: dict[str, Any]
    ignore_changes: tuple[str, ...] = ()

    @property
    def is_provider(self) -> bool:
        return self.type.startswith("pulumi:providers:")


@dataclass
class Recording:
    stack: str
    config: dict[str, Any]
    resources: list[Registration] = field(default_factory=list)

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

    def waits_for(self, urn: str) -> set[str]:
        """Every URN a resource waits for before it is created: its own dependencies and those of
        each ancestor (a child of a component with `depends_on` carries none of its own)."""
        index = self.by_urn()
        waits: set[str] = set()
        current: Optional[Registration] = index.get(urn)
        while current is not None:
            waits.update(current.dependencies)
            current = index.get(current.parent)
        return waits


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []

    def RegisterResource(self, request):  # noqa: N802 (the gRPC method name)
        response = super().RegisterResource(request)
        if request.type == "pulumi:pulumi:Stack":
            return response
        self.registrations.append(
            Registration(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=bool(request.custom),
                dependencies=tuple(sorted(set(request.dependencies))),
                provider=request.provider,
                inputs=rpc.deserialize_properties(request.object),
                ignore_changes=tuple(request.ignoreChanges),
            )
        )
        return response


class _OfflineMocks(pulumi_mocks.Mocks):
    def __init__(self, config: dict[str, Any]) -> None:
        self._config = config

    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        return outputs.fill(args.typ, args.name, args.inputs)

    def call(self, args: pulumi_mocks.MockCallArgs):
        return aws_answers.answer(args.token, args.args, self._config)


def stack_file(stack: str) -> Path:
    return STACKS / f"Pulumi.{stack}.yaml"


def read_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` map of a stack file, as Pulumi reads it."""
    document = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise ValueError(f"{path}: a stack file is a mapping with a 'config:' mapping")
    return dict(document.get("config") or {})


def resolve_stack(stack: Optional[str], config: Optional[Path]) -> tuple[Path, str]:
    """The stack file a command reads (`--config FILE`, else `--stack NAME`, default dev), and how
    to name it in output: relative, so reports do not depend on where the clone lives."""
    if config is not None:
        if not config.is_file():
            raise FileNotFoundError(f"--config {config}: no such stack file")
        return config, str(config)
    name = stack or "dev"
    path = stack_file(name)
    if not path.is_file():
        known = sorted(p.name.split(".")[1] for p in STACKS.glob("Pulumi.*.yaml"))
        raise FileNotFoundError(f"--stack {name}: no stacks/Pulumi.{name}.yaml (stacks: {', '.join(known)})")
    return path, f"stacks/{path.name}"


def stack_name(path: Path) -> str:
    name = path.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name.split(".", 1)[1].rsplit(".", 1)[0]
    return path.stem


def _as_pulumi_config(config: dict[str, Any]) -> dict[str, str]:
    # The language host hands structured values over as JSON text, and plain values as text.
    return {
        key: value if isinstance(value, str) else json.dumps(value)
        for key, value in config.items()
    }


def run(path: Path, stack: Optional[str] = None, sink: Optional[list[Registration]] = None) -> Recording:
    """Run the program for one stack file and return what it registered. A configuration error
    raises `gpu_platform.config.ConfigError` before anything is registered; `sink`, when given,
    receives registrations as they happen (so a caller can see what an error left behind)."""
    config = read_stack_file(path)
    name = stack or stack_name(path)
    mocks = _OfflineMocks(config)
    monitor = _RecordingMonitor(mocks)
    if sink is not None:
        monitor.registrations = sink
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=name, preview=False, monitor=monitor)
    pulumi.runtime.set_all_config(_as_pulumi_config(config))
    settings = pulumi.runtime.settings.SETTINGS
    settings.rpc_manager.clear()
    settings.outputs.clear()
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))
    return Recording(stack=name, config=config, resources=list(monitor.registrations))
