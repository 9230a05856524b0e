"""Driver and image changes as rollouts: per pool `rollout: surge | in-place | blue-green`. A blue-green
pool's node group is replaced create-before-delete when its launch template changes, and a readiness
gate that depends on the new group (and on the operands that prove its GPUs) must pass before the
engine deletes the old one. `--against` says, per pool, how many GPU nodes a change replaces and how."""

from __future__ import annotations

import base64
import json

import pytest

from gpu_platform.config import NodePool
from preview.__main__ import main
from tests.components.aws.conftest import launch_template, node_group
from tests.conftest import stack_config, write_stack

JOB = "kubernetes:batch/v1:Job"
GENERATION = "gpu-platform.io/image-generation"


def _blue_green(config):
    config["gpu-platform:nodePools"][0]["rollout"] = "blue-green"


def _bumped(config):
    _blue_green(config)
    config["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"


def _node_labels(rec, pool) -> dict[str, str]:
    text = base64.b64decode(launch_template(rec, pool).inputs["userData"]).decode()
    flag = next(line for line in text.splitlines() if "--node-labels=" in line)
    return dict(item.split("=", 1) for item in flag.split("--node-labels=", 1)[1].split(","))


def _all_waits(rec, urn) -> set[str]:
    """Everything a resource waits for, transitively."""
    seen, todo = set(), [urn]
    while todo:
        for dep in rec.waits_for(todo.pop()):
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def test_the_default_is_surge_and_a_capacity_block_rolls_in_place():
    base = {"name": "p", "instanceType": "p5.48xlarge", "minSize": 0, "desiredSize": 1, "maxSize": 2}
    assert NodePool.model_validate(base).rollout == "surge"
    block = {**base, "capacityType": "CAPACITY_BLOCK", "capacityReservationId": "cr-0123456789abcdef0"}
    assert NodePool.model_validate(block).rollout == "in-place"
    assert NodePool.model_validate({**block, "rollout": "blue-green"}).rollout == "blue-green"


@pytest.mark.parametrize("rollout, update", [
    # EKS's update strategies (botocore eks service-2.json NodegroupUpdateConfig.updateStrategy).
    ("surge", {"updateStrategy": "DEFAULT", "maxUnavailablePercentage": 25}),
    ("in-place", {"updateStrategy": "MINIMAL", "maxUnavailable": 1}),
])
def test_surge_and_in_place_roll_inside_the_node_group(record_variant, rollout, update):
    rec = record_variant(f"rollout-{rollout}", lambda cfg: cfg["gpu-platform:nodePools"][0].update(rollout=rollout))
    group = node_group(rec, "l4")
    assert group.inputs["updateConfig"] == update
    assert group.replace_on_changes == ()
    assert group.inputs["tags"]["gpu-platform.io/rollout"] == rollout
    assert not rec.of_type(JOB)


def test_a_blue_green_group_is_replaced_create_before_delete_when_its_template_changes(record_variant):
    rec = record_variant("blue-green", _blue_green)
    group = node_group(rec, "l4")
    assert group.replace_on_changes == ("launchTemplate",)
    assert group.delete_before_replace is False
    assert group.inputs["tags"]["gpu-platform.io/rollout"] == "blue-green"
    # A prefix, never a fixed name: the new group and the old one exist side by side.
    assert "nodeGroupName" not in group.inputs and group.inputs["nodeGroupNamePrefix"] == "gpu-l4-"


def test_the_gate_waits_for_the_new_groups_nodes_and_the_operands_that_prove_their_gpus(record_variant):
    rec = record_variant("blue-green", _blue_green)
    (gate,) = rec.of_type(JOB)
    waits = _all_waits(rec, gate.urn)
    assert node_group(rec, "l4").urn in waits
    plugin = rec.one("kubernetes:apps/v1:DaemonSet", "gpu-device-plugin-ds")
    validator = rec.one("kubernetes:apps/v1:DaemonSet", "gpu-validator-ds")
    assert {plugin.urn, validator.urn} <= waits
    spec = gate.inputs["spec"]
    pod = spec["template"]["spec"]
    # Every node of the new generation, one pod each.
    assert spec["completions"] == spec["parallelism"] == rec.config["gpu-platform:nodePools"][0]["desiredSize"]
    assert pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname"
    # The new generation, by the labels its nodes register with.
    labels = _node_labels(rec, "l4")
    assert pod["nodeSelector"] == {"gpu-platform.io/pool": "l4", GENERATION: labels[GENERATION]}
    # The validator's per-node proof that the device plugin serves GPUs there, read-only.
    (container,) = pod["containers"]
    assert "/run/nvidia/validations/plugin-ready" in container["command"][-1]
    assert container["volumeMounts"] == [{"name": "run-nvidia-validations", "mountPath": "/run/nvidia/validations", "readOnly": True}]
    assert spec["backoffLimit"] == 0 and spec["activeDeadlineSeconds"] > 0


def test_a_driver_bump_is_a_new_generation_and_a_new_gate(record_variant):
    old, new = record_variant("blue-green", _blue_green), record_variant("blue-green-bumped", _bumped)
    assert _node_labels(old, "l4")[GENERATION] != _node_labels(new, "l4")[GENERATION]
    (old_gate,), (new_gate,) = old.of_type(JOB), new.of_type(JOB)
    selector = lambda g: g.inputs["spec"]["template"]["spec"]["nodeSelector"][GENERATION]  # noqa: E731
    assert selector(new_gate) == _node_labels(new, "l4")[GENERATION] != selector(old_gate)


def test_against_says_per_pool_how_many_gpu_nodes_a_driver_bump_replaces_and_how(tmp_path, capsys):
    config = stack_config("prod")
    config["gpu-platform:nodePools"][0]["rollout"] = "blue-green"  # h100-mig: desired 2 x 8 H100
    (tmp_path / "old").mkdir()
    old = write_stack(tmp_path / "old", config, name="prod")
    assert main(["--config", str(old), "--json", str(tmp_path / "old.json")]) == 0
    config["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"
    (tmp_path / "new").mkdir()
    new = write_stack(tmp_path / "new", config, name="prod")
    capsys.readouterr()
    assert main(["--config", str(new), "--against", str(tmp_path / "old.json")]) == 0
    out = capsys.readouterr().out
    lines = out[out.index("GPU node rollouts"):].splitlines()
    (h100,) = [line for line in lines if line.strip().startswith("h100-mig")]
    (l40s,) = [line for line in lines if line.strip().startswith("l40s")]
    assert "blue-green: replaces 2 GPU nodes (16 GPUs) by a new node group beside the old one" in h100
    assert "gpu-pool-h100-mig-gate-job" in h100
    assert "surge: replaces 2 GPU nodes (8 GPUs) inside the node group, new nodes launched first" in l40s


def test_against_an_unchanged_stack_replaces_no_gpu_node(tmp_path, capsys):
    assert main(["--stack", "prod", "--json", str(tmp_path / "old.json")]) == 0
    capsys.readouterr()
    assert main(["--stack", "prod", "--against", str(tmp_path / "old.json")]) == 0
    out = capsys.readouterr().out
    assert "  h100-mig  surge: no GPU node replaced" in out
    assert json.loads((tmp_path / "old.json").read_text())["resources"]
