"""The offline answers to the EKS AMI parameters, generated from gpu_platform/catalog/eks_amis.yaml (what AWS
published, read from amazon-eks-ami's CHANGELOG) into fixtures/eks_ami_parameters.yaml, so that no
answer is typed by hand: `make docs` rewrites the file, `make lint` (python -m preview.docs --check)
fails when it no longer matches the data.

An AMI id differs per region and is not in the CHANGELOG; offline, each AMI's id is derived from its
name, so one AMI has one id everywhere in a report and a new release has a new id. `recommended`
answers the newest release's AMI, as AWS's parameter does.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import yaml

from gpu_platform.catalog import eks_amis, yaml_files

FILE = Path(__file__).with_name("fixtures") / "eks_ami_parameters.yaml"
PREFIX = "/aws/service/eks/optimized-ami/"
REGENERATE = "make docs"


def ami_id(ami_name: str) -> str:
    """The offline id of an EKS AMI, derived from its name."""
    return "ami-" + hashlib.sha256(ami_name.encode()).hexdigest()[:17]


def parameter(minor: str, flavour: str, which: str) -> str:
    """`which`: an AMI name, or `recommended`."""
    return f"{PREFIX}{minor}/amazon-linux-2023/x86_64/{flavour}/{which}/image_id"


def generate() -> dict[str, dict[str, dict[str, str]]]:
    """minor -> flavour -> (`recommended` or an AMI name) -> the id its parameter answers: every
    parameter the data says AWS publishes."""
    generated: dict[str, dict[str, dict[str, str]]] = {}
    for minor, flavours in eks_amis.published().items():
        for flavour, releases in flavours.items():
            names = [eks_amis.ami_name(flavour, minor, release) for release in releases]
            generated.setdefault(minor, {})[flavour] = {
                "recommended": ami_id(names[0]),
                **{n: ami_id(n) for n in names},
            }
    return generated


def _flattened(generated: dict[str, dict[str, dict[str, str]]]) -> dict[str, str]:
    return {
        parameter(minor, flavour, which): ami
        for minor, flavours in generated.items()
        for flavour, amis in flavours.items()
        for which, ami in amis.items()
    }


def render() -> str:
    source = eks_amis.source()
    header = (
        f"# Generated from gpu_platform/catalog/eks_amis.yaml ({source['repository']} {source['file']} at {source['commit'][:12]}) "
        f"by `{REGENERATE}`; do not edit.\n"
        "# The answer of each EKS-optimized AL2023 x86_64 AMI parameter AWS publishes (SSM GetParameter), offline:\n"
        "# the AMI id is derived from the AMI name (preview/offline/eks_ami_answers.py); `recommended` is the newest release.\n"
        "# <minor>: <flavour>: <recommended | AMI name>: id answers\n"
        f"# {PREFIX}<minor>/amazon-linux-2023/x86_64/<flavour>/<recommended | AMI name>/image_id\n"
    )
    return header + yaml.safe_dump({"parameters": generate()}, sort_keys=False, width=200)


def stale() -> list[str]:
    try:
        current = FILE.read_text()
    except FileNotFoundError:
        return [f"{FILE.name}: missing"]
    return [] if current == render() else [f"preview/offline/fixtures/{FILE.name}: the offline AMI answers are stale"]


def write() -> None:
    FILE.write_text(render())


@functools.cache
def answers() -> dict[str, str]:
    """Parameter path -> the id it answers, as the generated file has them."""
    return _flattened(yaml_files.load(FILE.read_text())["parameters"])
