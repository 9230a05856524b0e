"""What discovery tells a user when AWS refuses a lookup: AWS's answer, not the SDK's wrapping."""

from __future__ import annotations

import pytest

from components.aws.discovery import aws_said


@pytest.mark.parametrize(
    "raw, said",
    [
        (
            "invoke of aws:ec2/getSubnet:getSubnet failed: InvalidSubnetID.NotFound: the subnet ID 'x' does not exist ()",
            "InvalidSubnetID.NotFound: the subnet ID 'x' does not exist",
        ),
        (
            (
                "invoke of aws:ssm/getParameter:getParameter failed: invocation of aws:ssm/getParameter:getParameter returned an "
                "error: ParameterNotFound: /aws/x"
            ),
            "ParameterNotFound: /aws/x",
        ),
        ("plain text", "plain text"),
    ],
)
def test_the_sdks_wrapping_is_taken_off(raw, said):
    assert aws_said(Exception(raw)) == said
