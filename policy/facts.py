"""The stack as the policies see it: facts gathered from resource inputs alone (tags, labels,
annotations the program records), never from the program's own objects."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

from gpu_platform import contract

EKS_CLUSTER = "aws:eks/cluster:Cluster"
NAMESPACE = "kubernetes:core/v1:Namespace"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
IMAGE = "aws:imagebuilder/image:Image"

# EKS spells taint effects in its API's enum; Kubernetes (and tolerations) in CamelCase.
_EKS_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}


@dataclass(frozen=True)
class Declared:
    """A fact and the resource that declares it, so a violation can name both sides."""

    value: str
    urn: str


@dataclass(frozen=True)
class Pool:
    """A GPU node pool as its EKS node group declares it: tags (driver, GPU model, runtime owner),
    kubelet labels (gates, MIG configuration) and taints in Kubernetes spelling."""

    name: str
    urn: str
    tags: dict[str, str]
    labels: dict[str, str]
    taints: tuple[dict[str, str], ...]

    @property
    def driver(self) -> Optional[str]:
        return self.tags.get(contract.DRIVER_VERSION_TAG)

    @property
    def gpu_model(self) -> Optional[str]:
        return self.tags.get(contract.GPU_MODEL_TAG) or self.labels.get(contract.GPU_MODEL_LABEL)

    @property
    def toolkit_baked(self) -> bool:
        return truthy(self.tags.get(contract.TOOLKIT_BAKED_TAG))

    @property
    def mig_config(self) -> Optional[str]:
        return self.labels.get(contract.MIG_CONFIG_LABEL)

    def describe(self) -> str:
        return f"GPU pool {self.name!r} ({self.urn})"


@dataclass
class StackFacts:
    kubernetes: Optional[Declared] = None
    release: Optional[Declared] = None
    cuda_versions: list[Declared] = field(default_factory=list)
    overrides: dict[str, Declared] = field(default_factory=dict)
    launch_templates: list[Any] = field(default_factory=list)
    images: list[Any] = field(default_factory=list)
    pools: list[Pool] = field(default_factory=list)

    def drivers(self) -> list[tuple[Declared, str]]:
        """(driver, who runs it) for every GPU pool; the baked image or launch templates stand in
        when the stack declares no pool yet."""
        found = [(Declared(p.driver, p.urn), p.describe()) for p in self.pools if p.driver]
        if found:
            return found
        for r in (*self.images, *self.launch_templates):
            driver = tags(r).get(contract.DRIVER_VERSION_TAG)
            if driver:
                found.append((Declared(driver, r.urn), f"{r.resource_type.rsplit(':', 1)[-1]} {r.name!r} ({r.urn})"))
        return found


def truthy(value: Any) -> bool:
    """Booleans as providers hand them over: real booleans, or strings where the schema says string
    (the EC2 launch template's `encrypted`, `associatePublicIpAddress`)."""
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def tags(resource: Any) -> dict[str, str]:
    value = resource.props.get("tags")
    return dict(value) if isinstance(value, dict) else {}


def annotations(resource: Any) -> dict[str, str]:
    return dict((resource.props.get("metadata") or {}).get("annotations") or {})


def is_gpu_resource(resource_type: str, props: dict) -> bool:
    """A node group, launch template or image that carries the GPU driver (the program tags them)."""
    if resource_type == IMAGE:
        return True
    if resource_type not in (NODE_GROUP, LAUNCH_TEMPLATE):
        return False
    found = props.get("tags") if isinstance(props.get("tags"), dict) else {}
    return contract.DRIVER_VERSION_TAG in found or contract.GPU_MODEL_TAG in found


def _pool(r: Any) -> Pool:
    found = tags(r)
    labels = dict(r.props.get("labels") or {})
    taints = tuple(
        {"key": t.get("key", ""), "value": t.get("value", ""), "effect": _EKS_EFFECTS.get(t.get("effect", ""), t.get("effect", ""))}
        for t in r.props.get("taints") or ()
    )
    name = found.get(contract.POOL_LABEL) or labels.get(contract.POOL_LABEL) or r.name
    return Pool(name, r.urn, found, labels, taints)


def parse_overrides(text: str) -> dict[str, str]:
    """`device-plugin=v0.18.2,validator=v25.10.2` -> {operand: tag}."""
    pairs = (item.split("=", 1) for item in text.split(",") if "=" in item)
    return {k.strip(): v.strip() for k, v in pairs}


def gather(resources: Sequence[Any]) -> StackFacts:
    facts = StackFacts()
    for r in resources:
        if r.resource_type == EKS_CLUSTER and r.props.get("version"):
            facts.kubernetes = Declared(str(r.props["version"]), r.urn)
        elif r.resource_type == LAUNCH_TEMPLATE:
            facts.launch_templates.append(r)
            k8s_tag = tags(r).get(contract.KUBERNETES_VERSION_TAG)
            if k8s_tag and facts.kubernetes is None:
                facts.kubernetes = Declared(k8s_tag, r.urn)
        elif r.resource_type == IMAGE:
            facts.images.append(r)
        elif r.resource_type == NODE_GROUP and is_gpu_resource(r.resource_type, r.props):
            facts.pools.append(_pool(r))
        elif r.resource_type == NAMESPACE:
            notes = annotations(r)
            if contract.OPERATOR_RELEASE_KEY in notes:
                facts.release = Declared(notes[contract.OPERATOR_RELEASE_KEY], r.urn)
            for cuda in filter(None, notes.get(contract.CUDA_VERSIONS_KEY, "").split(",")):
                facts.cuda_versions.append(Declared(cuda.strip(), r.urn))
            for operand, tag in parse_overrides(notes.get(contract.OVERRIDES_KEY, "")).items():
                facts.overrides[operand] = Declared(tag, r.urn)
    return facts
