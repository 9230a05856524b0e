"""The VPC CNI on its own role: a managed add-on whose aws-node service account gets its credentials
through EKS Pod Identity, with network policies enforced; the node role no longer carries them, so
nodes wait for them. An adopted cluster's CNI is left alone, with a warning."""

from __future__ import annotations

import json

import pytest

from tests.components.aws.conftest import NODE_GROUP

ADDON = "aws:eks/addon:Addon"
ROLE = "aws:iam/role:Role"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
CNI_POLICY = "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"


def _addon(rec, name: str):
    (found,) = [r for r in rec.of_type(ADDON) if r.inputs["addonName"] == name]
    return found


def test_vpc_cni_is_a_managed_add_on_with_network_policies_enforced(shipped):
    cni = _addon(shipped, "vpc-cni")
    assert cni.inputs["clusterName"] == shipped.config["gpu-platform:cluster"]["name"]
    # The add-on's configuration schema takes the value as a string.
    assert json.loads(cni.inputs["configurationValues"]) == {"enableNetworkPolicy": "true"}


def test_aws_node_gets_its_own_role_through_pod_identity(shipped):
    cni = _addon(shipped, "vpc-cni")
    (association,) = cni.inputs["podIdentityAssociations"]
    assert association["serviceAccount"] == "aws-node"
    role = shipped.one(ROLE, "gpu-cluster-vpc-cni-role")
    attached = {a.inputs["policyArn"] for a in shipped.of_type(ATTACHMENT) if role.urn in a.dependencies}
    assert attached == {CNI_POLICY}
    assert role.urn in shipped.waits_for(cni.urn)


def test_the_association_names_the_cni_role_by_an_arn_known_in_a_preview(shipped):
    # Built from the role's name (known in a preview, unlike its arn output), so the privilege ledger
    # can hash the association in a stack's first preview; it must still be the role's real ARN.
    (association,) = _addon(shipped, "vpc-cni").inputs["podIdentityAssociations"]
    role = shipped.one(ROLE, "gpu-cluster-vpc-cni-role")
    assert association["roleArn"] == role.state["arn"]
    assert association["roleArn"].startswith("arn:aws:iam::123456789012:role/gpu-cluster-vpc-cni-role-")


def test_the_cni_role_is_trusted_by_pod_identity_for_aws_node_of_this_cluster_only(shipped):
    role = shipped.one(ROLE, "gpu-cluster-vpc-cni-role")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "pods.eks.amazonaws.com"}
    assert sorted(statement["Action"]) == ["sts:AssumeRole", "sts:TagSession"]
    name = shipped.config["gpu-platform:cluster"]["name"]
    assert statement["Condition"] == {
        "StringEquals": {
            "aws:RequestTag/eks-cluster-arn": f"arn:aws:eks:us-west-2:123456789012:cluster/{name}",
            "aws:RequestTag/kubernetes-namespace": "kube-system",
            "aws:RequestTag/kubernetes-service-account": "aws-node",
        }
    }


def test_the_pod_identity_agent_is_installed_before_the_cni_association(shipped):
    agent = _addon(shipped, "eks-pod-identity-agent")
    assert agent.urn in shipped.waits_for(_addon(shipped, "vpc-cni").urn)


def test_no_ec2_trusted_role_carries_the_cni_policy(shipped):
    for role in shipped.of_type(ROLE):
        principal = json.loads(role.inputs["assumeRolePolicy"])["Statement"][0]["Principal"]["Service"]
        attached = {a.inputs["policyArn"] for a in shipped.of_type(ATTACHMENT) if role.urn in a.dependencies}
        if principal == "ec2.amazonaws.com":
            assert CNI_POLICY not in attached, role.name


def test_every_node_group_waits_for_the_cnis_credentials(shipped):
    # A node whose aws-node has no credentials gets no pod addresses: the system pool and each GPU pool.
    cni = _addon(shipped, "vpc-cni")
    attachment = shipped.one(ATTACHMENT, "gpu-cluster-vpc-cni-role-AmazonEKS_CNI_Policy")
    groups = shipped.of_type(NODE_GROUP)
    assert len(groups) == 1 + len(shipped.config["gpu-platform:nodePools"])
    for group in groups:
        assert {cni.urn, attachment.urn} <= shipped.waits_for(group.urn), group.name


@pytest.fixture(scope="module")
def adopted(record_variant):
    def adopt(config):
        config["gpu-platform:cluster"].update({"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False})

    return record_variant("adopt-gpu-shared", adopt)


def test_an_adopted_clusters_cni_is_left_alone_with_a_warning(adopted):
    assert adopted.of_type(ADDON) == [] or all(
        a.inputs["addonName"] not in ("vpc-cni", "eks-pod-identity-agent") for a in adopted.of_type(ADDON)
    )
    assert [w for w in adopted.warnings if "aws-node" in w and "gpu-shared" in w and "AmazonEKS_CNI_Policy" in w]


def test_the_audit_report_shows_each_roles_trust_conditions_and_the_build_roles_own_actions(prod):
    from preview.reports import audit

    text = audit.report(prod)
    roles = text[text.index("### IAM roles") : text.index("### Cluster access")]
    assert "trusted only if `StringEquals aws:SourceAccount = 123456789012`" in roles
    assert "trusted only if `StringEquals aws:RequestTag/kubernetes-service-account = aws-node`" in roles
    builder = roles[roles.index("Role `gpu-node-image-builder`") : roles.index("Role `gpu-node-role`")]
    assert "customer-managed policy" in builder and "ssm:UpdateInstanceInformation on *" in builder
    assert "ssm:GetParameter" not in builder and "AmazonSSMManagedInstanceCore" not in builder
    addons = text[text.index("### EKS add-ons and node health") :]
    assert "add-on `vpc-cni`, version EKS default for the cluster version" in addons
