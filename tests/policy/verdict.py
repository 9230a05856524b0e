"""Hands fixture resources to the policy pack through pulumi_policy's own analyzer, as the engine
does: each resource to Analyze, then all of them to AnalyzeStack, as protobuf structs (so numbers
arrive as floats and objects as the analyzer's Mapping/Sequence proxies, never as dicts or lists).
A policy that only works on plain dicts fails here as it would under the CLI."""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf import json_format, struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from preview.offline import analyze, policy_config
from tests.policy.resources import Resource

# Any value the engine passes during a preview for something not known yet (pulumi's
# sdk/go/common/resource/plugin/rpc.go UnknownStringValue).
UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9"


def struct(props: dict) -> struct_pb2.Struct:
    found = struct_pb2.Struct()
    json_format.ParseDict(props, found)
    return found


def diagnostics(resources: Iterable[Resource], config: dict | None = None) -> list[analyzer_pb2.AnalyzeDiagnostic]:
    """Every diagnostic of the whole pack (each with the analyzed resource's URN for resource policies)."""
    resources = list(resources)
    pack = analyze.in_process()
    pack.Configure(policy_config.configure_request(analyze.info(pack), config or {}))
    found = []
    for r in resources:
        response = pack.Analyze(
            analyzer_pb2.AnalyzeRequest(type=r.type, urn=r.urn, name=r.name, properties=struct(r.props))
        )
        for d in response.diagnostics:
            d.urn = r.urn
            found.append(d)
    stack = analyzer_pb2.AnalyzeStackRequest()
    for r in resources:
        added = stack.resources.add(type=r.type, urn=r.urn, name=r.name, properties=struct(r.props))
        for key, sources in r.property_dependencies.items():
            added.propertyDependencies[key].urns.extend(source.urn for source in sources)
    found += list(pack.AnalyzeStack(stack).diagnostics)
    return found


def violations(policy, resources: Iterable[Resource]) -> list[tuple[str, str]]:
    """(message, urn) of one policy's diagnostics, the message as the policy wrote it."""
    return [(analyze.message(d), d.urn) for d in diagnostics(resources) if d.policyName == policy.name]
