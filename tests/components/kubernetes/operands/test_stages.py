"""The declared order holds at creation (depends_on) and per node (gates, tolerations, markers)."""

from __future__ import annotations

import itertools
import re

from components.kubernetes.operands import stages
from gpu_platform.interface import contract
from tests.components.kubernetes.conftest import daemonset_of, daemonsets, gpu_node_groups, operands, pod_spec


def active_stages(rec):
    baked = rec.config["gpu-platform:nodeImage"].get("toolkitBaked", False)
    any_mig = any(p.get("mig") for p in rec.config["gpu-platform:nodePools"])
    return stages.active(baked, any_mig)


def test_every_active_stage_has_its_operand_and_daemonset(stack):
    for stage in active_stages(stack):
        assert daemonset_of(stack, stage.operand) is not None, stage.operand
    assert len(operands(stack)) == len(active_stages(stack))


def test_the_first_stage_waits_for_every_gpu_node_group(stack):
    first = daemonset_of(stack, active_stages(stack)[0].operand)
    assert {ng.urn for ng in gpu_node_groups(stack)} <= stack.waits_for(first.urn)


def test_each_stage_waits_for_the_previous_stages_daemonset(stack):
    ordered = active_stages(stack)
    for previous, current in itertools.pairwise(ordered):
        waits = stack.waits_for(daemonset_of(stack, current.operand).urn)
        assert daemonset_of(stack, previous.operand).urn in waits, f"{current.operand} after {previous.operand}"


def _node_boot(mig_pending: bool, baked: bool) -> list[str]:
    """The operands that end up running on one MIG node, replayed from the manifests' per-node rules:
    a pod starts when the marker it waits for exists; the markers appear as the validator image
    writes them (toolkit-ready and cuda-ready once its init checks pass; plugin-ready once the device
    plugin advertises a GPU). A node that boots in MIG mode with no instances (`mig_pending`)
    advertises nothing until the MIG manager has carved it."""
    order = list(stages.active(baked, any_mig=True))
    running: list[str] = []
    markers: set[str] = set()
    for _ in range(len(order) + 1):
        for stage in order:
            if stage.operand not in running and (stage.waits_for is None or stage.waits_for in markers):
                running.append(stage.operand)
        if "validator" in running:
            markers |= {"toolkit-ready", "cuda-ready"}
        if "device-plugin" in running and (not mig_pending or "mig-manager" in running):
            markers.add("plugin-ready")
    return running


def test_a_node_that_boots_in_mig_mode_without_instances_gets_every_operand():
    # The MIG manager must start there without the plugin's marker: it is what makes the plugin advertise.
    for baked in (False, True):
        running = _node_boot(mig_pending=True, baked=baked)
        assert {"mig-manager", "device-plugin", "gpu-feature-discovery", "dcgm-exporter"} <= set(running), running


def test_the_mig_manager_is_created_before_the_operands_that_read_the_gpus_layout():
    # A new MIG pool's first pulumi up: the layout is carved before GFD labels and DCGM exports the GPUs.
    operands = [s.operand for s in stages.STAGES]
    for reader in ("device-plugin", "gpu-feature-discovery", "dcgm-exporter"):
        assert operands.index("mig-manager") < operands.index(reader), reader


def test_pulumi_waits_for_the_controller_not_for_every_node(stack):
    # One sick GPU node must not hold every pulumi up (stages.py): no DaemonSet of an operand waits
    # for its pods on every node, and none skips the delete wait either (skipAwait would).
    for ds in daemonsets(stack):
        if ds.inputs["metadata"]["labels"].get(contract.OPERAND_KEY):
            annotations = ds.inputs["metadata"]["annotations"]
            assert annotations.get("pulumi.com/waitFor") == "jsonpath={.status.observedGeneration}", ds.name
            assert "pulumi.com/skipAwait" not in annotations, ds.name


def test_every_marker_a_stage_waits_for_is_written_by_an_earlier_stage():
    # Per node, a wait on a later stage's marker would never complete.
    written_by = {
        "driver-ready": {"container-toolkit", "validator"},
        "toolkit-ready": {"validator"},
        "cuda-ready": {"validator"},
        "plugin-ready": {"validator"},
    }
    # The validator writes plugin-ready only once its plugin check got a GPU from the device plugin
    # (validator/): that marker also needs the device plugin running on the node, so an operand that
    # waits for it (GFD, DCGM) must come after the device plugin, or Pulumi's wait for its rollout
    # never ends and the device plugin is never created.
    needs_running = {"plugin-ready": {"device-plugin"}}
    for baked in (False, True):
        for dra in (False, True):
            seen: set[str] = set()
            for stage in stages.active(baked, any_mig=not dra, dra=dra):
                if stage.waits_for:
                    assert written_by[stage.waits_for] & seen, (
                        f"{stage.operand} waits for {stage.waits_for} (dra {dra})"
                    )
                    assert needs_running.get(stage.waits_for, set()) <= seen, (
                        f"{stage.operand} waits for {stage.waits_for} before {needs_running[stage.waits_for] - seen} runs"
                    )
                seen.add(stage.operand)


# The validator check (COMPONENT) that writes each marker: validator/main.go:147-152 at v23.9.0,
# cmd/nvidia-validator/main.go:174-179 at v26.7.0 (toolkit-ready, cuda-ready, plugin-ready).
WRITTEN_BY_CHECK = {"toolkit-ready": "toolkit", "cuda-ready": "cuda", "plugin-ready": "plugin"}


def _needs_a_free_gpu(check: dict) -> bool:
    """Whether a validator check waits for a GPU that no pod holds. Only the plugin check's workload
    pod asks for one (1 of the node's nvidia.com/gpu or nvidia.com/mig-*: validator/main.go:986-996 at
    v23.9.0, plugin-workload-validation.yaml), and it runs unless WITH_WORKLOAD is "false" (default
    true from v23.9.2, validator/main.go:250-257). The cuda check's pod requests no GPU resource
    (cuda-workload-validation.yaml at every tag v23.9.0..v26.7.0); driver and toolkit make no pod."""
    env = {e["name"]: e.get("value") for e in check.get("env", [])}
    return env.get("COMPONENT") == "plugin" and env.get("WITH_WORKLOAD", "true") != "false"


def _markers_waited_for(spec: dict) -> list[str]:
    return [
        m
        for c in spec.get("initContainers", [])
        for m in re.findall(r"-f /run/nvidia/validations/([a-z-]+)", " ".join(c.get("args", [])))
    ]


def test_gfd_and_the_exporter_start_on_a_node_whose_gpus_are_all_allocated(stack):
    # A reboot (/run is a tmpfs) or a validator roll (its preStop deletes the markers) leaves a node
    # with no marker while its workloads hold every GPU: the checks up to the one that writes what GFD
    # and the exporter wait for must need no free GPU, or they stay in Init there forever.
    validator = pod_spec(daemonset_of(stack, "validator"))
    checks = [*validator["initContainers"], *validator["containers"]]
    components = [{e["name"]: e.get("value") for e in c.get("env", [])}.get("COMPONENT") for c in checks]
    for operand in ("gpu-feature-discovery", "dcgm-exporter"):
        markers = _markers_waited_for(pod_spec(daemonset_of(stack, operand)))
        assert markers, operand
        for marker in markers:
            writer = components.index(WRITTEN_BY_CHECK[marker])
            blocking = [c["name"] for c in checks[: writer + 1] if _needs_a_free_gpu(c)]
            assert not blocking, f"{operand} waits for {marker} behind {blocking}"


def test_no_validator_check_needs_a_free_gpu(stack):
    # Every marker then comes back on a full node, plugin-ready (the blue-green gate's) included.
    validator = pod_spec(daemonset_of(stack, "validator"))
    assert [c["name"] for c in [*validator["initContainers"], *validator["containers"]] if _needs_a_free_gpu(c)] == []


# What must come before what, and why, written out by hand (stages.py's docstring): the rows' order
# in operands.yaml is the rollout order, and these pairs are what that order must keep. A new operand
# states its own pairs in its own test module.
MUST_PRECEDE = [
    # GFD's labels reach the node through NFD: a feature file NFD's worker reads, or a NodeFeature
    # object, whose CRD comes with NFD (gpu_feature_discovery/, node_feature_discovery/).
    ("node-feature-discovery", "gpu-feature-discovery"),
    # The validator's toolkit check proves the nvidia runtime that the toolkit registers.
    ("container-toolkit", "validator"),
    # The DRA validator's pod claims a GPU that the DRA driver must prepare first.
    ("dra-driver", "dra-validator"),
]
# Who writes each marker, and the MIG manager before the layout's readers: the tests above and below.


def test_the_rollout_order_keeps_what_must_come_first():
    order = [stage.operand for stage in stages.STAGES]
    for earlier, later in MUST_PRECEDE:
        assert order.index(earlier) < order.index(later), f"{earlier} must come before {later}"


def test_every_operand_of_a_dra_node_starts():
    # In allocation mode dra nothing writes plugin-ready (no device plugin; the validator leaves out
    # its plugin check): a stage that waited for it would hold its pods on every node forever.
    for baked in (False, True):
        order = stages.active(baked, any_mig=False, dra=True)
        markers = {"driver-ready", "toolkit-ready", "cuda-ready"}  # the validator's init checks, its only writers here
        assert "validator" in [s.operand for s in order]
        stuck = [s.operand for s in order if s.waits_for and s.waits_for not in markers]
        assert not stuck, stuck
        assert "dra-driver" in [s.operand for s in order] and "device-plugin" not in [s.operand for s in order]


def _dra_node_boot(baked: bool) -> list[str]:
    """The operands that end up running on one node of a dra stack: a pod starts when the marker it
    waits for exists and, if it has a ResourceClaim (the DCGM exporter, the DRA validator), once the DRA
    driver runs on the node to prepare it (the kubelet starts no container of the pod before that); the
    validator's init checks are the only marker writers here (no device plugin, so no plugin-ready)."""
    order = stages.active(baked, any_mig=False, dra=True)
    claims = {"dcgm-exporter", "dra-validator"}  # the operands with a resourceClaim in mode dra
    running: list[str] = []
    markers: set[str] = set()
    for _ in range(len(order) + 1):
        for stage in order:
            ready = stage.waits_for is None or stage.waits_for in markers
            prepared = stage.operand not in claims or "dra-driver" in running
            if stage.operand not in running and ready and prepared:
                running.append(stage.operand)
        if "validator" in running:
            markers |= {"driver-ready", "toolkit-ready", "cuda-ready"}
    return running


def test_a_dra_node_gets_its_gpu_metrics_without_the_device_plugin():
    for baked in (False, True):
        running = _dra_node_boot(baked)
        assert {"dra-driver", "dra-validator", "dcgm-exporter"} <= set(running), running
        assert set(running) == {s.operand for s in stages.active(baked, any_mig=False, dra=True)}, running
        # and the DRA driver is an earlier stage, so a new pool's first pulumi up creates it first
        operands = [s.operand for s in stages.active(baked, any_mig=False, dra=True)]
        assert operands.index("dra-driver") < operands.index("dra-validator") < operands.index("dcgm-exporter")


def test_daemonsets_select_nodes_by_a_gate_the_pools_carry(stack):
    pools = {ng.name: ng.inputs.get("labels", {}) for ng in gpu_node_groups(stack)}
    for stage in active_stages(stack):
        spec = pod_spec(daemonset_of(stack, stage.operand))
        if stage.gate is None:
            assert not spec.get("nodeSelector"), stage.operand
            continue
        selector = spec["nodeSelector"]
        assert selector == {contract.gate_label(stage.gate): "true"}
        carrying = [name for name, labels in pools.items() if all(labels.get(k) == v for k, v in selector.items())]
        assert carrying, f"no pool carries {selector}"
        if stage.row.on == "mig-pools":
            assert carrying == [
                f"gpu-pool-{p['name']}-ng" for p in stack.config["gpu-platform:nodePools"] if p.get("mig")
            ]


def test_every_operand_tolerates_every_pools_taints(stack):
    for ng in gpu_node_groups(stack):
        taints = ng.inputs.get("taints", [])
        assert any(t["key"] == contract.GPU_TAINT_KEY for t in taints)
        for ds in daemonsets(stack):
            for taint in taints:
                taint = {
                    **taint,
                    "effect": {
                        "NO_SCHEDULE": "NoSchedule",
                        "NO_EXECUTE": "NoExecute",
                        "PREFER_NO_SCHEDULE": "PreferNoSchedule",
                    }.get(taint["effect"], taint["effect"]),
                }
                assert contract.tolerates(pod_spec(ds).get("tolerations", []), taint), (ds.name, taint)


def test_toolkit_baked_leaves_out_the_toolkit_but_keeps_the_runtime_class(variant):
    rec = variant(lambda cfg: cfg["gpu-platform:nodeImage"].update(toolkitBaked=True), stack="prod")
    assert daemonset_of(rec, "container-toolkit") is None
    assert [r.inputs["metadata"]["name"] for r in rec.of_type("kubernetes:node.k8s.io/v1:RuntimeClass")] == ["nvidia"]
    toolkit_gate = contract.gate_label("container-toolkit")
    for ng in gpu_node_groups(rec):
        assert toolkit_gate not in ng.inputs.get("labels", {})
    # The order still starts at the node pools and the validator writes driver-ready itself.
    first = daemonset_of(rec, active_stages(rec)[0].operand)
    assert {ng.urn for ng in gpu_node_groups(rec)} <= rec.waits_for(first.urn)
    validator = pod_spec(daemonset_of(rec, "validator"))
    assert validator["initContainers"][0]["name"] == "driver-validation"
