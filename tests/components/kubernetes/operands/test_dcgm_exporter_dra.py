"""The DCGM exporter in allocation mode dra (stacks/Pulumi.dra.yaml): GPU metrics keep working without
the device plugin, the exporter taking every GPU of its node through an admin-access ResourceClaim.
The expectations are restated from upstream (NVIDIA/gpu-operator v26.7.0
manifests/state-dcgm-exporter/0400_resourceclaimtemplate.yaml and 0700_daemonset.yaml) and from the
Kubernetes API (kubernetes/kubernetes pkg/registry/resource/utils.go AuthorizedForAdmin), not read
from the module under test."""

from __future__ import annotations

import pytest

from gpu_platform.interface import contract
from gpu_platform.privileges import ledger
from tests.components.kubernetes.conftest import daemonset_of, pod_spec
from tests.release_stacks import strict_error

CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
NAMESPACE = "kubernetes:core/v1:Namespace"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ADMIN_LABEL = "resource.kubernetes.io/admin-access"  # pkg/apis/resource/types.go DRAAdminNamespaceLabelKey (1.34)


def _templates(rec):
    return {t.inputs["metadata"]["name"]: t.inputs for t in rec.of_type(CLAIM_TEMPLATE)}


def _exporter(rec):
    return pod_spec(daemonset_of(rec, "dcgm-exporter"))


def _namespace_labels(rec):
    (namespace,) = rec.of_type(NAMESPACE)
    return namespace.inputs["metadata"]["labels"]


def test_the_exporter_runs_in_the_dra_stack_on_the_gpu_pools(dra):
    spec = _exporter(dra)
    assert spec["nodeSelector"] == {"nvidia.com/gpu.deploy.dcgm-exporter": "true"}


def test_the_claim_template_asks_for_every_gpu_of_the_class_the_dra_driver_creates_with_admin_access(dra):
    template = _templates(dra)["nvidia-dcgm-exporter-admin"]
    assert template["apiVersion"] == "resource.k8s.io/v1"
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    # 0400_resourceclaimtemplate.yaml:10-15: request admin-gpus, exactly: gpu.nvidia.com, All, adminAccess.
    assert request == {
        "name": "admin-gpus",
        "exactly": {"deviceClassName": "gpu.nvidia.com", "allocationMode": "All", "adminAccess": True},
    }
    # A class nobody creates would leave the claim unallocatable and the exporter Pending on every node.
    created = {c.inputs["metadata"]["name"] for c in dra.of_type(DEVICE_CLASS)}
    assert request["exactly"]["deviceClassName"] in created


def test_the_pod_claims_from_the_template_and_every_container_using_gpus_lists_the_claim(dra):
    spec = _exporter(dra)
    templates = _templates(dra)
    claims = {c["name"]: c["resourceClaimTemplateName"] for c in spec["resourceClaims"]}
    # Each pod claim names a template the stack creates in the exporter's namespace ...
    assert set(claims.values()) <= set(templates)
    for name in claims.values():
        assert (
            templates[name]["metadata"]["namespace"]
            == daemonset_of(dra, "dcgm-exporter").inputs["metadata"]["namespace"]
        )
    # ... the exporter's container lists it (else the kubelet gives it none of the claim's devices) ...
    (exporter,) = [c for c in spec["containers"] if c["name"] == "nvidia-dcgm-exporter"]
    assert [c["name"] for c in exporter["resources"]["claims"]] == list(claims)
    # ... and every claim any container lists is one of the pod's (the API server refuses anything else).
    for container in spec["containers"] + spec.get("initContainers", []):
        for claim in container.get("resources", {}).get("claims", []):
            assert claim["name"] in claims, container["name"]


def test_the_exporter_gets_gpus_from_the_claim_not_from_the_device_plugin(dra):
    spec = _exporter(dra)
    for container in spec["containers"] + spec.get("initContainers", []):
        resources = container.get("resources", {})
        assert "nvidia.com/gpu" not in {**resources.get("requests", {}), **resources.get("limits", {})}, container[
            "name"
        ]
    # Nothing writes plugin-ready in mode dra: a wait for it would hold the exporter forever.
    assert not [
        c["name"] for c in spec.get("initContainers", []) if "plugin-ready" in c["name"] + " ".join(c.get("args", []))
    ]
    # Upstream's DRA variant runs no runtime class and leaves NVIDIA_VISIBLE_DEVICES to the claim's CDI devices.
    assert "runtimeClassName" not in spec
    (exporter,) = spec["containers"]
    env = {e["name"]: e.get("value") for e in exporter["env"]}
    assert "NVIDIA_VISIBLE_DEVICES" not in env
    # 0700_daemonset.yaml:102-106: without it the exporter cannot name the pods of DRA-allocated GPUs.
    assert env["KUBERNETES_ENABLE_DRA"] == "true"


def test_beside_the_device_plugin_the_exporter_is_unchanged(stack):
    spec = _exporter(stack)
    assert "resourceClaims" not in spec and stack.of_type(CLAIM_TEMPLATE) == []
    assert spec["runtimeClassName"] == "nvidia"
    assert [c["name"] for c in spec["initContainers"]] == ["wait-for-toolkit-ready"]
    assert spec["automountServiceAccountToken"] is False


def test_its_only_api_rights_are_reading_pods_and_resource_slices(dra):
    # What its informers call: list and watch (dcgm-exporter internal/pkg/transformation/kubernetes.go
    # pod informer, dra.go ResourceSlice informer); nothing written, no secret, no ResourceClaim.
    roles = [r.inputs for r in dra.of_type(CLUSTER_ROLE) if r.inputs["metadata"]["name"] == "nvidia-dcgm-exporter"]
    (role,) = roles
    assert sorted((tuple(r["apiGroups"]), tuple(r["resources"]), tuple(sorted(r["verbs"]))) for r in role["rules"]) == [
        (("",), ("pods",), ("list", "watch")),
        (("resource.k8s.io",), ("resourceslices",), ("list", "watch")),
    ]
    assert not [
        r
        for r in dra.of_type("kubernetes:rbac.authorization.k8s.io/v1:Role")
        if r.inputs["metadata"]["name"] == "nvidia-dcgm-exporter"
    ]
    assert _exporter(dra)["automountServiceAccountToken"] is True


def test_the_namespace_is_labelled_for_admin_access_exactly_in_dra_mode(dra, stack):
    # Without the label the API server refuses the template (AuthorizedForAdmin: "admin access to
    # devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace").
    assert _namespace_labels(dra)[ADMIN_LABEL] == "true"
    assert ADMIN_LABEL not in _namespace_labels(stack)


def test_the_ledger_shows_the_admin_access_claim_and_the_namespace_label(dra, stack):
    def rows(rec):
        return ledger.rows((r.type, r.name, r.inputs) for r in rec.resources)

    found = rows(dra)
    assert (
        "ResourceClaimTemplate gpu-operator/nvidia-dcgm-exporter-admin",
        "request admin-gpus",
        "adminAccess to devices of class gpu.nvidia.com, allocationMode All",
    ) in found
    assert any(s == "Namespace gpu-operator" and ADMIN_LABEL in p for s, _, p in found)
    assert not [row for row in rows(stack) if "adminAccess" in row[2] or ADMIN_LABEL in row[2]]


def test_the_exporters_objects_are_valid_under_kubernetes_1_34(dra):
    objects = [_templates(dra)["nvidia-dcgm-exporter-admin"], daemonset_of(dra, "dcgm-exporter").inputs]
    assert [o["kind"] for o in objects] == ["ResourceClaimTemplate", "DaemonSet"]
    errors = [f"{o['kind']}: {e}" for o in objects if (e := strict_error(o, "1.34"))]
    assert not errors, errors


def test_its_metrics_port_stays_reachable_by_prometheus_only(dra):
    # The namespace's allow-metrics policy selects every operand pod and opens only the metrics ports.
    ports = {p["name"] for c in _exporter(dra)["containers"] for p in c.get("ports", [])}
    assert ports == {"metrics"}
    labels = daemonset_of(dra, "dcgm-exporter").inputs["spec"]["template"]["metadata"]["labels"]
    assert labels.get(contract.OPERAND_KEY) == "dcgm-exporter"


@pytest.mark.parametrize("option", ["dashboard", "serviceMonitor"])
def test_the_dashboard_and_the_service_monitor_work_in_dra_mode(variant, option):
    def change(config):
        # An adopted cluster (the offline answers give any unlisted name the configured version): a
        # ServiceMonitor needs the Prometheus operator CRDs of a cluster that already exists.
        config["gpu-platform:cluster"].update({"name": "gpu-dra-adopted", "create": False})
        config["gpu-platform:monitoring"] = {option: True}
        config["gpu-platform:audit"].pop("approvedLedger", None)

    rec = variant(change, stack="dra")
    assert daemonset_of(rec, "dcgm-exporter") is not None
    if option == "serviceMonitor":
        (monitor,) = [r.inputs for r in rec.resources if r.inputs.get("kind") == "ServiceMonitor"]
        assert monitor["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "dcgm-exporter"}
    else:
        assert [r for r in rec.of_type("kubernetes:core/v1:ConfigMap") if "dashboard" in r.inputs["metadata"]["name"]]
