"""The declared facts agree. The version policies check each resource on the facts it declares
itself (so they run before it is created); this stack policy checks that those declarations are one
story: one operator release, one Kubernetes version (the cluster's own), one driver (the one the
image build installs), one set of CUDA versions, wherever they are declared; and that every GPU
node group launches from a launch template that declares itself a GPU one, so the hardening policy
checks it. (An adopted cluster's version is checked against AWS before anything is registered:
components/aws/discovery.py.)"""

from __future__ import annotations

import re
from collections import defaultdict

from pulumi_policy import EnforcementLevel

from gpu_platform.interface import contract
from gpu_platform.interface.props import sequence, text
from gpu_platform.interface.resource_types import IMAGE_COMPONENT as COMPONENT
from policy import facts, workloads
from policy.declare import stack_policy

# The build component's install script starts with the driver it installs (components/aws/node_image.py).
_INSTALLS = re.compile(r"\bDRIVER_VERSION=([0-9][0-9.]*[0-9])")


def _declarations(resources) -> dict[str, dict[str, list[str]]]:
    """fact -> value -> the resources (described) that declare it."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))

    def declare(fact: str, value: str, who: str) -> None:
        if value:
            found[fact][value].append(who)

    for r in resources:
        who = f"{facts.kind(r.resource_type)} {r.name!r} ({r.urn})"
        if r.resource_type == facts.EKS_CLUSTER:
            declare("Kubernetes version", text(r.props.get("version")), who)
        elif r.resource_type == facts.NAMESPACE:
            notes = facts.annotations(r.props)
            if contract.OPERATOR_RELEASE_KEY in notes:
                declare("operator release", notes[contract.OPERATOR_RELEASE_KEY], who)
                declare("Kubernetes version", notes.get(contract.KUBERNETES_VERSION_TAG, ""), who)
                declare(
                    "CUDA versions",
                    " ".join(sorted(contract.split_values(notes.get(contract.CUDA_VERSIONS_KEY, "")))),
                    who,
                )
        elif workloads.kind(r.resource_type) is not None and workloads.operand(r.props) is not None:
            declare("operator release", workloads.own_annotations(r.props).get(contract.OPERATOR_RELEASE_KEY, ""), who)
        elif r.resource_type == COMPONENT:
            installs = _INSTALLS.search(text(r.props.get("data")))
            declare("NVIDIA driver", installs.group(1) if installs else "", who)
        elif r.resource_type in facts.GPU_NODE_TYPES and facts.is_gpu_resource(r.resource_type, r.props):
            gpu = facts.of(r)
            declare("operator release", gpu.release, who)
            declare("Kubernetes version", gpu.kubernetes, who)
            declare("NVIDIA driver", gpu.driver, who)
            declare("CUDA versions", " ".join(sorted(gpu.cuda_versions)), who)
    return found


def _undeclared_templates(resources):
    """(node group, launch template) for each GPU node group launching from a launch template that
    does not declare itself a GPU one (found through the group's property dependencies)."""
    for r in resources:
        if r.resource_type != facts.NODE_GROUP or not facts.is_gpu_resource(r.resource_type, r.props):
            continue
        for template in sequence((r.property_dependencies or {}).get("launchTemplate")):
            if template.resource_type == facts.LAUNCH_TEMPLATE and not facts.is_gpu_resource(
                template.resource_type, template.props
            ):
                yield r, template


def _image_models_differ(resources):
    """(node image, the models it is built for, the models the GPU pools carry) when they differ."""
    pools = {m for p in facts.gpu_pools(resources) for m in p.gpu_models}
    for r in resources:
        if r.resource_type == facts.IMAGE:
            built = set(facts.of(r).gpu_models)
            if built != pools:
                yield r, built, pools


@stack_policy(
    "declared-facts-agree",
    EnforcementLevel.MANDATORY,
    "Every resource declares the same operator release, Kubernetes version (the cluster's), driver (the one the "
    "image build installs) and CUDA versions, and every GPU node group's launch template declares itself a GPU one.",
    fix="no stack key: every resource declares the facts of one config (components/platform.py); report it",
)
def declared_facts_agree(args, report_violation) -> None:
    for image, built, pools in _image_models_differ(args.resources):
        report_violation(
            f"node image {image.name!r} ({image.urn}) is built for GPU models {', '.join(sorted(built)) or 'none'}, but the "
            f"GPU pools carry {', '.join(sorted(pools)) or 'none'}; the driver checks on the image must see every pool's GPU",
            image.urn,
        )
    for group, template in _undeclared_templates(args.resources):
        report_violation(
            f"GPU node group {group.name!r} ({group.urn}) launches from launch template {template.name!r} "
            f"({template.urn}), which declares no GPU facts, so gpu-launch-templates-hardened does not check it; "
            f"tag the template as the program tags its GPU launch templates",
            template.urn,
        )
    for fact, values in sorted(_declarations(args.resources).items()):
        if len(values) < 2:
            continue
        told = "; ".join(f"{value!r} by {', '.join(sorted(who))}" for value, who in sorted(values.items()))
        report_violation(
            f"the stack declares more than one {fact}: {told}; every resource must describe the one "
            f"stack it belongs to (a resource checked on its own {fact} would be checked against the wrong one)"
        )
