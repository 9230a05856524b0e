"""gpu_platform/privileges/aws_settings.py through the ledger: the node, build and control-plane settings a
change could weaken without touching any other row. Expectations written by hand."""

from __future__ import annotations

import pytest

from gpu_platform.privileges import ledger

LT = "aws:ec2/launchTemplate:LaunchTemplate"
HARDENED = {
    "metadataOptions": {"httpTokens": "required", "httpPutResponseHopLimit": 1.0, "httpEndpoint": "enabled"},
    "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "true"}}],
}


def test_a_launch_templates_metadata_service_and_volumes_are_rows():
    assert ledger.rows([(LT, "gpu-cluster-system", HARDENED)]) == [
        (
            "launch template gpu-cluster-system",
            "(node settings)",
            "instance metadata: tokens required, hop limit 1, endpoint enabled",
        ),
        (
            "launch template gpu-cluster-system",
            "(node settings)",
            "public address NOT stated: the subnet's MapPublicIpOnLaunch decides",
        ),
        ("launch template gpu-cluster-system", "(node settings)", "volume /dev/xvda encrypted"),
    ]
    weakened = {**HARDENED, "metadataOptions": {"httpTokens": "optional", "httpPutResponseHopLimit": 3.0}}
    assert (
        "launch template gpu-cluster-system",
        "(node settings)",
        "instance metadata: tokens optional, hop limit 3, endpoint enabled",
    ) in ledger.rows([(LT, "gpu-cluster-system", weakened)])


def test_a_node_group_without_a_launch_template_or_with_ssh_is_another_row():
    ng = "aws:eks/nodeGroup:NodeGroup"
    base = ledger.rows(
        [(ng, "pool", {"amiType": "AL2023_x86_64_STANDARD", "launchTemplate": {"id": "lt-1", "version": "1"}})]
    )
    open_ng = ledger.rows([(ng, "pool", {"amiType": "AL2023_x86_64_NVIDIA", "remoteAccess": {"ec2SshKey": "k"}})])
    assert ("node group pool", "(node settings)", "NO launch template: EKS's own node settings") in open_ng
    assert ("node group pool", "(node settings)", 'SSH remote access {"ec2SshKey":"k"}') in open_ng
    assert ("node group pool", "(node settings)", 'launch template NOT made by this stack: {"id":"lt-1"}') in base


def test_the_build_host_the_ami_distribution_the_cluster_and_irsa_are_rows():
    infra = (
        "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration",
        "infra",
        {"keyPair": "ops", "terminateInstanceOnFailure": False},
    )
    assert ("image build host infra", "(build settings)", "key pair ops") in ledger.rows([infra])
    assert ("image build host infra", "(build settings)", "terminateInstanceOnFailure false") in ledger.rows([infra])
    public = (
        "aws:imagebuilder/distributionConfiguration:DistributionConfiguration",
        "dist",
        {
            "distributions": [
                {
                    "amiDistributionConfiguration": {
                        "launchPermission": {"userGroups": ["all"]},
                        "targetAccountIds": ["999999999999"],
                    }
                }
            ]
        },
    )
    assert ledger.rows([public]) == [
        ("image distribution dist to ?", "(who may launch it)", 'copied to accounts ["999999999999"]'),
        ("image distribution dist to ?", "(who may launch it)", 'launchPermission {"userGroups":["all"]}'),
    ]
    cluster = (
        "aws:eks/cluster:Cluster",
        "c",
        {
            "enabledClusterLogTypes": [],
            "vpcConfig": {"endpointPublicAccess": False},
            "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
        },
    )
    assert ("EKS cluster", "(control plane)", "logs NONE") in ledger.rows([cluster])
    assert ("EKS cluster", "(control plane)", "secrets NOT envelope-encrypted") in ledger.rows([cluster])
    sa = (
        "kubernetes:core/v1:ServiceAccount",
        "sa",
        {
            "metadata": {
                "name": "x",
                "namespace": "gpu-operator",
                "annotations": {"eks.amazonaws.com/role-arn": "arn:aws:iam::1:role/r"},
            }
        },
    )
    assert ledger.rows([sa]) == [
        ("ServiceAccount gpu-operator/x", "(identity)", "an IAM role through eks.amazonaws.com/role-arn")
    ]


def test_a_null_the_provider_reads_back_is_read_as_not_set():
    # A live object may carry the key with null where the program left it out.
    ng = "aws:eks/nodeGroup:NodeGroup"
    written = {"amiType": "AL2023_x86_64_STANDARD", "launchTemplate": {"id": "lt-1", "version": "1"}}
    assert ledger.rows([(ng, "pool", {**written, "remoteAccess": None})]) == ledger.rows([(ng, "pool", written)])
    dist = "aws:imagebuilder/distributionConfiguration:DistributionConfiguration"
    assert ledger.rows(
        [(dist, "d", {"distributions": [{"amiDistributionConfiguration": {"launchPermission": None}}]})]
    ) == ledger.rows([(dist, "d", {"distributions": [{"amiDistributionConfiguration": {}}]})])


NG = "aws:eks/nodeGroup:NodeGroup"
POOL_NG = {"launchTemplate": {"id": "lt-0a1b2c3d4e5f60718", "version": "1"}}
FROM_TEMPLATE = {(NG, "gpu-pool-l40s-ng"): {"launchTemplate": ("gpu-pool-l40s-lt",)}}


def test_a_custom_ami_node_group_reads_alike_written_planned_and_deployed():
    # Written: no amiType (EKS refuses one with a custom AMI); deployed: EKS reports CUSTOM.
    written = ledger.rows([(NG, "gpu-pool-l40s-ng", POOL_NG)], FROM_TEMPLATE)
    deployed = ledger.rows([(NG, "gpu-pool-l40s-ng", {**POOL_NG, "amiType": "CUSTOM"})], FROM_TEMPLATE)
    assert written == deployed
    assert ("node group gpu-pool-l40s-ng", "(node settings)", "amiType CUSTOM (the launch template's image)") in written
    eks_image = ledger.rows([(NG, "gpu-pool-l40s-ng", {**POOL_NG, "amiType": "AL2023_x86_64_NVIDIA"})], FROM_TEMPLATE)
    assert ("node group gpu-pool-l40s-ng", "(node settings)", "amiType AL2023_x86_64_NVIDIA") in eks_image


def test_a_node_group_names_the_stack_template_it_boots_from_and_a_template_from_elsewhere_is_another_row():
    ours = ledger.rows([(NG, "gpu-pool-l40s-ng", POOL_NG)], FROM_TEMPLATE)
    assert ("node group gpu-pool-l40s-ng", "(node settings)", "launch template gpu-pool-l40s-lt") in ours
    other = ledger.rows(
        [(NG, "gpu-pool-l40s-ng", {"launchTemplate": {"name": "legacy-imdsv1-public", "version": "$Default"}})]
    )
    assert (
        "node group gpu-pool-l40s-ng",
        "(node settings)",
        'launch template NOT made by this stack: {"name":"legacy-imdsv1-public"}',
    ) in other
    swapped = ledger.rows(
        [(NG, "gpu-pool-l40s-ng", POOL_NG)], {(NG, "gpu-pool-l40s-ng"): {"launchTemplate": ("gpu-cluster-system",)}}
    )
    assert ledger.digest(swapped) != ledger.digest(ours) != ledger.digest(other)


def _template(**interface) -> dict:
    return {**HARDENED, "networkInterfaces": [interface]}


def test_a_public_address_reads_as_the_provider_parses_it():
    rows = {
        value: ledger.rows([(LT, "t", _template(associatePublicIpAddress=value))])
        for value in ("1", "true", True, "0", "false")
    }
    public = ("launch template t", "(node settings)", "an interface with a PUBLIC address")
    assert all(public in rows[value] for value in ("1", "true", True))
    assert all(("launch template t", "(node settings)", "no public address") in rows[value] for value in ("0", "false"))
    # Left out on a single interface, the subnet decides: not the same as "false".
    unstated = ledger.rows([(LT, "t", _template(deleteOnTermination="true"))])
    assert (
        "launch template t",
        "(node settings)",
        "public address NOT stated: the subnet's MapPublicIpOnLaunch decides",
    ) in unstated
    several = ledger.rows(
        [(LT, "t", {**HARDENED, "networkInterfaces": [{"deviceIndex": 0}, {"deviceIndex": 1, "networkCardIndex": 1}]})]
    )
    assert (
        "launch template t",
        "(node settings)",
        "2 interfaces: no public address (EC2 assigns none at a launch with several)",
    ) in several


def test_a_volume_encrypted_with_1_is_encrypted_and_one_without_the_setting_says_so():
    one = {**HARDENED, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"encrypted": "1"}}]}
    assert ("launch template t", "(node settings)", "volume /dev/xvda encrypted") in ledger.rows([(LT, "t", one)])
    unset = {**HARDENED, "blockDeviceMappings": [{"deviceName": "/dev/xvda", "ebs": {"volumeSize": 200}}]}
    assert (
        "launch template t",
        "(node settings)",
        "volume /dev/xvda encryption NOT stated (the account default applies)",
    ) in ledger.rows([(LT, "t", unset)])


INFRA = "aws:imagebuilder/infrastructureConfiguration:InfrastructureConfiguration"


def test_the_build_host_defaults_to_keeping_a_failed_instance_and_names_its_instance_profile():
    # terminate_instance_on_failure defaults to false in the provider: left out, a failed build's host stays.
    rows = ledger.rows(
        [(INFRA, "infra", {"instanceProfileName": "gpu-node-image-builder-1a2b3c4"})],
        {(INFRA, "infra"): {"instanceProfileName": ("gpu-node-image-builder",)}},
    )
    assert ("image build host infra", "(build settings)", "terminateInstanceOnFailure false") in rows
    assert ("image build host infra", "(build settings)", "instance profile gpu-node-image-builder") in rows
    admin = ledger.rows([(INFRA, "infra", {"instanceProfileName": "OrgAdminInstanceProfile"})])
    assert (
        "image build host infra",
        "(build settings)",
        "instance profile NOT made by this stack: OrgAdminInstanceProfile",
    ) in admin


DIST = "aws:imagebuilder/distributionConfiguration:DistributionConfiguration"


def test_every_way_the_image_leaves_the_build_is_a_row_per_region():
    home = {"region": "us-west-2", "amiDistributionConfiguration": {"name": "gpu-{{ imagebuilder:buildDate }}"}}
    base = ledger.rows([(DIST, "d", {"distributions": [home]})])
    assert base == [
        ("image distribution d to us-west-2", "(who may launch it)", "launchPermission (none: this account only)")
    ]
    copied = ledger.rows([(DIST, "d", {"distributions": [home, {**home, "region": "eu-west-1"}]})])
    assert (
        "image distribution d to eu-west-1",
        "(who may launch it)",
        "launchPermission (none: this account only)",
    ) in copied
    exported = ledger.rows(
        [
            (
                DIST,
                "d",
                {
                    "distributions": [
                        {
                            **home,
                            "s3ExportConfiguration": {
                                "roleName": "vmimport",
                                "diskImageFormat": "RAW",
                                "s3Bucket": "attacker-bucket",
                            },
                        }
                    ]
                },
            )
        ]
    )
    ssm = ledger.rows(
        [
            (
                DIST,
                "d",
                {
                    "distributions": [
                        {**home, "ssmParameterConfigurations": [{"accountId": "999999999999", "parameterName": "/ami"}]}
                    ]
                },
            )
        ]
    )
    assert len({ledger.digest(base), ledger.digest(copied), ledger.digest(exported), ledger.digest(ssm)}) == 4
    assert any(row[2].startswith("s3ExportConfiguration sha256:") for row in exported)


def test_which_stack_resource_a_property_takes_is_read_from_the_dependencies_by_type():
    deps = [
        ("aws:eks/cluster:Cluster", "gpu-cluster"),
        ("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l40s-lt"),
        ("aws:iam/role:Role", "gpu-node-role"),
    ]
    assert ledger.references(NG, deps) == {"launchTemplate": ("gpu-pool-l40s-lt",)}
    assert ledger.references(
        INFRA,
        [
            ("aws:iam/instanceProfile:InstanceProfile", "gpu-node-image-builder"),
            ("aws:ec2/securityGroup:SecurityGroup", "gpu-node-image-build"),
        ],
    ) == {"instanceProfileName": ("gpu-node-image-builder",)}
    assert ledger.references(NG, [("aws:eks/cluster:Cluster", "gpu-cluster")]) == {}


def test_the_subnets_of_the_cluster_the_nodes_and_the_build_host_are_rows_in_any_order():
    cluster = ("aws:eks/cluster:Cluster", "c", {"vpcConfig": {"subnetIds": ["subnet-2", "subnet-1"]}})
    assert ("EKS cluster", "(control plane)", 'subnets ["subnet-1","subnet-2"]') in ledger.rows([cluster])
    moved = ("aws:eks/cluster:Cluster", "c", {"vpcConfig": {"subnetIds": ["subnet-1", "subnet-9"]}})
    assert ledger.digest(ledger.rows([cluster])) != ledger.digest(ledger.rows([moved]))
    assert ("node group ng", "(node settings)", 'subnets ["subnet-1"]') in ledger.rows(
        [(NG, "ng", {"subnetIds": ["subnet-1"]})]
    )
    assert ("image build host b", "(build settings)", 'subnets ["subnet-3"]') in ledger.rows(
        [(INFRA, "b", {"subnetId": "subnet-3"})]
    )


def test_with_the_engines_property_dependencies_a_template_named_by_a_literal_is_not_the_stacks_whatever_depends_on_says():
    # The node group depends on the stack's template (depends_on) but names another one by a literal.
    deps = [("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l40s-lt"), ("aws:eks/cluster:Cluster", "gpu-cluster")]
    literal = {"launchTemplate": {"name": "legacy-imdsv1-public", "version": "$Default"}, "clusterName": "gpu"}
    strict = ledger.references(NG, deps, {"clusterName": [("aws:eks/cluster:Cluster", "gpu-cluster")]})
    assert (
        "node group ng",
        "(node settings)",
        'launch template NOT made by this stack: {"name":"legacy-imdsv1-public"}',
    ) in ledger.rows([(NG, "ng", literal)], {(NG, "ng"): strict})
    built = ledger.references(
        NG, deps, {"launchTemplate": [("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l40s-lt")]}
    )
    assert built == {"launchTemplate": ("gpu-pool-l40s-lt",)}
    # Without property dependencies (a caller that sends none), the dependency list by type.
    assert ledger.references(NG, deps) == {"launchTemplate": ("gpu-pool-l40s-lt",)}


def test_a_value_built_from_an_output_is_not_read_as_left_out_when_unknown():
    from pulumi_policy.proxy import UnknownValueError

    from gpu_platform.interface.props import unless_filled_in

    class Planned(dict):  # the analyzer's proxy: reading an unknown value raises
        def get(self, key, default=None):
            raise UnknownValueError("04da6b54-80e4-46f7-96ec-b56ff0331ba9", [key])

    assert unless_filled_in(Planned(), "amiType") is None  # left out: the provider fills it in
    with pytest.raises(UnknownValueError):
        unless_filled_in(Planned(), "amiType", {"amiType": ("gpu-node-role",)})  # set from an output


ASG_TAG = "aws:autoscaling/tag:Tag"


def _asg_tag(key: str, value: str, propagate: bool = False) -> dict:
    return {
        "autoscalingGroupName": "eks-gpu-l4-abc",
        "tag": {"key": key, "value": value, "propagateAtLaunch": propagate},
    }


def test_what_an_empty_pool_offers_the_autoscaler_is_no_row():
    # The prefix cluster-autoscaler reads an empty group's resources from (cloudprovider/aws/aws_manager.go
    # lines 436-456 at cluster-autoscaler-1.33.6): a count, no access.
    tag = _asg_tag("k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu", "4")
    assert ledger.rows([(ASG_TAG, "gpu-l4-ca-nvidia.com-gpu", tag)]) == []


def test_any_other_asg_tag_is_a_row():
    # k8s.io/cluster-autoscaler/enabled is what the autoscaler's auto-discovery selects groups by.
    tag = _asg_tag("k8s.io/cluster-autoscaler/enabled", "true")
    assert ledger.rows([(ASG_TAG, "gpu-l4-discovery", tag)]) == [
        ("auto scaling group tag gpu-l4-discovery", "(node settings)", "tag k8s.io/cluster-autoscaler/enabled=true")
    ]


def test_a_node_template_tag_copied_to_the_instances_is_a_row():
    tag = _asg_tag("k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu", "4", propagate=True)
    assert ledger.rows([(ASG_TAG, "gpu-l4-ca", tag)]) == [
        (
            "auto scaling group tag gpu-l4-ca",
            "(node settings)",
            "tag k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu=4 (propagated to instances)",
        )
    ]
