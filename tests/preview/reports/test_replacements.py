"""The data behind `--against`'s verdicts (preview/reports/replacements.yaml): it speaks of inputs
the SDKs really have, covers every type the shipped stacks create, and reads as the providers
decide (expectations written from the provider sources cited in the data, not from the data)."""

from __future__ import annotations

import importlib
import inspect
import re

import pytest
import yaml

from preview.reports import replacements
from preview.reports.replacements import MAY_REPLACE, REPLACES, ROLLS_NODES, UNKNOWN, UPDATE, effect

DATA = yaml.safe_load(replacements.DATA.read_text())
TOKEN = re.compile(r"(aws|kubernetes):([^:]+):(\w+)$")


def _args_class(token: str):
    package, module, kind = TOKEN.match(token).groups()
    if package == "aws":
        found = importlib.import_module(f"pulumi_aws.{module.split('/')[0]}")
    else:
        group, version = module.split("/")
        found = importlib.import_module(f"pulumi_kubernetes.{group.split('.')[0]}.{version}")
    return getattr(found, f"{kind}Args"), found


def _inputs(args_class) -> dict[str, property]:
    """The input names the engine sees (the SDK's @pulumi.getter names) -> their properties."""
    return {
        getattr(v.fget, "_pulumi_name", None) or k: v for k, v in vars(args_class).items() if isinstance(v, property)
    }


def _nested(prop: property, module):
    """The Args class an input holds (through Optional, Input, Sequence), or None for a plain value."""
    names = re.findall(r"'([\w.]+Args)'", str(inspect.signature(prop.fget).return_annotation))
    if not names:
        return None
    *where, name = names[0].split(".")
    homes = [module.__name__ + "._inputs"]
    if where:  # pulumi_kubernetes writes '_meta.v1.ObjectMetaArgs'
        homes.insert(0, "pulumi_kubernetes." + ".".join(w.lstrip("_") for w in where) + "._inputs")
    for home in homes:
        found = getattr(importlib.import_module(home), name, None)
        if found is not None:
            return found
    raise AssertionError(f"{name} not found in {homes}")


def _problem(token: str, path: str) -> str:
    args_class, module = _args_class(token)
    for segment in path.split("."):
        inputs = _inputs(args_class)
        if segment not in inputs:
            return f"{token}: {path}: no input {segment!r} in {args_class.__name__} (has {', '.join(sorted(inputs))})"
        args_class = _nested(inputs[segment], module)
        if args_class is None:
            return ""  # a map or plain value: what is below it is data (labels, tags)
    return ""


def _listed_paths():
    for token, entry in DATA["types"].items():
        if token.endswith("*"):
            continue
        for section in (
            "replaces_on",
            "replaces_if",
            "rolls_nodes",
            "in_place",
            "no_op",
            "refused_on",
            "new_version_on",
        ):
            for clause in entry.get(section, []):
                yield from ((token, p) for p in clause["paths"])
        yield from ((token, p) for p in entry.get("except", []))
        yield from ((token, f["input"]) for f in entry.get("follows", []))


def test_every_listed_path_is_an_input_of_the_sdk_we_pin():
    problems = [p for p in (_problem(token, path) for token, path in _listed_paths()) if p]
    assert problems == []


def test_the_sdk_check_catches_a_misspelt_path():
    assert "no input 'instanceType'" in _problem("aws:eks/nodeGroup:NodeGroup", "instanceType")
    assert "no input 'subnetId'" in _problem("aws:eks/cluster:Cluster", "vpcConfig.subnetId")
    assert _problem("kubernetes:apps/v1:DaemonSet", "metadata.name") == ""


def test_every_clause_cites_a_source():
    missing = [
        f"{token}.{section}"
        for token, entry in DATA["types"].items()
        for section in ("replaces_on", "replaces_if", "rolls_nodes", "follows", "no_op", "refused_on", "new_version_on")
        for clause in entry.get(section, [])
        if not clause.get("source")
    ]
    missing += [token for token, entry in DATA["types"].items() if entry.get("all_inputs") and not entry.get("source")]
    assert missing == []


def test_every_type_the_shipped_stacks_create_has_a_rule(dev, prod):
    types = {
        r.type
        for rec in (dev, prod)
        for r in rec.resources
        if not r.type.startswith(("pulumi:providers:", "gpu-platform:"))
    }
    assert sorted(t for t in types if replacements.rule_for(t) is None) == []


# What the providers decide, written from the cited provider code.
@pytest.mark.parametrize(
    "token, key, kind",
    [
        ("aws:eks/nodeGroup:NodeGroup", "instanceTypes[0]", REPLACES),  # node_group.go: instance_types ForceNew
        ("aws:eks/nodeGroup:NodeGroup", "subnetIds[1]", REPLACES),
        ("aws:eks/nodeGroup:NodeGroup", "launchTemplate.version", ROLLS_NODES),  # UpdateNodegroupVersion
        ("aws:eks/nodeGroup:NodeGroup", "releaseVersion", ROLLS_NODES),
        ("aws:eks/nodeGroup:NodeGroup", "scalingConfig.maxSize", UPDATE),  # UpdateNodegroupConfig
        ("aws:eks/nodeGroup:NodeGroup", "labels.nvidia.com/gpu.deploy.dcgm-exporter", UPDATE),
        ("aws:eks/nodeGroup:NodeGroup", "tags.owner", UPDATE),
        ("aws:eks/cluster:Cluster", "name", REPLACES),
        ("aws:eks/cluster:Cluster", "vpcConfig.subnetIds", UPDATE),  # UpdateClusterConfig, not ForceNew
        ("aws:eks/cluster:Cluster", "version", UPDATE),  # UpdateClusterVersion
        ("aws:ec2/launchTemplate:LaunchTemplate", "userData", UPDATE),  # a new version
        ("aws:ec2/launchTemplate:LaunchTemplate", "namePrefix", REPLACES),
        ("aws:imagebuilder/component:Component", "data", REPLACES),  # immutable but for tags
        ("aws:imagebuilder/component:Component", "tags.owner", UPDATE),
        ("aws:imagebuilder/imageRecipe:ImageRecipe", "blockDeviceMappings[0].ebs.volumeSize", REPLACES),
        ("kubernetes:apps/v1:DaemonSet", "spec.selector.matchLabels.app", REPLACES),  # diff.go: .spec.selector
        ("kubernetes:apps/v1:DaemonSet", "spec.template.spec.containers[0].image", UPDATE),
        ("kubernetes:core/v1:ConfigMap", "data.config.yaml", REPLACES),  # not enableConfigMapMutable
        ("kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "metadata.name", REPLACES),  # every kind
        ("kubernetes:monitoring.coreos.com/v1:ServiceMonitor", "spec.endpoints", UPDATE),
        ("aws:eks/nodeGroup:NodeGroup", "remoteAccess", REPLACES),  # the block itself is ForceNew
        ("aws:eks/nodeGroup:NodeGroup", "launchTemplate", MAY_REPLACE),  # a block above launchTemplate.id
        ("aws:cloudwatch/logGroup:LogGroup", "name", UNKNOWN),  # no data: never guessed as an update
        ("kubernetes:node.k8s.io/v1:RuntimeClass", "handler", replacements.REFUSED),  # immutable in the API
        ("aws:imagebuilder/image:Image", "workflows[0].workflowArn", REPLACES),
        ("aws:imagebuilder/image:Image", "executionRole", replacements.NO_OP),  # update is tags only
        ("aws:eks/cluster:Cluster", "encryptionConfig.provider.keyArn", replacements.NO_OP),
    ],
)
def test_a_changed_key_has_the_providers_effect(token, key, kind):
    assert effect(token, key).kind == kind


def test_ignore_changes_covers_keys_at_and_below_its_paths():
    assert replacements.ignored("scalingConfig.desiredSize", ["scalingConfig.desiredSize"])
    assert not replacements.ignored("scalingConfig.maxSize", ["scalingConfig.desiredSize"])
    assert replacements.ignored("accessConfig.bootstrapClusterCreatorAdminPermissions", ["accessConfig"])
