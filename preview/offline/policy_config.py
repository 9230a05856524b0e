"""Policy-pack config (`--policy-config FILE`, the file `pulumi preview --policy-pack-config` takes),
read and handed to the pack the way the CLI does, so an enforcement level means the same offline.

The CLI (pulumi/pulumi v3.259.0, pkg/resource/analyzer/config.go): the file is a JSON object; an
empty file is no config (93-100); a value is a valid enforcement level as text, or an object with an
optional, valid `enforcementLevel` and the policy's properties (121-147, 162-180); the result starts
from each policy's default level from GetAnalyzerInfo (276-301), then the pack's initial config,
then the file, where `all` sets every policy's level first (307-372); it is sent whole through
`Configure` (pkg/engine/update.go:1015-1042 for a local `--policy-pack`,
pkg/resource/plugin/analyzer_plugin.go:612-641, which refuses an entry without a valid level).

Not modelled, because this pack has neither: per-policy config schemas (their defaults and
validation) and an initial config. Stricter than the CLI, because offline a silent no-op is worse
than an error: a policy name the pack does not have is an error here (the CLI ignores it), and
`environments` (Pulumi ESC references, resolved by Pulumi Cloud) cannot be resolved offline.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2
from pulumi.runtime.proto import analyzer_pb2

from preview.stack_file import json_error

LEVELS = ("advisory", "mandatory", "remediate", "disabled")
_TO_PROTO = {
    "advisory": analyzer_pb2.ADVISORY,
    "mandatory": analyzer_pb2.MANDATORY,
    "remediate": analyzer_pb2.REMEDIATE,
    "disabled": analyzer_pb2.DISABLED,
}
FROM_PROTO = {value: name for name, value in _TO_PROTO.items()}
ALL = "all"


@dataclass(frozen=True)
class PolicyConfig:
    level: str  # "" when the entry sets only properties
    properties: Mapping[str, Any]


# Nesting the pack never needs; deeper objects only risk the recursion limit of both analyzers.
MAX_DEPTH = 32


def _depth(value: Any, limit: int) -> int:
    if limit < 0:
        return 0
    if isinstance(value, dict):
        return 1 + max((_depth(v, limit - 1) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v, limit - 1) for v in value), default=0)
    return 0


def _not_json(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"{text[:40]} is beyond the largest number JSON readers take")
    return value


def parse(text: str, flag: str) -> dict[str, PolicyConfig]:
    """The file's entries by policy name. Every mistake is a ValueError that starts with `flag`."""
    if not text.strip():
        return {}
    try:
        # The CLI reads this file with Go's encoding/json, which has no NaN or Infinity (and 1e999
        # overflows): refused here too, not passed to the pack as a number protobuf cannot carry.
        raw = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"{flag}: not JSON ({json_error(exc)})") from None
    if _depth(raw, MAX_DEPTH + 1) > MAX_DEPTH:
        raise ValueError(f"{flag}: nested deeper than {MAX_DEPTH} levels; a policy's config is a flat object")
    if not isinstance(raw, dict):
        raise ValueError(
            f'{flag}: must be a JSON object of policy -> level, e.g. {{"cluster-endpoint-private": "disabled"}}'
        )
    if "environments" in raw:
        raise ValueError(
            f"{flag}: 'environments' names Pulumi ESC environments, which only Pulumi Cloud resolves; "
            "the offline preview cannot read them (remove the key, or run pulumi preview)"
        )
    found = {}
    for name, value in raw.items():
        if isinstance(value, str):
            level, properties, where = value, {}, name
        elif isinstance(value, dict):
            properties = {k: v for k, v in value.items() if k != "enforcementLevel"}
            level, where = value.get("enforcementLevel"), f"{name}.enforcementLevel"
            if level is None:
                level = ""
            elif level not in LEVELS:
                raise ValueError(
                    f"{flag}: {where}: {_shown(level)} is not an enforcement level (valid: {', '.join(LEVELS)})"
                )
        else:
            raise ValueError(
                f"{flag}: {name}: {_shown(value)} is neither an enforcement level nor an object "
                f'(e.g. "advisory" or {{"enforcementLevel": "advisory"}})'
            )
        if isinstance(value, str) and level not in LEVELS:
            raise ValueError(
                f"{flag}: {where}: {_shown(level)} is not an enforcement level (valid: {', '.join(LEVELS)})"
            )
        if level or properties:
            found[name] = PolicyConfig(level, properties)
    return found


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(config: Mapping[str, PolicyConfig], policies: list[str], flag: str) -> None:
    unknown = sorted(set(config) - set(policies) - {ALL})
    if unknown:
        raise ValueError(
            f"{flag}: {unknown[0]!r} is not a policy of the pack (valid: {', '.join(sorted(policies))}, "
            f"or '{ALL}'); pulumi preview would ignore it silently"
        )
    if ALL in config and not config[ALL].level:
        raise ValueError(f"{flag}: {ALL}: sets no enforcementLevel (valid: {', '.join(LEVELS)})")


def configure_request(
    info: analyzer_pb2.AnalyzerInfo, config: Mapping[str, PolicyConfig]
) -> analyzer_pb2.ConfigureAnalyzerRequest:
    """Every policy's level (its default, then `all`, then its own entry) and properties."""
    levels = {p.name: FROM_PROTO[p.enforcementLevel] for p in info.policies}
    properties: dict[str, dict[str, Any]] = {name: {} for name in levels}
    everything = config.get(ALL)
    if everything is not None and everything.level:
        levels = dict.fromkeys(levels, everything.level)
    for name, entry in config.items():
        if entry.level:
            levels[name] = entry.level
        properties.setdefault(name, {}).update(entry.properties)
        levels.setdefault(name, "")
    request = analyzer_pb2.ConfigureAnalyzerRequest()
    for name in sorted(levels):
        if not levels[name]:
            # The CLI refuses this too ("invalid enforcement level"): only `all` can get here.
            raise ValueError(f"{name}: sets no enforcementLevel (valid: {', '.join(LEVELS)})")
        props = struct_pb2.Struct()
        props.update(properties.get(name) or {})
        request.policyConfig[name].CopyFrom(
            analyzer_pb2.PolicyConfig(enforcementLevel=_TO_PROTO[levels[name]], properties=props)
        )
    return request
