"""gpu_platform/aws_settings.py through the ledger: the node, build and control-plane settings a
change could weaken without touching any other row. Expectations written by hand."""

from __future__ import annotations

from gpu_platform import ledger

LT = "aws:ec2/launchTemplate:LaunchTemplate"
HARDENED = {"metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1.0, "httpEndpoint": "enabled"},
            "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}]}


def test_a_launch_templates_metadata_service_and_volumes_are_rows():
    assert ledger.rows([(LT, "gpu-cluster-system", HARDENED)]) == [
        ("launch template gpu-cluster-system", "(node settings)", "instance metadata: tokens required, hop limit 1, endpoint enabled"),
        ("launch template gpu-cluster-system", "(node settings)", "volume /dev/xvda encrypted")]
    weakened = {**HARDENED, "metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 3.0}}
    assert ("launch template gpu-cluster-system", "(node settings)", "instance metadata: tokens optional, hop limit 3, endpoint enabled") \
        in ledger.rows([(LT, "gpu-cluster-system", weakened)])


def test_a_node_group_without_a_launch_template_or_with_ssh_is_another_row():
    ng = "aws:eks/nodeGroup:NodeGroup"
    base = ledger.rows([(ng, "pool", {"amiType": "AL2023_x86_64_STANDARD", "launchTemplate": {"id": "lt-1", "version": "1"}})])
    open_ng = ledger.rows([(ng, "pool", {"amiType": "AL2023_x86_64_NVIDIA", "remoteAccess": {"ec2SshKey": "k"}})])
    assert ("node group pool", "(node settings)", "NO launch template: EKS's own node settings") in open_ng
    assert ("node group pool", "(node settings)", 'SSH remote access {"ec2SshKey":"k"}') in open_ng
    assert ("node group pool", "(node settings)", "launch template set") in base


def test_the_build_host_the_ami_distribution_the_cluster_and_irsa_are_rows():
    infra = ("aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration", "infra",
             {"keyPair": "ops", "terminateInstanceOnFailure": False})
    assert ("image build host infra", "(build settings)", "key pair ops") in ledger.rows([infra])
    assert ("image build host infra", "(build settings)", "terminateInstanceOnFailure false") in ledger.rows([infra])
    public = ("aws:imagebuilder/distributionConfiguration:DistributionConfiguration", "dist", {"distributions": [
        {"amiDistributionConfiguration": {"launchPermission": {"userGroups": ["all"]}, "targetAccountIds": ["999999999999"]}}]})
    assert ledger.rows([public]) == [
        ("image distribution dist", "(who may launch it)", 'copied to accounts ["999999999999"]'),
        ("image distribution dist", "(who may launch it)", 'launchPermission {"userGroups":["all"]}')]
    cluster = ("aws:eks/cluster:Cluster", "c", {"enabledClusterLogTypes": [], "vpcConfig": {"endpointPublicAccess": False},
                                                "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}})
    assert ("EKS cluster", "(control plane)", "logs NONE") in ledger.rows([cluster])
    assert ("EKS cluster", "(control plane)", "secrets NOT envelope-encrypted") in ledger.rows([cluster])
    sa = ("kubernetes:core/v1:ServiceAccount", "sa", {"metadata": {"name": "x", "namespace": "gpu-operator",
                                                                   "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/r"}}})
    assert ledger.rows([sa]) == [("ServiceAccount gpu-operator/x", "(identity)", "an IAM role through eks.amazonaws.com/role-arn")]


def test_a_null_the_provider_reads_back_is_read_as_not_set():
    # A live object may carry the key with null where the program left it out.
    ng = "aws:eks/nodeGroup:NodeGroup"
    written = {"amiType": "AL2023_x86_64_STANDARD", "launchTemplate": {"id": "lt-1", "version": "1"}}
    assert ledger.rows([(ng, "pool", {**written, "remoteAccess": None})]) == ledger.rows([(ng, "pool", written)])
    dist = "aws:imagebuilder/distributionConfiguration:DistributionConfiguration"
    assert ledger.rows([(dist, "d", {"distributions": [{"amiDistributionConfiguration": {"launchPermission": None}}]})]) == \
        ledger.rows([(dist, "d", {"distributions": [{"amiDistributionConfiguration": {}}]})])
