"""What the offline engine hands the policy pack, clause by clause as the Pulumi engine does
(pulumi/pulumi v3.259.0; each test names the file it restates)."""

from __future__ import annotations

import pytest
from google.protobuf import json_format, struct_pb2

from preview.offline import engine, requests
from tests.conftest import record_mode

STACK = "urn:pulumi:dev::gpu-platform::pulumi:pulumi:Stack::gpu-platform-dev"
AWS_DEFAULT = "urn:pulumi:dev::gpu-platform::pulumi:providers:aws::default_7_51_1"


@pytest.fixture(scope="module")
def analyzed(dev):
    return list(requests.analyze_requests(dev))


def _by_name(found, type_, name):
    (one,) = [r for r in found if r.type == type_ and r.name == name]
    return one


def test_every_registered_resource_is_analyzed_with_the_root_stack_and_the_default_provider(dev, analyzed):
    # step_generator.go:1401-1469: Analyze runs for every resource that goes through step
    # generation, components and providers included; the engine registers the root stack and one
    # default provider per package and version itself (default_providers.go:139-200).
    assert [r.urn for r in analyzed] == [STACK, *_program_urns_with_default(dev)]
    assert {r.type for r in analyzed} >= {
        "pulumi:pulumi:Stack",
        "pulumi:providers:aws",
        "pulumi:providers:kubernetes",
        "gpu-platform:index:GpuPlatform",
        "aws:eks/cluster:Cluster",
    }


def _program_urns_with_default(recording):
    urns, placed = [], False
    for r in recording.resources:
        if r.type.startswith("aws:") and not placed:
            urns.append(AWS_DEFAULT)
            placed = True
        urns.append(r.urn)
    return urns


def test_the_default_aws_provider_has_the_package_config_and_version_as_inputs(analyzed):
    # default_providers.go:143-150 (the package's config), providers/registry.go:166-172 (version),
    # provider.go:105-135 (the name default_<major>_<minor>_<patch>).
    provider = _by_name(analyzed, "pulumi:providers:aws", "default_7_51_1")
    assert json_format.MessageToDict(provider.properties) == {"region": "us-west-2", "version": "7.51.1"}


def test_an_aws_resource_is_analyzed_with_its_default_provider_and_a_kubernetes_one_with_the_explicit_one(analyzed):
    cluster = _by_name(analyzed, "aws:eks/cluster:Cluster", "gpu-cluster")
    assert cluster.provider.urn == AWS_DEFAULT and cluster.provider.name == "default_7_51_1"
    namespace = _by_name(analyzed, "kubernetes:core/v1:Namespace", "gpu-namespace")
    assert namespace.provider.type == "pulumi:providers:kubernetes" and namespace.provider.name == "gpu-cluster-k8s"
    # The kubeconfig is a secret: the engine keeps secrets for the analyzer (KeepSecrets).
    kubeconfig = namespace.provider.properties.fields["kubeconfig"].struct_value.fields
    assert kubeconfig["4dabf18193072939515e22adb298388d"].string_value == "1b47061264138c4ac30d75fd1eb44270"


def test_options_carry_the_custom_timeouts_in_seconds_and_the_parent(dev, analyzed):
    # analyzer_plugin.go:737-764; the SDK sends "150m", the engine parses a Go duration.
    image = _by_name(analyzed, "aws:imagebuilder/image:Image", "gpu-node-image-image")
    assert image.options.customTimeouts.create == 150 * 60
    assert image.options.parent == dev.one("gpu-platform:aws:NodeImage", "gpu-node-image").urn


def test_a_new_stack_has_no_aliases_to_report(analyzed):
    # step_generator.go:775, 825: only an alias that matched an old resource is kept.
    assert all(list(r.options.aliases) == [] for r in analyzed)


def test_the_explicit_kubernetes_provider_carries_its_plugin_version(analyzed):
    # source_eval.go:2576-2583: the engine sets `version` on an explicit provider's inputs.
    provider = _by_name(analyzed, "pulumi:providers:kubernetes", "gpu-cluster-k8s")
    assert provider.properties.fields["version"].string_value == "4.34.2"


def test_the_stack_request_has_outputs_parents_dependencies_and_property_dependencies(dev):
    # step_generator.go:3439-3526: AnalyzeStack gets each resource's outputs (not inputs).
    stack = requests.analyze_stack_request(dev)
    cluster = next(r for r in stack.resources if r.type == "aws:eks/cluster:Cluster")
    assert cluster.properties.fields["endpoint"].string_value.startswith("https://")
    assert "endpoint" not in dev.one("aws:eks/cluster:Cluster", "gpu-cluster").inputs
    group = next(r for r in stack.resources if r.name == "gpu-pool-l4-ng")
    assert list(group.propertyDependencies["launchTemplate"].urns) == [
        dev.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt").urn
    ]
    # Properties without dependencies are left out (analyzer_plugin.go:357-361).
    assert "instanceTypes" not in group.propertyDependencies
    assert list(group.dependencies) == list(dev.one("aws:eks/nodeGroup:NodeGroup", "gpu-pool-l4-ng").dependencies)
    root = next(r for r in stack.resources if r.urn == STACK)
    assert set(json_format.MessageToDict(root.properties)) == {
        "clusterName",
        "nodeGroups",
        "nodeImageId",
        "operandOrder",
    }


def test_the_first_preview_sends_unknown_inputs_as_the_engines_sentinel():
    first = record_mode(engine.stack_file("dev"), engine.FIRST_PREVIEW)
    template = _by_name(
        list(requests.analyze_requests(first)), "aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt"
    )
    # sdk/go/common/resource/plugin/rpc.go:71-73, UnknownStringValue.
    assert template.properties.fields["imageId"].string_value == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    assert (
        template.properties.fields["tags"].struct_value.fields["gpu-platform.io/driver-version"].string_value
        == "580.105.08"
    )


def test_internal_keys_are_dropped_at_the_top_level_only_and_resource_references_become_ids():
    # rpc.go:95-118 (SkipInternalKeys, top level only), 253-262 (no KeepResources: id, else URN).
    sent = struct_pb2.Struct()
    json_format.ParseDict(
        {
            "__defaults": ["x"],
            "keep": {"__nested": 1},
            "role": {
                "4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e",
                "urn": "urn:a",
                "id": "role-id",
            },
            "part": {
                "4dabf18193072939515e22adb298388d": "5cf8f73096256a8f31e491e813e4eb8e",
                "urn": "urn:component",
                "id": "",
            },
        },
        sent,
    )
    marshalled = json_format.MessageToDict(requests._marshal_struct(sent))
    assert marshalled == {"keep": {"__nested": 1.0}, "role": "role-id", "part": "urn:component"}


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("", 0.0),
        ("0", 0.0),
        ("150m", 9000.0),
        ("1h30m", 5400.0),
        ("90s", 90.0),
        ("2.5h", 9000.0),
        (".5h", 1800.0),
        ("+1m", 60.0),
        ("-1m", -60.0),
    ],
)
def test_custom_timeouts_are_read_as_go_durations(text, seconds):
    assert requests.seconds(text) == seconds


def test_a_timeout_that_is_no_go_duration_is_refused():
    with pytest.raises(ValueError, match="not a Go duration"):
        requests.seconds("10 minutes")


def test_urns_carry_the_whole_ancestor_type_chain_as_the_engine_builds_them(dev):
    # deployment.go:793-805: the parent's full qualified type, never the root stack's. (The SDK's
    # own mock prefixes only the immediate parent's type.)
    runtime_class = dev.one("kubernetes:node.k8s.io/v1:RuntimeClass", "gpu-namespace-runtime-class")
    assert runtime_class.urn == (
        "urn:pulumi:dev::gpu-platform::gpu-platform:index:GpuPlatform$gpu-platform:kubernetes:"
        "GpuNamespace$kubernetes:node.k8s.io/v1:RuntimeClass::gpu-namespace-runtime-class"
    )
    platform = dev.one("gpu-platform:index:GpuPlatform", "gpu")
    assert platform.urn == "urn:pulumi:dev::gpu-platform::gpu-platform:index:GpuPlatform::gpu"


@pytest.mark.parametrize(
    "version, name",
    [
        ("7.51.1", "default_7_51_1"),
        ("1.2.3-alpha.1", "default_1_2_3_alpha_1"),
        ("1.2.3+build.5", "default_1_2_3_build_5"),
        ("", "default"),
    ],
)
def test_default_provider_names_follow_the_engine(version, name):
    assert requests._default_provider_name(version) == name


def test_the_first_preview_leaves_nested_computed_outputs_unknown_not_null():
    # The cluster's security group id is computed inside vpcConfig: a provider's preview returns it
    # unknown, and the launch templates built from it carry the unknown, never a null.
    first = record_mode(engine.stack_file("dev"), engine.FIRST_PREVIEW)
    template = first.one("aws:ec2/launchTemplate:LaunchTemplate", "gpu-pool-l4-lt")
    (nic,) = json_format.MessageToDict(template.sent)["networkInterfaces"]
    assert nic["securityGroups"] == ["04da6b54-80e4-46f7-96ec-b56ff0331ba9"]
    cluster = first.one("aws:eks/cluster:Cluster", "gpu-cluster")
    state = json_format.MessageToDict(cluster.state)
    assert state["endpoint"] == state["arn"] == "04da6b54-80e4-46f7-96ec-b56ff0331ba9"
    assert state["vpcConfig"]["subnetIds"] == cluster.inputs["vpcConfig"]["subnetIds"]
