"""Node security of the GPU nodes (which run privileged software): instance metadata only through
IMDSv2 and out of pods' reach, encrypted root volumes, no public addresses. The API endpoint: open to
the whole internet (a public endpoint with no CIDR list, EKS's default 0.0.0.0/0, or a list holding
0.0.0.0/0 or ::/0) is refused; public but limited to named blocks may be intended, and is reported
for review."""

from __future__ import annotations

import ipaddress
from typing import Any, Mapping

from pulumi_policy import EnforcementLevel

from policy import facts
from policy.declare import resource_policy, types
from gpu_platform.props import dig, mapping, sequence, text

# One hop keeps IMDS answers on the host: a pod behind the container network would need two, so
# pods cannot take the node role's credentials (EKS best practices, "Restrict access to IMDS").
MAX_HOP_LIMIT = 1


def _problems(props: Mapping[str, Any]) -> list[str]:
    found = []
    metadata = dig(props, "metadataOptions")
    if metadata.get("httpTokens") != "required":
        found.append(f"metadataOptions.httpTokens is {metadata.get('httpTokens')!r}, not 'required' (IMDSv2); set httpTokens: required")
    # With instance tags in metadata on, a tag key holding '/' fails the launch (EC2 User Guide, "View
    # tags for your EC2 instances using instance metadata"), and an account-level IMDS default can
    # turn it on: only an explicit "disabled" is safe for our gpu-platform.io/... tags.
    if metadata.get("instanceMetadataTags") != "disabled":
        found.append(f"metadataOptions.instanceMetadataTags is {metadata.get('instanceMetadataTags')!r}, not 'disabled'; "
                     "set instanceMetadataTags: disabled (instance tag keys contain '/', which tags in metadata reject)")
    hops = metadata.get("httpPutResponseHopLimit")
    if isinstance(hops, bool) or not isinstance(hops, (int, float)) or hops > MAX_HOP_LIMIT:
        found.append(f"metadataOptions.httpPutResponseHopLimit is {hops!r}, not <= {MAX_HOP_LIMIT}; set it to {MAX_HOP_LIMIT} so pods cannot reach the node role")
    disks = [m for m in map(mapping, sequence(props.get("blockDeviceMappings"))) if m.get("ebs") is not None]
    if not disks:
        found.append("no blockDeviceMappings: the root volume takes the AMI's default encryption; declare the root volume with ebs.encrypted: true")
    for m in disks:
        encrypted = dig(m, "ebs").get("encrypted")
        if not facts.truthy(encrypted):
            found.append(f"volume {text(m.get('deviceName')) or '?'} has ebs.encrypted {encrypted!r}; set ebs.encrypted: true")
    for i, nic in enumerate(map(mapping, sequence(props.get("networkInterfaces")))):
        if facts.truthy(nic.get("associatePublicIpAddress")):
            found.append(f"networkInterfaces[{i}].associatePublicIpAddress is true; GPU nodes live in private subnets: set it to false")
    return found


@resource_policy(
    "gpu-launch-templates-hardened", EnforcementLevel.MANDATORY,
    "GPU launch templates require IMDSv2 with a hop limit of 1 and keep instance tags out of the metadata, encrypt every volume and assign no public IP.",
    types(facts.LAUNCH_TEMPLATE),
    fix="no stack key: the program builds launch templates hardened (components/aws/launch_settings.py); report it",
)
def gpu_launch_templates_hardened(args, report_violation) -> None:
    if not facts.is_gpu_resource(args.resource_type, args.props):
        return
    for problem in _problems(args.props):
        report_violation(f"GPU launch template {args.name!r} ({args.urn}): {problem}")


def _endpoint(props: Mapping[str, Any]) -> tuple[bool, list[str]]:
    """(public, the blocks that may reach it): EKS's defaults when left out, a public endpoint open to
    0.0.0.0/0 (EKS API VpcConfigRequest: endpointPublicAccess defaults to true, publicAccessCidrs to
    0.0.0.0/0)."""
    vpc = dig(props, "vpcConfig")
    public = vpc.get("endpointPublicAccess")
    return public is None or facts.truthy(public), [text(c) for c in sequence(vpc.get("publicAccessCidrs"))]


def _whole_internet(cidr: str) -> bool:
    try:
        return ipaddress.ip_network(cidr, strict=False).prefixlen == 0
    except ValueError:
        return False


@resource_policy(
    "cluster-endpoint-not-open", EnforcementLevel.MANDATORY,
    "A public EKS API endpoint is limited to named CIDR blocks: none (EKS's default 0.0.0.0/0), 0.0.0.0/0 or ::/0 "
    "opens the API server to the whole internet.",
    types(facts.EKS_CLUSTER),
    fix="gpu-platform:cluster.publicAccessCidrs (or cluster.endpointPublicAccess: false)",
)
def cluster_endpoint_not_open(args, report_violation) -> None:
    public, cidrs = _endpoint(args.props)
    if not public:
        return
    if not cidrs:
        report_violation(f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint with no publicAccessCidrs, so "
                         f"EKS opens it to 0.0.0.0/0; list the networks that need it in cluster.publicAccessCidrs, or "
                         f"set cluster.endpointPublicAccess: false")
    elif any(_whole_internet(c) for c in cidrs):
        report_violation(f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint open to "
                         f"{', '.join(c for c in cidrs if _whole_internet(c))}, the whole internet; list only the "
                         f"networks that need it in cluster.publicAccessCidrs")


@resource_policy(
    "cluster-endpoint-private", EnforcementLevel.ADVISORY,
    "The EKS API endpoint is private (a public one limited to named CIDR blocks is reported for review; an open one "
    "is cluster-endpoint-not-open's).",
    types(facts.EKS_CLUSTER),
    fix="gpu-platform:cluster.endpointPublicAccess",
)
def cluster_endpoint_private(args, report_violation) -> None:
    public, cidrs = _endpoint(args.props)
    if public and cidrs and not any(_whole_internet(c) for c in cidrs):
        report_violation(
            f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint reachable from {', '.join(cidrs)}; "
            f"if nothing outside the VPC needs the API, set cluster.endpointPublicAccess: false and reach it through "
            f"the private endpoint"
        )
