"""preview/offline/outputs.py: what the offline AWS fills in, and what a first preview leaves unknown."""

from __future__ import annotations

from pulumi.runtime import rpc

from preview.offline import outputs


def test_an_input_the_provider_fills_in_is_unknown_in_a_first_preview_only_when_left_out():
    # node_group.go ami_type, vpc_security_group.go ingress/egress, addon.go addon_version: Optional and
    # Computed in terraform-provider-aws.
    _, planned = outputs.preview("aws:eks/nodeGroup:NodeGroup", "ng", {"launchTemplate": {"version": "1"}})
    assert planned["amiType"] is rpc.UNKNOWN
    _, planned = outputs.preview("aws:eks/nodeGroup:NodeGroup", "ng", {"amiType": "AL2023_x86_64_STANDARD"})
    assert planned["amiType"] == "AL2023_x86_64_STANDARD"
    _, planned = outputs.preview("aws:ec2/securityGroup:SecurityGroup", "sg", {"egress": []})
    assert planned["ingress"] is rpc.UNKNOWN and planned["egress"] == []
    _, planned = outputs.preview("aws:eks/addon:Addon", "a", {"addonName": "vpc-cni"})
    assert planned["addonVersion"] is rpc.UNKNOWN
    _, planned = outputs.preview(
        "aws:eks/addon:Addon", "a", {"addonName": "eks-node-monitoring-agent", "addonVersion": "v1.7.0-eksbuild.1"}
    )
    assert planned["addonVersion"] == "v1.7.0-eksbuild.1"


def test_a_node_group_has_the_asg_eks_makes_for_it():
    # EKS names it eks-<node group>-<uuid> (terraform-aws-modules/terraform-aws-eks#3007); the program tags it.
    _, state = outputs.fill("aws:eks/nodeGroup:NodeGroup", "ng", {"nodeGroupNamePrefix": "gpu-l4-"})
    asg = state["resources"][0]["autoscalingGroups"][0]["name"]
    assert asg.startswith(f"eks-{state['nodeGroupName']}-") and len(asg) == len(f"eks-{state['nodeGroupName']}-") + 36
