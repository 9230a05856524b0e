"""gpu-platform:audit: the owner and approval are tagged on AWS resources as written, without the
spaces around them, and an approved ledger is the hash the preview prints."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from gpu_platform.config.audit import Audit


def test_the_owner_and_approval_are_kept_without_surrounding_spaces():
    audit = Audit.model_validate({"owner": "  ml-platform ", "approval": "SEC-1042\t"})
    assert (audit.owner, audit.approval) == ("ml-platform", "SEC-1042")


def test_an_approved_ledger_is_sha256_and_64_lowercase_hex_digits():
    given = {"owner": "ml-platform", "approval": "SEC-1042"}
    approved = "sha256:" + "0a" * 32
    assert Audit.model_validate({**given, "approvedLedger": approved}).approved_ledger == approved
    with pytest.raises(ValidationError, match="is not a privilege ledger hash"):
        Audit.model_validate({**given, "approvedLedger": "sha256:" + "0a" * 31})
