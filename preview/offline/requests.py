"""The requests the Pulumi engine sends a policy pack, built from a recording.

This module stands in for the engine's half of the analyzer protocol; the pack's half is
pulumi_policy's own servicer (preview/offline/analyze.py). Each rule below is what the engine does at
pulumi/pulumi v3.259.0 (the newest tag read; the analyzer protocol is unchanged up to the 3.272 SDK
pinned here), by file and line:

- Analyze runs once for every resource the step generator sees: custom resources, components,
  providers (the engine's default providers too) and the root stack, before its step, with its
  inputs after the provider's Check (pkg/resource/deploy/step_generator.go:1401-1469, 3388-3437).
- AnalyzeStack runs once at the end with every resource's *outputs*, parent, dependencies and
  non-empty property dependencies (step_generator.go:3439-3526: "Unlike Analyze, AnalyzeStack is
  called on the final outputs of each resource").
- Properties are marshalled with KeepUnknowns, KeepSecrets and SkipInternalKeys, without
  KeepResources (pkg/resource/plugin/analyzer_plugin.go:301-390): unknowns stay sentinels, secrets
  stay secret objects, top-level `__` keys go, a resource reference becomes its id or URN
  (sdk/go/common/resource/plugin/rpc.go:95-118, 253-262).
- Options carry protect, ignoreChanges, deleteBeforeReplace, additionalSecretOutputs, custom
  timeouts in seconds and the parent (analyzer_plugin.go:737-764); the aliases are those that matched
  a resource of the old state (step_generator.go:775, 825), so none in a stack's first deployment.
- An explicit provider's inputs carry the plugin `version` the SDK asked for
  (source_eval.go:2576-2583).
- A resource without an explicit provider runs on the package's default provider
  `pulumi:providers:<pkg>::default_<major>_<minor>_<patch>`, whose inputs are the package's stack
  config plus `version` (pkg/resource/deploy/default_providers.go:139-200,
  providers/provider.go:105-135, providers/registry.go:166-172).

What a recording cannot hold: the provider's Check, which may add defaults and auto-names to the
inputs. Policies therefore tolerate extra keys and never rely on a value only Check would add.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from preview.offline.engine import STACK_TYPE, Recording, Registration

_SIG = "4dabf18193072939515e22adb298388d"
_RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e"
_PROVIDER_PREFIX = "pulumi:providers:"
# Go's time.ParseDuration, as the engine reads the SDK's custom timeout strings (source_eval.go:2855-2883).
_DURATION = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class EngineResource:
    """One resource as the engine holds it when it talks to the analyzer."""

    urn: str
    type: str
    name: str
    parent: str
    inputs: struct_pb2.Struct
    outputs: struct_pb2.Struct
    provider: str  # the provider reference "<urn>::<id>", or "" for providers, components, the stack
    dependencies: tuple[str, ...] = ()
    property_dependencies: tuple[tuple[str, tuple[str, ...]], ...] = ()
    options: analyzer_pb2.AnalyzerResourceOptions | None = None


def seconds(duration: str) -> float:
    """`150m` -> 9000.0; "" -> 0.0 (no custom timeout); Go's grammar: a sign, then number-unit
    pairs, or a bare 0."""
    if not duration:
        return 0.0
    sign = -1.0 if duration.startswith("-") else 1.0
    body = duration.lstrip("+-")
    if body == "0":
        return 0.0
    parts = _DURATION.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        raise ValueError(f"custom timeout {duration!r} is not a Go duration (e.g. 90m, 1h30m)")
    return sign * sum(float(n) * _SECONDS[u] for n, u in parts)


def _marshal_value(value: struct_pb2.Value) -> struct_pb2.Value:
    kind = value.WhichOneof("kind")
    if kind == "struct_value":
        fields = value.struct_value.fields
        if _SIG in fields and fields[_SIG].string_value == _RESOURCE_SIG:
            # KeepResources is off: a custom resource's reference becomes its id, a component's its URN.
            ref = fields["id"] if "id" in fields and fields["id"].string_value else fields["urn"]
            return struct_pb2.Value(string_value=ref.string_value)
        out = struct_pb2.Value()
        out.struct_value.CopyFrom(_marshal_struct(value.struct_value, top=False))
        return out
    if kind == "list_value":
        out = struct_pb2.Value()
        out.list_value.values.extend(_marshal_value(v) for v in value.list_value.values)
        return out
    return value


def _marshal_struct(struct: struct_pb2.Struct, top: bool = True) -> struct_pb2.Struct:
    out = struct_pb2.Struct()
    for key in sorted(struct.fields):
        if top and key.startswith("__"):
            continue  # SkipInternalKeys: top level only
        out.fields[key].CopyFrom(_marshal_value(struct.fields[key]))
    return out


def _options(r: Registration) -> analyzer_pb2.AnalyzerResourceOptions:
    create, update, delete = (seconds(t) for t in r.custom_timeouts)
    return analyzer_pb2.AnalyzerResourceOptions(
        protect=r.protect,
        ignoreChanges=list(r.ignore_changes),
        deleteBeforeReplace=bool(r.delete_before_replace),
        deleteBeforeReplaceDefined=r.delete_before_replace is not None,
        additionalSecretOutputs=list(r.additional_secret_outputs),
        customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts(create=create, update=update, delete=delete),
        parent=r.parent,
    )


def _default_provider_name(version: str) -> str:
    """`7.51.1` -> `default_7_51_1`; pre-release and build parts follow, each behind `_`
    (providers/provider.go:105-135)."""
    if not version:
        return "default"
    rest, _, build = version.partition("+")
    core, _, pre = rest.partition("-")
    parts = core.split(".") + (pre.split(".") if pre else []) + (build.split(".") if build else [])
    return "default_" + "_".join(parts)


def _package_config(recording: Recording, package: str) -> struct_pb2.Struct:
    """The package's stack config as the engine hands it to a default provider: `aws:region` ->
    `region`, every value as text (structured values as JSON text)."""
    inputs = struct_pb2.Struct()
    for key, value in sorted(recording.config.items()):
        namespace, _, name = key.partition(":")
        if namespace == package and name:
            # Go's encoding/json: compact, keys sorted.
            inputs.fields[name].string_value = (
                value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)
            )
    return inputs


def _default_providers(recording: Recording) -> dict[tuple[str, str], EngineResource]:
    """(package, version) -> the default provider the engine registers for it."""
    found: dict[tuple[str, str], EngineResource] = {}
    for r in recording.resources:
        if not r.custom or r.provider or r.is_provider:
            continue
        package = r.type.split(":", 1)[0]
        key = (package, r.version)
        if key in found:
            continue
        inputs = _package_config(recording, package)
        if r.version:
            inputs.fields["version"].string_value = r.version
        name = _default_provider_name(r.version)
        found[key] = EngineResource(
            urn=f"urn:pulumi:{recording.stack}::{recording.project}::{_PROVIDER_PREFIX}{package}::{name}",
            type=_PROVIDER_PREFIX + package,
            name=name,
            parent="",
            inputs=inputs,
            outputs=inputs,
            provider="",
            options=analyzer_pb2.AnalyzerResourceOptions(
                customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts()
            ),
        )
    return found


def resources(recording: Recording) -> list[EngineResource]:
    """Every resource the engine would hold, in registration order: the root stack, each default
    provider just before its first user, then the program's registrations."""
    defaults = _default_providers(recording)
    stack = EngineResource(
        urn=recording.stack_urn,
        type=STACK_TYPE,
        name=f"{recording.project}-{recording.stack}",
        parent="",
        inputs=struct_pb2.Struct(),
        outputs=recording.stack_outputs,
        provider="",
        options=analyzer_pb2.AnalyzerResourceOptions(
            customTimeouts=analyzer_pb2.AnalyzerResourceOptions.CustomTimeouts()
        ),
    )
    found = [stack]
    placed: set[tuple[str, str]] = set()
    for r in recording.resources:
        provider = r.provider
        if r.custom and not provider and not r.is_provider:
            key = (r.type.split(":", 1)[0], r.version)
            if key not in placed:
                placed.add(key)
                found.append(defaults[key])
            # The engine's reference: the provider's URN and id (unknown until it exists).
            provider = f"{defaults[key].urn}::{'04da6b54-80e4-46f7-96ec-b56ff0331ba9'}"
        inputs = r.sent
        if r.is_provider and r.version:
            inputs = struct_pb2.Struct()
            inputs.CopyFrom(r.sent)
            inputs.fields["version"].string_value = r.version
        outputs = r.state if r.custom else recording.component_outputs.get(r.urn, struct_pb2.Struct())
        if r.is_provider:
            outputs = inputs  # a provider's state is its inputs
        found.append(
            EngineResource(
                urn=r.urn,
                type=r.type,
                name=r.name,
                parent=r.parent,
                inputs=inputs,
                outputs=outputs,
                provider=provider,
                dependencies=r.dependencies,
                property_dependencies=r.property_dependencies,
                options=_options(r),
            )
        )
    return found


def _provider_resource(
    reference: str, index: dict[str, EngineResource]
) -> analyzer_pb2.AnalyzerProviderResource | None:
    if not reference:
        return None
    urn = reference.rsplit("::", 1)[0]
    provider = index.get(urn)
    if provider is None:
        raise ValueError(f"provider {urn} of a resource was never registered")
    return analyzer_pb2.AnalyzerProviderResource(
        type=provider.type, urn=provider.urn, name=provider.name, properties=_marshal_struct(provider.inputs)
    )


def analyze_requests(recording: Recording) -> Iterator[analyzer_pb2.AnalyzeRequest]:
    """One Analyze request per resource, in the order the engine steps through them."""
    found = resources(recording)
    index = {r.urn: r for r in found}
    for r in found:
        request = analyzer_pb2.AnalyzeRequest(
            type=r.type,
            urn=r.urn,
            name=r.name,
            properties=_marshal_struct(r.inputs),
            options=r.options,
        )
        provider = _provider_resource(r.provider, index)
        if provider is not None:
            request.provider.CopyFrom(provider)
        yield request


def analyze_stack_request(recording: Recording) -> analyzer_pb2.AnalyzeStackRequest:
    found = resources(recording)
    index = {r.urn: r for r in found}
    request = analyzer_pb2.AnalyzeStackRequest()
    for r in found:
        resource = request.resources.add(
            type=r.type,
            urn=r.urn,
            name=r.name,
            properties=_marshal_struct(r.outputs),
            options=r.options,
            parent=r.parent,
            dependencies=list(r.dependencies),
        )
        for key, urns in r.property_dependencies:
            if urns:
                resource.propertyDependencies[key].urns.extend(urns)
        provider = _provider_resource(r.provider, index)
        if provider is not None:
            resource.provider.CopyFrom(provider)
    return request


def properties(struct: struct_pb2.Struct) -> dict:
    """A struct as plain data (for tests and messages)."""
    return json_format.MessageToDict(struct)
