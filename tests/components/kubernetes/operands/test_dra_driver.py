"""Allocation mode dra (stacks/Pulumi.dra.yaml): the DRA kubelet plugin and its DeviceClasses in place
of the device plugin, with the GPU Operator v26.7.0's rights and nothing more. The expectations are
restated from upstream (NVIDIA/gpu-operator v26.7.0 manifests/state-dra-driver/), not read from the
module under test."""

from __future__ import annotations

from gpu_platform.interface import contract, workloads
from tests.components.kubernetes.conftest import daemonset_of, daemonsets, gpu_node_groups, pod_spec
from tests.release_stacks import strict_error

DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"

# What the GPU kubelet plugin's code calls at dra-driver-nvidia-gpu 95932046, restated from the source:
# ResourceClaims Get (vendored kubeletplugin/draplugin.go:1103, cmd/gpu-kubelet-plugin/cleanup.go:223);
# ResourceSlices List, Watch, Update, Create, Delete (resourceslicecontroller.go:538, 552, 836, 898,
# 954); its Node Get (:716). Pods and Deployments only on the MPS path (sharing.go), refused here.
# Upstream's role (0200_kubeletplugin-clusterrole.yaml at v26.7.0) is wider; none of its extra verbs.
CODE_GPU_RULES = [
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"], "verbs": ["get"]},
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["resourceslices"],
        "verbs": ["list", "watch", "create", "update", "delete"],
    },
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]},
]
# 0400_deviceclass-gpu.yaml and 0410_deviceclass-mig.yaml at v26.7.0, lines 4-8 each.
UPSTREAM_CLASSES = {
    "gpu.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'",
    "mig.nvidia.com": "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'mig'",
}


def _normalised(rules) -> list[tuple]:
    return sorted(
        (tuple(r["apiGroups"]), tuple(r["resources"]), tuple(sorted(r["verbs"])), tuple(r.get("resourceNames") or ()))
        for r in rules
    )


def _bound_rules(rec, account: str) -> tuple[list, list]:
    """(cluster rules, namespace rules) bound to the service account."""

    def bound(binding_type):
        return {
            b.inputs["roleRef"]["name"]
            for b in rec.of_type(binding_type)
            if any(s["name"] == account for s in b.inputs["subjects"])
        }

    cluster = [
        rule
        for r in rec.of_type(CLUSTER_ROLE)
        if r.inputs["metadata"]["name"] in bound(CLUSTER_ROLE_BINDING)
        for rule in r.inputs["rules"]
    ]
    namespaced = bound(ROLE_BINDING)
    return cluster, sorted(namespaced)


def test_the_kubelet_plugin_holds_exactly_the_calls_its_code_makes(dra):
    account = pod_spec(daemonset_of(dra, "dra-driver"))["serviceAccountName"]
    cluster, namespaced = _bound_rules(dra, account)
    assert _normalised(cluster) == _normalised(CODE_GPU_RULES)
    # No Role: upstream's (0130 ComputeDomain cliques, 0140 MPS, 0150 its driver-validation init
    # container's DaemonSet list) serve parts this stack does not render.
    assert namespaced == []


def test_the_dra_stack_runs_no_device_plugin_nor_what_reads_it(dra):
    operands = {ds.inputs["metadata"]["labels"].get(contract.OPERAND_KEY) for ds in daemonsets(dra)}
    assert {"device-plugin", "gpu-feature-discovery", "mig-manager"}.isdisjoint(operands)
    # The DCGM exporter stays, on a claim instead (test_dcgm_exporter_dra.py).
    assert {"dra-driver", "dcgm-exporter"} <= operands
    images = [image for ds in daemonsets(dra) for _, image in workloads.images(pod_spec(ds))]
    # (the EFA device plugin of the EFA pool stays: it advertises network interfaces, not GPUs)
    assert not [i for i in images if "nvidia/k8s-device-plugin" in i], images


def test_the_gpu_pools_carry_the_dra_gate_and_not_the_device_plugins(dra):
    for ng in gpu_node_groups(dra):
        labels = ng.inputs.get("labels", {})
        assert labels.get("nvidia.com/gpu.deploy.dra-driver") == "true", ng.name
        assert "nvidia.com/gpu.deploy.device-plugin" not in labels, ng.name
    selector = pod_spec(daemonset_of(dra, "dra-driver"))["nodeSelector"]
    assert selector == {"nvidia.com/gpu.deploy.dra-driver": "true"}


def test_the_device_plugin_stacks_carry_no_dra_gate_nor_deviceclass(stack):
    assert stack.of_type(DEVICE_CLASS) == []
    assert daemonset_of(stack, "dra-driver") is None
    for ng in gpu_node_groups(stack):
        assert "nvidia.com/gpu.deploy.dra-driver" not in ng.inputs.get("labels", {})


def test_the_device_classes_select_the_drivers_gpus_and_mig_devices(dra):
    classes = dra.of_type(DEVICE_CLASS)
    assert {c.inputs["apiVersion"] for c in classes} == {"resource.k8s.io/v1"}
    found = {
        c.inputs["metadata"]["name"]: [s["cel"]["expression"] for s in c.inputs["spec"]["selectors"]] for c in classes
    }
    assert found == {name: [cel] for name, cel in UPSTREAM_CLASSES.items()}
    # No extendedResourceName: the operator's class has none (it needs DRAExtendedResource, alpha in 1.34).
    assert all("extendedResourceName" not in c.inputs["spec"] for c in classes)


def test_only_the_plugins_directory_propagates_mounts_and_only_in_the_privileged_container(dra):
    spec = pod_spec(daemonset_of(dra, "dra-driver"))
    propagating = {
        (c["name"], m["mountPath"], m["mountPropagation"])
        for c in spec["containers"] + spec.get("initContainers", [])
        for m in c.get("volumeMounts", [])
        if m.get("mountPropagation")
    }
    assert propagating == {("gpus", "/var/lib/kubelet/plugins", "Bidirectional"), ("gpus", "/host", "HostToContainer")}
    privileged = [
        c["name"] for c in spec["containers"] + spec.get("initContainers", []) if c["securityContext"].get("privileged")
    ]
    assert privileged == ["gpus"]
    assert not spec.get("hostPID") and not spec.get("hostNetwork")


def test_the_audit_annotations_say_what_the_plugin_mounts(dra):
    annotations = daemonset_of(dra, "dra-driver").inputs["metadata"]["annotations"]
    assert annotations[contract.AUDIT_HOST_PATHS] == (
        "/:ro,/run/nvidia/validations:ro,/var/lib/kubelet/plugins:rw,/var/lib/kubelet/plugins_registry:rw,/var/run/cdi:rw"
    )
    reason = annotations[contract.AUDIT_REASON]
    for said in ("privileged", "Bidirectional", "/var/run/cdi", "/var/lib/kubelet/plugins_registry"):
        assert said in reason, said


def test_the_validator_runs_no_plugin_check_in_dra_mode(dra, prod):
    # Nothing advertises nvidia.com/gpu in mode dra: a plugin check would wait forever.
    def components(rec):
        spec = pod_spec(daemonset_of(rec, "validator"))
        return [
            e.get("value")
            for c in spec["containers"] + spec["initContainers"]
            for e in c.get("env", [])
            if e["name"] == "COMPONENT"
        ]

    assert components(dra) == ["driver", "toolkit", "cuda"]
    assert "plugin" in components(prod)
    account = pod_spec(daemonset_of(dra, "validator"))["serviceAccountName"]
    assert _bound_rules(dra, account)[0] == []  # no `get nodes`: only the plugin check read its Node


def test_the_namespace_says_the_allocation_mode_only_off_the_default(dra, stack):
    def annotations(rec):
        return rec.of_type("kubernetes:core/v1:Namespace")[0].inputs["metadata"]["annotations"]

    assert annotations(dra)[contract.ALLOCATION_MODE_KEY] == "dra"
    assert contract.ALLOCATION_MODE_KEY not in annotations(stack)


def test_every_kubernetes_object_of_the_dra_stack_is_valid_under_kubernetes_1_34(dra):
    objects = [
        r.inputs
        for r in dra.resources
        if r.type.startswith("kubernetes:")
        and "apiVersion" in r.inputs
        and not r.type.startswith("kubernetes:apiextensions.k8s.io:CustomResource")
    ]
    assert "DeviceClass" in {o["kind"] for o in objects}
    errors = [f"{o['kind']} {o['metadata'].get('name')}: {e}" for o in objects if (e := strict_error(o, "1.34"))]
    assert not errors, "\n".join(errors)


def _plugin_env(gates: dict) -> dict:
    from components.kubernetes.operands import dra_driver
    from components.kubernetes.operands.context import OperandContext
    from gpu_platform.catalog import matrix

    ctx = OperandContext(
        images=dict(matrix.load().releases["v26.7.0"].images),
        sharing=(),
        mig_pools=(),
        toolkit_baked=True,
        toolkit_version="1.20.0",
        cdi=True,
        dra=True,
        dra_feature_gates=gates,
    )
    (container,) = dra_driver.spec(ctx).containers
    return dict(container.env)


def test_feature_gates_reach_the_plugin_as_upstream_passes_them():
    # One FEATURE_GATES string, `Name=bool` sorted by name (GPU Operator v26.7.0 0500_daemonset.yaml:191-194,
    # internal/render/render.go:158-172), which the driver reads as --feature-gates (pkg/flags/utils.go:38 at v0.4.1).
    env = _plugin_env({"TimeSlicingSettings": False, "DynamicMIG": True})
    assert env["FEATURE_GATES"] == "DynamicMIG=true,TimeSlicingSettings=false"


def test_no_feature_gates_means_no_feature_gates_env():
    assert "FEATURE_GATES" not in _plugin_env({})
