"""gpu-platform:audit: who owns the privileged software the stack deploys, and the approval (with
the privilege ledger it covered) that lets it run."""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from gpu_platform.catalog import aws_limits
from gpu_platform.config.errors import ConfigProblem, shown
from gpu_platform.config.section import Section
from gpu_platform.privileges import ledger


class Audit(Section):
    # Both become tags of every AWS resource that runs the driver, IAM roles among them.
    owner: str = Field(
        min_length=1,
        description="The team that owns the privileged software: tagged on every resource that runs the driver.",
    )
    approval: str = Field(
        min_length=1, description="The security approval's record (e.g. SEC-1042): tagged beside the owner."
    )
    # The program writes it on the operands' namespace, and the policy pack refuses a stack whose
    # ledger has moved since (policy/audit.py).
    approved_ledger: str | None = Field(
        default=None,
        alias="approvedLedger",
        description="The privilege ledger hash the approval covered (sha256:..., as `python -m preview` prints it). "
        "The policy pack refuses a stack whose ledger differs.",
    )

    @field_validator("approved_ledger", mode="before")
    @classmethod
    def _ledger_hash(cls, value: Any) -> Any:
        if not isinstance(value, str) or not ledger.HASH.fullmatch(value):
            raise ConfigProblem(
                f"{shown(value)} is not a privilege ledger hash: give 'sha256:' and 64 lowercase hex "
                'digits, as `python -m preview --stack NAME` prints it ("Privilege ledger: '
                'sha256:...")'
            )
        return value

    @field_validator("owner", "approval")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ConfigProblem("must not be blank: the audit trail names a real owner and approval")
        problem = aws_limits.tag_value_problem(value.strip())
        if problem:
            raise ConfigProblem(f"{shown(value)} {problem}")
        return value.strip()
