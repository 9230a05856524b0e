"""The AWS half of the audit report: what the instances that run the privileged node software may do
and how exposed they are. IAM roles and their policies, who may administer the cluster (access
entries), instance metadata (IMDS) settings, volume encryption, public addresses and endpoints, and
the audit tags, all read from resource inputs.

Values are printed as recorded, not judged (the policy pack judges); an unset value says so, since
an unset IMDS or encryption setting means the AMI's or the account's default.
"""

from __future__ import annotations

from typing import Any

from gpu_platform.interface import contract
from gpu_platform.interface.props import mapping
from gpu_platform.interface.resource_types import (
    EKS_ACCESS_ASSOCIATION as ACCESS_ASSOCIATION,
    EKS_ADDON as ADDON,
    IAM_ATTACHMENT as POLICY_ATTACHMENT,
    IAM_POLICY as POLICY,
    IAM_ROLE as ROLE,
    IMAGE_INFRASTRUCTURE as INFRASTRUCTURE,
    IMAGE_RECIPE,
)
from gpu_platform.privileges.iam_document import statements, values
from policy.facts import EKS_CLUSTER, IMAGE, LAUNCH_TEMPLATE, NODE_GROUP, is_gpu_resource
from preview.recording import Recording, Registration
from preview.reports.report import clean

UNSET = "(not set)"


def _of(recording: Recording, *types: str) -> list[tuple[Registration, dict[str, Any]]]:
    found = [r for r in recording.resources if r.type in types]
    return [(r, clean(r.inputs)) for r in sorted(found, key=lambda r: (types.index(r.type), r.name))]


def _what(r: Registration) -> str:
    return f"{r.type.rsplit(':', 1)[-1]} `{r.name}`"


def _shown(value: Any) -> str:
    if value is None or value == "":
        return UNSET
    if isinstance(value, bool):
        return str(value).lower()
    return str(value).replace("|", "\\|")


def _row(*cells: Any) -> str:
    return "| " + " | ".join(_shown(c) for c in cells) + " |"


def _trusted(policy: Any) -> str:
    """Who may assume the role: the trust policy's principals."""
    names = {
        f"{kind} {who}"
        for s in statements(policy)
        for kind, any_of in mapping(s.get("Principal")).items()
        for who in values(any_of)
    }
    return ", ".join(sorted(names)) or UNSET


def _conditions(policy: Any) -> list[str]:
    """The trust policy's conditions, one `operator key = value` each (the confused-deputy guards)."""
    found = []
    for s in statements(policy):
        for operator, block in sorted(mapping(s.get("Condition")).items()):
            for key, value in sorted(mapping(block).items()):
                found.append(f"{operator} {key} = {', '.join(values(value))}")
    return found


def _own_policies(recording: Recording) -> dict[str, Registration]:
    """The stack's customer-managed policies by the ARN they get: by name, as the program writes the
    ARNs it attaches (components/aws/managed_role.py OwnPolicy)."""
    return {name: p for p in recording.of_type(POLICY) if (name := p.inputs.get("name"))}


def _actions(policy: Registration) -> str:
    found = []
    for s in statements(policy.inputs.get("policy")):
        found.append(f"{', '.join(values(s.get('Action')))} on {', '.join(values(s.get('Resource')))}")
    return "; ".join(found) or UNSET


def _roles(recording: Recording) -> list[str]:
    lines = ["### IAM roles", ""]
    own = _own_policies(recording)
    for r, props in _of(recording, ROLE):
        lines.append(f"- {_what(r)}, assumed by {_trusted(props.get('assumeRolePolicy'))}")
        lines += [f"  - trusted only if `{c}`" for c in _conditions(props.get("assumeRolePolicy"))]
        # Policies arrive as RolePolicyAttachments (managedPolicyArns is deprecated), found by the
        # role they depend on; sorted, as they register in no fixed order.
        attached = sorted(
            a.inputs.get("policyArn") for a in recording.of_type(POLICY_ATTACHMENT) if r.urn in a.dependencies
        )
        policies = [*(props.get("managedPolicyArns") or []), *attached]
        for arn in policies:
            mine = own.get(str(arn).rsplit("/", 1)[-1]) if ":iam::aws:" not in str(arn) else None
            lines.append(
                f"  - customer-managed policy `{arn}`: {_actions(mine)}" if mine else f"  - managed policy `{arn}`"
            )
        if not policies:
            lines.append("  - no managed policies")
        lines += [
            f"  - inline policy `{p.get('name', '?')}`"
            for p in props.get("inlinePolicies") or ()
            if isinstance(p, dict)
        ]
    return [*lines, ""]


def _access(recording: Recording) -> list[str]:
    lines = ["### Cluster access (EKS access entries)", ""]
    for _, props in _of(recording, ACCESS_ASSOCIATION):
        scope = props.get("accessScope") or {}
        where = scope.get("type") or UNSET
        if scope.get("namespaces"):
            where += " " + ", ".join(scope["namespaces"])
        lines.append(f"- `{_shown(props.get('principalArn'))}`: `{_shown(props.get('policyArn'))}`, scope {where}")
    if len(lines) == 2:
        lines.append("- no access entry in this stack (an adopted cluster keeps the access it had)")
    return [*lines, ""]


def _imds(recording: Recording) -> list[str]:
    lines = [
        "### Instance metadata (IMDS)",
        "",
        "| resource | httpTokens | hop limit | endpoint | instance tags |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r, props in _of(recording, LAUNCH_TEMPLATE, INFRASTRUCTURE):
        options = props.get("metadataOptions" if r.type == LAUNCH_TEMPLATE else "instanceMetadataOptions") or {}
        lines.append(
            _row(
                _what(r),
                options.get("httpTokens"),
                options.get("httpPutResponseHopLimit"),
                options.get("httpEndpoint"),
                options.get("instanceMetadataTags"),
            )
        )
    return [*lines, ""]


def _volumes(recording: Recording) -> list[str]:
    lines = [
        "### Volume encryption",
        "",
        "| resource | device | encrypted | KMS key | type | GiB |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r, props in _of(recording, LAUNCH_TEMPLATE, IMAGE_RECIPE):
        disks = [m for m in props.get("blockDeviceMappings") or () if isinstance(m, dict)]
        if not disks:
            lines.append(_row(_what(r), "no block device mappings: the AMI's defaults", "-", "-", "-", "-"))
        for m in disks:
            ebs = m.get("ebs") or {}
            lines.append(
                _row(
                    _what(r),
                    m.get("deviceName"),
                    ebs.get("encrypted"),
                    ebs.get("kmsKeyId"),
                    ebs.get("volumeType"),
                    ebs.get("volumeSize"),
                )
            )
    return [*lines, ""]


def _exposure(recording: Recording) -> list[str]:
    lines = ["### Public exposure", ""]
    for r, props in _of(recording, LAUNCH_TEMPLATE):
        nics = props.get("networkInterfaces") or []
        if len(nics) > 1 and not any("associatePublicIpAddress" in (n or {}) for n in nics):
            # EC2 assigns no public address to an instance launched with more than one interface
            # (botocore ec2 service-2.json, InstanceNetworkInterfaceSpecification.AssociatePublicIpAddress).
            kinds = sorted({(n or {}).get("interfaceType") or "interface" for n in nics})
            lines.append(
                f"- {_what(r)}: {len(nics)} interfaces ({', '.join(kinds)}): no public address "
                "(EC2 assigns none to an instance launched with more than one interface)"
            )
            continue
        public = ", ".join(
            f"interface {i}: {_shown((n or {}).get('associatePublicIpAddress'))}" for i, n in enumerate(nics)
        )
        lines.append(f"- {_what(r)}: associatePublicIpAddress {public or UNSET + ' (the subnet decides)'}")
    clusters = _of(recording, EKS_CLUSTER)
    for r, props in clusters:
        vpc = props.get("vpcConfig") or {}
        lines.append(
            f"- {_what(r)}: endpointPublicAccess {_shown(vpc.get('endpointPublicAccess'))}, "
            f"endpointPrivateAccess {_shown(vpc.get('endpointPrivateAccess'))}, "
            f"publicAccessCidrs {', '.join(vpc.get('publicAccessCidrs') or []) or UNSET}"
        )
    if not clusters:
        lines.append("- no EKS cluster in this stack (an adopted cluster: its endpoint is not recorded here)")
    return [*lines, ""]


def _tags(recording: Recording) -> list[str]:
    keys = (contract.AUDIT_TAG_SOFTWARE, contract.AUDIT_TAG_OWNER, contract.AUDIT_TAG_APPROVAL)
    lines = [
        "### Audit tags (node images, GPU launch templates, GPU node groups)",
        "",
        "| resource | " + " | ".join(k.removeprefix(contract.AUDIT_PREFIX) for k in keys) + " |",
        "| --- | --- | --- | --- |",
    ]
    for r, props in _of(recording, IMAGE, LAUNCH_TEMPLATE, NODE_GROUP):
        if not is_gpu_resource(r.type, props):
            continue
        tags = props.get("tags") if isinstance(props.get("tags"), dict) else {}
        lines.append(_row(_what(r), *(tags.get(k) for k in keys)))
    return [*lines, ""]


def _health(recording: Recording) -> list[str]:
    """The EKS add-ons (the VPC CNI and its Pod Identity agent, the node monitoring agent, which watches
    the GPU nodes) and what may reboot or replace a node: each GPU node group's node auto repair."""
    lines = ["### EKS add-ons and node health (monitoring agent, node auto repair)", ""]
    addons = _of(recording, ADDON)
    lines += [
        f"- {_what(r)}: add-on `{_shown(props.get('addonName'))}`, version "
        f"{_shown(props.get('addonVersion') or 'EKS default for the cluster version')}"
        for r, props in addons
    ] or ["- no EKS add-on: no node monitoring agent reports GPU conditions"]
    for r, props in _of(recording, NODE_GROUP):
        if is_gpu_resource(r.type, props):
            repair = props.get("nodeRepairConfig") or {}
            lines.append(f"- {_what(r)}: node auto repair {_shown(repair.get('enabled'))}")
    return [*lines, ""]


def section(recording: Recording) -> list[str]:
    return [
        "## AWS",
        "",
        *_roles(recording),
        *_access(recording),
        *_imds(recording),
        *_volumes(recording),
        *_exposure(recording),
        *_health(recording),
        *_tags(recording),
    ]


def audit_tag_values(recording: Recording, key: str) -> list[str]:
    """The values of one audit tag over the node images, launch templates and node groups."""
    found = []
    for r, props in _of(recording, IMAGE, LAUNCH_TEMPLATE, NODE_GROUP):
        tags = props.get("tags") if isinstance(props.get("tags"), dict) else {}
        if is_gpu_resource(r.type, props) and tags.get(key):
            found.append(str(tags[key]))
    return found
