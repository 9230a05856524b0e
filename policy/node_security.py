"""Node security of the GPU nodes (which run privileged software): instance metadata only through
IMDSv2 and out of pods' reach, encrypted root volumes, no public addresses; a public API endpoint
is worth a look but may be intended."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policy.facts import EKS_CLUSTER, LAUNCH_TEMPLATE, is_gpu_resource, truthy

# One hop keeps IMDS answers on the host: a pod behind the container network would need two, so
# pods cannot take the node role's credentials (EKS best practices, "Restrict access to IMDS").
MAX_HOP_LIMIT = 1


def _problems(props: dict) -> list[str]:
    found = []
    metadata = props.get("metadataOptions") or {}
    if metadata.get("httpTokens") != "required":
        found.append(f"metadataOptions.httpTokens is {metadata.get('httpTokens')!r}, not 'required' (IMDSv2); set httpTokens: required")
    hops = metadata.get("httpPutResponseHopLimit")
    if not isinstance(hops, (int, float)) or hops > MAX_HOP_LIMIT:
        found.append(f"metadataOptions.httpPutResponseHopLimit is {hops!r}, not <= {MAX_HOP_LIMIT}; set it to {MAX_HOP_LIMIT} so pods cannot reach the node role")
    disks = [m for m in props.get("blockDeviceMappings") or () if isinstance(m, dict) and m.get("ebs") is not None]
    if not disks:
        found.append("no blockDeviceMappings: the root volume takes the AMI's default encryption; declare the root volume with ebs.encrypted: true")
    for m in disks:
        if not truthy((m.get("ebs") or {}).get("encrypted")):
            found.append(f"volume {m.get('deviceName', '?')} has ebs.encrypted {(m.get('ebs') or {}).get('encrypted')!r}; set ebs.encrypted: true")
    for i, nic in enumerate(props.get("networkInterfaces") or ()):
        if truthy((nic or {}).get("associatePublicIpAddress")):
            found.append(f"networkInterfaces[{i}].associatePublicIpAddress is true; GPU nodes live in private subnets: set it to false")
    return found


def _gpu_launch_template_hardened(args: ResourceValidationArgs, report_violation) -> None:
    if args.resource_type != LAUNCH_TEMPLATE or not is_gpu_resource(args.resource_type, args.props):
        return
    for problem in _problems(args.props):
        report_violation(f"GPU launch template {args.name!r} ({args.urn}): {problem}")


def _cluster_endpoint_private(args: ResourceValidationArgs, report_violation) -> None:
    if args.resource_type != EKS_CLUSTER:
        return
    vpc = args.props.get("vpcConfig") or {}
    public = vpc.get("endpointPublicAccess")
    if public is None or truthy(public):
        cidrs = vpc.get("publicAccessCidrs") or ["0.0.0.0/0 (the default)"]
        report_violation(
            f"EKS cluster {args.name!r} ({args.urn}) has a public API endpoint "
            f"(vpcConfig.endpointPublicAccess {public!r}, reachable from {', '.join(cidrs)}); set "
            f"cluster.endpointPublicAccess: false and reach the API through the private endpoint"
        )


gpu_launch_templates_hardened = ResourceValidationPolicy(
    name="gpu-launch-templates-hardened",
    description="GPU launch templates require IMDSv2 with a hop limit of 1, encrypt every volume and assign no public IP.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_gpu_launch_template_hardened,
)

cluster_endpoint_private = ResourceValidationPolicy(
    name="cluster-endpoint-private",
    description="The EKS API endpoint is private (a public endpoint is reported for review).",
    enforcement_level=EnforcementLevel.ADVISORY,
    validate=_cluster_endpoint_private,
)
