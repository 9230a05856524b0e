"""A driver upgrade touches only the image, the launch templates and the node groups.

Two recorded graphs (dev, and dev with another driverVersion) are compared resource by resource.
What "changes" means, honestly:

1. A resource changes when its recorded inputs differ: that is exactly what the engine diffs to
   decide on an update or a replacement.
2. A resource also changes when an input of it is an output of a changed resource, even if under
   mocks the value happens to be the same: the mock engine derives outputs from resource *names*
   (the AMI id of `gpu-node-image-image`, the id and version of a launch template), so a rebuilt
   image has the same AMI id here, while for real it is a new AMI. We follow those value edges
   (dependencies) from the changed set, but only within the AWS layer's wiring (image -> launch
   template -> node group).
3. `depends_on` edges only order creation: the first operand waits for the node groups, but its
   inputs are identical in both graphs, so the engine leaves it alone. These do not count.

The test asserts both halves: the changed set is within (Image Builder, launch templates, node
groups), and it is all of them — every launch template and node group really does roll.
"""

from __future__ import annotations

import pytest

from preview.recording import Recording
from preview.reports.report import clean

ALLOWED = ("aws:imagebuilder/", "aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup")
# The value edges of the AWS layer: an output of the left feeds an input of the right.
VALUE_EDGES = {
    "aws:imagebuilder/image:Image": "aws:ec2/launchTemplate:LaunchTemplate",  # imageId
    "aws:ec2/launchTemplate:LaunchTemplate": "aws:eks/nodeGroup:NodeGroup",  # launchTemplate.id/version
}
NEW_DRIVER = "580.95.05"


def _changed(before: Recording, after: Recording) -> set[str]:
    old, new = before.by_urn(), after.by_urn()
    assert old.keys() == new.keys(), "a driver change added or removed resources"
    changed = {urn for urn in old if clean(old[urn].inputs) != clean(new[urn].inputs)}
    frontier = set(changed)
    while frontier:
        reached = {
            r.urn
            for r in after.resources
            if r.urn not in changed
            and any(d in frontier and VALUE_EDGES.get(new[d].type) == r.type for d in r.dependencies)
        }
        changed |= reached
        frontier = reached
    return changed


@pytest.fixture(scope="module")
def upgraded(record_variant) -> Recording:
    def newer(config):
        config["gpu-platform:nodeImage"]["driverVersion"] = NEW_DRIVER

    return record_variant("driver-580.95.05", newer)


def test_a_driver_change_changes_only_the_image_launch_templates_and_node_groups(dev, upgraded):
    changed = _changed(dev, upgraded)
    index = dev.by_urn()
    outside = sorted(f"{index[u].type} {index[u].name}" for u in changed if not index[u].type.startswith(ALLOWED))
    assert outside == []


def test_a_driver_change_rebuilds_the_image_and_rolls_every_gpu_node_group(dev, upgraded):
    changed = _changed(dev, upgraded)
    must = [
        r
        for r in dev.resources
        if r.type
        in (
            "aws:imagebuilder/component:Component",
            "aws:imagebuilder/imageRecipe:ImageRecipe",
            "aws:imagebuilder/image:Image",
        )
        or (r.type == "aws:ec2/launchTemplate:LaunchTemplate" and r.name.endswith("-lt"))
        or (r.type == "aws:eks/nodeGroup:NodeGroup" and r.name.endswith("-ng"))
    ]
    assert must and all(r.urn in changed for r in must), [r.name for r in must if r.urn not in changed]


def test_the_system_pool_cluster_and_roles_stay_untouched(dev, upgraded):
    changed = _changed(dev, upgraded)
    for type_, name in (
        ("aws:eks/nodeGroup:NodeGroup", "gpu-cluster-system"),
        ("aws:ec2/launchTemplate:LaunchTemplate", "gpu-cluster-system"),
        ("aws:eks/cluster:Cluster", "gpu-cluster"),
        ("aws:iam/role:Role", "gpu-node-role"),
        ("aws:iam/role:Role", "gpu-node-image-builder"),
    ):
        assert dev.one(type_, name).urn not in changed, name


def test_operands_are_ordered_after_the_rolled_node_groups_but_not_changed(dev, upgraded):
    rolled = {r.urn for r in dev.of_type("aws:eks/nodeGroup:NodeGroup") if r.name.endswith("-ng")}
    daemonsets = dev.of_type("kubernetes:apps/v1:DaemonSet")
    # Some operand waits for the node groups (the first stage) ...
    assert any(rolled <= dev.waits_for(ds.urn) for ds in daemonsets)
    # ... yet no Kubernetes object differs, so a driver upgrade re-applies none of them.
    after = upgraded.by_urn()
    for r in dev.resources:
        if r.type.startswith("kubernetes:"):
            assert clean(r.inputs) == clean(after[r.urn].inputs), r.name
