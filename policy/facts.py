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


@dataclass(frozen=True)
class Declared:
    """A fact and the resource that declares it, so a violation can name both sides."""

    value: str
    urn: str


@dataclass
class StackFacts:
    kubernetes: Optional[Declared] = None
    release: Optional[Declared] = None
    cuda_versions: list[Declared] = field(default_factory=list)
    launch_templates: list[Any] = field(default_factory=list)


def tags(resource: Any) -> dict[str, str]:
    return dict(resource.props.get("tags") or {})


def annotations(resource: Any) -> dict[str, str]:
    return dict((resource.props.get("metadata") or {}).get("annotations") or {})


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
        elif r.resource_type == NAMESPACE:
            notes = annotations(r)
            if contract.OPERATOR_RELEASE_KEY in notes:
                facts.release = Declared(notes[contract.OPERATOR_RELEASE_KEY], r.urn)
            for cuda in filter(None, notes.get(contract.CUDA_VERSIONS_KEY, "").split(",")):
                facts.cuda_versions.append(Declared(cuda, r.urn))
    return facts
