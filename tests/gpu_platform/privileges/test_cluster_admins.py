"""Who may administer the cluster, in the privilege ledger (gpu_platform/privileges/cluster_admins.py through
gpu_platform/privileges/ledger.py rows): the rows a reviewer reads, written out by hand."""

from __future__ import annotations

import hashlib

from gpu_platform.interface import contract
from gpu_platform.privileges import ledger

NAMESPACE = "kubernetes:core/v1:Namespace"
ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
ENTRY = "aws:eks/accessEntry:AccessEntry"
CLUSTER = "aws:eks/cluster:Cluster"
DEPLOYER = "arn:aws:iam::123456789012:role/gpu-platform-deployer"
ADMIN_ROW = ("EKS cluster access", DEPLOYER, "AmazonEKSClusterAdminPolicy (cluster scope)")


def _namespace(admins: str) -> tuple[str, str, dict]:
    return (
        NAMESPACE,
        "gpu-namespace",
        {"metadata": {"name": "gpu-operator", "annotations": {contract.CLUSTER_ADMINS_KEY: admins}}},
    )


def _association(
    principal: str, policy: str = "AmazonEKSClusterAdminPolicy", scope: dict | None = None
) -> tuple[str, str, dict]:
    return (
        ASSOCIATION,
        "admin",
        {
            "clusterName": "gpu",
            "principalArn": principal,
            "policyArn": f"arn:aws:eks::aws:cluster-access-policy/{policy}",
            "accessScope": scope or {"type": "cluster"},
        },
    )


def test_every_named_admin_is_a_cluster_admin_row_path_left_out_and_name_in_lower_case():
    found = ledger.rows(
        [
            _namespace(
                f"{DEPLOYER} arn:aws:iam::123456789012:role/platform/Platform-Admins "
                "arn:aws:iam::210987654321:user/alice"
            )
        ]
    )
    assert found == [
        (
            "EKS cluster access",
            "arn:aws:iam::123456789012:role/gpu-platform-deployer",
            "AmazonEKSClusterAdminPolicy (cluster scope)",
        ),
        (
            "EKS cluster access",
            "arn:aws:iam::123456789012:role/platform-admins",
            "AmazonEKSClusterAdminPolicy (cluster scope)",
        ),
        ("EKS cluster access", "arn:aws:iam::210987654321:user/alice", "AmazonEKSClusterAdminPolicy (cluster scope)"),
    ]


def test_the_programs_association_and_the_named_admin_are_one_row():
    # Whether discovery found an existing entry (no association) or not (one), the ledger is the same.
    assert ledger.rows([_namespace(DEPLOYER), _association(DEPLOYER)]) == [ADMIN_ROW]
    assert ledger.rows([_namespace(DEPLOYER)]) == [ADMIN_ROW]


def test_an_association_with_a_namespace_scope_or_another_policy_shows_as_such():
    assert ledger.rows(
        [_association(DEPLOYER, "AmazonEKSEditPolicy", {"type": "namespace", "namespaces": ["ml", "gpu-operator"]})]
    ) == [("EKS cluster access", DEPLOYER, "AmazonEKSEditPolicy (namespaces gpu-operator, ml)")]
    assert ledger.rows([_association(DEPLOYER, "AmazonEKSAdminPolicy")]) == [
        ("EKS cluster access", DEPLOYER, "AmazonEKSAdminPolicy (cluster scope)")
    ]


def test_an_access_entry_with_kubernetes_groups_or_a_node_type_has_rows():
    entry = {
        "clusterName": "gpu",
        "principalArn": DEPLOYER,
        "kubernetesGroups": ["system:masters"],
        "type": "EC2_LINUX",
    }
    assert ledger.rows([(ENTRY, "e", entry)]) == [
        ("EKS cluster access", DEPLOYER, "Kubernetes group system:masters"),
        ("EKS cluster access", DEPLOYER, "access entry type EC2_LINUX"),
    ]
    assert ledger.rows([(ENTRY, "e", {"clusterName": "gpu", "principalArn": DEPLOYER, "type": "STANDARD"})]) == []


def _access(rows: list) -> list:
    """The cluster access rows (the cluster's control-plane settings are gpu_platform/privileges/aws_settings.py's)."""
    return [row for row in rows if row[0] == "EKS cluster access"]


def test_a_created_cluster_with_the_creators_bootstrap_admin_or_the_config_map_has_rows():
    shipped = {
        "name": "gpu",
        "version": "1.33",
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
        "vpcConfig": {"endpointPrivateAccess": True, "endpointPublicAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]},
    }
    private = ("EKS cluster access", "(endpoint)", "private endpoint only")
    assert _access(ledger.rows([(CLUSTER, "c", shipped)])) == [private]
    bootstrap = {
        **shipped,
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": True},
    }
    assert _access(ledger.rows([(CLUSTER, "c", bootstrap)])) == [
        (
            "EKS cluster access",
            "(cluster creator)",
            "AmazonEKSClusterAdminPolicy (cluster scope), bootstrapClusterCreatorAdminPermissions",
        ),
        private,
    ]
    # Left out, EKS's defaults: the creator's entry, the aws-auth ConfigMap only, a public endpoint.
    assert _access(ledger.rows([(CLUSTER, "c", {"name": "gpu", "version": "1.33"})])) == [
        (
            "EKS cluster access",
            "(aws-auth ConfigMap)",
            "authenticationMode CONFIG_MAP: IAM principals the kube-system aws-auth ConfigMap maps are admitted too",
        ),
        (
            "EKS cluster access",
            "(cluster creator)",
            "AmazonEKSClusterAdminPolicy (cluster scope), bootstrapClusterCreatorAdminPermissions",
        ),
        ("EKS cluster access", "(endpoint)", "public endpoint, reachable from 0.0.0.0/0 (none given)"),
    ]
    # Opening the endpoint, or to more addresses, is another approval.
    opened = {
        **shipped,
        "vpcConfig": {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24", "10.0.0.0/8"]},
    }
    assert (
        "EKS cluster access",
        "(endpoint)",
        "public endpoint, reachable from 10.0.0.0/8, 203.0.113.0/24",
    ) in ledger.rows([(CLUSTER, "c", opened)])


def test_adding_an_admin_changes_the_hash():
    one = (
        "gpu-platform privilege ledger v1\n"
        "EKS cluster access\tarn:aws:iam::123456789012:role/gpu-platform-deployer\tAmazonEKSClusterAdminPolicy (cluster scope)\n"
    )
    two = (
        one
        + "EKS cluster access\tarn:aws:iam::123456789012:user/mallory\tAmazonEKSClusterAdminPolicy (cluster scope)\n"
    )
    assert ledger.digest(ledger.rows([_namespace(DEPLOYER)])) == "sha256:" + hashlib.sha256(one.encode()).hexdigest()
    assert (
        ledger.digest(ledger.rows([_namespace(f"{DEPLOYER} arn:aws:iam::123456789012:user/mallory")]))
        == "sha256:" + hashlib.sha256(two.encode()).hexdigest()
    )
