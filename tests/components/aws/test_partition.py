"""ARNs the program builds come from the account's partition (aws, aws-cn, aws-us-gov), asked once in
discovery: an `arn:aws:` policy does not exist in China or GovCloud, and attaching it fails."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from preview.offline import aws_answers, engine
from tests.conftest import stack_config, write_stack

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
    return [
        s
        for r in recording.resources
        for s in strings(r.inputs)
        if s.startswith("arn:") and any(k in s for k in AWS_OWNED)
    ]


REGIONS = {"aws-cn": "cn-north-1", "aws-us-gov": "us-gov-west-1"}


@pytest.fixture(params=sorted(REGIONS))
def other_partition(request) -> str:
    return request.param


def test_the_offline_partition_follows_the_region():
    # botocore partitions.json's region patterns (gpu_platform/catalog/aws_limits.yaml).
    assert [aws_answers.partition_of(r) for r in ("us-west-2", "cn-north-1", "cn-northwest-1", "us-gov-east-1")] == [
        "aws",
        "aws-cn",
        "aws-cn",
        "aws-us-gov",
    ]


def test_every_policy_arn_starts_with_the_accounts_partition(other_partition, tmp_path):
    config = stack_config("dev")
    config["aws:region"] = REGIONS[other_partition]
    config["gpu-platform:cluster"]["admins"] = [f"arn:{other_partition}:iam::123456789012:role/gpu-platform-deployer"]
    recording = engine.run(write_stack(tmp_path, config, name="dev"))
    arns = aws_owned_arns(recording)
    # node role (2), image builder role (1 AWS-owned), control plane (1), VPC CNI (1), each attached and
    # listed again as the role's exclusive set, and the admin's cluster-admin access (1)
    assert len(arns) == 2 * 5 + 1
    assert [a for a in arns if not a.startswith(f"arn:{other_partition}:")] == []
    # The build role's own policy and every trust and key policy ARN name the partition too.
    own = [
        a.inputs["policyArn"]
        for a in recording.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
        if ":iam::aws:" not in a.inputs["policyArn"]
    ]
    assert own and all(a.startswith(f"arn:{other_partition}:iam::123456789012:policy/") for a in own)
    key = recording.one("aws:kms/key:Key", "gpu-cluster-secrets").inputs["policy"]
    assert f"arn:{other_partition}:iam::123456789012:root" in key and "arn:aws:" not in key
    trust = recording.one("aws:iam/role:Role", "gpu-cluster-control-plane").inputs["assumeRolePolicy"]
    assert f"arn:{other_partition}:eks:" in trust and "arn:aws:" not in trust
    (entry,) = recording.of_type("aws:eks/accessEntry:AccessEntry")
    assert entry.inputs["principalArn"].startswith(f"arn:{other_partition}:iam::")


def test_the_shipped_stacks_use_the_aws_partition(dev, prod):
    for recording in (dev, prod):
        arns = aws_owned_arns(recording)
        assert arns and all(a.startswith("arn:aws:") for a in arns)
