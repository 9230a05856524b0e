"""The settings that guard the nodes, the image build and the control plane, as the privilege ledger
(gpu_platform/privileges/ledger.py) reads them: each is known when the program runs (no resource's output), so
the offline and the real preview read the same, and a first preview can read it.

Rows (subject, part, setting):
- every launch template (`launch template NAME`, `(node settings)`): the instance metadata service
  (tokens, hop limit, endpoint), each block device's encryption (stated or not), and whether its
  nodes get a public address (stated, not stated, or impossible with several interfaces); its user
  data is not read (it names the cluster's endpoint, an output: CODEOWNERS covers
  components/aws/user_data.py);
- every managed node group (`node group NAME`): its AMI type (CUSTOM, unset and unknown alike where a
  launch template boots its own image), the stack's launch template it boots from (by what the engine
  lists it depends on, ledger.REFERENCED: the template's id is an output) or that it boots from one the stack does not
  make, or none (EKS's own settings apply, and no launch-template policy judges it), its subnets, and any SSH remote
  access;
- every Image Builder infrastructure configuration (`image build host NAME`): its key pair, whether a
  failed build's instance is terminated, its instance profile (the stack's, by dependency, or one from
  elsewhere) and its metadata service; every distribution configuration (`image distribution
  NAME to REGION`): who may launch the AMI, which accounts it is copied to, its KMS key, and every other
  way it leaves the build (S3 export, SSM parameters, fast launch, launch template updates, container
  images), each as the SHA-256 of its value;
- every instance profile (`instance profile NAME`): the role it carries (by name, autoname suffix off);
- every EKS cluster (`EKS cluster`): its control-plane log types and whether secrets are
  envelope-encrypted (the key's ARN is an output and is not read);
- every ServiceAccount that an IAM role is bound to by annotation (IRSA), or that turns its token off.
Subjects use the Pulumi resource name, the same in both previews. Values the provider fills in when
the program leaves them out (Optional and Computed: a node group's amiType) are read with
props.unless_filled_in, since a first preview has them unknown.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gpu_platform.interface import contract
from gpu_platform.interface.props import dig, mapping, sequence, text, unless_filled_in
from gpu_platform.interface.resource_types import (
    ASG_TAG,
    EKS_CLUSTER,
    EKS_NODE_GROUP,
    IAM_INSTANCE_PROFILE,
    IMAGE_DISTRIBUTION as DISTRIBUTION,
    IMAGE_INFRASTRUCTURE,
    LAUNCH_TEMPLATE,
    SERVICE_ACCOUNT,
)
from gpu_platform.privileges.canonical_form import canonical, number, sha256, subject, without_autoname

Row = tuple[str, str, str]
TYPES = (
    ASG_TAG,
    LAUNCH_TEMPLATE,
    EKS_NODE_GROUP,
    IMAGE_INFRASTRUCTURE,
    DISTRIBUTION,
    IAM_INSTANCE_PROFILE,
    EKS_CLUSTER,
    SERVICE_ACCOUNT,
)
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"  # EKS User Guide, "IAM roles for service accounts"


def _metadata(options: Mapping[str, Any]) -> str:
    # Unset reads as the default EC2 states (EC2 API, LaunchTemplateInstanceMetadataOptionsRequest:
    # tokens optional, hop limit 1, endpoint enabled), so the live object, which may state it, reads alike.
    return (
        f"instance metadata: tokens {text(options.get('httpTokens')) or 'optional'}, hop limit "
        f"{number(options.get('httpPutResponseHopLimit')) or '1'}, endpoint {text(options.get('httpEndpoint')) or 'enabled'}"
    )


def _flag(value: Any) -> bool | None:
    """A true/false setting as the provider reads it: a bool, or one of the strings its nullable-bool
    attributes take ("", "0", "1", "false", "true": terraform-provider-aws internal/verify/validate.go
    ValidTypeStringNullableBoolean, parsed with strconv.ParseBool, which also takes t/T/TRUE/True and
    f/F/FALSE/False); None when unset or empty (AWS's own default applies)."""
    if isinstance(value, bool):
        return value
    word = text(value)
    if word in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if word in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def _subnets(ids: Any) -> str:
    """The subnets a resource puts network interfaces in: which networks reach them (a private cluster
    endpoint is reachable from its subnets' VPC routes) and, for nodes, what they reach."""
    found = sorted({text(i) for i in sequence(ids) if text(i)})
    return f"subnets {canonical(found)}" if found else "subnets NOT stated (AWS picks a default)"


def _public_address(interfaces: Any) -> str:
    """Whether the nodes a template launches get a public IPv4 address. EC2 assigns one only to eth0
    of a launch with a single network interface ("You cannot specify more than one network interface
    in the request": EC2 API Reference, InstanceNetworkInterfaceSpecification.AssociatePublicIpAddress);
    there, unstated, the subnet's MapPublicIpOnLaunch decides."""
    stated = [_flag(mapping(i).get("associatePublicIpAddress")) for i in interfaces]
    if any(stated):
        return "an interface with a PUBLIC address"
    if len(stated) > 1:
        return f"{len(stated)} interfaces: no public address (EC2 assigns none at a launch with several)"
    if stated == [False]:
        return "no public address"
    return "public address NOT stated: the subnet's MapPublicIpOnLaunch decides"


# A node group's amiType with a launch template that boots its own image: EKS reports CUSTOM, and the
# program must leave amiType out (EKS API CreateNodegroup, amiType; Nodegroup.amiType: "If the node
# group was deployed using a launch template with a custom AMI, then this is CUSTOM"). amiType is
# Optional and Computed (terraform-provider-aws internal/service/eks/node_group.go, resourceNodeGroup
# schema, commit 012e0a32): unknown in a first preview when left out, CUSTOM once deployed. One row for
# the three.
_CUSTOM_AMI = "CUSTOM (the launch template's image)"


def rows(
    resource_type: str,
    resource_name: str,
    props: Mapping[str, Any],
    built_from: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
) -> list[Row]:
    if resource_type == ASG_TAG:
        # What an empty group offers the cluster autoscaler holds no access; any other key may (an
        # auto-discovery tag such as k8s.io/cluster-autoscaler/enabled hands the group to the
        # autoscaler, and a propagated tag lands on every instance): a row.
        tag = dig(props, "tag")
        key, propagated = text(tag.get("key")), tag.get("propagateAtLaunch") is True
        if key.startswith(contract.CA_RESOURCE_TAG) and not propagated:
            return []
        # By the Tag resource's name: the group's name is an output, unknown in a first preview.
        shown = f"tag {key}={text(tag.get('value'))}" + (" (propagated to instances)" if propagated else "")
        return [(f"auto scaling group tag {resource_name}", "(node settings)", shown)]
    if resource_type == LAUNCH_TEMPLATE:
        who, part = f"launch template {resource_name}", "(node settings)"
        found = [(who, part, _metadata(dig(props, "metadataOptions")))]
        for device in map(mapping, sequence(props.get("blockDeviceMappings"))):
            encrypted = _flag(dig(device, "ebs").get("encrypted"))
            found.append(
                (
                    who,
                    part,
                    (
                        f"volume {text(device.get('deviceName'))} "
                        f"{'encrypted' if encrypted else 'NOT encrypted' if encrypted is False else 'encryption NOT stated (the account default applies)'}"
                    ),
                )
            )
        found.append((who, part, _public_address(sequence(props.get("networkInterfaces")))))
        return found
    if resource_type == EKS_NODE_GROUP:
        who, part = f"node group {resource_name}", "(node settings)"
        template = props.get("launchTemplate")
        # A null is the provider's way of saying "not set" in a live object: read as absent.
        ami_type = text(unless_filled_in(props, "amiType", built_from))
        if template and ami_type in ("", "CUSTOM"):
            ami_type = _CUSTOM_AMI
        found = [(who, part, f"amiType {ami_type or '(EKS default)'}")]
        if not template:
            found.append((who, part, "NO launch template: EKS's own node settings"))
        elif built_from.get("launchTemplate"):
            # The template's id is an output; which stack template it is, the engine's dependency list says.
            found += [(who, part, f"launch template {name}") for name in built_from["launchTemplate"]]
        else:
            given = {
                key: text(mapping(template).get(key)) for key in ("id", "name") if text(mapping(template).get(key))
            }
            found.append((who, part, f"launch template NOT made by this stack: {canonical(given)}"))
        if props.get("remoteAccess"):
            found.append((who, part, f"SSH remote access {canonical(props.get('remoteAccess'))}"))
        return [*found, (who, part, _subnets(props.get("subnetIds")))]
    if resource_type == IMAGE_INFRASTRUCTURE:
        who, part = f"image build host {resource_name}", "(build settings)"
        # terminate_instance_on_failure: Optional, Default false (terraform-provider-aws
        # internal/service/imagebuilder/infrastructure_configuration.go, commit 00a35305).
        return [
            (who, part, f"key pair {text(props.get('keyPair')) or '(none)'}"),
            (
                who,
                part,
                f"terminateInstanceOnFailure {canonical(bool(_flag(props.get('terminateInstanceOnFailure'))))}",
            ),
            # The profile by the stack resource its name is built from, else as written (one the
            # stack does not make): which role the bake runs as is that profile's row.
            *[
                (who, part, f"instance profile {profile}")
                for profile in built_from.get("instanceProfileName")
                or (f"NOT made by this stack: {text(props.get('instanceProfileName')) or '(none)'}",)
            ],
            (who, part, _metadata(dig(props, "instanceMetadataOptions"))),
            (who, part, _subnets([props.get("subnetId")] if text(props.get("subnetId")) else [])),
        ]
    if resource_type == DISTRIBUTION:
        found = []
        for d in map(mapping, sequence(props.get("distributions"))):
            who, part = f"image distribution {resource_name} to {text(d.get('region')) or '?'}", "(who may launch it)"
            ami = dig(d, "amiDistributionConfiguration")
            found.append(
                (
                    who,
                    part,
                    f"launchPermission {canonical(ami.get('launchPermission')) if ami.get('launchPermission') else '(none: this account only)'}",
                )
            )
            if sequence(ami.get("targetAccountIds")):
                found.append(
                    (
                        who,
                        part,
                        f"copied to accounts {canonical(sorted(text(a) for a in sequence(ami.get('targetAccountIds'))))}",
                    )
                )
            if text(ami.get("kmsKeyId")):
                found.append((who, part, f"AMI encrypted with KMS key {text(ami.get('kmsKeyId'))}"))
            # Every other way the image leaves the build (pulumi-aws 7.51 imagebuilder DistributionConfiguration
            # distributions[]: an S3 export, SSM parameters (in other accounts), fast launch and launch
            # template updates (per account), container images): each one set is a row of its whole value.
            found += [
                (who, part, f"{key} {sha256(canonical(d.get(key)))} (SHA-256 of the canonical JSON)")
                for key in (
                    "s3ExportConfiguration",
                    "ssmParameterConfigurations",
                    "fastLaunchConfigurations",
                    "launchTemplateConfigurations",
                    "containerDistributionConfiguration",
                )
                if mapping(d.get(key)) or sequence(d.get(key))
            ]
        return found
    if resource_type == IAM_INSTANCE_PROFILE:
        return [(f"instance profile {resource_name}", "(role)", f"role {without_autoname(props.get('role'))}")]
    if resource_type == EKS_CLUSTER:
        logs = sorted(text(t) for t in sequence(props.get("enabledClusterLogTypes")))
        secrets = "secrets" in {text(r) for r in sequence(dig(props, "encryptionConfig").get("resources"))}
        return [
            ("EKS cluster", "(control plane)", f"logs {', '.join(logs) if logs else 'NONE'}"),
            ("EKS cluster", "(control plane)", _subnets(dig(props, "vpcConfig").get("subnetIds"))),
            (
                "EKS cluster",
                "(control plane)",
                "secrets envelope-encrypted with a KMS key" if secrets else "secrets NOT envelope-encrypted",
            ),
        ]
    if resource_type == SERVICE_ACCOUNT:
        meta = dig(props, "metadata")
        who = subject("ServiceAccount", text(meta.get("namespace")), text(meta.get("name")) or resource_name)
        found = []
        if IRSA_ANNOTATION in dig(meta, "annotations"):
            found.append((who, "(identity)", f"an IAM role through {IRSA_ANNOTATION}"))
        if props.get("automountServiceAccountToken") is not None:
            found.append(
                (
                    who,
                    "(identity)",
                    f"automountServiceAccountToken {canonical(props.get('automountServiceAccountToken'))}",
                )
            )
        return found
    return []
