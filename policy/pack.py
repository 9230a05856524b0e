"""The pack: every declared policy, module by module in the order below (the order the pack serves
them and docs/policy-pack.md lists them). Enforcement levels are each policy's own; `--policy-pack-config` (and the offline preview's
`--policy-config`) changes them per policy."""

from pulumi_policy import EnforcementLevel

from policy import (
    admission,
    audit,
    compatibility,
    consistency,
    dra,
    gpu,
    iam,
    images,
    lifecycle,
    node_security,
    runtime,
    scheduling,
)
from policy.declare import declared_in

NAME = "gpu-platform"
# Resource policies first (checked before each resource's step), then stack policies (at the end).
MODULES = (
    compatibility,
    lifecycle,
    gpu,
    images,
    audit,
    node_security,
    iam,
    scheduling,
    runtime,
    dra,
    admission,
    consistency,
)
DECLARATIONS = sorted(declared_in(MODULES), key=lambda d: d.kind == "stack")  # stable: module order within each kind
POLICIES = [d.policy for d in DECLARATIONS]
# Every policy states its own level; this is only the default for one that would not.
ENFORCEMENT_LEVEL = EnforcementLevel.MANDATORY
