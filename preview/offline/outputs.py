"""Computed outputs for the offline engine: what AWS would fill in after creating a resource.

A mock that only echoes inputs leaves outputs such as an EKS cluster's endpoint empty, and every
resource built from them silently loses an input. Each table row below says which outputs a type
computes; values are derived from the resource name so that runs are byte-identical.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from typing import Any

from pulumi.runtime import rpc

ACCOUNT = "123456789012"
REGION = "us-west-2"

# A syntactically valid PEM, so kubeconfigs and user data built from it look like the real thing.
_FAKE_CA = base64.b64encode(
    b"-----BEGIN CERTIFICATE-----\nMIIBofflinepreviewcertificateauthority\n-----END CERTIFICATE-----\n"
).decode()


def _hex(name: str, length: int) -> str:
    return hashlib.sha256(name.encode()).hexdigest()[:length]


def _uuid(name: str) -> str:
    h = _hex(name, 32)
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _arn(service: str, kind: str, name: str, region: str = REGION) -> str:
    return f"arn:aws:{service}:{region}:{ACCOUNT}:{kind}/{name}"


def _eks_cluster(name: str, inputs: dict) -> dict:
    cluster = inputs.get("name", name)
    return {
        "arn": _arn("eks", "cluster", cluster),
        "endpoint": f"https://{_hex(cluster, 32).upper()}.gr7.{REGION}.eks.amazonaws.com",
        "certificateAuthority": {"data": _FAKE_CA},
        "vpcConfig": {
            **inputs.get("vpcConfig", {}),
            "clusterSecurityGroupId": f"sg-{_hex(cluster + 'sg', 17)}",
            "vpcId": f"vpc-{_hex(cluster + 'vpc', 17)}",
        },
        "kubernetesNetworkConfig": {"serviceIpv4Cidr": "172.20.0.0/16", "ipFamily": "ipv4"},
        "identities": [
            {"oidcs": [{"issuer": f"https://oidc.eks.{REGION}.amazonaws.com/id/{_hex(cluster, 32).upper()}"}]}
        ],
        "status": "ACTIVE",
    }


def _image(name: str, inputs: dict) -> dict:
    return {
        "arn": _arn("imagebuilder", "image", f"{name}/1.0.0/1"),
        "outputResources": [{"amis": [{"image": f"ami-{_hex(name, 17)}", "region": REGION}], "containers": []}],
    }


def _node_group(name: str, inputs: dict) -> dict:
    # A name from the prefix plus a unique suffix, as the provider makes one (tf-aws v5.42.0
    # internal/service/eks/node_group.go line 309, create.Name): 26 characters, here from the name.
    group = inputs.get("nodeGroupName") or inputs.get("nodeGroupNamePrefix", "") + _hex(name, 26)
    # The ASG EKS makes for it (botocore eks service-2.json, Nodegroup.resources): named eks-<group>-<uuid>
    # (terraform-aws-modules/terraform-aws-eks#3007; older groups: eks-<uuid>).
    return {
        "arn": _arn("eks", "nodegroup", name),
        "status": "ACTIVE",
        "nodeGroupName": group,
        "resources": [{"autoscalingGroups": [{"name": f"eks-{group}-{_uuid(name)}"}]}],
    }


_COMPUTED: dict[str, Callable[[str, dict], dict]] = {
    "aws:eks/cluster:Cluster": _eks_cluster,
    "aws:imagebuilder/image:Image": _image,
    "aws:iam/role:Role": lambda name, i: {
        "arn": f"arn:aws:iam::{ACCOUNT}:role/{i.get('name', name)}",
        "name": i.get("name", name),
    },
    "aws:iam/instanceProfile:InstanceProfile": lambda name, i: {
        "arn": f"arn:aws:iam::{ACCOUNT}:instance-profile/{i.get('name', name)}",
        "name": i.get("name", name),
    },
    "aws:iam/policy:Policy": lambda name, i: {
        "arn": f"arn:aws:iam::{ACCOUNT}:policy/{i.get('name', name)}",
        "policyId": f"ANPA{_hex(name, 17).upper()}",
    },
    # An add-on's ARN names its cluster, add-on and a UUID EKS makes (EKS API Addon.addonArn:
    # arn:aws:eks:<region>:<account>:addon/<cluster>/<addon>/<uuid>); its version is EKS's default
    # for the cluster unless given, which the offline preview does not know: left unknown.
    "aws:eks/addon:Addon": lambda name, i: {
        "arn": _arn("eks", "addon", f"{i.get('clusterName', '')}/{i.get('addonName', name)}/{_uuid(name)}")
    },
    "aws:kms/key:Key": lambda name, i: {"arn": _arn("kms", "key", _hex(name, 32)), "keyId": _hex(name, 32)},
    "aws:ec2/launchTemplate:LaunchTemplate": lambda name, i: {
        "arn": _arn("ec2", "launch-template", f"lt-{_hex(name, 17)}"),
        "latestVersion": 1,
    },
    "aws:eks/nodeGroup:NodeGroup": _node_group,
    "aws:cloudwatch/logGroup:LogGroup": lambda name, i: {"arn": _arn("logs", "log-group", i.get("name", name))},
}

# Resource ids AWS hands back, by type; everything else gets `<name>-id`.
_IDS: dict[str, Callable[[str], str]] = {
    "aws:ec2/launchTemplate:LaunchTemplate": lambda name: f"lt-{_hex(name, 17)}",
    "aws:kms/key:Key": lambda name: _hex(name, 32),
    "aws:ec2/securityGroup:SecurityGroup": lambda name: f"sg-{_hex(name, 17)}",
    "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule": lambda name: f"sgr-{_hex(name, 17)}",
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": lambda name: f"sgr-{_hex(name, 17)}",
}
# Ids the provider builds from inputs (tf-aws v5.42.0 internal/service/eks/addon.go:135 and id.go:13-17,
# AddonCreateResourceID: "<cluster>:<addon>").
_IDS_FROM_INPUTS: dict[str, Callable[[str, dict], str]] = {
    "aws:eks/addon:Addon": lambda name, i: f"{i.get('clusterName', '')}:{i.get('addonName', name)}",
}


# Inputs a bridged provider names itself when the program leaves them out (Pulumi autonaming: the
# logical name, "-" and 7 random hex digits, set in the provider's Check, so already known in a
# preview); here the random part comes from the name. A placement group's name is required by
# terraform-provider-aws (v5.42.0 internal/service/ec2/ec2_placement_group.go:45-49) and optional in
# pulumi-aws 7.51.1 (ec2/placement_group.py:24): the bridge names it.
_AUTONAMED: dict[str, str] = {
    "aws:ec2/placementGroup:PlacementGroup": "name",
    # pulumi-aws autonames a role left without a name (resources.go of pulumi-aws: aws_iam_role's name
    # is an AutoName field), so the role's name, unlike its ARN, is known in a preview.
    "aws:iam/role:Role": "name",
}


def _autonamed(type_: str, name: str, inputs: dict[str, Any]) -> dict[str, Any]:
    key = _AUTONAMED.get(type_)
    return {**inputs, key: f"{name}-{_hex(name, 7)}"} if key and key not in inputs else inputs


def fill(type_: str, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(id, state) for a new resource: its inputs plus the outputs its type computes."""
    inputs = _autonamed(type_, name, inputs)
    computed = _COMPUTED.get(type_)
    state = dict(inputs)
    if computed is not None:
        state.update(computed(name, inputs))
    elif type_.startswith("aws:") and "arn" not in state:
        service = type_.split(":")[1].split("/")[0]
        state["arn"] = _arn(service, type_.rsplit(":", 1)[-1].lower(), name)
    if type_ in _IDS_FROM_INPUTS:
        resource_id = _IDS_FROM_INPUTS[type_](name, state)
    else:
        resource_id = _IDS.get(type_, lambda n: f"{n}-id")(name)
    return resource_id, state


# Inputs that are Optional and Computed in the provider's schema: left out by the program, the
# provider's plan has them unknown (the value AWS chooses), so a first preview hands the pack an
# unknown there. terraform-provider-aws: internal/service/eks/node_group.go (ami_type, commit 012e0a32),
# internal/service/ec2/vpc_security_group.go (ingress, egress: securityGroupRuleSetNestedBlock, commit
# 01606926), internal/service/eks/addon.go (addon_version).
FILLED_IN_WHEN_LEFT_OUT: dict[str, tuple[str, ...]] = {
    "aws:eks/nodeGroup:NodeGroup": ("amiType",),
    "aws:ec2/securityGroup:SecurityGroup": ("ingress", "egress"),
    "aws:eks/addon:Addon": ("addonVersion",),
}


def _unknown_where_computed(inputs: Any, computed: Any) -> Any:
    """The inputs, with every value the provider computes unknown: a key the inputs set keeps its
    value (objects merge key by key), anything else the provider fills is unknown, whole."""
    if not isinstance(computed, dict) or not isinstance(inputs, dict):
        return inputs
    merged = dict(inputs)
    for key, value in computed.items():
        merged[key] = _unknown_where_computed(inputs[key], value) if key in inputs else rpc.UNKNOWN
    return merged


def preview(type_: str, name: str, inputs: dict[str, Any]) -> tuple[None, dict[str, Any]]:
    """(id, state) as a provider previews a create: no id yet, the inputs back, and every output it
    computes (the same table as `fill`, nested fields included) unknown. A tfbridge provider's
    preview returns its planned state, computed attributes unknown at any depth; an output left out
    instead would reach the program as a known null."""
    inputs = _autonamed(type_, name, inputs)
    _, filled = fill(type_, name, inputs)
    planned = _unknown_where_computed(
        inputs, {k: v for k, v in filled.items() if k not in inputs or isinstance(v, dict)}
    )
    return None, {
        **planned,
        **{key: rpc.UNKNOWN for key in FILLED_IN_WHEN_LEFT_OUT.get(type_, ()) if key not in inputs},
    }
