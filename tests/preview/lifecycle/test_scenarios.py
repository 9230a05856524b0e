"""Every scenario of a node's life ends with every operand running and the node offering what the
plan says, on every pool of every shipped and passing fixture stack; planted deadlocks fail."""

from __future__ import annotations

import pytest

from gpu_platform.catalog import matrix
from preview.lifecycle import scenarios, stack
from preview.recording import Recording
from tests import release_stacks
from tests import fixture_stacks
from tests.conftest import FIXTURES, record

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


@pytest.fixture
def shipped(dev, prod, dra):
    return {"dev": dev, "prod": prod, "dra": dra}


@pytest.mark.parametrize("scenario", scenarios.SCENARIOS, ids=SCENARIO_IDS)
@pytest.mark.parametrize("stack_name, pool", sorted(OFFERS))
def test_every_shipped_pool_ends_live_in_every_scenario(shipped, stack_name, pool, scenario):
    view = stack.view(shipped[stack_name])
    outcome = scenario(view, view.pool(pool))
    assert outcome.problems == ()
    # The MIG change moves h100-mig to the other config it has, all-disabled: 8 whole GPUs once drained.
    changed = scenario is scenarios.mig_change_busy and pool == "h100-mig"
    assert outcome.advertised == ({"nvidia.com/gpu": 8} if changed else OFFERS[(stack_name, pool)])


# The fixture stacks that render (a bad stack's config error stops it before anything is registered).
RENDERED_FIXTURES = [*sorted((FIXTURES / "passing").glob("*.yaml")), *fixture_stacks.paths("violating")]


@pytest.mark.parametrize("fixture", RENDERED_FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_every_rendered_fixture_stack_ends_live_in_every_scenario(fixture):
    outcomes = scenarios.run(stack.view(record(fixture)))
    assert outcomes and [f"{o.pool} / {o.scenario}: {p}" for o in outcomes for p in o.problems] == []


def _planted(recording: Recording, daemonset: str, change) -> Recording:
    resources = []
    for r in recording.resources:
        if r.type == "kubernetes:apps/v1:DaemonSet" and r.inputs["metadata"]["name"] == daemonset:
            inputs = {**r.inputs}
            spec = inputs["spec"] = {**inputs["spec"], "template": {**inputs["spec"]["template"]}}
            spec["template"]["spec"] = change(dict(spec["template"]["spec"]))
            r = r.with_inputs(inputs)
        resources.append(r)
    return Recording(recording.stack, recording.config, resources, recording.mode, recording.project)


def _wait_for(marker: str):
    def change(pod: dict) -> dict:
        wait = {"name": f"wait-for-{marker}", "image": "busybox", "command": ["sh", "-c"],
                "args": [f"until [ -f /run/nvidia/validations/{marker} ]; do sleep 5; done"]}
        pod["initContainers"] = [wait, *[c for c in pod.get("initContainers", []) if not c["name"].startswith("wait-for-")]]
        return pod
    return change


def test_gfd_waiting_for_a_marker_nobody_writes_never_starts(dev):
    planted = _planted(dev, "nvidia-gpu-feature-discovery", _wait_for("nobody-writes-this"))
    view = stack.view(planted)
    outcome = scenarios.joins_later(view, view.pool("l4"))
    assert outcome.problems == ("nvidia-gpu-feature-discovery: Init (wait-for-nobody-writes-this waits for marker nobody-writes-this)",)


def _plugin_check_with_workload(pod: dict) -> dict:
    containers = []
    for c in pod["containers"]:
        env = c.get("env") or []
        if any(e.get("name") == "COMPONENT" and e.get("value") == "plugin" for e in env):
            c = {**c, "env": [e for e in env if e.get("name") != "WITH_WORKLOAD"] + [{"name": "WITH_WORKLOAD", "value": "true"}]}
        containers.append(c)
    pod["containers"] = containers
    return pod


@pytest.mark.parametrize("scenario", [scenarios.reboot_full, scenarios.roll_all_full], ids=["reboot", "roll"])
def test_markers_deleted_while_every_gpu_is_taken_hold_gfd_forever_when_plugin_ready_needs_a_workload(dev, scenario):
    planted = _planted(_planted(dev, "nvidia-operator-validator", _plugin_check_with_workload),
                       "nvidia-gpu-feature-discovery", _wait_for("plugin-ready"))
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
