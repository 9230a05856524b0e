"""What changes between two preview reports: the blast radius of a PR."""

from __future__ import annotations

import json

import pytest

from preview.__main__ import main
from preview.offline import engine
from preview.recording import Recording
from preview.reports import changes
from preview.reports.report import as_json
from tests.conftest import stack_config, write_stack

IMAGE_BUILDER = "aws:imagebuilder/"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def report(rec: Recording) -> dict:
    return json.loads(as_json(rec, []))


def names(resources) -> set[str]:
    return {r.name for r in resources}


@pytest.fixture(scope="module")
def driver_bump(dev, tmp_path_factory) -> changes.Changes:
    """dev, and dev with only `nodeImage.driverVersion` moved to another tested driver."""
    config = stack_config("dev")
    config["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"
    bumped = engine.run(write_stack(tmp_path_factory.mktemp("bump"), config, name="dev"))
    return changes.compare(report(dev), report(bumped))


def test_identical_reports_have_no_changes(prod):
    result = changes.compare(report(prod), report(prod))
    assert result.empty and result.unchanged == len(prod.resources)
    assert "no changes" in changes.describe(result)


def test_dev_to_prod_adds_the_mig_manager_and_the_prod_pools_and_removes_the_l4_pool(dev, prod):
    result = changes.compare(report(dev), report(prod))
    added, removed = names(result.added), names(result.removed)
    assert {
        "gpu-mig-manager",
        "gpu-mig-manager-ds",
        "gpu-pool-h100-mig",
        "gpu-pool-h100-mig-ng",
        "gpu-pool-l40s",
        "gpu-pool-l40s-ng",
        "gpu-gpu-dashboard",
    } <= added
    assert removed == {"gpu-pool-l4", "gpu-pool-l4-lt", "gpu-pool-l4-ng", "gpu-pool-l4-ca-nvidia.com-gpu"}
    changed = {c.resource.name: c.keys for c in result.changed}
    assert "name" in changed["gpu-cluster"]  # gpu-dev -> gpu-prod
    assert "vpcConfig.subnetIds" in changed["gpu-cluster"]  # two subnets -> three
    assert not any(r.name.startswith("gpu-node-image") for r in result.added + result.removed)


def test_a_driver_bump_touches_only_the_image_launch_templates_and_node_groups(driver_bump):
    assert not driver_bump.added and not driver_bump.removed
    types = {c.resource.type for c in driver_bump.changed}
    assert {t for t in types if not t.startswith(IMAGE_BUILDER)} == {LAUNCH_TEMPLATE, NODE_GROUP}
    assert {
        "aws:imagebuilder/component:Component",
        "aws:imagebuilder/imageRecipe:ImageRecipe",
        "aws:imagebuilder/image:Image",
    } <= types
    changed = {c.resource.name: c.keys for c in driver_bump.changed}
    assert {"data", "name"} <= set(changed["gpu-node-image-driver"])  # the install script, a new component
    assert "tags.gpu-platform.io/driver-version" in changed["gpu-pool-l4-lt"]
    assert "tags.gpu-platform.io/driver-version" in changed["gpu-pool-l4-ng"]


def test_under_mocks_a_driver_bump_keeps_the_ami_and_launch_template_ids(driver_bump):
    """Offline, an image's AMI id and a launch template's id are placeholders derived from the
    resource name, so the new AMI never reaches `imageId` as a value: only the tags show the bump
    as values. The cascade below says what pulumi up will do with it."""
    changed = {c.resource.name: c.keys for c in driver_bump.changed}
    assert "imageId" not in changed["gpu-pool-l4-lt"]
    # The node group's labels carry the image generation (components/aws/node_pool.py), an in-place update.
    assert all(
        key.startswith("tags.") or key == "labels.gpu-platform.io/image-generation" for key in changed["gpu-pool-l4-ng"]
    )


def test_a_driver_bump_rebuilds_the_image_and_rolls_the_gpu_nodes_in_place(driver_bump):
    # A new install script is a new Image Builder component (immutable), so a new recipe and a new
    # image (a new AMI); the launch template takes it as a new version, and the node group rolls its
    # nodes to that version inside the same group (UpdateNodegroupVersion), never a new group.
    verdicts = {c.resource.name: c.verdict for c in driver_bump.changed}
    assert verdicts["gpu-node-image-driver"] == "replaces"
    assert verdicts["gpu-node-image-recipe"] == "replaces"
    assert verdicts["gpu-node-image-image"] == "replaces"
    assert verdicts["gpu-pool-l4-lt"] == "update"
    assert verdicts["gpu-pool-l4-ng"] == "rolls the nodes"
    lt = next(c for c in driver_bump.changed if c.resource.name == "gpu-pool-l4-lt")
    assert [(e.key, e.because) for e in lt.entries if e.because] == [("imageId", "gpu-node-image-image is replaced")]
    ng = next(c for c in driver_bump.changed if c.resource.name == "gpu-pool-l4-ng")
    assert [(e.key, e.because) for e in ng.entries if e.because] == [
        ("launchTemplate.version", "gpu-pool-l4-lt gets a new version")
    ]


def _changed_dev(tmp_path_factory, dev, edit) -> changes.Changes:
    config = stack_config("dev")
    edit(config)
    edited = engine.run(write_stack(tmp_path_factory.mktemp("edited"), config, name="dev"))
    return changes.compare(report(dev), report(edited))


def test_a_new_instance_type_replaces_the_node_group(dev, tmp_path_factory):
    def edit(config):
        config["gpu-platform:nodePools"][0]["instanceType"] = "g6.4xlarge"

    result = _changed_dev(tmp_path_factory, dev, edit)
    ng = next(c for c in result.changed if c.resource.name == "gpu-pool-l4-ng")
    assert ng.verdict == "replaces"
    assert (
        "  ~ aws:eks/nodeGroup:NodeGroup gpu-pool-l4-ng: REPLACED (create-before-delete: the new node group is created beside "
        "the old one, which is deleted with its nodes at the end of the update)\n"
        '      instanceTypes[0]: "g6.2xlarge" -> "g6.4xlarge"  [replaces]\n' in changes.describe(result)
    )


def test_a_desired_size_the_node_group_ignores_is_no_change(dev, tmp_path_factory):
    # The program sets ignoreChanges on scalingConfig.desiredSize (the autoscaler owns it).
    def edit(config):
        config["gpu-platform:nodePools"][0]["desiredSize"] = 2

    result = _changed_dev(tmp_path_factory, dev, edit)
    ng = next(c for c in result.changed if c.resource.name == "gpu-pool-l4-ng")
    assert ng.verdict == "no change"
    assert "scalingConfig.desiredSize: 1 -> 2  (ignored: ignoreChanges keeps the old value)" in changes.describe(result)


def test_a_new_approval_id_rolls_no_node_and_restarts_no_pod(prod, tmp_path_factory):
    """A new approval record (same privileges) must not cost a GPU outage: the id sits on resource
    tags and workload objects, never in launch template content or a pod template."""
    config = stack_config("prod")
    config["gpu-platform:audit"]["approval"] = "SEC-9999"
    result = changes.compare(
        report(prod), report(engine.run(write_stack(tmp_path_factory.mktemp("approval"), config, name="prod")))
    )
    assert result.changed, "the approval id is recorded somewhere"
    rolled = [
        c.resource.name for c in result.changed if c.verdict in ("rolls the nodes", "replaces", "may be replaced")
    ]
    assert rolled == []
    keys = [k for c in result.changed for k in c.keys]
    assert not [k for k in keys if k.startswith("tagSpecifications")]
    assert not [k for k in keys if k.startswith("spec.template.")]
    assert any(k == "metadata.annotations.audit.gpu-platform.io/approval" for k in keys)


def test_an_older_report_without_dependencies_still_compares(prod):
    old = report(prod)
    for r in old["resources"]:
        r.pop("propertyDependencies"), r.pop("ignoreChanges"), r.pop("replaceOnChanges")
    assert changes.compare(old, report(prod)).empty


def test_long_values_are_shown_where_they_differ():
    text = changes._shown("x" * 200 + "old tail", "x" * 200 + "new tail")
    assert "old tail" in text and "new tail" in text and "(208 chars)" in text


def test_changed_keys_are_dotted_paths_with_list_indexes():
    old = {
        "tags": {"gpu-platform.io/driver-version": "580.95.05", "owner": "a"},
        "mappings": [{"size": 100}],
        "subnets": ["a"],
        "gone": 1,
    }
    new = {
        "tags": {"gpu-platform.io/driver-version": "580.105.08", "owner": "a"},
        "mappings": [{"size": 200}],
        "subnets": ["a", "b"],
        "imageId": "ami-1",
    }
    assert changes.changed_keys(old, new) == [
        "gone",
        "imageId",
        "mappings[0].size",
        "subnets",
        "tags.gpu-platform.io/driver-version",
    ]


def test_describe_lists_counts_and_each_resources_keys(driver_bump):
    text = changes.describe(driver_bump)
    assert f"0 added, 0 removed, {len(driver_bump.changed)} changed" in text
    assert f"  ~ {NODE_GROUP} gpu-pool-l4-ng: ROLLS ITS NODES (a rolling replacement inside the node group)\n" in text
    assert '      tags.gpu-platform.io/driver-version: "580.105.08" -> "580.95.05"\n' in text
    assert (
        "      launchTemplate.version: changes because gpu-pool-l4-lt gets a new version  [rolls the nodes]\n" in text
    )
    assert "(3 replaced, 1 rolling their nodes)" in text


def test_cli_against_prints_what_changes(tmp_path, capsys):
    old = tmp_path / "dev.json"
    assert main(["--stack", "dev", "--json", str(old)]) == 0
    capsys.readouterr()
    assert main(["--stack", "prod", "--against", str(old)]) == 0
    out = capsys.readouterr().out
    assert "Changes against the old report (dev -> prod):" in out
    assert "  + gpu-platform:operands:MigManager gpu-mig-manager\n" in out
    assert "  - aws:eks/nodeGroup:NodeGroup gpu-pool-l4-ng\n" in out


def test_cli_against_a_missing_report_exits_2(tmp_path, capsys):
    assert main(["--stack", "dev", "--against", str(tmp_path / "nope.json")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.parametrize("content", ["{not json", '{"stack": "dev"}'])
def test_cli_against_an_invalid_report_exits_2(tmp_path, capsys, content):
    old = tmp_path / "old.json"
    old.write_text(content)
    assert main(["--stack", "dev", "--against", str(old)]) == 2
    assert "Traceback" not in capsys.readouterr().err


_R = '{"urn": "u", "type": "t", "name": "n"'


@pytest.mark.parametrize(
    "content, message",
    [
        ("{not json", "not JSON"),
        ('{"stack": "dev"}', "not a preview report (no 'resources' list)"),
        ('{"resources": [{"urn": 1}]}', "resources[0] has no urn, type and name"),
        ('{"resources": [' + _R + ', "inputs": "str"}]}', "resources[0] has inputs that are not an object"),
        ('{"resources": [' + _R + ', "inputs": [1, 2]}]}', "resources[0] has inputs that are not an object"),
        (
            '{"resources": [' + _R + ', "propertyDependencies": {"a": "u"}}]}',
            "propertyDependencies that are not an object",
        ),
        ('{"resources": [' + _R + ', "ignoreChanges": "a"}]}', "ignoreChanges or replaceOnChanges that are not lists"),
        ('{"stack": NaN, "resources": []}', "not JSON (NaN is not a JSON number"),
        ('{"stack": 3, "resources": []}', "'stack' is not text"),
        ('{"resources": [], "x": ' + "9" * 5000 + "}", "not JSON (a number of more than 4300 digits)"),
    ],
)
def test_load_names_the_file_and_what_is_wrong_with_an_invalid_report(tmp_path, content, message):
    old = tmp_path / "old.json"
    old.write_text(content)
    with pytest.raises(ValueError) as caught:
        changes.load(old)
    assert str(caught.value).startswith(str(old)) and message in str(caught.value)


def test_names_from_an_old_report_are_printed_escaped_and_short():
    old = {"stack": "\x1b[2J" + "s" * 5000, "resources": []}
    text = changes.describe(changes.compare(old, {"stack": "dev", "resources": []}))
    assert "\x1b" not in text and "(5004 characters)" in text


# Two-resource reports, written by hand: a launch template and the node group that uses it.
LT_URN = "urn:pulumi:s::p::aws:ec2/launchTemplate:LaunchTemplate::lt"
NG_URN = "urn:pulumi:s::p::aws:eks/nodeGroup:NodeGroup::ng"


def _pair(lt_inputs: dict, ng_options: dict | None = None) -> dict:
    return {
        "stack": "s",
        "resources": [
            {"urn": LT_URN, "type": LAUNCH_TEMPLATE, "name": "lt", "inputs": lt_inputs},
            {
                "urn": NG_URN,
                "type": NODE_GROUP,
                "name": "ng",
                "propertyDependencies": {"launchTemplate": [LT_URN]},
                "inputs": {"launchTemplate": {"id": "lt-1", "version": "1"}},
                **(ng_options or {}),
            },
        ],
    }


def _verdicts(old: dict, new: dict) -> dict[str, str]:
    return {c.resource.name: c.verdict for c in changes.compare(old, new).changed}


def test_a_change_of_the_launch_templates_own_tags_makes_no_version_and_rolls_nothing():
    # resourceLaunchTemplateUpdate's updateKeys do not include tags: no CreateLaunchTemplateVersion.
    assert _verdicts(_pair({"tags": {"a": "1"}}), _pair({"tags": {"a": "2"}})) == {"lt": "update"}


@pytest.mark.parametrize("key", ["userData", "tagSpecifications", "description", "imageId"])
def test_a_change_of_the_template_content_rolls_the_node_group(key):
    assert _verdicts(_pair({key: "1"}), _pair({key: "2"})) == {"lt": "update", "ng": "rolls the nodes"}


def test_replace_on_changes_turns_a_roll_into_a_replacement():
    # A blue-green pool: replaceOnChanges ["launchTemplate"] on the node group.
    options = {"replaceOnChanges": ["launchTemplate"]}
    result = changes.compare(_pair({"userData": "1"}, options), _pair({"userData": "2"}, options))
    ng = next(c for c in result.changed if c.resource.name == "ng")
    assert ng.verdict == "replaces"
    assert ng.entries[0].effect.why == "its replaceOnChanges option"


def test_a_replaced_kms_key_leaves_the_cluster_on_its_old_key():
    key_urn = "urn:pulumi:s::p::aws:kms/key:Key::k"

    def report(usage: str) -> dict:
        return {
            "stack": "s",
            "resources": [
                {"urn": key_urn, "type": "aws:kms/key:Key", "name": "k", "inputs": {"keyUsage": usage}},
                {
                    "urn": "urn:pulumi:s::p::aws:eks/cluster:Cluster::c",
                    "type": "aws:eks/cluster:Cluster",
                    "name": "c",
                    "propertyDependencies": {"encryptionConfig": [key_urn]},
                    "inputs": {},
                },
            ],
        }

    result = changes.compare(report("ENCRYPT_DECRYPT"), report("SIGN_VERIFY"))
    assert {c.resource.name: c.verdict for c in result.changed} == {"k": "replaces", "c": "no API call"}
    assert "the cluster keeps the key it has" in changes.describe(result)
