"""Run the real `__main__.py` under Pulumi mocks and record every registration as the engine sees it.

The Pulumi SDK's `MockMonitor` hands `Mocks.new_resource` neither the parent nor the dependencies;
the raw `RegisterResourceRequest` has both, so the recording monitor keeps that request (type, name,
parent, the full dependency set, provider reference, the inputs exactly as the SDK serialized them,
options) and the state the mock provider answered with. Invokes are answered by `aws_answers`.

Two modes, the two views a policy pack gets of a stack:
- `up`: `pulumi up` on a real account. Every value is known: computed outputs (an EKS cluster's
  endpoint, the baked AMI id) are filled by `outputs.fill`, so no input silently goes missing.
- `first-preview`: the first `pulumi preview` of a new stack. Nothing exists yet, so a provider
  answers a create with its inputs and every output it computes unknown (`outputs.preview`): ids and
  computed outputs are unknown, and every input built from them reaches the engine (and the policy
  pack) as an unknown.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import logging
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import pulumi
import yaml
from google.protobuf import json_format, struct_pb2
from pulumi.runtime import mocks as pulumi_mocks
from pulumi.runtime import rpc
from pulumi.runtime.settings import get_root_resource, set_root_resource
from pulumi.runtime.stack import massage, run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.config import PROJECT
from preview import aws_answers, outputs

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
STACKS = ROOT / "stacks"
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
    # What the engine keeps of the request and the provider's answer (preview/requests.py hands
    # them to the policy pack): the inputs exactly as the SDK serialized them, the resulting state.
    sent: struct_pb2.Struct = field(default_factory=struct_pb2.Struct, compare=False, repr=False)
    state: struct_pb2.Struct = field(default_factory=struct_pb2.Struct, compare=False, repr=False)
    property_dependencies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    version: str = ""  # the SDK package's version: names the engine's default provider
    protect: bool = False
    delete_before_replace: Optional[bool] = None
    additional_secret_outputs: tuple[str, ...] = ()
    custom_timeouts: tuple[str, str, str] = ("", "", "")  # create, update, delete, as the SDK sent them

    @property
    def is_provider(self) -> bool:
        return self.type.startswith("pulumi:providers:")

    def with_inputs(self, inputs: dict[str, Any]) -> "Registration":
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

    def replaced(self, type_: str, name: str, change) -> "Recording":
        """A copy in which `change(inputs)` edited one resource's inputs (a deep copy of them)."""
        resources = [
            r.with_inputs(_edited(r.inputs, change)) if r.type == type_ and r.name == name else r
            for r in self.resources
        ]
        return dataclasses.replace(self, resources=resources)

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


def _edited(inputs: dict[str, Any], change) -> dict[str, Any]:
    edited = copy.deepcopy(inputs)
    change(edited)
    return edited


def _copy(struct: struct_pb2.Struct) -> struct_pb2.Struct:
    copied = struct_pb2.Struct()
    copied.CopyFrom(struct)
    return copied


class _RecordingMonitor(pulumi_mocks.MockMonitor):
    def __init__(self, mocks: pulumi_mocks.Mocks) -> None:
        super().__init__(mocks)
        self.registrations: list[Registration] = []
        self.outputs: dict[str, struct_pb2.Struct] = {}

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The SDK's mock prefixes only the parent's own type; the engine prefixes the parent's whole
        # qualified type, all ancestors but the root stack (pulumi/pulumi v3.259.0,
        # pkg/resource/deploy/deployment.go:793-805, sdk/go/common/resource/urn/urn.go:80-93).
        chain = parent.split("::")[2] if parent else ""
        if chain and chain != STACK_TYPE:
            type_ = f"{chain}${type_}"
        return "::".join(["urn:pulumi:" + pulumi.get_stack(), pulumi.get_project(), type_, name])

    def RegisterResource(self, request):  # noqa: N802 (the gRPC method name)
        response = super().RegisterResource(request)
        if request.type == STACK_TYPE:
            return response
        timeouts = request.customTimeouts
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
                sent=_copy(request.object),
                state=_copy(response.object),
                property_dependencies=tuple(
                    (key, tuple(deps.urns)) for key, deps in sorted(request.propertyDependencies.items())
                ),
                version=request.version,
                protect=bool(request.protect),
                delete_before_replace=request.deleteBeforeReplace if request.deleteBeforeReplaceDefined else None,
                additional_secret_outputs=tuple(request.additionalSecretOutputs),
                custom_timeouts=(timeouts.create, timeouts.update, timeouts.delete),
            )
        )
        return response

    def RegisterResourceOutputs(self, request):  # noqa: N802 (the gRPC method name)
        self.outputs[request.urn] = _copy(request.outputs)
        return super().RegisterResourceOutputs(request)


class _OfflineMocks(pulumi_mocks.Mocks):
    def __init__(self, config: dict[str, Any], mode: str) -> None:
        self._config = config
        self._mode = mode

    def new_resource(self, args: pulumi_mocks.MockResourceArgs):
        if self._mode == FIRST_PREVIEW:
            return outputs.preview(args.typ, args.name, args.inputs)
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


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _program_log() -> tuple[logging.Logger, _Warnings]:
    """The mock engine's log: the program's warnings go to the recording, not to stderr."""
    logger = logging.getLogger("gpu-platform.preview.program")
    logger.propagate = False
    logger.handlers = [_Warnings()]
    return logger, logger.handlers[0]


def run(path: Path, stack: Optional[str] = None, sink: Optional[list[Registration]] = None, mode: str = UP) -> Recording:
    """Run the program for one stack file and return what it registered. A configuration error
    raises `gpu_platform.config.ConfigError` before anything is registered; `sink`, when given,
    receives registrations as they happen (so a caller can see what an error left behind)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    config = read_stack_file(path)
    name = stack or stack_name(path)
    mocks = _OfflineMocks(config, mode)
    monitor = _RecordingMonitor(mocks)
    if sink is not None:
        monitor.registrations = sink
    # A root stack of this run's stack name (set_mocks keeps an earlier run's otherwise), so every
    # top-level resource's parent is this stack's root, as under the engine.
    set_root_resource(None)
    logger, warnings = _program_log()
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack=name, preview=mode == FIRST_PREVIEW, monitor=monitor, logger=logger)
    pulumi.runtime.set_all_config(_as_pulumi_config(config))
    settings = pulumi.runtime.settings.SETTINGS
    settings.rpc_manager.clear()
    settings.outputs.clear()
    # Under mocks the root stack registers its (empty) outputs before the program runs; the
    # engine's root stack holds the program's exports.
    root = get_root_resource()
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))
    recording = Recording(stack=name, config=config, resources=list(monitor.registrations), mode=mode,
                          warnings=tuple(dict.fromkeys(warnings.messages)))
    recording.stack_outputs = _sync_await(rpc.serialize_properties(massage(dict(root.outputs), []), {}))
    recording.component_outputs = {urn: out for urn, out in monitor.outputs.items() if urn != recording.stack_urn}
    return recording
