"""The validator runs on a real node: what its image looks up, the rights it uses, the label other
images find it by. Each expectation is a literal from the upstream source at the tags the matrix
ships (NVIDIA/gpu-operator validator/main.go up to v25.3.4, cmd/nvidia-validator/main.go from
v25.10.0), not read from components/kubernetes/operands/validator/."""

from __future__ import annotations

from gpu_platform.catalog import operands, versions
from tests.components.kubernetes.conftest import daemonset_of, daemonsets, pod_spec

SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding"
NAMESPACE = "kubernetes:core/v1:Namespace"

# validator/main.go:1032, 1044 at v23.9.0; cmd/nvidia-validator/main.go:1330, 1594 at v26.7.0: the cuda
# and plugin checks GET this DaemonSet by name before they create a workload pod, and fail without it.
# validator/cuda-workload-validation.yaml:14 (v23.9.0), validator/manifests/*-workload-validation.yaml
# (v26.7.0): the workload pods run as the service account of the same name.
UPSTREAM_NAME = "nvidia-operator-validator"


def _validator(rec):
    ds = daemonset_of(rec, "validator")
    assert ds is not None
    return ds


def _rules(rec, kind: str, name: str) -> list[dict]:
    found = [r for r in rec.of_type(kind) if r.inputs["metadata"]["name"] == name]
    return [rule for r in found for rule in r.inputs.get("rules") or []]


def _grants(rules: list[dict], group: str, resource: str, verb: str, name: str | None = None) -> bool:
    return any(
        group in r.get("apiGroups", [])
        and resource in r.get("resources", [])
        and verb in r.get("verbs", [])
        and (not r.get("resourceNames") or name in r["resourceNames"])
        for r in rules
    )


def test_the_daemonset_has_the_name_the_image_looks_itself_up_by(prod):
    assert _validator(prod).inputs["metadata"]["name"] == UPSTREAM_NAME


def test_the_workload_pods_service_account_exists_in_the_validators_namespace(prod):
    ds = _validator(prod)
    namespace = ds.inputs["metadata"]["namespace"]
    accounts = [r.inputs["metadata"] for r in prod.of_type(SERVICE_ACCOUNT)]
    assert {"name": UPSTREAM_NAME, "namespace": namespace} in [
        {"name": a["name"], "namespace": a.get("namespace")} for a in accounts
    ]
    assert pod_spec(ds)["serviceAccountName"] == UPSTREAM_NAME


def test_the_validator_may_get_its_own_daemonset_and_run_its_workload_pods(prod):
    rules = _rules(prod, ROLE, UPSTREAM_NAME)
    binding = [b for b in prod.of_type(ROLE_BINDING) if b.inputs["metadata"]["name"] == UPSTREAM_NAME]
    assert binding and binding[0].inputs["roleRef"]["name"] == UPSTREAM_NAME
    assert {"kind": "ServiceAccount", "name": UPSTREAM_NAME, "namespace": "gpu-operator"} in binding[0].inputs[
        "subjects"
    ]
    assert _grants(rules, "apps", "daemonsets", "get", UPSTREAM_NAME)
    # List and delete the node's earlier workload pod, create one, get it until Succeeded
    # (validator/main.go:998-1072 at v23.9.0; cmd/nvidia-validator/main.go:1353-1404, 1606-1636 at v26.7.0).
    for verb in ("list", "delete", "create", "get"):
        assert _grants(rules, "", "pods", verb), verb
    # The plugin check reads its Node's allocatable GPUs (main.go:1181 at v23.9.0, 1513 at v26.7.0).
    assert _grants(_rules(prod, CLUSTER_ROLE, UPSTREAM_NAME), "", "nodes", "get", "any-node")


def test_the_validator_holds_no_right_its_checks_do_not_use(prod):
    rules = _rules(prod, ROLE, UPSTREAM_NAME) + _rules(prod, CLUSTER_ROLE, UPSTREAM_NAME)
    verbs = {(g, res, v) for r in rules for g in r["apiGroups"] for res in r["resources"] for v in r["verbs"]}
    assert verbs == {
        ("", "pods", "create"),
        ("", "pods", "get"),
        ("", "pods", "list"),
        ("", "pods", "delete"),
        ("apps", "daemonsets", "get"),
        ("", "nodes", "get"),
    }
    assert [r["resourceNames"] for r in rules if r["resources"] == ["daemonsets"]] == [[UPSTREAM_NAME]]


def test_a_failing_host_driver_check_is_retried_not_turned_into_a_wait_for_a_driver_container(prod):
    # From v24.6.0 a failed `chroot /host nvidia-smi` leads to a LIST of driver DaemonSets; when it
    # succeeds and finds none, the check retries nvidia-smi under /run/nvidia/driver forever and never
    # tries the host again (validator/main.go:709-771 at v24.6.0). A refused LIST exits instead, and the
    # kubelet's restart retries the host driver.
    rules = _rules(prod, ROLE, UPSTREAM_NAME) + _rules(prod, CLUSTER_ROLE, UPSTREAM_NAME)
    assert not _grants(rules, "apps", "daemonsets", "list")


def test_validator_pods_carry_the_label_the_mig_manager_restarts_them_by(prod):
    # NVIDIA/mig-parted deployments/container/reconfigure-mig.sh:636-640 at v0.9.1.
    labels = _validator(prod).inputs["spec"]["template"]["metadata"]["labels"]
    assert labels["app"] == "nvidia-operator-validator"
    assert labels["app.kubernetes.io/name"] == "validator"


def test_no_pod_of_ours_carries_a_label_the_validator_deletes_pods_by(stack):
    # The cuda and plugin checks delete the node's first pod labelled so (main.go:194-196 at v23.9.0).
    for ds in daemonsets(stack):
        labels = ds.inputs["spec"]["template"]["metadata"]["labels"]
        assert labels.get("app") not in {"nvidia-cuda-validator", "nvidia-device-plugin-validator"}, ds.name


def test_the_namespace_admits_the_privileged_cuda_workload_pod(prod):
    # validator/cuda-workload-validation.yaml (v23.9.0) / validator/manifests/cuda-workload-validation.yaml
    # (v26.7.0): vectorAdd runs privileged, in the validator's own namespace.
    namespace = _validator(prod).inputs["metadata"]["namespace"]
    ns = [r for r in prod.of_type(NAMESPACE) if r.inputs["metadata"]["name"] == namespace]
    assert ns[0].inputs["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"


def test_only_a_stage_of_releases_that_write_driver_ready_waits_for_a_driver_marker():
    # A host driver gets host-driver-ready up to validator v24.3.0 and driver-ready from v24.6.0
    # (validator/main.go:141-144, 677-681 at v23.9.0 and v24.3.0; 150, 773-820 at v24.6.0): a stage that
    # waited for either at a release that writes the other would hold every host-driver node forever.
    # The DRA driver (from v26.7.0) waits for driver-ready, as upstream checks the driver only there.
    waiting = {
        (r.operand, r.marker(dra))
        for r in operands.rows()
        for dra in (False, True)
        if r.marker(dra) in ("driver-ready", "host-driver-ready")
    }
    assert waiting == {("dra-driver", "driver-ready")}
    (row,) = [r for r in operands.rows() if r.operand == "dra-driver"]
    assert versions.at_least(row.since.lstrip("v"), "24.6.0")


def test_a_stopping_validator_takes_its_markers_with_it(prod):
    # The image never deletes a marker on shutdown (cmd/nvidia-validator/main.go at v25.10.1 deletes
    # one only when its check runs again); the GPU Operator's asset removes them in a preStop hook
    # (assets/state-operator-validation/0500_daemonset.yaml lines 176-178 at v25.10.1). Without it a
    # MIG change would let the restarted clients start on the markers of the previous layout.
    spec = pod_spec(daemonset_of(prod, "validator"))
    [main] = [c for c in spec["containers"] if c["name"] == "plugin-validation"]
    assert main["lifecycle"]["preStop"]["exec"]["command"] == ["sh", "-c", "rm -f /run/nvidia/validations/*-ready"]
    mounts = {m["mountPath"]: m for m in main["volumeMounts"]}
    assert mounts["/run/nvidia/validations"].get("readOnly") is not True
