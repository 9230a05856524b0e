"""Node security of the GPU nodes (which run privileged software): instance metadata only through
IMDSv2 and out of pods' reach, encrypted root volumes, no public addresses. The API endpoint: open to
the internet (a public endpoint with no CIDR list, EKS's default 0.0.0.0/0, blocks that together cover
every IPv4 or IPv6 address, or IPv4 blocks wider than a /8 together) is refused; public but limited to
named blocks may be intended, and is reported for review."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel

from gpu_platform.interface.props import dig, mapping, sequence, text
from policy import facts
from policy.declare import resource_policy, types

# One hop keeps IMDS answers on the host: a pod behind the container network would need two, so
# pods cannot take the node role's credentials (EKS best practices, "Restrict access to IMDS").
MAX_HOP_LIMIT = 1


def _problems(props: Mapping[str, Any]) -> list[str]:
    found = []
    metadata = dig(props, "metadataOptions")
    if metadata.get("httpTokens") != "required":
        found.append(
            f"metadataOptions.httpTokens is {metadata.get('httpTokens')!r}, not 'required' (IMDSv2); set httpTokens: required"
        )
    # With instance tags in metadata on, a tag key holding '/' fails the launch (EC2 User Guide, "View
    # tags for your EC2 instances using instance metadata"), and an account-level IMDS default can
    # turn it on: only an explicit "disabled" is safe for our gpu-platform.io/... tags.
    if metadata.get("instanceMetadataTags") != "disabled":
        found.append(
            f"metadataOptions.instanceMetadataTags is {metadata.get('instanceMetadataTags')!r}, not 'disabled'; "
            "set instanceMetadataTags: disabled (instance tag keys contain '/', which tags in metadata reject)"
        )
    hops = metadata.get("httpPutResponseHopLimit")
    if isinstance(hops, bool) or not isinstance(hops, (int, float)) or hops > MAX_HOP_LIMIT:
        found.append(
            f"metadataOptions.httpPutResponseHopLimit is {hops!r}, not <= {MAX_HOP_LIMIT}; set it to {MAX_HOP_LIMIT} so pods cannot reach the node role"
        )
    disks = [m for m in map(mapping, sequence(props.get("blockDeviceMappings"))) if m.get("ebs") is not None]
    if not disks:
        found.append(
            "no blockDeviceMappings: the root volume takes the AMI's default encryption; declare the root volume with ebs.encrypted: true"
        )
    for m in disks:
        encrypted = dig(m, "ebs").get("encrypted")
        if not facts.truthy(encrypted):
            found.append(
                f"volume {text(m.get('deviceName')) or '?'} has ebs.encrypted {encrypted!r}; set ebs.encrypted: true"
            )
    for i, nic in enumerate(map(mapping, sequence(props.get("networkInterfaces")))):
        if facts.truthy(nic.get("associatePublicIpAddress")):
            found.append(
                f"networkInterfaces[{i}].associatePublicIpAddress is true; GPU nodes live in private subnets: set it to false"
            )
    return found


@resource_policy(
    "gpu-launch-templates-hardened",
    EnforcementLevel.MANDATORY,
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


# The widest block a named network needs: a /8 is the largest IPv4 block IANA ever gave one holder in
# one piece (IANA IPv4 Address Space Registry, kept in /8 rows), so blocks that together cover more
# addresses are a large part of the internet, not somebody's network. IPv4 only: this stack's
# clusters are IPv4, where EKS takes no IPv6 blocks (the config refuses them); an IPv6 list is judged
# only for covering every address.
WIDEST_NAMED_IPV4 = ipaddress.ip_network("0.0.0.0/8").num_addresses


def _networks(cidrs: list[str]) -> dict[int, list]:
    """The blocks by IP version, each version's collapsed into its union (unparsable ones left out:
    the config refuses them, and EKS would)."""
    found: dict[int, list] = {4: [], 6: []}
    for cidr in cidrs:
        try:
            network = ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            continue
        found[network.version].append(network)
    return {version: list(ipaddress.collapse_addresses(nets)) for version, nets in found.items()}


def _version(cidr: str) -> int:
    try:
        return ipaddress.ip_network(cidr, strict=False).version
    except ValueError:
        return 0


def _open_to(cidrs: list[str]) -> str:
    """Why these blocks open the endpoint to the internet, or '' when they name networks: together
    they cover every IPv4 (or IPv6) address, however they are split (0.0.0.0/1 and 128.0.0.0/1 are
    0.0.0.0/0), or more IPv4 addresses than the widest named network."""
    union = _networks(cidrs)
    for version, whole in ((4, "0.0.0.0/0"), (6, "::/0")):
        if union[version] == [ipaddress.ip_network(whole)]:
            listed = [c for c in cidrs if _version(c) == version]
            together = "" if whole in listed else f", which together are {whole}"
            return f"{', '.join(listed)}{together}, the whole internet"
    covered = sum(n.num_addresses for n in union[4])
    if covered > WIDEST_NAMED_IPV4:
        return (
            f"{', '.join(c for c in cidrs if _version(c) == 4)}, together {covered} IPv4 addresses: more than a /8 "
            f"({WIDEST_NAMED_IPV4}), the largest block IANA ever gave one holder, so a large part of the internet"
        )
    return ""


@resource_policy(
    "cluster-endpoint-not-open",
    EnforcementLevel.MANDATORY,
    "A public EKS API endpoint is limited to named CIDR blocks: none (EKS's default 0.0.0.0/0), blocks that together "
    "cover every IPv4 or IPv6 address (0.0.0.0/0, ::/0, or halves such as 0.0.0.0/1 and 128.0.0.0/1), or IPv4 blocks "
    "covering more than a /8 open the API server to the internet. Mandatory for wide blocks too: IANA never gave "
    "one holder more than a /8 in one piece, so a wider list admits strangers as surely as 0.0.0.0/0 does.",
    types(facts.EKS_CLUSTER),
    fix="gpu-platform:cluster.publicAccessCidrs (or cluster.endpointPublicAccess: false)",
)
def cluster_endpoint_not_open(args, report_violation) -> None:
    public, cidrs = _endpoint(args.props)
    if not public:
        return
    if not cidrs:
        report_violation(
            f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint with no publicAccessCidrs, so "
            f"EKS opens it to 0.0.0.0/0; list the networks that need it in cluster.publicAccessCidrs, or "
            f"set cluster.endpointPublicAccess: false"
        )
    elif why := _open_to(cidrs):
        report_violation(
            f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint open to {why}; list only the "
            f"networks that need it in cluster.publicAccessCidrs"
        )


@resource_policy(
    "cluster-endpoint-private",
    EnforcementLevel.ADVISORY,
    "The EKS API endpoint is private (a public one limited to named CIDR blocks is reported for review; an open one "
    "is cluster-endpoint-not-open's).",
    types(facts.EKS_CLUSTER),
    fix="gpu-platform:cluster.endpointPublicAccess",
)
def cluster_endpoint_private(args, report_violation) -> None:
    public, cidrs = _endpoint(args.props)
    if public and cidrs and not _open_to(cidrs):
        report_violation(
            f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint reachable from {', '.join(cidrs)}; "
            f"if nothing outside the VPC needs the API, set cluster.endpointPublicAccess: false and reach it through "
            f"the private endpoint"
        )
