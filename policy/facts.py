"""What resources declare about themselves (tags, labels, annotations the program writes), read from
their properties alone, never from the program's own objects."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gpu_platform.catalog import matrix
from gpu_platform.interface import contract
from gpu_platform.interface.props import dig, mapping, sequence, strings, text

# The types the pack's modules name as facts.X (EKS_CLUSTER, NAMESPACE among them: re-exported).
from gpu_platform.interface.resource_types import (  # noqa: F401
    EKS_CLUSTER,
    EKS_NODE_GROUP as NODE_GROUP,
    IMAGE,
    LAUNCH_TEMPLATE,
    NAMESPACE,
)

GPU_NODE_TYPES = (IMAGE, LAUNCH_TEMPLATE, NODE_GROUP)
BAKED = "bake"

# The facts each GPU resource declares, so that the policies checked on it can decide (a missing
# fact would make them skip it): policy/audit.py requires them with the audit tags.
DECLARED_TAGS = {
    IMAGE: (
        contract.DRIVER_VERSION_TAG,
        contract.KUBERNETES_VERSION_TAG,
        contract.OPERATOR_RELEASE_KEY,
        contract.CUDA_VERSIONS_KEY,
        contract.IMAGE_SOURCE_TAG,
        contract.TOOLKIT_BAKED_TAG,
        contract.GPU_MODELS_TAG,
    ),
    LAUNCH_TEMPLATE: (
        contract.DRIVER_VERSION_TAG,
        contract.KUBERNETES_VERSION_TAG,
        contract.OPERATOR_RELEASE_KEY,
        contract.CUDA_VERSIONS_KEY,
        contract.IMAGE_SOURCE_TAG,
        contract.GPU_MODEL_TAG,
        contract.POOL_LABEL,
    ),
    NODE_GROUP: (
        contract.DRIVER_VERSION_TAG,
        contract.KUBERNETES_VERSION_TAG,
        contract.OPERATOR_RELEASE_KEY,
        contract.CUDA_VERSIONS_KEY,
        contract.GPU_MODEL_TAG,
        contract.POOL_LABEL,
        contract.TOOLKIT_BAKED_TAG,
    ),
}

# EKS spells taint effects in its API's enum; Kubernetes (and tolerations) in CamelCase.
_EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


def truthy(value: Any) -> bool:
    """Booleans as providers hand them over: real booleans, or strings where the schema says string
    (the EC2 launch template's `encrypted`, `associatePublicIpAddress`)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def tags(props: Mapping[str, Any]) -> dict[str, str]:
    return strings(props.get("tags"))


def annotations(props: Mapping[str, Any]) -> dict[str, str]:
    return strings(dig(props, "metadata").get("annotations"))


def operator_namespace(resources):
    """The operands' namespace (the one that declares the operator release), or None: the program
    writes there what the pack must know of the stack config (approvals, admins, allocation mode)."""
    for r in resources:
        if r.resource_type == NAMESPACE and contract.OPERATOR_RELEASE_KEY in annotations(r.props):
            return r
    return None


def kind(resource_type: str) -> str:
    """`aws:eks/nodeGroup:NodeGroup` -> `NodeGroup`."""
    return resource_type.rsplit(":", 1)[-1]


def instance_types(resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """The instance types a node group (`instanceTypes`) or launch template (`instanceType`) launches."""
    if resource_type == NODE_GROUP:
        return [text(t) for t in sequence(props.get("instanceTypes"))]
    if resource_type == LAUNCH_TEMPLATE and props.get("instanceType"):
        return [text(props.get("instanceType"))]
    return []


def is_gpu_resource(resource_type: str, props: Mapping[str, Any]) -> bool:
    """A node image, or a node group or launch template that runs GPU nodes: by what it launches (an
    instance type of a GPU family of the matrix, an EKS NVIDIA AMI type), or by the GPU facts the
    program tags it with. Never by the tags alone: a GPU node group without them must be caught."""
    if resource_type == IMAGE:
        return True
    if resource_type not in (NODE_GROUP, LAUNCH_TEMPLATE):
        return False
    found = mapping(props.get("tags"))
    if contract.DRIVER_VERSION_TAG in found or contract.GPU_MODEL_TAG in found:
        return True
    # EKS AMI types of GPU nodes: AL2023_*_NVIDIA, BOTTLEROCKET_*_NVIDIA, AL2_x86_64_GPU (EKS API, AMITypes).
    ami_type = text(props.get("amiType")) if resource_type == NODE_GROUP else ""
    if "NVIDIA" in ami_type or ami_type.endswith("_GPU"):
        return True
    table = matrix.load()
    return any(table.gpu_for_instance_type(t) is not None for t in instance_types(resource_type, props))


@dataclass(frozen=True)
class GpuResource:
    """A node image, GPU launch template or GPU node group, as its tags, labels and taints declare it."""

    type: str
    name: str
    urn: str
    tags: dict[str, str]
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...]  # in Kubernetes spelling
    instance_types: tuple[str, ...] = ()

    @property
    def driver(self) -> str:
        return self.tags.get(contract.DRIVER_VERSION_TAG, "")

    @property
    def release(self) -> str:
        return self.tags.get(contract.OPERATOR_RELEASE_KEY, "")

    @property
    def kubernetes(self) -> str:
        return self.tags.get(contract.KUBERNETES_VERSION_TAG, "")

    @property
    def cuda_versions(self) -> list[str]:
        return contract.split_values(self.tags.get(contract.CUDA_VERSIONS_KEY, ""))

    @property
    def image_source(self) -> str:
        return self.tags.get(contract.IMAGE_SOURCE_TAG, "")

    @property
    def gpu_model(self) -> str:
        """The GPU model the resource declares (tag, else label)."""
        return self.tags.get(contract.GPU_MODEL_TAG) or self.labels.get(contract.GPU_MODEL_LABEL, "")

    def gpus(self) -> dict[str, matrix.Gpu | None]:
        """The GPU each instance type it launches really carries (None: a family the matrix lacks);
        with no instance type, the declared model alone."""
        table = matrix.load()
        if self.instance_types:
            return {t: table.gpu_for_instance_type(t) for t in self.instance_types}
        return {"(declared)": table.gpus.get(self.gpu_model)}

    @property
    def gpu_models(self) -> list[str]:
        """The GPU models it runs on: the node image's list of them, else its own model."""
        if contract.GPU_MODELS_TAG in self.tags:
            return contract.split_values(self.tags[contract.GPU_MODELS_TAG])
        return [self.gpu_model] if self.gpu_model else []

    @property
    def pool(self) -> str:
        return self.tags.get(contract.POOL_LABEL) or self.labels.get(contract.POOL_LABEL) or self.name

    @property
    def toolkit_baked(self) -> bool:
        return truthy(self.tags.get(contract.TOOLKIT_BAKED_TAG))

    @property
    def mig_config(self) -> str | None:
        return self.labels.get(contract.MIG_CONFIG_LABEL)

    @property
    def brings_node_image(self) -> bool:
        """The resource that puts the node image (and its driver) in the stack: the Image Builder
        image when the stack bakes it, else each launch template booting a pinned AMI."""
        return self.type == IMAGE or (self.type == LAUNCH_TEMPLATE and self.image_source not in ("", BAKED))

    def describe(self) -> str:
        if self.type == NODE_GROUP:
            return f"GPU pool {self.pool!r} ({self.urn})"
        if self.type == IMAGE:
            return f"node image {self.name!r} ({self.urn})"
        return f"{kind(self.type)} {self.name!r} of GPU pool {self.pool!r} ({self.urn})"


def gpu_resource(resource_type: str, name: str, urn: str, props: Mapping[str, Any]) -> GpuResource:
    taints = tuple(
        {
            "key": text(t.get("key")),
            "value": text(t.get("value")),
            "effect": _EKS_EFFECTS.get(text(t.get("effect")), text(t.get("effect"))),
        }
        for t in map(mapping, sequence(props.get("taints")))
    )
    return GpuResource(
        resource_type,
        name,
        urn,
        tags(props),
        strings(props.get("labels")),
        taints,
        tuple(instance_types(resource_type, props)),
    )


def of(args) -> GpuResource:
    """The GPU resource a resource policy's args (or a stack policy's resource) describe."""
    return gpu_resource(args.resource_type, args.name, args.urn, args.props)


def gpu_pools(resources) -> list[GpuResource]:
    """Every GPU node group of the stack."""
    return [of(r) for r in resources if r.resource_type == NODE_GROUP and is_gpu_resource(r.resource_type, r.props)]
