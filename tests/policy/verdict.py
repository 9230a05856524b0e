"""Calls a policy the way the engine does (stack policies once, resource policies per resource) and
collects (message, urn) pairs."""

from __future__ import annotations

from pulumi_policy import ResourceValidationArgs, StackValidationArgs, StackValidationPolicy


def violations(policy, resources) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    if isinstance(policy, StackValidationPolicy):
        policy.validate(StackValidationArgs(resources), lambda message, urn=None: found.append((message, urn)))
        return found
    for r in resources:
        args = ResourceValidationArgs(r.resource_type, r.props, r.urn, r.name, r.opts, None)
        policy.validate(args, lambda message, urn=None, _urn=r.urn: found.append((message, urn or _urn)))
    return found
