"""Every scenario of a node's life ends with every operand running and the node offering what the
plan says, on every pool of every shipped and passing fixture stack; planted deadlocks fail."""

from __future__ import annotations

import json

import pytest

from gpu_platform.catalog import matrix
from preview.lifecycle import scenarios, stack
from preview.offline import engine
from preview.recording import Recording
from tests import fixture_stacks, release_stacks
from tests.conftest import FIXTURES, SHIPPED_STACKS, record

# What one node of each shipped pool offers, from the instance catalogue and the pool's sharing:
# dev l4 g6.2xlarge = 1 L4, time-sliced x4; prod l40s g6e.12xlarge = 4 L40S; prod h100-mig p5.48xlarge
# = 8 H100 80GB under all-balanced, per GPU 2 x 1g.10gb, 1 x 2g.20gb, 1 x 3g.40gb (mig-parted v0.13.1
# config-default.yaml); dra h100 p5.48xlarge = 8 GPUs as DRA devices of class gpu.nvidia.com.
OFFERS = {
    ("dev", "l4"): {"nvidia.com/gpu": 4},
    ("prod", "l40s"): {"nvidia.com/gpu": 4},
    ("prod", "h100-mig"): {"nvidia.com/mig-1g.10gb": 16, "nvidia.com/mig-2g.20gb": 8, "nvidia.com/mig-3g.40gb": 8},
    ("dra", "h100"): {"gpu.nvidia.com": 8},
}
SCENARIO_IDS = [s.__name__ for s in scenarios.SCENARIOS]


def test_every_pool_of_every_stack_file_has_its_offer_written_here():
    # A new stacks/Pulumi.<name>.yaml (or pool) is in the scenarios below only through OFFERS.
    pools = {
        (engine.stack_name(path), pool["name"])
        for path in SHIPPED_STACKS
        for pool in engine.read_stack_file(path)["gpu-platform:nodePools"]
    }
    assert pools == set(OFFERS)


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS, ids=SCENARIO_IDS)
@pytest.mark.parametrize("stack_name, pool", sorted(OFFERS))
def test_every_shipped_pool_ends_live_in_every_scenario(stack_name, pool, scenario):
    view = stack.view(record(engine.stack_file(stack_name)))
    outcome = scenario(view, view.pool(pool))
    assert outcome.problems == ()
    # The MIG change moves h100-mig to the first other layout of its map, all-1g.10gb: 7 instances of
    # 1g.10gb per H100 80GB (gpu-operator v25.10.1 assets/state-mig-manager/0400_configmap.yaml), x 8.
    changed = scenario is scenarios.mig_change_busy and pool == "h100-mig"
    assert outcome.advertised == ({"nvidia.com/mig-1g.10gb": 56} if changed else OFFERS[(stack_name, pool)])


# The fixture stacks that render (a bad stack's config error stops it before anything is registered).
RENDERED_FIXTURES = [*sorted((FIXTURES / "passing").glob("*.yaml")), *fixture_stacks.paths("violating")]


@pytest.mark.parametrize("fixture", RENDERED_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_rendered_fixture_stack_ends_live_in_every_scenario(fixture):
    outcomes = scenarios.run(stack.view(record(fixture)))
    assert outcomes and [f"{o.pool} / {o.scenario}: {p}" for o in outcomes for p in o.problems] == []


def _planted(recording: Recording, daemonset: str, change, part: str = "spec") -> Recording:
    """`change` gets a copy of the DaemonSet's pod template `part` (its spec, or its metadata)."""
    resources = []
    for r in recording.resources:
        if r.type == "kubernetes:apps/v1:DaemonSet" and r.inputs["metadata"]["name"] == daemonset:
            inputs = {**r.inputs}
            spec = inputs["spec"] = {**inputs["spec"], "template": {**inputs["spec"]["template"]}}
            spec["template"][part] = change(dict(spec["template"][part]))
            r = r.with_inputs(inputs)
        resources.append(r)
    return Recording(recording.stack, recording.config, resources, recording.mode, recording.project)


def _wait_for(marker: str):
    def change(pod: dict) -> dict:
        wait = {
            "name": f"wait-for-{marker}",
            "image": "busybox",
            "command": ["sh", "-c"],
            "args": [f"until [ -f /run/nvidia/validations/{marker} ]; do sleep 5; done"],
        }
        pod["initContainers"] = [
            wait,
            *[c for c in pod.get("initContainers", []) if not c["name"].startswith("wait-for-")],
        ]
        return pod

    return change


def test_gfd_waiting_for_a_marker_nobody_writes_never_starts(dev):
    planted = _planted(dev, "nvidia-gpu-feature-discovery", _wait_for("nobody-writes-this"))
    view = stack.view(planted)
    outcome = scenarios.joins_later(view, view.pool("l4"))
    assert outcome.problems == (
        "nvidia-gpu-feature-discovery: Init (wait-for-nobody-writes-this waits for marker nobody-writes-this)",
    )


def _plugin_check_with_workload(pod: dict) -> dict:
    containers = []
    for c in pod["containers"]:
        env = c.get("env") or []
        if any(e.get("name") == "COMPONENT" and e.get("value") == "plugin" for e in env):
            c = {
                **c,
                "env": [e for e in env if e.get("name") != "WITH_WORKLOAD"]
                + [{"name": "WITH_WORKLOAD", "value": "true"}],
            }
        containers.append(c)
    pod["containers"] = containers
    return pod


@pytest.mark.parametrize("scenario", [scenarios.reboot_full, scenarios.roll_all_full], ids=["reboot", "roll"])
def test_markers_deleted_while_every_gpu_is_taken_hold_gfd_forever_when_plugin_ready_needs_a_workload(dev, scenario):
    planted = _planted(
        _planted(dev, "nvidia-operator-validator", _plugin_check_with_workload),
        "nvidia-gpu-feature-discovery",
        _wait_for("plugin-ready"),
    )
    view = stack.view(planted)
    problems = scenario(view, view.pool("l4")).problems
    assert "nvidia-gpu-feature-discovery: Init (wait-for-plugin-ready waits for marker plugin-ready)" in problems
    # The same node with a free GPU recovers: the deadlock is the occupancy, not the order.
    assert scenarios.joins_later(view, view.pool("l4")).live


@pytest.mark.parametrize("baked", [True, False], ids=["baked-toolkit", "toolkit-daemonset"])
@pytest.mark.parametrize("release", release_stacks.each(sorted(matrix.load().releases)))
def test_every_release_ends_live_in_every_scenario(release, baked):
    """The prod stack on every release of the matrix, and its twin with the toolkit DaemonSet and a
    time-sliced pool (tests/release_stacks.py): what changes between releases (markers, images, the
    toolkit's runtime mode) never leaves a pod waiting forever."""
    outcomes = scenarios.run(stack.view(release_stacks.rendered(release, baked)))
    assert [f"{o.pool} / {o.scenario}: {p}" for o in outcomes for p in o.problems] == []


def _grace(seconds: int):
    def change(pod: dict) -> dict:
        pod["terminationGracePeriodSeconds"] = seconds
        return pod

    return change


def test_a_gpu_client_slower_to_leave_than_the_mig_managers_wait_leaves_its_gates_paused_for_good(prod):
    # Its pods may stay 600 s; mig-parted v0.13.1 waits 300 s per client, then returns with the gates
    # paused (reconfigure.go:165-167, 380), and nothing sets them back on that node.
    planted = _planted(prod, "nvidia-dcgm-exporter-mig", _grace(600))
    view = stack.view(planted)
    problems = scenarios.mig_change_busy(view, view.pool("h100-mig")).problems
    assert problems[0] == (
        "nvidia-mig-manager: nvidia-dcgm-exporter-mig may take 600 s to leave, the MIG manager waits 300 s: it "
        "gave up on MIG config all-balanced, gates nvidia.com/gpu.deploy.dcgm-exporter, "
        "nvidia.com/gpu.deploy.device-plugin, nvidia.com/gpu.deploy.gpu-feature-discovery stay "
        "paused-for-mig-change until a new manager pod runs"
    )


def test_a_gpu_client_that_leaves_within_the_mig_managers_wait_is_waited_for(prod):
    planted = _planted(prod, "nvidia-dcgm-exporter-mig", _grace(300))
    view = stack.view(planted)
    assert scenarios.mig_change_busy(view, view.pool("h100-mig")).live


def _app(value: str):
    def change(metadata: dict) -> dict:
        metadata["labels"] = {**metadata.get("labels", {}), "app": value}
        return metadata

    return change


def _h100_mig_joining(recording: Recording) -> tuple[str, ...]:
    view = stack.view(recording)
    return scenarios.joins_later(view, view.pool("h100-mig")).problems


def _all_balanced_failed(holder: str = "") -> tuple[str, ...]:
    """What prod's h100-mig says when all-balanced cannot apply: whole GPUs left, the holder named."""
    plan = "{'nvidia.com/mig-1g.10gb': 16, 'nvidia.com/mig-2g.20gb': 8, 'nvidia.com/mig-3g.40gb': 8}"
    by = f" by {holder}" if holder else ""
    return (
        f"advertises {{'nvidia.com/gpu': 8}}, the plan says {plan} (MIG config all-balanced failed: GPUs in use{by})",
    )


def test_a_device_plugin_the_mig_manager_does_not_find_by_its_app_label_keeps_the_layout_from_applying(prod):
    # The manager finds the plugin's pods by app=nvidia-device-plugin-daemonset (reconfigure.go:383):
    # any other label is not waited for, and its GPUs are still open when the config is applied. After
    # a reboot the node's state label still says success, so the plugin starts beside the manager.
    planted = _planted(prod, "nvidia-device-plugin-mig", _app("nvidia-device-plugin"), part="metadata")
    view = stack.view(planted)
    plan = "{'nvidia.com/mig-1g.10gb': 16, 'nvidia.com/mig-2g.20gb': 8, 'nvidia.com/mig-3g.40gb': 8}"
    failed = "MIG config all-balanced failed: GPUs in use by nvidia-device-plugin-mig (app label not waited for)"
    assert scenarios.reboot_full(view, view.pool("h100-mig")).problems == (
        f"advertises nothing, the plan says {plan} ({failed})",
    )


def _without_layout_gate(pod: dict) -> dict:
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    kept = [
        {"matchExpressions": [e for e in t["matchExpressions"] if e["key"] != "nvidia.com/mig.config.state"]}
        for t in terms
    ]
    pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": kept}}}
    return pod


def test_a_mig_pools_device_plugin_that_starts_before_the_first_layout_serves_whole_gpus_to_waiting_pods(prod):
    # A joining node's GPUs boot with MIG off: a plugin that waits only for toolkit-ready advertises them
    # whole, waiting pods take them, and the manager's first change fails on GPUs in use (mig-parted
    # v0.13.1 reconfigure.go:164-202); it is not tried again until the label changes (main.go:304-316).
    planted = _planted(prod, "nvidia-device-plugin-mig", _without_layout_gate)
    view = stack.view(planted)
    assert scenarios.joins_for_waiting_pods(view, view.pool("h100-mig")).problems == _all_balanced_failed()
    # The same node with no pod waiting carves its layout, and the manager restarts the plugin on it.
    assert scenarios.joins_later(view, view.pool("h100-mig")).live


def _addon_configuration(recording: Recording, change) -> Recording:
    """`change` gets the node monitoring add-on's parsed dcgmAgent configuration."""
    resources = []
    for r in recording.resources:
        if r.type == "aws:eks/addon:Addon" and r.inputs.get("addonName") == "eks-node-monitoring-agent":
            values = json.loads(r.inputs["configurationValues"])
            values["dcgmAgent"] = change(dict(values["dcgmAgent"]))
            r = r.with_inputs({**r.inputs, "configurationValues": json.dumps(values)})
        resources.append(r)
    return Recording(recording.stack, recording.config, resources, recording.mode, recording.project)


def test_the_add_ons_dcgm_server_on_a_mig_node_keeps_its_layout_from_applying(prod):
    # Its nv-hostengine holds every GPU (dcgm-daemonset.yaml:57-59 at v1.7.0); no gate the MIG manager
    # pauses removes it, and it waits for no pod in kube-system (mig-parted v0.13.1 reconfigure.go:364-400).
    planted = _addon_configuration(prod, lambda dcgm: {k: v for k, v in dcgm.items() if k != "affinity"})
    assert _h100_mig_joining(planted) == _all_balanced_failed("dcgm-server (not paused)")
