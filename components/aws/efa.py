"""Elastic Fabric Adapter for multi-node GPU pools: the launch template's network interfaces (one EFA
interface per network card that takes one), the cluster placement group that keeps a pool's nodes on
one network spine, and the security group EFA traffic needs (all traffic from and to itself).
The facts, with their sources, are in gpu_platform/catalog/aws_limits.yaml (`efa`).

The interface layout, from the card and EFA counts the provider's getInstanceType returns
(maximumNetworkCards, efaMaximumInterfaces):
- the primary interface is on card 0, device index 0, and carries the node's IP: `efa` (ENA and EFA)
  when every card takes EFA, a plain `interface` when one card fewer than the cards does (card 0 then
  takes no EFA, as on p6-b300);
- each further EFA card gets an `efa-only` interface at device index 1: no IP address, so a p5 with
  32 cards does not take 31 more addresses from the subnet (VPC CNI 1.18.5 or later leaves them alone).
This is the layout of the EC2 User Guide's earlier text ("Maximize network bandwidth on accelerated
instances", as the docs.amazonaws.cn copy still reads: the primary `efa` on card 0, device index 0;
each further card at device index 1, `efa` or `efa-only`). AWS's current text of that page puts a
plain ENA primary on card 0 with an `efa-only` at device index 1 of the same card, and the other
cards' `efa-only` at device index 0. Both give one EFA device per card that takes one, so NCCL sees
the same devices; the earlier layout is kept because the EKS User Guide's rules hold for it (no
`efa-only` as card 0's primary, 4d52b4d0 latest/ug/ml/node-efa.adoc:35-37) and the tests check it
against moto's per-card InterfaceTypes (tests/components/aws/test_efa.py).
More than one interface means no AssociatePublicIpAddress at all (one interface keeps it false): EC2 refuses it with more than one
interface in the request (botocore 0e6e2404b, ec2 service-2.json, InstanceNetworkInterfaceSpecification.
AssociatePublicIpAddress), and assigns no public address then.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

# The security group rule protocol for all traffic (EC2 IpPermission IpProtocol "-1").
ALL_TRAFFIC = "-1"


@dataclass(frozen=True)
class Interface:
    card: int
    device_index: int
    kind: str  # interface | efa | efa-only


def layout(network_cards: int, efa_interfaces: int) -> list[Interface]:
    """The network interfaces of an EFA node; ValueError for counts no layout fits."""
    if efa_interfaces < 1 or network_cards < 1 or efa_interfaces > network_cards:
        raise ValueError(f"no EFA layout for {efa_interfaces} EFA interfaces on {network_cards} network cards")
    if efa_interfaces == network_cards:
        primary, efa_cards = "efa", range(1, network_cards)
    elif efa_interfaces == network_cards - 1:
        primary, efa_cards = "interface", range(1, network_cards)
    else:
        raise ValueError(
            f"no EFA layout for {efa_interfaces} EFA interfaces on {network_cards} network cards "
            "(neither every card nor every card but the primary)"
        )
    return [Interface(0, 0, primary), *(Interface(card, 1, "efa-only") for card in efa_cards)]


def devices(interfaces: list[Interface]) -> int:
    """The EFA devices a node of the layout has: one per `efa` or `efa-only` interface; a plain
    `interface` is ENA only (EKS User Guide 4d52b4d0 latest/ug/ml/node-efa.adoc:35)."""
    return sum(1 for i in interfaces if i.kind != "interface")


def network_interfaces(interfaces: list[Interface], security_groups: list[pulumi.Input[str]]) -> list[dict]:
    """The launch template's networkInterfaces for the layout, every one in the given groups."""
    found = [
        {
            "network_card_index": i.card,
            "device_index": i.device_index,
            "interface_type": i.kind,
            "delete_on_termination": "true",
            "security_groups": security_groups,
        }
        for i in interfaces
    ]
    if len(found) == 1:  # one interface: say no public address, as every other template does
        found[0]["associate_public_ip_address"] = "false"
    return found


@dataclass(frozen=True)
class EfaNetworkArgs:
    vpc_id: str
    tags: dict[str, str]


class EfaNetwork(pulumi.ComponentResource):
    """The security group every EFA interface of the stack joins: EFA's SRD traffic goes between the
    nodes' interfaces directly, so the group admits all traffic from and to its own members."""

    security_group_id: pulumi.Output[str]

    def __init__(self, name: str, args: EfaNetworkArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:aws:EfaNetwork", name, None, opts)
        group = aws.ec2.SecurityGroup(
            f"{name}-sg",
            vpc_id=args.vpc_id,
            description="EFA traffic between the GPU nodes of this stack (all traffic from and to this group)",
            # No other rule: the provider revokes AWS's default allow-all egress when it creates a group
            # in a VPC (terraform-provider-aws v5.42.0 internal/service/ec2/vpc_security_group.go:221-257,
            # website/docs/r/security_group.html.markdown:65), so the two rules below are the group's only ones.
            tags={**args.tags, "Name": f"{name}-sg"},
            opts=pulumi.ResourceOptions(parent=self),
        )
        aws.vpc.SecurityGroupIngressRule(
            f"{name}-self-in",
            security_group_id=group.id,
            ip_protocol=ALL_TRAFFIC,
            referenced_security_group_id=group.id,
            description="EFA: all traffic from this group",
            opts=pulumi.ResourceOptions(parent=self),
        )
        aws.vpc.SecurityGroupEgressRule(
            f"{name}-self-out",
            security_group_id=group.id,
            ip_protocol=ALL_TRAFFIC,
            referenced_security_group_id=group.id,
            description="EFA: all traffic to this group",
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.security_group_id = group.id
        self.register_outputs({"security_group_id": group.id})


def placement_group(name: str, tags: dict[str, str], parent: pulumi.Resource) -> aws.ec2.PlacementGroup:
    """A cluster placement group: the pool's instances on one low-latency network segment of one zone."""
    return aws.ec2.PlacementGroup(
        f"{name}-pg", strategy="cluster", tags=tags, opts=pulumi.ResourceOptions(parent=parent)
    )
