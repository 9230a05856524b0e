"""Every policy is declared once, where its rule is written: name, enforcement level, what it checks
(the description the CLI shows with each violation), and for a resource policy the resource types
it reads. The pack (`policy/pack.py`) serves what is declared, in declaration order; the policy
table of docs/policy-pack.md is generated from the same declarations (`make docs`).

A rule about one resource's own facts is a resource policy: the engine runs it before that
resource's step, also under `pulumi up --skip-preview`, so a violation stops the update before the
resource exists. Only a rule across resources is a stack policy, which the engine runs once all
steps are done (pulumi/pulumi v3.259.0, pkg/resource/deploy/step_generator.go:1401-1469, 3439-3561).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pulumi_policy import EnforcementLevel, ResourceValidationPolicy, StackValidationPolicy

Policy = ResourceValidationPolicy | StackValidationPolicy


@dataclass(frozen=True)
class Targets:
    """The resource types a resource policy reads, and how docs/policy-pack.md names them."""

    label: str
    matches: Callable[[str], bool]


def types(*names: str) -> Targets:
    short = ", ".join(f"`{n.rsplit(':', 1)[-1]}`" for n in names)
    return Targets(short, lambda type_: type_ in names)


@dataclass(frozen=True)
class Declaration:
    policy: Policy
    targets: Targets | None  # None: a stack policy
    module: str  # where it is declared: the pack orders policies by module, whatever the import order

    @property
    def kind(self) -> str:
        return "stack" if self.targets is None else "resource"


DECLARED: list[Declaration] = []


def declared_in(modules) -> list[Declaration]:
    """The declarations of these modules, module by module, each in its declaration order."""
    return [d for m in modules for d in DECLARED if d.module == m.__name__]


def _known(name: str) -> None:
    if any(d.policy.name == name for d in DECLARED):
        raise ValueError(f"policy {name!r} is declared twice")


def resource_policy(name: str, level: EnforcementLevel, description: str, targets: Targets, fix: str):
    """Declares `validate(args, report_violation)` as a resource policy that sees only `targets`;
    `fix` says what to change (the stack keys, or that the program is at fault)."""

    def declare(validate) -> ResourceValidationPolicy:
        _known(name)

        def on_targets(args, report_violation) -> None:
            if targets.matches(args.resource_type):
                validate(args, report_violation)

        policy = ResourceValidationPolicy(
            name=name, description=description, enforcement_level=level, validate=on_targets, remediation_steps=fix
        )
        DECLARED.append(Declaration(policy, targets, validate.__module__))
        return policy

    return declare


def stack_policy(name: str, level: EnforcementLevel, description: str, fix: str):
    """Declares `validate(args, report_violation)` as a stack policy; `fix` as for resource_policy."""

    def declare(validate) -> StackValidationPolicy:
        _known(name)
        policy = StackValidationPolicy(
            name=name, description=description, enforcement_level=level, validate=validate, remediation_steps=fix
        )
        DECLARED.append(Declaration(policy, None, validate.__module__))
        return policy

    return declare
