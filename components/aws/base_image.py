"""The image a node image is baked on: the EKS-optimized AL2023 x86_64 AMI of one pinned EKS AMI
release (awslabs/amazon-eks-ami), never AWS's moving `recommended` pointer. The release comes from
the stack (`nodeImage.baseImageRelease`) or from the per-minor defaults in
gpu_platform/catalog/eks_ami_releases.yaml, each row with its source."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from gpu_platform import catalog
from gpu_platform.catalog import yaml_files

RELEASES = Path(catalog.__file__).with_name("eks_ami_releases.yaml")
KEY = "gpu-platform:nodeImage.baseImageRelease"


@dataclass(frozen=True)
class BaseImage:
    release: str  # an amazon-eks-ami release tag, e.g. v20260714
    ami_id: str


@functools.cache
def default_releases() -> dict[str, str]:
    """Kubernetes minor -> the release a stack on that minor bakes on unless it pins one."""
    rows = yaml_files.load(RELEASES.read_text())["defaults"]
    return {minor: row["release"] for minor, row in rows.items()}


def release_for(kubernetes_version: str, pinned: str | None) -> str | None:
    return pinned or default_releases().get(kubernetes_version)


def parameter(kubernetes_version: str, release: str, flavour: str = "standard") -> str:
    """The public SSM parameter holding that release's AMI id in the stack's region.

    AWS documents `/aws/service/eks/optimized-ami/<k8s>/amazon-linux-2023/x86_64/standard/recommended/image_id`
    (EKS User Guide, "Retrieve recommended Amazon Linux AMI IDs"); a release is published next to it
    with `recommended` replaced by the AMI name `amazon-eks-node-al2023-x86_64-standard-<k8s>-<release>`,
    the path Karpenter resolves for a pinned `al2023@<release>` alias (aws/karpenter-provider-aws,
    pkg/providers/amifamily/al2023.go, `resolvePath`; karpenter.sh "Managing AMIs" recommends the pin).
    The accelerated image of a release is published the same way under the `nvidia` flavour
    (`.../x86_64/nvidia/amazon-eks-node-al2023-x86_64-nvidia-<k8s>-<release>/image_id`), its AMI name
    as the release's CHANGELOG entry lists it (gpu_platform/catalog/matrix.yaml eksNvidiaAmis).
    """
    name = f"amazon-eks-node-al2023-x86_64-{flavour}-{kubernetes_version}-{release}"
    return f"/aws/service/eks/optimized-ami/{kubernetes_version}/amazon-linux-2023/x86_64/{flavour}/{name}/image_id"
