"""Run the policy pack over a recording, as the engine's analyzer would: the same policy objects,
handed the same resource inputs (custom resources only; providers and components are not analyzed).
Enforcement levels can be overridden per policy with the standard policy-pack config format
(`{"<policy>": "advisory"}` or `{"<policy>": {"enforcementLevel": "disabled"}}`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pulumi.runtime import rpc
from pulumi_policy import (
    EnforcementLevel,
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from preview.engine import Recording


@dataclass(frozen=True)
class Violation:
    policy: str
    enforcement_level: str
    urn: str
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"policy": self.policy, "enforcementLevel": self.enforcement_level, "urn": self.urn, "message": self.message}


def _plain(value: Any) -> Any:
    """Secrets unwrapped and whole numbers as ints, as policies get them from the engine."""
    if rpc.is_rpc_secret(value):
        return _plain(rpc.unwrap_rpc_secret(value))
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def policy_resources(recording: Recording) -> list[PolicyResource]:
    options = lambda r: PolicyResourceOptions(  # noqa: E731
        protect=False, ignore_changes=list(r.ignore_changes), delete_before_replace=None, aliases=[],
        custom_timeouts=PolicyCustomTimeouts(0, 0, 0), additional_secret_outputs=[], parent=r.parent or None,
    )
    return [
        PolicyResource(
            resource_type=r.type, props=_plain(r.inputs), urn=r.urn, name=r.name, opts=options(r),
            provider=None, parent=None, dependencies=[], property_dependencies={},
        )
        for r in sorted(recording.resources, key=lambda r: r.urn)
        if r.custom and not r.is_provider
    ]


def load_policy_config(path: Optional[Path], policies: list) -> dict[str, str]:
    """Policy name -> enforcement level from a policy-pack config file. Every mistake (not a file,
    not JSON, an unknown policy, an unknown level) is a ValueError naming the file and the key."""
    if path is None:
        return {}
    flag = f"--policy-config {path}"
    if not path.is_file():
        raise ValueError(f"{flag}: no such file")
    try:
        raw = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{flag}: not JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise ValueError(f'{flag}: must be a JSON object of policy -> level, e.g. {{"cluster-endpoint-private": "disabled"}}')
    known = sorted(p.name for p in policies)
    valid_levels = [level.value for level in EnforcementLevel]
    levels = {}
    for name, value in raw.items():
        if name not in known:
            raise ValueError(f"{flag}: {name!r} is not a policy of the pack (valid: {', '.join(known)})")
        level = value.get("enforcementLevel") if isinstance(value, dict) else value
        if level not in valid_levels:
            raise ValueError(f"{flag}: {name}: {level!r} is not an enforcement level (valid: {', '.join(valid_levels)})")
        levels[name] = level
    return levels


def analyze(recording: Recording, policies: list, levels: Optional[dict[str, str]] = None) -> list[Violation]:
    levels = levels or {}
    resources = policy_resources(recording)
    found: list[Violation] = []
    for policy in policies:
        level = levels.get(policy.name, (policy.enforcement_level or EnforcementLevel.MANDATORY).value)
        if level == EnforcementLevel.DISABLED.value:
            continue

        def report(message: str, urn: Optional[str] = None, _policy=policy, _default="") -> None:
            found.append(Violation(_policy.name, level, urn or _default, message))

        if isinstance(policy, StackValidationPolicy):
            policy.validate(StackValidationArgs(resources), report)
        elif isinstance(policy, ResourceValidationPolicy):
            for r in resources:
                args = ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, r.opts, None)
                policy.validate(args, lambda message, urn=None, _urn=r.urn: report(message, urn or _urn))
    return sorted(set(found), key=lambda v: (v.policy, v.urn, v.message))
