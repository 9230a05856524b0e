"""The principals an EKS access entry takes (IAM User Guide, "IAM identifiers"; EKS User Guide,
"Create access entries")."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from gpu_platform.config.iam_principals import IamPrincipal, principal_key


def test_two_arns_that_differ_in_path_or_case_only_name_one_principal():
    # IAM names are unique per account whatever the path, and not case-sensitive.
    by_path = principal_key("arn:aws:iam::123456789012:role/ops/Platform-Admins")
    assert by_path == "aws 123456789012 role platform-admins"
    assert principal_key("arn:aws:iam::123456789012:role/platform-admins") == "aws 123456789012 role platform-admins"
    assert principal_key("arn:aws:iam::123456789012:user/platform-admins") == "aws 123456789012 user platform-admins"


def test_a_service_linked_role_is_refused():
    # EKS refuses an access entry for a service-linked role (EKS User Guide, "Create access entries").
    arn = "arn:aws:iam::123456789012:role/aws-service-role/eks.amazonaws.com/AWSServiceRoleForAmazonEKS"
    with pytest.raises(ValidationError, match="is a service-linked role, which EKS access entries refuse"):
        TypeAdapter(IamPrincipal).validate_python(arn)
