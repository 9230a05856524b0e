"""declared-facts-agree: the per-resource declarations the version policies rely on tell one story."""

from __future__ import annotations

import pytest

from policy.consistency import declared_facts_agree
from tests.policy.resources import (
    Resource,
    cluster,
    launch_template,
    namespace,
    node_group,
    node_image,
    resource,
    workload,
)
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("declared-facts-agree", "stack", "mandatory"),
]


def _stack(**changes):
    """The program's declaring resources, each with its facts; `changes` replaces one resource."""
    found = {
        "cluster": cluster("1.33"),
        "namespace": namespace("v25.10.1", cuda="12.8 13.0", kubernetes="1.33"),
        "image": node_image(cuda="12.8 13.0"),
        "template": launch_template(cuda="12.8 13.0"),
        "group": node_group(cuda="12.8 13.0"),
        "workload": workload(),
    }
    found.update(changes)
    return list(found.values())


def test_one_story_passes():
    assert violations(declared_facts_agree, _stack()) == []


def test_cuda_versions_in_another_order_are_the_same_set():
    assert violations(declared_facts_agree, _stack(group=node_group(cuda="13.0 12.8"))) == []


@pytest.mark.parametrize(
    "change, fact, values",
    [
        ({"image": node_image(release="v25.3.0", cuda="12.8 13.0")}, "operator release", ("v25.3.0", "v25.10.1")),
        ({"cluster": cluster("1.32")}, "Kubernetes version", ("1.32", "1.33")),
        ({"group": node_group(driver="580.95.05", cuda="12.8 13.0")}, "NVIDIA driver", ("580.95.05", "580.105.08")),
        ({"template": launch_template(cuda="12.8")}, "CUDA versions", ("'12.8'", "'12.8 13.0'")),
        ({"workload": workload(release="v24.3.0")}, "operator release", ("v24.3.0", "v25.10.1")),
    ],
)
def test_a_resource_that_declares_another_fact_fails_naming_both_values_and_who(change, fact, values):
    found = violations(declared_facts_agree, _stack(**change))
    assert len(found) == 1
    message, _urn = found[0]
    assert f"more than one {fact}" in message and all(v in message for v in values)
    (changed,) = change.values()
    assert changed.name in message


def test_resources_that_declare_nothing_are_left_alone():
    other = workload(operand=None, name="app")
    system = node_group(pool="system")
    system.props["tags"] = {"gpu-platform.io/owner": "ml-platform"}
    assert violations(declared_facts_agree, [*_stack(), other, system]) == []


def test_the_driver_the_image_build_installs_must_be_the_one_declared():
    component = resource(
        "aws:imagebuilder/component:Component",
        "gpu-node-image-driver",
        {"data": "phases:\n- steps:\n  - inputs: {commands: ['export DRIVER_VERSION=570.211.01\\nexport X=1']}\n"},
    )
    found = violations(declared_facts_agree, [*_stack(), component])
    assert (
        len(found) == 1
        and "570.211.01" in found[0][0]
        and "580.105.08" in found[0][0]
        and "gpu-node-image-driver" in found[0][0]
    )


def test_a_gpu_node_group_launching_from_an_undeclared_template_fails():
    bare = resource(
        "aws:ec2/launchTemplate:LaunchTemplate", "plain-lt", {"metadataOptions": {"httpTokens": "optional"}}
    )
    group = node_group(cuda="12.8 13.0")
    group = Resource(group.type, group.name, group.props, {"launchTemplate": (bare,)})
    found = violations(declared_facts_agree, [*_stack(group=group), bare])
    assert len(found) == 1 and "plain-lt" in found[0][0] and "gpu-launch-templates-hardened" in found[0][0]
    assert found[0][1] == bare.urn


def test_the_image_must_be_built_for_every_pools_gpu():
    found = violations(declared_facts_agree, _stack(image=node_image(cuda="12.8 13.0", gpu_models="H100-80GB")))
    assert len(found) == 1 and "built for GPU models H100-80GB" in found[0][0] and "carry L4" in found[0][0]
