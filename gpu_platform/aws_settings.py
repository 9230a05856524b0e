"""The settings that guard the nodes, the image build and the control plane, as the privilege ledger
(gpu_platform/ledger.py) reads them: each is known when the program runs (no resource's output), so
the offline and the real preview read the same, and a first preview can read it.

Rows (subject, part, setting):
- every launch template (`launch template NAME`, `(node settings)`): the instance metadata service
  (tokens, hop limit, endpoint), each block device's encryption, and any interface with a public
  address; its user data is not read (it names the cluster's endpoint, an output: CODEOWNERS covers
  components/aws/user_data.py);
- every managed node group (`node group NAME`): its AMI type, whether it has a launch template (without
  one EKS's own settings apply, and no launch-template policy judges it) and any SSH remote access;
- every Image Builder infrastructure configuration (`image build host NAME`): its key pair, whether a
  failed build's instance is terminated, and its metadata service; every distribution configuration
  (`image distribution NAME`): who may launch the AMI and which accounts it is copied to;
- every instance profile (`instance profile NAME`): the role it carries (by name, autoname suffix off);
- every EKS cluster (`EKS cluster`): its control-plane log types and whether secrets are
  envelope-encrypted (the key's ARN is an output and is not read);
- every ServiceAccount that an IAM role is bound to by annotation (IRSA), or that turns its token off.
Subjects use the Pulumi resource name, the same in both previews.
"""

from __future__ import annotations

from typing import Any, Mapping

from gpu_platform.canonical_form import canonical, number, subject, without_autoname
from gpu_platform.props import dig, mapping, sequence, text
from gpu_platform.resource_types import (EKS_CLUSTER, EKS_NODE_GROUP, IAM_INSTANCE_PROFILE, IMAGE_DISTRIBUTION as DISTRIBUTION,
                                         IMAGE_INFRASTRUCTURE, LAUNCH_TEMPLATE, SERVICE_ACCOUNT)

Row = tuple[str, str, str]
TYPES = (LAUNCH_TEMPLATE, EKS_NODE_GROUP, IMAGE_INFRASTRUCTURE, DISTRIBUTION, IAM_INSTANCE_PROFILE, EKS_CLUSTER, SERVICE_ACCOUNT)
IRSA_ANNOTATION = "eks.amazonaws.com/role-arn"  # EKS User Guide, "IAM roles for service accounts"


def _metadata(options: Mapping[str, Any]) -> str:
    # Unset reads as the default EC2 states (EC2 API, LaunchTemplateInstanceMetadataOptionsRequest:
    # tokens optional, hop limit 1, endpoint enabled), so the live object, which may state it, reads alike.
    return (f"instance metadata: tokens {text(options.get('httpTokens')) or 'optional'}, hop limit "
            f"{number(options.get('httpPutResponseHopLimit')) or '1'}, endpoint {text(options.get('httpEndpoint')) or 'enabled'}")


def rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    if resource_type == LAUNCH_TEMPLATE:
        who, part = f"launch template {resource_name}", "(node settings)"
        found = [(who, part, _metadata(dig(props, "metadataOptions")))]
        for device in map(mapping, sequence(props.get("blockDeviceMappings"))):
            encrypted = text(dig(device, "ebs").get("encrypted")).lower() == "true"
            found.append((who, part, f"volume {text(device.get('deviceName'))} {'encrypted' if encrypted else 'NOT encrypted'}"))
        if any(mapping(i).get("associatePublicIpAddress") in (True, "true") for i in sequence(props.get("networkInterfaces"))):
            found.append((who, part, "an interface with a PUBLIC address"))
        return found
    if resource_type == EKS_NODE_GROUP:
        who, part = f"node group {resource_name}", "(node settings)"
        # A null is the provider's way of saying "not set" in a live object: read as absent.
        found = [(who, part, f"amiType {text(props.get('amiType')) or '(EKS default)'}"),
                 (who, part, "launch template set" if props.get("launchTemplate") else "NO launch template: EKS's own node settings")]
        if props.get("remoteAccess"):
            found.append((who, part, f"SSH remote access {canonical(props.get('remoteAccess'))}"))
        return found
    if resource_type == IMAGE_INFRASTRUCTURE:
        who, part = f"image build host {resource_name}", "(build settings)"
        return [(who, part, f"key pair {text(props.get('keyPair')) or '(none)'}"),
                (who, part, f"terminateInstanceOnFailure {canonical(props.get('terminateInstanceOnFailure', True))}"),
                (who, part, _metadata(dig(props, "instanceMetadataOptions")))]
    if resource_type == DISTRIBUTION:
        who, part = f"image distribution {resource_name}", "(who may launch it)"
        found = []
        for d in map(mapping, sequence(props.get("distributions"))):
            ami = dig(d, "amiDistributionConfiguration")
            found.append((who, part, f"launchPermission {canonical(ami.get('launchPermission')) if ami.get('launchPermission') else '(none: this account only)'}"))
            if sequence(ami.get("targetAccountIds")):
                found.append((who, part, f"copied to accounts {canonical(sorted(text(a) for a in sequence(ami.get('targetAccountIds'))))}"))
        return found
    if resource_type == IAM_INSTANCE_PROFILE:
        return [(f"instance profile {resource_name}", "(role)", f"role {without_autoname(props.get('role'))}")]
    if resource_type == EKS_CLUSTER:
        logs = sorted(text(t) for t in sequence(props.get("enabledClusterLogTypes")))
        secrets = "secrets" in {text(r) for r in sequence(dig(props, "encryptionConfig").get("resources"))}
        return [("EKS cluster", "(control plane)", f"logs {', '.join(logs) if logs else 'NONE'}"),
                ("EKS cluster", "(control plane)", "secrets envelope-encrypted with a KMS key" if secrets else "secrets NOT envelope-encrypted")]
    if resource_type == SERVICE_ACCOUNT:
        meta = dig(props, "metadata")
        who = subject("ServiceAccount", text(meta.get("namespace")), text(meta.get("name")) or resource_name)
        found = []
        if IRSA_ANNOTATION in dig(meta, "annotations"):
            found.append((who, "(identity)", f"an IAM role through {IRSA_ANNOTATION}"))
        if props.get("automountServiceAccountToken") is not None:
            found.append((who, "(identity)", f"automountServiceAccountToken {canonical(props.get('automountServiceAccountToken'))}"))
        return found
    return []
