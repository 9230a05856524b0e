"""The offline EKS AMI answers are generated from what AWS published (gpu_platform/catalog/eks_amis.yaml):
regenerating them changes nothing, each answer traces to a published AMI, and nothing else answers."""

from __future__ import annotations

import re

import yaml

from gpu_platform.catalog import eks_amis
from preview.offline import aws_answers, eks_ami_answers

SSM = "aws:ssm/getParameter:getParameter"


def _ask(name: str):
    return aws_answers.answer(SSM, {"name": name}, {})


def test_the_committed_answers_are_what_the_data_generates():
    assert eks_ami_answers.FILE.read_text() == eks_ami_answers.render()
    assert eks_ami_answers.stale() == []


def test_data_that_changed_makes_the_answers_stale(monkeypatch):
    published = {minor: dict(flavours) for minor, flavours in eks_amis.published().items()}
    published["1.33"]["standard"] = published["1.33"]["standard"][1:]  # the newest 1.33 release withdrawn
    monkeypatch.setattr(eks_amis, "published", lambda: published)
    assert eks_ami_answers.stale() == [
        "preview/offline/fixtures/eks_ami_parameters.yaml: the offline AMI answers are stale"
    ]


def test_every_answer_is_a_published_ami_and_recommended_is_the_newest():
    document = yaml.safe_load(eks_ami_answers.FILE.read_text())["parameters"]
    names = set()
    for minor, flavours in document.items():
        for flavour, amis in flavours.items():
            releases = eks_amis.releases(minor, flavour)
            newest = f"amazon-eks-node-al2023-x86_64-{flavour}-{minor}-{releases[0]}"
            assert amis["recommended"] == amis[newest], (minor, flavour)
            assert set(amis) - {"recommended"} == {
                f"amazon-eks-node-al2023-x86_64-{flavour}-{minor}-{r}" for r in releases
            }
            for name, ami in amis.items():
                assert re.fullmatch(r"ami-[0-9a-f]{17}", ami), name
            names |= {ami for name, ami in amis.items() if name != "recommended"}
    assert len(names) == sum(len(eks_amis.releases(m, f)) for m in eks_amis.published() for f in eks_amis.FLAVOURS)


def test_the_program_gets_the_generated_answer_for_a_published_release_and_not_found_otherwise():
    path = (
        "/aws/service/eks/optimized-ami/1.28/amazon-linux-2023/x86_64/standard/"
        "amazon-eks-node-al2023-x86_64-standard-1.28-v20251112/image_id"
    )
    answer, failures = _ask(path)
    assert failures == []
    assert (
        answer["value"]
        == yaml.safe_load(eks_ami_answers.FILE.read_text())["parameters"]["1.28"]["standard"][
            "amazon-eks-node-al2023-x86_64-standard-1.28-v20251112"
        ]
    )
    # v20260714 lists 1.30 and newer only; v20260311 was abandoned.
    for missing in (
        "1.28/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.28-v20260714",
        "1.33/amazon-linux-2023/x86_64/standard/amazon-eks-node-al2023-x86_64-standard-1.33-v20260311",
        "1.33/amazon-linux-2023/arm64/standard/recommended",
    ):
        answer, failures = _ask(f"/aws/service/eks/optimized-ami/{missing}/image_id")
        assert answer == {} and failures and failures[0][1].startswith("ParameterNotFound:"), missing
