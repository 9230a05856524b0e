"""The cluster: created (private, API access entries, KMS, logs, a system pool) or adopted by name."""

from __future__ import annotations

import pytest

from components.aws.node_role import NODE_POLICIES
from tests.components.aws.conftest import LAUNCH_TEMPLATE, NODE_GROUP, node_config, pool_names
from tests.conftest import published_ami

ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
ADOPTED_ENDPOINT = "https://5E2C1B7A9D3F4E6A8B0C2D4F6A8B0C2D.gr7.us-west-2.eks.amazonaws.com"


def _adopt_shared(config):
    config["gpu-platform:cluster"].update({"name": "gpu-shared", "kubernetesVersion": "1.32", "create": False})


@pytest.fixture(scope="module")
def adopted(record_variant):
    return record_variant("adopt-gpu-shared", _adopt_shared)


def test_a_created_cluster_is_private_with_access_entries_kms_and_logs(shipped):
    cluster = shipped.one("aws:eks/cluster:Cluster", "gpu-cluster")
    assert cluster.inputs["vpcConfig"]["endpointPublicAccess"] is False
    assert cluster.inputs["vpcConfig"]["endpointPrivateAccess"] is True
    assert cluster.inputs["accessConfig"]["authenticationMode"] == "API"
    assert cluster.inputs["encryptionConfig"]["resources"] == ["secrets"]
    assert "audit" in cluster.inputs["enabledClusterLogTypes"]
    assert cluster.inputs["version"] == shipped.config["gpu-platform:cluster"]["kubernetesVersion"]


def test_the_system_pool_is_a_small_on_demand_non_gpu_pool(shipped):
    system = shipped.one(NODE_GROUP, "gpu-cluster-system")
    assert system.inputs["amiType"] == "AL2023_x86_64_STANDARD"
    assert not system.inputs["instanceTypes"][0].startswith(("g", "p"))
    assert system.inputs["capacityType"] == "ON_DEMAND"
    assert system.inputs["scalingConfig"]["minSize"] >= 2
    assert "taints" not in system.inputs


def test_the_node_role_has_only_what_a_kubelet_needs(shipped):
    role = shipped.one("aws:iam/role:Role", "gpu-node-role")
    attached = {a.inputs["policyArn"] for a in shipped.of_type(ATTACHMENT) if role.urn in a.dependencies}
    # No AmazonEKS_CNI_Policy: the VPC CNI has its own role (test_vpc_cni.py).
    assert attached == {
        "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
        "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPullOnly",  # pull-only, not ReadOnly
    }
    assert len(NODE_POLICIES) == len(attached)


def test_adopting_gpu_shared_registers_no_cluster(adopted):
    assert adopted.of_type("aws:eks/cluster:Cluster") == []
    assert adopted.of_type("aws:kms/key:Key") == []
    assert [r.name for r in adopted.of_type(NODE_GROUP)] == [f"gpu-pool-{p}-ng" for p in pool_names(adopted)]


def test_adopted_cluster_feeds_the_provider_and_the_node_pools(adopted):
    provider = adopted.one("pulumi:providers:kubernetes", "gpu-cluster-k8s")
    assert provider.inputs["kubeconfig"]  # a secret: its presence is all the recording shows
    for pool in pool_names(adopted):
        spec = node_config(adopted, pool)["spec"]["cluster"]
        assert spec["name"] == "gpu-shared"
        assert spec["apiServerEndpoint"] == ADOPTED_ENDPOINT
        assert spec["cidr"] == "10.100.0.0/16"
        ng = adopted.one(NODE_GROUP, f"gpu-pool-{pool}-ng")
        assert ng.inputs["clusterName"] == "gpu-shared"
    for lt in adopted.of_type(LAUNCH_TEMPLATE):
        assert lt.inputs["networkInterfaces"][0]["securityGroups"] == ["sg-0f1e2d3c4b5a69788"]


def test_adopted_stack_bakes_for_the_clusters_version(adopted):
    recipe = adopted.one("aws:imagebuilder/imageRecipe:ImageRecipe", "gpu-node-image-recipe")
    # The 1.32 image of v20260714, the 1.32 default (gpu_platform/catalog/eks_ami_releases.yaml), offline.
    assert recipe.inputs["parentImage"] == published_ami("1.32", "v20260714")
    for lt in adopted.of_type(LAUNCH_TEMPLATE):
        assert lt.inputs["tags"]["gpu-platform.io/kubernetes-version"] == "1.32"


def test_the_image_does_not_wait_for_an_adopted_or_created_cluster(adopted, shipped):
    for rec in (adopted, shipped):
        image_side = rec.descendants(rec.one("gpu-platform:aws:NodeImage", "gpu-node-image").urn)
        cluster_side = {r.urn for r in rec.descendants(rec.one("gpu-platform:aws:EksCluster", "gpu-cluster").urn)}
        for r in image_side:
            assert not (rec.waits_for(r.urn) & cluster_side), r.name


def _attachments_of(rec, role_name: str) -> set[str]:
    role = rec.one("aws:iam/role:Role", role_name)
    return {a.urn for a in rec.of_type(ATTACHMENT) if role.urn in a.dependencies}


def test_every_node_group_waits_for_every_node_role_policy(shipped):
    # Instances of a role without its policies cannot join the cluster: the group would fail.
    policies = _attachments_of(shipped, "gpu-node-role")
    assert len(policies) == 2
    for group in shipped.of_type(NODE_GROUP):
        assert policies <= shipped.waits_for(group.urn), group.name


def test_the_cluster_waits_for_its_control_plane_policy(shipped):
    policies = _attachments_of(shipped, "gpu-cluster-control-plane")
    assert len(policies) == 1
    assert policies <= shipped.waits_for(shipped.one("aws:eks/cluster:Cluster", "gpu-cluster").urn)


def test_every_role_manages_its_policies_exclusively(dev):
    # A policy attached outside the stack is detached on the next update: the audit's list is whole.
    exclusive = {
        r.inputs["roleName"]: sorted(r.inputs["policyArns"])
        for r in dev.of_type("aws:iam/rolePolicyAttachmentsExclusive:RolePolicyAttachmentsExclusive")
    }
    attached: dict[str, list[str]] = {}
    for a in dev.of_type("aws:iam/rolePolicyAttachment:RolePolicyAttachment"):
        attached.setdefault(a.inputs["role"], []).append(a.inputs["policyArn"])
    assert exclusive == {role: sorted(arns) for role, arns in attached.items()}
    assert len(exclusive) == 4  # node, control plane, VPC CNI, image builder


def test_the_control_plane_role_is_for_eks_acting_for_this_cluster_only(shipped):
    import json

    role = shipped.one("aws:iam/role:Role", "gpu-cluster-control-plane")
    (statement,) = json.loads(role.inputs["assumeRolePolicy"])["Statement"]
    assert statement["Principal"] == {"Service": "eks.amazonaws.com"}
    name = shipped.config["gpu-platform:cluster"]["name"]
    # Confused-deputy conditions; the ARN is the cluster's own, written before it exists (no cycle).
    assert statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": "123456789012"},
        "ArnLike": {"aws:SourceArn": f"arn:aws:eks:us-west-2:123456789012:cluster/{name}"},
    }


def test_the_secrets_key_has_a_policy_the_account_administers_and_the_cluster_role_uses(shipped):
    import json

    key = shipped.one("aws:kms/key:Key", "gpu-cluster-secrets")
    statements = {s["Sid"]: s for s in json.loads(key.inputs["policy"])["Statement"]}
    admin = statements["AccountAdministersTheKey"]
    assert admin["Principal"] == {"AWS": "arn:aws:iam::123456789012:root"} and admin["Action"] == "kms:*"
    use = statements["ClusterRoleEncryptsSecrets"]
    # The role the cluster runs as, by the name the provider gave it (autonamed, known at preview).
    role = shipped.one("aws:iam/role:Role", "gpu-cluster-control-plane")
    assert use["Principal"]["AWS"].startswith("arn:aws:iam::123456789012:role/gpu-cluster-control-plane-")
    assert role.urn in shipped.waits_for(key.urn)
    assert sorted(use["Action"]) == ["kms:Decrypt", "kms:DescribeKey", "kms:Encrypt"]
    assert len(statements) == 2


def test_public_access_cidrs_reach_the_clusters_endpoint_settings(record_variant):
    def open_to_office(config):
        config["gpu-platform:cluster"].update({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]})

    rec = record_variant("public-office", open_to_office)
    vpc = rec.one("aws:eks/cluster:Cluster", "gpu-cluster").inputs["vpcConfig"]
    assert vpc["endpointPublicAccess"] is True and vpc["publicAccessCidrs"] == ["203.0.113.0/24"]


def test_a_private_cluster_sends_no_public_access_cidrs(shipped):
    assert "publicAccessCidrs" not in shipped.one("aws:eks/cluster:Cluster", "gpu-cluster").inputs["vpcConfig"]


def test_a_created_cluster_is_protected_from_deletion_unless_the_stack_says_not(shipped, record_variant):
    # EKS's own default is false (botocore's CreateClusterRequest.deletionProtection); ours is true.
    # And Pulumi's protect, so that `pulumi destroy` stops in its preview, before deleting anything.
    protected = shipped.one("aws:eks/cluster:Cluster", "gpu-cluster")
    assert protected.inputs["deletionProtection"] is True and protected.protect is True
    rec = record_variant("unprotected", lambda config: config["gpu-platform:cluster"].update(deletionProtection=False))
    unprotected = rec.one("aws:eks/cluster:Cluster", "gpu-cluster")
    assert unprotected.inputs["deletionProtection"] is False and unprotected.protect is False
