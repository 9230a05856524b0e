"""One node under the rules: markers, pre-stop hooks, GPU occupancy and the MIG devices a container
sees, on the dev stack's pool with pods written here."""

import dataclasses

import pytest

from preview.lifecycle import node as lifecycle_node, stack
from tests.preview.lifecycle.test_stack import DAEMONSET

GATE = {"nvidia.com/gpu.deploy.thing": "true"}


@pytest.fixture
def dev_view(dev):
    return stack.view(dev)


def _one_pod(view, daemonset):
    pool = dataclasses.replace(view.pools[0], labels={**view.pools[0].labels, **GATE})
    return dataclasses.replace(view, pods=(stack.pod_template(daemonset),)), pool


def _with_main(env=(), privileged=False, caps=()):
    spec = DAEMONSET["spec"]["template"]["spec"]
    main = {
        "name": "thing",
        "image": "x:v1",
        "env": [{"name": k, "value": v} for k, v in env],
        "securityContext": {"privileged": privileged, "capabilities": {"add": list(caps)}},
    }
    return {**DAEMONSET, "spec": {"template": {"spec": {**spec, "initContainers": [], "containers": [main]}}}}


def test_a_wait_holds_the_pod_until_its_marker_is_written(dev_view):
    view, pool = _one_pod(dev_view, DAEMONSET)
    node = lifecycle_node.Node.boot(view, pool).settle()
    assert node.stuck() == ["nvidia-thing: Init (wait-for-toolkit-ready waits for marker toolkit-ready)"]
    node.markers.add("toolkit-ready")
    # Next: the plugin check with a workload needs a GPU the node advertises; no device plugin here.
    assert "plugin-validation waits for gpu-capacity, free-gpu" in node.settle().stuck()[0]


def test_a_reboot_clears_every_marker(dev_view):
    view, pool = _one_pod(dev_view, DAEMONSET)
    node = lifecycle_node.Node.boot(view, pool)
    node.markers |= {"toolkit-ready", "plugin-ready"}
    node.reboot()
    assert node.markers == set()


def test_deleting_a_pod_runs_its_pre_stop_deletion(dev_view):
    view, pool = _one_pod(dev_view, DAEMONSET)
    node = lifecycle_node.Node.boot(view, pool)
    node.markers |= {"toolkit-ready", "plugin-ready", "other"}
    node.settle()
    node.delete_pod("nvidia-thing")
    assert node.markers == {"other"}


@pytest.mark.parametrize(
    "mode, privileged, caps, monitor, sees",
    [
        ("jit-cdi", False, ("SYS_ADMIN",), "all", False),  # toolkit issue #1740: jit-cdi injects no caps devices
        ("jit-cdi", True, (), "", True),  # a privileged container gets every host device
        ("legacy", False, ("SYS_ADMIN",), "all", True),  # the legacy hook honours NVIDIA_MIG_MONITOR_DEVICES
        ("legacy", False, (), "all", False),  # ... only in a container it counts as privileged
    ],
)
def test_which_containers_see_the_mig_capability_devices(dev_view, mode, privileged, caps, monitor, sees):
    view, pool = _one_pod(
        dataclasses.replace(dev_view, toolkit_mode=mode),
        _with_main(env=(("NVIDIA_MIG_MONITOR_DEVICES", monitor),), privileged=privileged, caps=caps),
    )
    node = lifecycle_node.Node.boot(view, pool)
    step = view.pods[0].main[0]
    assert node._holds("mig-devices", step) is sees


def test_a_full_node_has_no_free_gpu_and_a_drained_one_has(dev):
    view = stack.view(dev)
    node = lifecycle_node.Node.boot(view, view.pools[0]).settle()
    assert node.advertised() == {"nvidia.com/gpu": 4}  # dev: one L4 (g6.2xlarge), 4 time-slicing replicas
    node.fill()
    assert not node._holds("free-gpu", stack.Step("x"))
    node.drain()
    assert node._holds("free-gpu", stack.Step("x"))


def _toolkit_daemonset_view(variant, boot_registration: bool):
    def change(config):
        config["gpu-platform:nodeImage"]["toolkitBaked"] = False

    view = stack.view(variant(change))
    pool = view.pools[0]
    if not boot_registration:
        pool = dataclasses.replace(pool, boot_runtime=None)
    return view, pool


def test_a_pool_without_a_baked_toolkit_registers_the_runtime_at_boot(variant):
    # The pool's NodeConfig names the toolkit operand's installed runtime (components/aws/user_data.py),
    # which nodeadm merges into the config.toml it writes at every boot.
    view, pool = _toolkit_daemonset_view(variant, boot_registration=True)
    assert pool.boot_runtime == "/usr/local/nvidia/toolkit/nvidia-container-runtime"
    node = lifecycle_node.Node.boot(view, pool).settle()
    node.reboot()
    assert node.runtime  # before any pod runs again: the binaries are on disk and registered at boot


def test_without_a_boot_registration_a_reboot_loses_the_runtime_until_the_toolkit_pod_runs(variant):
    view, pool = _toolkit_daemonset_view(variant, boot_registration=False)
    node = lifecycle_node.Node.boot(view, pool).settle()
    node.reboot()
    # The release's toolkit image (v1.18.1 for v25.10.1) registers the runtime itself: once it runs again.
    assert not node.runtime
    assert node.settle().runtime


def test_a_reboot_clears_the_mig_instances_and_the_manager_carves_them_again(prod):
    # MIG mode persists across a reboot, its instances do not (NVIDIA MIG user guide); no workload
    # process runs until the plugin serves devices again, so the manager finds the GPUs idle.
    view = stack.view(prod)
    node = lifecycle_node.Node.boot(view, view.pool("h100-mig")).settle()
    node.fill()
    node.reboot()
    assert node.mig_layout == lifecycle_node.NO_INSTANCES
    node.settle()
    assert node.mig_layout == "all-balanced" and node.advertised()["nvidia.com/mig-1g.10gb"] == 16


def _mig_node(view, operand, **change):
    """A node of prod's MIG pool with one operand's pod template changed."""
    pods = tuple(dataclasses.replace(t, **change) if t.operand == operand else t for t in view.pods)
    view = dataclasses.replace(view, pods=pods)
    return lifecycle_node.Node.boot(view, view.pool("h100-mig")).settle()


PAUSED_GATES = (
    "nvidia.com/gpu.deploy.dcgm-exporter",
    "nvidia.com/gpu.deploy.device-plugin",
    "nvidia.com/gpu.deploy.gpu-feature-discovery",
)


def test_a_client_slower_to_leave_than_the_managers_wait_leaves_the_gates_paused(prod):
    # mig-parted v0.13.1 reconfigure.go:165-167, 380: after 5 minutes Run returns, before setState.
    node = _mig_node(stack.view(prod), "dcgm-exporter", grace=600)
    assert {k: node.labels[k] for k in PAUSED_GATES} == dict.fromkeys(PAUSED_GATES, "paused-for-mig-change")
    assert node.mig_state == "pending:all-balanced" and node.mig_layout is None
    assert node.advertised() == {}  # no device plugin pod on the node
    # The MIG pools' exporter: its own DaemonSet (mig_access.by_pool).
    assert node.stuck()[0].startswith("nvidia-mig-manager: nvidia-dcgm-exporter-mig may take 600 s to leave")


def test_a_new_mig_manager_pod_sets_paused_gates_back_to_true_and_applies(prod):
    # reconfigure.go:128, 245-258 (the labels read again), 566-571 (maybeSetTrue: not "false" -> "true").
    node = _mig_node(stack.view(prod), "dcgm-exporter", grace=600)
    node.delete_pod("nvidia-mig-manager")
    node.settle()
    assert {k: node.labels[k] for k in PAUSED_GATES} == dict.fromkeys(PAUSED_GATES, "true")
    assert node.mig_layout == "all-balanced" and node.stuck() == []


def test_a_reboot_also_runs_the_manager_again_and_sets_the_paused_gates_back(prod):
    node = _mig_node(stack.view(prod), "dcgm-exporter", grace=600)
    node.reboot()
    # At boot the paused clients have no pod to wait for; the manager applies and sets the gates back.
    node.settle()
    assert node.labels["nvidia.com/gpu.deploy.device-plugin"] == "true" and node.mig_layout == "all-balanced"


def test_a_client_the_manager_does_not_find_by_its_app_label_still_holds_the_gpus(prod):
    # The manager waits for app=nvidia-device-plugin-daemonset pods only (reconfigure.go:383). On a
    # joining node the plugin starts after the first layout; the next change finds it holding the GPUs.
    node = _mig_node(stack.view(prod), "device-plugin", app="my-device-plugin")
    assert node.mig_layout == "all-balanced"
    node.labels["nvidia.com/mig.config"] = "all-1g.10gb"
    node.settle()
    assert node.mig_state == "failed:all-1g.10gb" and node.mig_layout == "all-balanced"
    assert "GPUs in use by nvidia-device-plugin-mig" in node.mig_why
    # The failure brings the plugin back on the old layout, as mig-parted's setState does.
    assert node.labels["nvidia.com/mig.config.state"] == "failed" and node.advertised()["nvidia.com/mig-1g.10gb"] == 16


def test_a_joining_mig_node_runs_no_device_plugin_until_its_manager_has_carved_the_layout(prod):
    # With MIG off as the GPUs boot, a plugin would serve them whole; the MIG pools' plugin waits for
    # nvidia.com/mig.config.state, which the manager sets after its first run (reconfigure.go:137-141, 522-555).
    view = stack.view(prod)
    node = lifecycle_node.Node.boot(view, view.pool("h100-mig"))
    node.pods = {}
    for template in view.pods:
        if template.operand != "mig-manager" and template.selects(node.labels, node.pool.taints):
            node.pods[template.daemonset] = lifecycle_node.Pod(template)
    assert "nvidia-device-plugin-mig" not in node.pods and "nvidia-device-plugin" not in node.pods
    node.settle()
    assert node.labels["nvidia.com/mig.config.state"] == "success"
    assert node.pods["nvidia-device-plugin-mig"].phase == lifecycle_node.RUNNING
    assert "nvidia-device-plugin" not in node.pods  # the other pools' plugin never selects a MIG node


def test_a_reboot_loses_the_workloads_device_plugin_gpus_and_replacements_take_them_all(dev):
    # kubernetes#125579, #128043: at a reboot the kubelet rejects the pods holding plugin devices.
    view = stack.view(dev)
    node = lifecycle_node.Node.boot(view, view.pools[0]).settle()
    node.fill()
    node.reboot()
    assert node.allocated == 0 and not node.busy
    node.settle()
    assert node.allocated == 4 and node.busy  # dev: 1 L4, 4 time-slicing replicas, every one taken again


def test_a_reboot_keeps_the_workloads_dra_claims(dra):
    # The claim's allocation is in the API; the kubelet prepares it again once the DRA driver runs.
    view = stack.view(dra)
    node = lifecycle_node.Node.boot(view, view.pool("h100")).settle()
    node.fill()
    node.reboot()
    assert node.allocated == 8 and not node.busy  # dra: p5.48xlarge, 8 GPUs
    assert node.settle().busy
