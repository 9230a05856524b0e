"""ARNs the program builds come from the account's partition (aws, aws-cn, aws-us-gov), asked once in
discovery: an `arn:aws:` policy does not exist in China or GovCloud, and attaching it fails."""

from __future__ import annotations

import copy
from typing import Any, Iterator

import pytest

from preview import aws_answers, engine

# AWS-owned policies: IAM managed policies (arn:<p>:iam::aws:policy/...) and EKS access policies
# (arn:<p>:eks::aws:cluster-access-policy/...): the account field is "aws".
AWS_OWNED = ("iam::aws:policy/", "eks::aws:cluster-access-policy/")


def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings(item)


def aws_owned_arns(recording: engine.Recording) -> list[str]:
    return [s for r in recording.resources for s in strings(r.inputs) if s.startswith("arn:") and any(k in s for k in AWS_OWNED)]


@pytest.fixture(params=["aws-cn", "aws-us-gov"])
def other_partition(request, monkeypatch) -> str:
    """The offline answers of an account in another partition (GetPartition, and the caller's ARN)."""
    fixtures = copy.deepcopy(aws_answers._fixtures())
    fixtures["partition"] = request.param
    monkeypatch.setattr(aws_answers, "_fixtures", lambda: fixtures)
    return request.param


def test_every_policy_arn_starts_with_the_accounts_partition(other_partition):
    recording = engine.run(engine.stack_file("dev"))
    arns = aws_owned_arns(recording)
    # node role (3), image builder role (2), control plane (1), the runner's cluster-admin access (1)
    assert len(arns) == 7
    assert [a for a in arns if not a.startswith(f"arn:{other_partition}:")] == []
    (entry,) = recording.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["principalArn"].startswith(f"arn:{other_partition}:iam::")


def test_the_shipped_stacks_use_the_aws_partition(dev, prod):
    for recording in (dev, prod):
        arns = aws_owned_arns(recording)
        assert arns and all(a.startswith("arn:aws:") for a in arns)
