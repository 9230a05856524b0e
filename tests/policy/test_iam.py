"""IAM through the real analyzer, on the prod stack's recording: it passes every IAM policy, and each
violating variant (one resource's inputs tampered after the fact, as no valid stack file can make the
program do it) fails the policy it breaks, naming the role or key and what is wrong."""

from __future__ import annotations

import json

import pytest

from policy import iam
from preview.offline.analyze import analyze

ROLE, ATTACHMENT, EXCLUSIVE = iam.ROLE, iam.ATTACHMENT, iam.EXCLUSIVE
# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("eks-role-trust-bound-to-cluster", "resource", "mandatory"),
    ("kms-keys-have-explicit-policy", "resource", "mandatory"),
    ("cni-permissions-not-on-node-roles", "stack", "mandatory"),
    ("image-build-role-reads-no-parameters", "stack", "mandatory"),
]


IAM_POLICIES = {
    "cni-permissions-not-on-node-roles",
    "image-build-role-reads-no-parameters",
    "eks-role-trust-bound-to-cluster",
    "kms-keys-have-explicit-policy",
}
CNI = "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy"
SSM_CORE = "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore"


def _found(recording, policy: str) -> list[str]:
    return [v.message for v in analyze(recording) if v.policy == policy]


def test_the_prod_stack_passes_every_iam_policy(prod):
    assert [v for v in analyze(prod) if v.policy in IAM_POLICIES] == []


def test_every_iam_policy_is_mandatory():
    for policy in (
        iam.cni_permissions_not_on_node_roles,
        iam.image_build_role_reads_no_parameters,
        iam.eks_role_trust_bound_to_cluster,
        iam.kms_keys_have_explicit_policy,
    ):
        assert policy.enforcement_level.value == "mandatory", policy.name


def _set(key, value):
    def change(inputs):
        inputs[key] = value

    return change


# --- the VPC CNI's permissions on a role EC2 instances assume


def test_the_cni_policy_attached_to_the_node_role_fails(prod):
    variant = prod.replaced(ATTACHMENT, "gpu-node-role-AmazonEC2ContainerRegistryPullOnly", _set("policyArn", CNI))
    (message,) = _found(variant, "cni-permissions-not-on-node-roles")
    assert "gpu-node-role" in message and "AmazonEKS_CNI_Policy" in message and "EC2" in message


def test_the_cni_policy_in_the_node_roles_exclusive_list_fails(prod):
    def add(inputs):
        inputs["policyArns"] = [*inputs["policyArns"], CNI]

    variant = prod.replaced(EXCLUSIVE, "gpu-node-role-exclusive", add)
    (message,) = _found(variant, "cni-permissions-not-on-node-roles")
    assert "gpu-node-role" in message and "RolePolicyAttachmentsExclusive" in message


def test_the_cni_policy_in_any_partition_fails(prod):
    variant = prod.replaced(
        ATTACHMENT,
        "gpu-node-role-AmazonEKSWorkerNodePolicy",
        _set("policyArn", "arn:aws-us-gov:iam::aws:policy/AmazonEKS_CNI_Policy"),
    )
    assert len(_found(variant, "cni-permissions-not-on-node-roles")) == 1


def test_a_policy_of_the_stacks_own_that_creates_network_interfaces_anywhere_fails(prod):
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": ["ssm:UpdateInstanceInformation", "ec2:*NetworkInterface"], "Resource": "*"}
        ],
    }
    variant = prod.replaced(iam.POLICY, "gpu-node-image-builder-ssm-agent", _set("policy", json.dumps(document)))
    (message,) = _found(variant, "cni-permissions-not-on-node-roles")
    assert "gpu-node-image-builder" in message and "ec2:CreateNetworkInterface" in message


def test_the_cni_policy_on_the_pod_identity_role_passes(prod):
    # The prod stack attaches it to the VPC CNI's own role, trusted by pods.eks.amazonaws.com.
    assert any(r.inputs.get("policyArn") == CNI for r in prod.of_type(ATTACHMENT))
    assert _found(prod, "cni-permissions-not-on-node-roles") == []


# --- the image build role and the account's SSM parameters


def test_the_ssm_core_policy_on_the_build_role_fails(prod):
    variant = prod.replaced(
        ATTACHMENT, "gpu-node-image-builder-EC2InstanceProfileForImageBuilder", _set("policyArn", SSM_CORE)
    )
    (message,) = _found(variant, "image-build-role-reads-no-parameters")
    assert "gpu-node-image-builder" in message and "AmazonSSMManagedInstanceCore" in message


@pytest.mark.parametrize("action", ["ssm:GetParameter", "ssm:GetParametersByPath", "ssm:Get*", "ssm:*"])
def test_the_build_roles_own_policy_reading_every_parameter_fails(prod, action):
    document = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": action, "Resource": "*"}]}
    variant = prod.replaced(iam.POLICY, "gpu-node-image-builder-ssm-agent", _set("policy", json.dumps(document)))
    (message,) = _found(variant, "image-build-role-reads-no-parameters")
    assert "ssm:GetParameter" in message and "every resource" in message


def test_the_build_role_reading_one_parameter_by_its_arn_passes(prod):
    document = {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Action": "ssm:GetParameter",
                "Resource": "arn:aws:ssm:us-west-2:123456789012:parameter/gpu-platform/bake/x",
            }
        ],
    }
    variant = prod.replaced(iam.POLICY, "gpu-node-image-builder-ssm-agent", _set("policy", json.dumps(document)))
    assert _found(variant, "image-build-role-reads-no-parameters") == []


def test_every_document_of_the_build_role_is_read_not_only_the_first(prod):
    # A harmless inline policy on the role comes first in the stack; the attached policy that reads
    # every parameter must still be found, and the harmless one must not be named as its route.
    harmless = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "ssm:UpdateInstanceInformation", "Resource": "*"}],
    }
    harmful = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "ssm:GetParameters", "Resource": "*"}],
    }
    variant = prod.replaced(
        ROLE, "gpu-node-image-builder", _set("inlinePolicies", [{"name": "agent", "policy": json.dumps(harmless)}])
    )
    variant = variant.replaced(iam.POLICY, "gpu-node-image-builder-ssm-agent", _set("policy", json.dumps(harmful)))
    (message,) = _found(variant, "image-build-role-reads-no-parameters")
    assert "ssm:GetParameters on every resource" in message and "'agent'" not in message


def test_ssm_core_on_a_role_no_image_build_uses_is_not_this_policys(prod):
    # The node role is not the build's: the rule is about the host that runs downloaded installers.
    variant = prod.replaced(ATTACHMENT, "gpu-node-role-AmazonEKSWorkerNodePolicy", _set("policyArn", SSM_CORE))
    assert _found(variant, "image-build-role-reads-no-parameters") == []


# --- confused-deputy conditions on roles EKS assumes


def _trust(recording, role: str):
    return json.loads(recording.one(ROLE, role).inputs["assumeRolePolicy"])


def test_the_cluster_role_without_its_conditions_fails(prod):
    document = _trust(prod, "gpu-cluster-control-plane")
    del document["Statement"][0]["Condition"]
    variant = prod.replaced(ROLE, "gpu-cluster-control-plane", _set("assumeRolePolicy", json.dumps(document)))
    (message,) = _found(variant, "eks-role-trust-bound-to-cluster")
    assert "gpu-cluster-control-plane" in message and "aws:sourceaccount" in message and "aws:sourcearn" in message


def test_the_cluster_role_bound_to_the_account_but_not_the_cluster_fails(prod):
    document = _trust(prod, "gpu-cluster-control-plane")
    document["Statement"][0]["Condition"] = {"StringEquals": {"aws:SourceAccount": "123456789012"}}
    variant = prod.replaced(ROLE, "gpu-cluster-control-plane", _set("assumeRolePolicy", json.dumps(document)))
    (message,) = _found(variant, "eks-role-trust-bound-to-cluster")
    assert "aws:sourcearn" in message and "aws:sourceaccount" not in message


def test_the_cni_role_open_to_any_clusters_pods_fails(prod):
    document = _trust(prod, "gpu-cluster-vpc-cni-role")
    del document["Statement"][0]["Condition"]
    variant = prod.replaced(ROLE, "gpu-cluster-vpc-cni-role", _set("assumeRolePolicy", json.dumps(document)))
    (message,) = _found(variant, "eks-role-trust-bound-to-cluster")
    assert "pods.eks.amazonaws.com" in message and "eks-cluster-arn" in message


def test_ec2_trusted_roles_need_no_condition(prod):
    assert "Condition" not in _trust(prod, "gpu-node-role")["Statement"][0]
    assert _found(prod, "eks-role-trust-bound-to-cluster") == []


# --- the secrets key's policy


def _key_policy(prod) -> dict:
    return json.loads(prod.one(iam.KEY, "gpu-cluster-secrets").inputs["policy"])


def test_a_key_without_a_policy_fails(prod):
    def drop(inputs):
        del inputs["policy"]

    (message,) = _found(prod.replaced(iam.KEY, "gpu-cluster-secrets", drop), "kms-keys-have-explicit-policy")
    assert "gpu-cluster-secrets" in message and "no key policy" in message


def test_a_key_policy_that_leaves_the_account_out_fails(prod):
    document = _key_policy(prod)
    document["Statement"] = [s for s in document["Statement"] if s["Sid"] != "AccountAdministersTheKey"]
    variant = prod.replaced(iam.KEY, "gpu-cluster-secrets", _set("policy", json.dumps(document)))
    (message,) = _found(variant, "kms-keys-have-explicit-policy")
    assert "unmanageable" in message


def test_a_key_policy_open_to_everyone_fails(prod):
    document = _key_policy(prod)
    document["Statement"].append(
        {"Sid": "Everyone", "Effect": "Allow", "Principal": "*", "Action": "kms:Decrypt", "Resource": "*"}
    )
    variant = prod.replaced(iam.KEY, "gpu-cluster-secrets", _set("policy", json.dumps(document)))
    (message,) = _found(variant, "kms-keys-have-explicit-policy")
    assert "Everyone" in message and "Principal *" in message


def test_a_policy_attached_twice_is_one_violation_naming_both_routes(prod):
    # The program attaches each policy by its own attachment and lists it in the exclusive list.
    def add(inputs):
        inputs["policyArns"] = [*inputs["policyArns"], CNI]

    variant = prod.replaced(ATTACHMENT, "gpu-node-role-AmazonEC2ContainerRegistryPullOnly", _set("policyArn", CNI))
    variant = variant.replaced(EXCLUSIVE, "gpu-node-role-exclusive", add)
    (message,) = _found(variant, "cni-permissions-not-on-node-roles")
    assert "RolePolicyAttachment 'gpu-node-role-AmazonEC2ContainerRegistryPullOnly'" in message
    assert "RolePolicyAttachmentsExclusive 'gpu-node-role-exclusive'" in message
