"""Driver and image changes as rollouts: per pool `rollout: surge | in-place | blue-green`. A blue-green
pool's node group is replaced create-before-delete when its launch template changes, and a readiness
gate that depends on the new group (and on the operands that prove its GPUs) must be ready before the
engine deletes the old one. `--against` says, per pool, how many GPU nodes a change replaces and how."""

from __future__ import annotations

import copy
import json

import pytest
from google.protobuf import json_format
from pydantic import ValidationError

from gpu_platform.config.node_pool import NodePool
from gpu_platform.interface import contract
from preview.__main__ import main
from tests.components.aws.conftest import node_group
from tests.conftest import stack_config, unapproved, write_stack
from tests.release_stacks import strict_error

DAEMON_SET = "kubernetes:apps/v1:DaemonSet"
# The label EKS puts on every node of a managed node group, valued with the group's name (EKS User
# Guide, managed-node-update-behavior.adoc lines 44-55).
NODE_GROUP_LABEL = "eks.amazonaws.com/nodegroup"
MARKER = "/run/nvidia/validations/plugin-ready"


def _blue_green(config):
    # dev's l4 has minSize 0, which blue-green refuses (test_blue_green_refuses_a_pool_that_may_shrink_to_no_node).
    config["gpu-platform:nodePools"][0].update(rollout="blue-green", minSize=1)


def _bumped(config):
    _blue_green(config)
    config["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"


def _gates(rec):
    return [r for r in rec.of_type(DAEMON_SET) if r.name.endswith("-gate-ds")]


def _all_waits(rec, urn) -> set[str]:
    """Everything a resource waits for, transitively."""
    seen, todo = set(), [urn]
    while todo:
        for dep in rec.waits_for(todo.pop()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


BLOCK = {
    "name": "p",
    "instanceType": "p5.48xlarge",
    "minSize": 0,
    "desiredSize": 1,
    "maxSize": 2,
    "capacityType": "CAPACITY_BLOCK",
    "capacityReservationId": "cr-0123456789abcdef0",
    "subnetIds": ["subnet-0a1b2c3d4e5f60002"],
}


def test_the_default_is_surge_and_a_capacity_block_rolls_in_place():
    assert NodePool.model_validate({k: v for k, v in BLOCK.items() if not k.startswith("capacity")}).rollout == "surge"
    assert NodePool.model_validate(BLOCK).rollout == "in-place"


def _problem(pool: dict) -> tuple:
    """The one problem of a pool the config model refuses: its key path below the pool, and its message."""
    with pytest.raises(ValidationError) as error:
        NodePool.model_validate(pool)
    (problem,) = [e["ctx"]["error"] for e in error.value.errors()]
    return problem.path, problem.message


def test_blue_green_on_a_capacity_block_needs_the_stack_to_say_the_block_holds_both_generations():
    assert _problem({**BLOCK, "rollout": "blue-green"})[0] == ("rollout",)
    assert (
        "blue-green on capacityType: CAPACITY_BLOCK runs both node group generations"
        in _problem({**BLOCK, "rollout": "blue-green"})[1]
    )
    acknowledged = NodePool.model_validate(
        {**BLOCK, "minSize": 1, "rollout": "blue-green", "blockHoldsBothGenerations": True}
    )
    assert acknowledged.rollout == "blue-green"
    assert _problem({**BLOCK, "rollout": "in-place", "blockHoldsBothGenerations": True}) == (
        ("blockHoldsBothGenerations",),
        "only for rollout: blue-green with capacityType: CAPACITY_BLOCK; remove it",
    )


@pytest.mark.parametrize(
    "rollout, update",
    [
        # EKS's update strategies (botocore eks service-2.json NodegroupUpdateConfig.updateStrategy).
        ("surge", {"updateStrategy": "DEFAULT", "maxUnavailablePercentage": 25}),
        ("in-place", {"updateStrategy": "MINIMAL", "maxUnavailable": 1}),
    ],
)
def test_surge_and_in_place_roll_inside_the_node_group(record_variant, rollout, update):
    rec = record_variant(f"rollout-{rollout}", lambda cfg: cfg["gpu-platform:nodePools"][0].update(rollout=rollout))
    group = node_group(rec, "l4")
    assert group.inputs["updateConfig"] == update
    assert group.replace_on_changes == ()
    assert group.inputs["tags"]["gpu-platform.io/rollout"] == rollout
    assert not _gates(rec)


@pytest.mark.parametrize(
    "rollout, max_size, minutes",
    [
        # A roll goes batch by batch, each up to 30 minutes (launch and join a GPU node, drain the old one
        # for up to 15 minutes, 60 s after cordoning: managed-node-update-behavior.adoc lines 26-42, 81-87);
        # the provider's own 60 minutes (tf-aws v5.42.0 node_group.go line 52) is the floor.
        ("in-place", 8, 8 * 30),  # one node at a time
        ("surge", 8, 4 * 30),  # 25% of 8 = 2 a batch: 4 batches
        ("surge", 2, 60),  # 25% of 2 rounds down to 0, so one a batch: 2 batches, 60 minutes
    ],
)
def test_a_node_group_update_may_take_as_long_as_its_roll(record_variant, rollout, max_size, minutes):
    rec = record_variant(
        f"timeout-{rollout}-{max_size}",
        lambda cfg: cfg["gpu-platform:nodePools"][0].update(rollout=rollout, maxSize=max_size),
    )
    _create, update, _delete = node_group(rec, "l4").custom_timeouts
    assert update == f"{minutes}m"


def test_a_blue_green_group_is_replaced_create_before_delete_when_its_template_changes(record_variant):
    rec = record_variant("blue-green", _blue_green)
    group = node_group(rec, "l4")
    assert group.replace_on_changes == ("launchTemplate",)
    assert group.delete_before_replace is False
    assert group.inputs["tags"]["gpu-platform.io/rollout"] == "blue-green"
    # A prefix, never a fixed name: the new group and the old one exist side by side.
    assert "nodeGroupName" not in group.inputs and group.inputs["nodeGroupNamePrefix"] == "gpu-l4-"


def test_the_gate_is_a_daemon_set_on_the_current_node_groups_nodes_after_the_operands(record_variant):
    rec = record_variant("blue-green", _blue_green)
    (gate,) = _gates(rec)
    assert gate.type == DAEMON_SET
    waits = _all_waits(rec, gate.urn)
    group = node_group(rec, "l4")
    assert group.urn in waits
    plugin = rec.one(DAEMON_SET, "gpu-device-plugin-ds")
    validator = rec.one(DAEMON_SET, "gpu-validator-ds")
    assert {plugin.urn, validator.urn} <= waits
    spec = gate.inputs["spec"]
    pod = spec["template"]["spec"]
    # The nodes of the group as AWS named it (a prefix and a suffix), by the label EKS gives them: a
    # replaced group's nodes are never counted for its successor.
    name = json_format.MessageToDict(group.state)["nodeGroupName"]
    assert name.startswith("gpu-l4-") and len(name) > len("gpu-l4-")
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": "l4", NODE_GROUP_LABEL: name}
    # No count anywhere: the cluster autoscaler owns it, and a DaemonSet is ready when every node it
    # matches runs a ready pod.
    assert not {"completions", "parallelism", "replicas"} & set(spec)
    # Ready only once the validator's per-node proof that the device plugin serves GPUs is there, read-only.
    (container,) = pod["containers"]
    assert container["readinessProbe"]["exec"]["command"] == ["test", "-f", MARKER]
    assert container["volumeMounts"] == [
        {"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations", "readOnly": True}
    ]
    # Scheduled like the operands it waits for, so a full node does not leave it Pending.
    assert pod["priorityClassName"] == "system-node-critical"
    # Pulumi waits for its rollout on create and on update, bounded.
    create, update, _ = gate.custom_timeouts
    assert create == update and create.endswith("m") and int(create[:-1]) >= 30


def test_only_the_gate_daemon_set_takes_another_resources_output_in_its_spec(record_variant):
    # preview/reports/replacements.yaml narrows a DaemonSet's `spec` cascade to the gate's nodeSelector.
    rec = record_variant("blue-green", _blue_green)
    for ds in rec.of_type(DAEMON_SET):
        deps = dict(ds.property_dependencies).get("spec", ())
        if ds.name.endswith("-gate-ds"):
            assert node_group(rec, "l4").urn in deps
        else:
            assert not deps, ds.name


def test_blue_green_refuses_a_pool_that_may_shrink_to_no_node(tmp_path, capsys):
    # The cluster autoscaler removes the new group's nodes (they run only DaemonSet pods) down to
    # minSize, and a DaemonSet that wants no pod is ready at once: with minSize 0 the gate could pass
    # with no node and the old group go unchecked.
    config = stack_config("dev")
    config["gpu-platform:nodePools"][0]["rollout"] = "blue-green"  # l4: minSize 0, desiredSize 1
    write_stack(tmp_path, config, name="dev")
    assert main(["--config", str(tmp_path / "Pulumi.dev.yaml")]) == 2
    err = capsys.readouterr().err
    (line,) = [line.strip() for line in err.splitlines() if "nodePools[0].minSize" in line]
    assert line.startswith("gpu-platform:nodePools[0].minSize: 0 does not fit rollout: blue-green")
    assert "autoscaler" in line and "passes at once" in line and "valid: minSize 1 or more" in line
    # minSize 1 holds it; a surge or in-place pool may still scale to zero.
    assert NodePool.model_validate({**BLOCK, "minSize": 1, "rollout": "blue-green", "blockHoldsBothGenerations": True})
    for rollout in ("surge", "in-place"):
        assert (
            NodePool.model_validate(
                {
                    "name": "p",
                    "instanceType": "g6.2xlarge",
                    "minSize": 0,
                    "desiredSize": 0,
                    "maxSize": 2,
                    "rollout": rollout,
                }
            ).min_size
            == 0
        )


# Taints a node has registered with before it is Ready: the node lifecycle controller's not-ready
# (Kubernetes well-known labels, annotations and taints) and the cloud provider's uninitialized.
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}
UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}


def test_the_gate_counts_nodes_that_have_registered_but_are_not_ready(record_variant):
    # A node the gate's pods do not tolerate is not in the DaemonSet's desiredNumberScheduled: it
    # would not hold the gate. Every NoSchedule taint is tolerated, the pool's GPU taint too.
    (gate,) = _gates(record_variant("blue-green", _blue_green))
    tolerations = gate.inputs["spec"]["template"]["spec"]["tolerations"]
    assert {"operator": "Exists", "effect": "NoSchedule"} in tolerations
    for taint in (
        NOT_READY,
        UNINITIALIZED,
        {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
        {"key": "anything.example.com/else", "value": "x", "effect": "NoSchedule"},
    ):
        assert contract.tolerates(tolerations, taint), taint
    # Only NoSchedule: nothing keeps a gate pod on a node being evicted (NoExecute) that it would not
    # otherwise tolerate.
    assert not contract.tolerates(tolerations, {"key": "example.com/drain", "value": "x", "effect": "NoExecute"})


def _dra_blue_green(config):
    # The dra stack's h100 pool, blue-green (minSize 1: see the refusal above); its approval covers no gate.
    config["gpu-platform:nodePools"][0].update(rollout="blue-green", minSize=1)
    unapproved(config)


CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"


def test_in_mode_dra_the_gate_is_ready_only_where_a_claim_got_a_working_gpu(record_variant):
    # Nothing writes plugin-ready in mode dra (no device plugin, no plugin check): a gate reading it
    # would never pass. Each gate pod claims one GPU of its node itself, as the DRA validator does, and
    # is ready only after nvidia-smi -L, which the claim's CDI injection brings, ran in it.
    rec = record_variant("dra-blue-green", _dra_blue_green, stack="dra")
    (gate,) = _gates(rec)
    pod = gate.inputs["spec"]["template"]["spec"]
    name = json_format.MessageToDict(node_group(rec, "h100").state)["nodeGroupName"]
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": "h100", NODE_GROUP_LABEL: name}
    (claim,) = pod["resourceClaims"]
    (check,) = pod["initContainers"]
    assert check["command"] == ["sh", "-c"] and check["args"] == ["nvidia-smi -L"]
    # Without the claim in resources.claims the kubelet injects nothing into the container.
    assert check["resources"]["claims"] == [{"name": claim["name"]}]
    # No marker, no host path, no probe on one: the proof is the claim.
    assert "volumes" not in pod
    assert not [c for c in pod["containers"] if "readinessProbe" in c or "volumeMounts" in c]
    assert gate.inputs["metadata"]["annotations"][contract.AUDIT_HOST_PATHS] == ""
    # The template it names is the stack's, in the gate's namespace: one GPU of the DRA driver's
    # whole-GPU class, with admin access (neither waiting for nor holding a GPU a workload uses).
    (template,) = [
        t for t in rec.of_type(CLAIM_TEMPLATE) if t.inputs["metadata"]["name"] == claim["resourceClaimTemplateName"]
    ]
    assert template.inputs["metadata"]["namespace"] == gate.inputs["metadata"]["namespace"] == "gpu-operator"
    (request,) = template.inputs["spec"]["spec"]["devices"]["requests"]
    assert request["exactly"] == {
        "deviceClassName": "gpu.nvidia.com",
        "allocationMode": "ExactCount",
        "count": 1,
        "adminAccess": True,
    }
    # ... a class the stack creates, in a namespace where the API server admits admin access.
    classes = {c.inputs["metadata"]["name"] for c in rec.of_type("kubernetes:resource.k8s.io/v1:DeviceClass")}
    assert "gpu.nvidia.com" in classes
    (namespace,) = rec.of_type("kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"]["labels"]["resource.kubernetes.io/admin-access"] == "true"
    # After the new group, its template, and the DRA driver that prepares its claim.
    waits = _all_waits(rec, gate.urn)
    driver = rec.one(DAEMON_SET, "gpu-dra-driver-ds")
    assert {node_group(rec, "h100").urn, template.urn, driver.urn} <= waits
    # Unprivileged like the device-plugin gate: not root, nothing added, no token.
    assert pod["securityContext"]["runAsNonRoot"] is True and pod["automountServiceAccountToken"] is False
    for container in (check, *pod["containers"]):
        assert container["securityContext"]["capabilities"] == {"drop": ["ALL"]}
        assert container["securityContext"]["allowPrivilegeEscalation"] is False


def test_in_mode_dra_the_gate_objects_are_valid_under_kubernetes_1_34(record_variant):
    rec = record_variant("dra-blue-green", _dra_blue_green, stack="dra")
    (gate,) = _gates(rec)
    templates = [t for t in rec.of_type(CLAIM_TEMPLATE) if "readiness-gate" in t.inputs["metadata"]["name"]]
    assert len(templates) == 1
    errors = [e for o in (gate, *templates) if (e := strict_error(o.inputs, "1.34"))]
    assert not errors, errors


def test_a_device_plugin_gate_claims_nothing(record_variant):
    (gate,) = _gates(record_variant("blue-green", _blue_green))
    pod = gate.inputs["spec"]["template"]["spec"]
    assert "resourceClaims" not in pod and "initContainers" not in pod


def _against_output(tmp_path, capsys, old_config, new_config, stack="prod") -> str:
    """The summary of `--against` the old stack's report, as the new stack's preview prints it."""
    for name, config in (("old", old_config), ("new", new_config)):
        (tmp_path / name).mkdir()
        write_stack(tmp_path / name, unapproved(copy.deepcopy(config)), name=stack)
    assert main(["--config", str(tmp_path / "old" / f"Pulumi.{stack}.yaml"), "--json", str(tmp_path / "old.json")]) == 0
    capsys.readouterr()
    assert (
        main(["--config", str(tmp_path / "new" / f"Pulumi.{stack}.yaml"), "--against", str(tmp_path / "old.json")]) == 0
    )
    return capsys.readouterr().out


def _against(tmp_path, capsys, old_config, new_config, stack="prod") -> list[str]:
    out = _against_output(tmp_path, capsys, old_config, new_config, stack)
    return out[out.index("GPU node rollouts") :].splitlines()


def _driver_bumped(old_config) -> dict:
    """The same stack with another driver of the release's branch: every GPU pool's image changes."""
    new = copy.deepcopy(old_config)
    new["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"
    return new


def _against_a_driver_bump(tmp_path, capsys, old_config) -> list[str]:
    (tmp_path / "o").mkdir()
    return _against(tmp_path / "o", capsys, old_config, _driver_bumped(old_config))


def _line(lines, pool) -> str:
    (found,) = [line for line in lines if line.strip().startswith(pool + " ")]
    return found


def _after(lines, pool) -> list[str]:
    """The lines under a pool's line, up to the next pool."""
    start = lines.index(_line(lines, pool))
    rest = []
    for line in lines[start + 1 :]:
        if not line.startswith("  " + " " * 4) or not line.strip():
            break
        rest.append(line.strip())
    return rest


def test_against_a_driver_bump_replaces_a_blue_green_group_and_moves_the_gate_to_it(tmp_path, capsys):
    old = stack_config("prod")
    old["gpu-platform:nodePools"][0].update(rollout="blue-green", minSize=1)  # h100-mig: desired 2 x 8 H100
    lines = _against_a_driver_bump(tmp_path, capsys, old)
    h100, l40s = _line(lines, "h100-mig"), _line(lines, "l40s")
    assert (
        "blue-green: replaces 2 GPU nodes (16 GPUs) by a new node group created beside the old one (create-before-delete)"
        in h100
    )
    assert "only after its readiness gate (gpu-pool-h100-mig-gate-ds) has seen every new node serve GPUs" in h100
    assert "surge: replaces 2 GPU nodes (8 GPUs) inside the node group, new nodes launched first" in l40s
    assert "no GPU check" in l40s


def test_against_the_gate_follows_a_group_replaced_for_any_reason(tmp_path, capsys):
    # An instance type change keeps the image (the old gate's selector, the image generation, would
    # have matched the old nodes); the group is replaced, so the gate must move to the new one.
    old = stack_config("prod")
    old["gpu-platform:nodePools"][1]["rollout"] = "blue-green"  # l40s, g6e.12xlarge
    new = copy.deepcopy(old)
    new["gpu-platform:nodePools"][1]["instanceType"] = "g6e.24xlarge"
    out = _against_output(tmp_path, capsys, old, new)
    gate = out[out.index("kubernetes:apps/v1:DaemonSet gpu-pool-l40s-gate-ds") :].splitlines()
    assert "updated in place" in gate[0]
    assert "spec.template.spec.nodeSelector: changes because gpu-pool-l40s-ng is replaced" in gate[1]


def test_against_names_removed_pools_rollout_changes_and_counts_from_the_old_report(tmp_path, capsys):
    old = stack_config("prod")
    extra = {"minSize": 0, "maxSize": 2, "instanceType": "g6.xlarge"}  # one L4 a node
    old["gpu-platform:nodePools"] += [
        {"name": "one", "desiredSize": 1, **extra},
        {"name": "gone", "desiredSize": 2, **extra},
    ]
    old["gpu-platform:nodePools"][0].update(rollout="blue-green", minSize=1)  # h100-mig
    new = _driver_bumped(old)
    new["gpu-platform:nodePools"].pop()  # gone
    new["gpu-platform:nodePools"][0]["desiredSize"] = 1  # h100-mig: old report 2
    new["gpu-platform:nodePools"][1]["rollout"] = "in-place"  # l40s: was surge
    (tmp_path / "o").mkdir()
    lines = _against(tmp_path / "o", capsys, old, new)
    assert "node counts are the old report's desiredSize" in lines[0]
    # The nodes that go are the old report's 2; the new group starts with the new desiredSize, 1.
    assert "replaces 2 GPU nodes (16 GPUs)" in _line(lines, "h100-mig") and "with 1 node " in _line(lines, "h100-mig")
    assert "surge: replaces 1 GPU node (1 GPU) inside the node group" in _line(lines, "one")
    gone = _line(lines, "gone")
    assert "removed (or renamed)" in gone and "2 GPU nodes (2 GPUs)" in gone
    # The provider updates the version before the updateConfig of the same update (tf-aws v5.42.0
    # node_group.go lines 461-509, then 511-546): the roll still goes by surge.
    (warning,) = [line for line in _after(lines, "l40s") if line.startswith("warning:")]
    assert "rollout changes from surge to in-place in the same update" in warning
    assert "in-place: replaces 2 GPU nodes (8 GPUs)" in _line(lines, "l40s")


def test_against_a_surge_pool_replaced_by_a_new_instance_type_is_create_before_delete_without_a_gate(tmp_path, capsys):
    old = stack_config("prod")
    new = copy.deepcopy(old)
    new["gpu-platform:nodePools"][1]["instanceType"] = "g6e.24xlarge"
    (tmp_path / "o").mkdir()
    l40s = _line(_against(tmp_path / "o", capsys, old, new), "l40s")
    assert (
        "surge: replaces 2 GPU nodes (8 GPUs) by a new node group created beside the old one (create-before-delete)"
        in l40s
    )
    assert "no GPU check in between" in l40s and "readiness gate (" not in l40s


def test_against_an_unchanged_stack_replaces_no_gpu_node(tmp_path, capsys):
    assert main(["--stack", "prod", "--json", str(tmp_path / "old.json")]) == 0
    capsys.readouterr()
    assert main(["--stack", "prod", "--against", str(tmp_path / "old.json")]) == 0
    out = capsys.readouterr().out
    assert "  h100-mig  surge: no GPU node replaced" in out
    assert json.loads((tmp_path / "old.json").read_text())["resources"]


def test_against_a_surge_says_how_many_extra_nodes_eks_may_launch_and_warns_about_p_family_quota(tmp_path, capsys):
    # EKS's scale up phase (User Guide, managed node update behavior) raises the group's desired and
    # max size by the larger of up to twice its Availability Zones and maxUnavailable. prod: 3 subnets;
    # h100-mig (p5.48xlarge with EFA, so one subnet for its placement group; On-Demand, maxSize 8:
    # 25% is 2) -> max(2, 2) = 2; l40s with maxSize 100 (3 subnets: 6; 25% is 25) -> 25.
    old = stack_config("prod")
    old["gpu-platform:nodePools"][1]["maxSize"] = 100
    lines = _against_a_driver_bump(tmp_path, capsys, old)
    h100, l40s = _line(lines, "h100-mig"), _line(lines, "l40s")
    assert "EKS may launch up to 2 extra nodes beside the pool's (an upper bound" in h100
    assert "EKS may launch up to 25 extra nodes beside the pool's (an upper bound" in l40s
    (warning,) = [line for line in _after(lines, "h100-mig") if line.startswith("warning:")]
    assert "up to 2 extra p5.48xlarge On-Demand instances" in warning and "Running On-Demand P instances" in warning
    assert not [line for line in _after(lines, "l40s") if line.startswith("warning:")]  # g6e: not P-family


def test_against_a_replaced_pool_node_group_reads_create_before_delete(tmp_path, capsys):
    old = stack_config("prod")
    old["gpu-platform:nodePools"][0].update(rollout="blue-green", minSize=1)  # h100-mig
    new = _driver_bumped(old)
    (header,) = [
        line
        for line in _against_output(tmp_path, capsys, old, new).splitlines()
        if line.startswith("  ~ aws:eks/nodeGroup:NodeGroup gpu-pool-h100-mig-ng:")
    ]
    assert "REPLACED" in header and "create-before-delete" in header
    assert "deleted and created again" not in header
