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

import json
import logging
import runpy
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import struct_pb2
from pulumi.runtime import mocks as pulumi_mocks, rpc
from pulumi.runtime.settings import get_root_resource, set_root_resource
from pulumi.runtime.stack import massage, run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from gpu_platform.config import PROJECT
from preview.offline import aws_answers, collector, outputs
from preview.recording import FIRST_PREVIEW, MODES, STACK_TYPE, UP, Recording, Registration
from preview.stack_file import ROOT, STACKS, read_stack_file, resolve_stack, stack_file, stack_name  # noqa: F401 (re-exported)

PROGRAM = ROOT / "__main__.py"


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
                replace_on_changes=tuple(request.replaceOnChanges),
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


def _as_pulumi_config(config: dict[str, Any]) -> dict[str, str]:
    # The language host hands structured values over as JSON text, and plain values as text.
    return {key: value if isinstance(value, str) else json.dumps(value) for key, value in config.items()}


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


def run(
    path: Path,
    stack: str | None = None,
    sink: list[Registration] | None = None,
    mode: str = UP,
    shown: str | None = None,
) -> Recording:
    """Run the program for one stack file and return what it registered. A configuration error
    raises `gpu_platform.config.ConfigError` before anything is registered; `sink`, when given,
    receives registrations as they happen (so a caller can see what an error left behind)."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    config = read_stack_file(path, shown)
    name = stack or stack_name(path)
    mocks = _OfflineMocks(config, mode)
    monitor = _RecordingMonitor(mocks)
    if sink is not None:
        monitor.registrations = sink
    # A root stack of this run's stack name (set_mocks keeps an earlier run's otherwise), so every
    # top-level resource's parent is this stack's root, as under the engine.
    set_root_resource(None)
    logger, warnings = _program_log()
    pulumi.runtime.set_mocks(
        mocks, project=PROJECT, stack=name, preview=mode == FIRST_PREVIEW, monitor=monitor, logger=logger
    )
    pulumi.runtime.set_all_config(_as_pulumi_config(config))
    settings = pulumi.runtime.settings.SETTINGS
    settings.rpc_manager.clear()
    settings.outputs.clear()
    # Under mocks the root stack registers its (empty) outputs before the program runs; the
    # engine's root stack holds the program's exports.
    root = get_root_resource()
    with collector.held():
        _sync_await(run_pulumi_func(lambda: runpy.run_path(str(PROGRAM), run_name="__main__")))
    recording = Recording(
        stack=name,
        config=config,
        resources=list(monitor.registrations),
        mode=mode,
        warnings=tuple(dict.fromkeys(warnings.messages)),
    )
    recording.stack_outputs = _sync_await(rpc.serialize_properties(massage(dict(root.outputs), []), {}))
    recording.component_outputs = {urn: out for urn, out in monitor.outputs.items() if urn != recording.stack_urn}
    return recording
