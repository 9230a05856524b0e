"""AWS's own limits and rules for what the stack asks AWS to create, read from aws_limits.yaml (each
row with its source): the regions of each partition, the nodes a managed node group may have, what
an IAM tag value may hold, the instance families whose accelerators the baked NVIDIA data-center
driver does not serve. The config model and discovery turn them into errors before anything is
registered, so AWS never refuses halfway through an update."""

from __future__ import annotations

import functools
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpu_platform.catalog import yaml_files

DATA = Path(__file__).with_name("aws_limits.yaml")
# IAM's tag value pattern [\p{L}\p{Z}\p{N}_.:/=+\-@]* (botocore iam service-2 tagValueType): Python's
# `re` has no Unicode property classes, so the categories are checked by name.
_TAG_CATEGORIES = ("L", "Z", "N")
_TAG_PUNCTUATION = set("_.:/=+-@")


@functools.cache
def _data() -> dict[str, Any]:
    return yaml_files.load(DATA.read_text())


@functools.cache
def regions() -> dict[str, str]:
    """Region name -> its partition (aws, aws-cn, aws-us-gov)."""
    return {row["region"]: row["partition"] for row in _data()["regions"]}


def partition_of(region: str) -> str | None:
    """A region's partition, or None for a name no partition lists. AWS's region-name patterns
    would take typos too (us-wset-2 fits `(us|eu|...)-\\w+-\\d+`), so only the list counts; a
    region AWS opened after the data is added to aws_limits.yaml."""
    return regions().get(region)


@functools.cache
def nodes_per_node_group() -> int:
    """The default quota of nodes per managed node group (adjustable in Service Quotas)."""
    (row,) = [q for q in _data()["eks"]["quotas"] if q["quota"] == "Nodes per managed node group"]
    return int(row["default"])


@functools.cache
def node_group_quota_code() -> str:
    return _quota("Nodes per managed node group")["code"]


def _quota(name: str) -> dict[str, Any]:
    (row,) = [q for q in _data()["eks"]["quotas"] if q["quota"] == name]
    return row


def node_groups_per_cluster() -> tuple[int, str]:
    """The default quota of managed node groups per cluster, and its Service Quotas code."""
    row = _quota("Managed node groups per cluster")
    return int(row["default"]), row["code"]


def public_access_cidrs_per_cluster() -> tuple[int, str]:
    """The quota of public endpoint CIDR blocks per cluster (not adjustable), and its code."""
    row = _quota("Public endpoint access CIDR ranges per cluster")
    return row["default"], row["code"]


def tag_value_problem(value: str) -> str | None:
    """Why IAM (the strictest service the stack tags) would refuse `value` as a tag value, or None:
    at most 256 characters of letters, spaces, digits and _ . : / = + - @, not starting with aws:."""
    if len(value) > 256:
        return f"is {len(value)} characters long; AWS tag values hold at most 256"
    bad = sorted({c for c in value if c not in _TAG_PUNCTUATION and unicodedata.category(c)[0] not in _TAG_CATEGORIES})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        return f"holds {shown}, which AWS tag values refuse (letters, digits, spaces and _ . : / = + - @ only)"
    if value.lower().startswith("aws:"):
        return "starts with aws:, which AWS reserves for its own tags"
    return None


@dataclass(frozen=True)
class Accelerator:
    family: str
    accelerator: str
    driver: str


@functools.cache
def _accelerators() -> dict[str, Accelerator]:
    return {
        row["family"]: Accelerator(row["family"], row["accelerator"], row["driver"])
        for row in _data()["non_nvidia_datacenter_accelerators"]
        if "accelerator" in row
    }


def non_nvidia_accelerator(instance_type: str) -> Accelerator | None:
    """What an instance family carries instead of an NVIDIA data-center GPU, when the data knows."""
    return _accelerators().get(instance_type.split(".", 1)[0])


@functools.cache
def _older_nvidia() -> dict[str, str]:
    return {row["family"]: row["gpu"] for row in _data()["nvidia_gpus_older_than_the_matrix"]}


def older_nvidia_gpu(instance_type: str) -> str | None:
    """The NVIDIA GPU of an instance family older than every GPU the platform supports, or None."""
    return _older_nvidia().get(instance_type.split(".", 1)[0])


def efa_by_default(instance_type: str, gpus: int) -> bool:
    """Whether a pool of this type gets EFA unless it says `efa: false`: a whole-node size of a family
    built for multi-node training (aws_limits.yaml efa)."""
    efa = _data()["efa"]
    return instance_type.split(".", 1)[0] in efa["multi_node_families"] and gpus >= efa["multi_node_gpus"]


def efa_vpc_cni_minimum() -> str:
    return str(_data()["efa"]["vpc_cni_minimum_for_efa_only"])


def eks_addon_registry(region: str) -> str | None:
    """The ECR registry of AWS's EKS add-on images in a region (aws_limits.yaml eks_addon_registries)."""
    return _data()["eks_addon_registries"].get(region)


def efa_device_plugin() -> dict[str, str]:
    return dict(_data()["efa_device_plugin"])


def efa_in_standard_ami_from() -> str:
    """The first EKS AMI release whose standard AL2023 image has the EFA driver (aws_limits.yaml efa)."""
    return str(_data()["efa"]["standard_ami_from_release"])
