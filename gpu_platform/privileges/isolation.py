"""What keeps workloads apart or hands them devices, as the privilege ledger (gpu_platform/privileges/ledger.py)
reads it: NetworkPolicies (an allow-all policy beside the default-deny one opens the namespace:
policies are additive), RuntimeClasses (the handler a pod's runtimeClassName selects: `nvidia`
injects GPUs) and DRA DeviceClasses (which devices a claim of the class may get, and with what
configuration).

Rows, part by kind:
- `NetworkPolicy NS/NAME`, `(network)`: `spec sha256:...` over the spec with the API server's
  defaults (gpu_platform/privileges/server_defaults.py: a port's protocol TCP, policyTypes from the rules);
- `RuntimeClass NAME`, `(runtime)`: `handler H` and `scheduling ...` / `overhead ...` where set;
- `DeviceClass NAME`, `(devices)`: `spec sha256:...` (selectors, config, extendedResourceName);
- `Service NS/NAME`, `(exposure)`: its type (ClusterIP unless set: a LoadBalancer or NodePort one
  takes traffic from outside the cluster) and any externalIPs or loadBalancerSourceRanges; one that
  takes outside traffic also its ports, its selector and its AWS load balancer annotations;
- a VPC security group rule with an address source or destination, inline or a rule resource of its
  own (`security group GROUP`, `(network)`, GROUP the stack's group resource the rule depends on
  (ledger.REFERENCED), else the id as written): `ingress from CIDR` / `egress to CIDR` with
  its protocol and ports. A rule naming another group is not read: that group's id is an output,
  unknown in a first preview.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gpu_platform.interface.props import dig, mapping, sequence, text, unless_filled_in
from gpu_platform.interface.resource_types import (
    DEVICE_CLASS,
    NETWORK_POLICY,
    RUNTIME_CLASS,
    SECURITY_GROUP,
    SECURITY_GROUP_EGRESS as EGRESS_RULE,
    SECURITY_GROUP_INGRESS as INGRESS_RULE,
    SERVICE,
)
from gpu_platform.privileges import server_defaults
from gpu_platform.privileges.canonical_form import canonical, number, sha256, subject

Row = tuple[str, str, str]
TYPES = (NETWORK_POLICY, RUNTIME_CLASS, DEVICE_CLASS, SERVICE, SECURITY_GROUP, INGRESS_RULE, EGRESS_RULE)
_HASHED = "(SHA-256 of the canonical JSON)"


def rows(
    resource_type: str,
    resource_name: str,
    props: Mapping[str, Any],
    built_from: Mapping[str, tuple[str, ...]] = MappingProxyType({}),
) -> list[Row]:
    meta = dig(props, "metadata")
    name = text(meta.get("name")) or resource_name
    if resource_type == NETWORK_POLICY:
        who = subject("NetworkPolicy", text(meta.get("namespace")), name)
        return [
            (
                who,
                "(network)",
                f"spec {sha256(canonical(server_defaults.network_policy_spec(dig(props, 'spec'))))} {_HASHED}",
            )
        ]
    if resource_type == RUNTIME_CLASS:
        who = subject("RuntimeClass", "", name)
        found = [(who, "(runtime)", f"handler {text(props.get('handler'))}")]
        found += [
            (who, "(runtime)", f"{key} {canonical(props.get(key))}")
            for key in ("scheduling", "overhead")
            if key in props
        ]
        return found
    if resource_type == DEVICE_CLASS:
        return [
            (subject("DeviceClass", "", name), "(devices)", f"spec {sha256(canonical(dig(props, 'spec')))} {_HASHED}")
        ]
    if resource_type == SERVICE:
        spec = dig(props, "spec")
        who = subject("Service", text(meta.get("namespace")), name)
        kind = text(spec.get("type")) or "ClusterIP"
        found = [(who, "(exposure)", f"type {kind}")]
        found += [
            (who, "(exposure)", f"{key} {canonical(sorted(text(v) for v in sequence(spec.get(key))))}")
            for key in ("externalIPs", "loadBalancerSourceRanges")
            if sequence(spec.get(key))
        ]
        if kind in ("NodePort", "LoadBalancer") or sequence(spec.get("externalIPs")):
            # What it opens to outside the cluster: the ports (a port's protocol defaults to TCP; the
            # node port the API server allocates is not read, it is no choice of the stack) and the pods
            # behind them; for a load balancer, the AWS controllers' annotations that decide whether it
            # faces the internet (aws-load-balancer-scheme, -internal, -type, ...: AWS Load Balancer
            # Controller docs, "Service annotations").
            opened = sorted(
                f"{number(mapping(x).get('port'))}/{text(mapping(x).get('protocol')) or 'TCP'}"
                for x in sequence(spec.get("ports"))
            )
            found.append((who, "(exposure)", f"ports {canonical(opened)}"))
            found.append(
                (who, "(exposure)", f"selector {canonical(dict(sorted(mapping(spec.get('selector')).items())))}")
            )
            notes = dig(meta, "annotations")
            found += [
                (who, "(exposure)", f"annotation {key}={text(notes.get(key))}")
                for key in sorted(map(str, notes))
                if key.startswith("service.beta.kubernetes.io/aws-load-balancer-")
            ]
        return found
    if resource_type == SECURITY_GROUP:
        # Inline rules with address sources (the image build's egress): each address a row, under the
        # group's name, as a separate rule's row is (below). Both lists are Optional and Computed
        # (terraform-provider-aws internal/service/ec2/vpc_security_group.go, securityGroupRuleSetNestedBlock,
        # commit 01606926): left out, they are unknown in a first preview, and a deployed group reads
        # back every rule it has, the separate rule resources' too, which then make the same rows.
        found = []
        for key, way in (("ingress", "ingress from"), ("egress", "egress to")):
            for rule in map(dict, map(dig, sequence(unless_filled_in(props, key, built_from)))):
                addresses = [
                    text(a) for k in ("cidrBlocks", "ipv6CidrBlocks", "prefixListIds") for a in sequence(rule.get(k))
                ]
                ports = (
                    "all ports"
                    if text(rule.get("protocol")) == "-1"
                    else f"{text(rule.get('protocol'))} {number(rule.get('fromPort'))}-{number(rule.get('toPort'))}"
                )
                found += [(f"security group {resource_name}", "(network)", f"{way} {a}, {ports}") for a in addresses]
        return found
    if resource_type in (INGRESS_RULE, EGRESS_RULE):
        source = next((text(props.get(k)) for k in ("cidrIpv4", "cidrIpv6", "prefixListId") if text(props.get(k))), "")
        if not source:
            return []
        ports = (
            "all ports"
            if text(props.get("ipProtocol")) == "-1"
            else f"{text(props.get('ipProtocol'))} {number(props.get('fromPort'))}-{number(props.get('toPort'))}"
        )
        way = "ingress from" if resource_type == INGRESS_RULE else "egress to"
        # The group by the stack's group resource the rule depends on (its id is an output, unknown in
        # a first preview), else as the program writes it (a group the stack does not make).
        groups = built_from.get("securityGroupId") or (text(props.get("securityGroupId")) or "?",)
        return [(f"security group {group}", "(network)", f"{way} {source}, {ports}") for group in groups]
    return []
