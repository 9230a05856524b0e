"""The DRA validator (stacks/Pulumi.dra.yaml): on every GPU node of a dra stack, a pod that takes one GPU
through an admin-access ResourceClaim and lists it with nvidia-smi, so a node where the DRA driver cannot
allocate and inject a GPU shows a validator pod that never gets past init. The expectations are restated
from upstream (NVIDIA/gpu-operator v26.7.0 manifests/state-dra-validation/0100_serviceaccount.yaml,
0400_resourceclaimtemplate.yaml, 0500_daemonset.yaml), not read from the module under test."""

from __future__ import annotations

from components.kubernetes.operands import stages
from gpu_platform.privileges import ledger
from tests.components.kubernetes.conftest import daemonset_of, gpu_node_groups, pod_spec
from tests.release_stacks import strict_error

CLAIM_TEMPLATE = "kubernetes:resource.k8s.io/v1:ResourceClaimTemplate"
DEVICE_CLASS = "kubernetes:resource.k8s.io/v1:DeviceClass"
SERVICE_ACCOUNT = "kubernetes:core/v1:ServiceAccount"
GATE = "nvidia.com/gpu.deploy.dra-validator"  # controllers/state_manager.go:79 at v26.7.0
IMAGE = (
    "nvcr.io/nvidia/gpu-operator:v26.7.0"  # the validator's image of release v26.7.0 (gpu_platform/catalog/matrix.yaml)
)


def _validator(rec):
    return daemonset_of(rec, "dra-validator")


def _pod(rec):
    return pod_spec(_validator(rec))


def _template(rec):
    found = [
        t.inputs for t in rec.of_type(CLAIM_TEMPLATE) if t.inputs["metadata"]["name"] == "nvidia-dra-validator-gpu"
    ]
    assert len(found) == 1, [t.inputs["metadata"]["name"] for t in rec.of_type(CLAIM_TEMPLATE)]
    return found[0]


def _all_containers(spec):
    return spec.get("initContainers", []) + spec["containers"]


def test_it_runs_on_every_gpu_pool_of_the_dra_stack_under_the_upstream_names(dra):
    ds = _validator(dra)
    assert ds.inputs["metadata"]["name"] == "nvidia-dra-validator"
    spec = _pod(dra)
    assert spec["serviceAccountName"] == "nvidia-dra-validator"
    assert spec["nodeSelector"] == {GATE: "true"}
    assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
    # The gate is on every GPU pool's nodes, so no GPU node goes unchecked.
    pools = gpu_node_groups(dra)
    assert pools and all(ng.inputs["labels"].get(GATE) == "true" for ng in pools)
    accounts = [a.inputs["metadata"]["name"] for a in dra.of_type(SERVICE_ACCOUNT)]
    assert "nvidia-dra-validator" in accounts


def test_the_claim_asks_for_exactly_one_gpu_of_the_dra_drivers_class_with_admin_access(dra):
    template = _template(dra)
    assert template["apiVersion"] == "resource.k8s.io/v1"
    assert template["metadata"]["namespace"] == _validator(dra).inputs["metadata"]["namespace"]
    (request,) = template["spec"]["spec"]["devices"]["requests"]
    # 0400_resourceclaimtemplate.yaml:19-25: one GPU, not every GPU of the node (All would hold them all).
    assert request == {
        "name": "validation-gpu",
        "exactly": {
            "deviceClassName": "gpu.nvidia.com",
            "allocationMode": "ExactCount",
            "count": 1,
            "adminAccess": True,
        },
    }
    created = {c.inputs["metadata"]["name"] for c in dra.of_type(DEVICE_CLASS)}
    assert "gpu.nvidia.com" in created


def test_the_init_container_lists_the_claim_and_runs_nvidia_smi_from_it(dra):
    spec = _pod(dra)
    # 0500_daemonset.yaml:89-91: the pod's claim validation-gpu, from the template.
    assert spec["resourceClaims"] == [
        {"name": "validation-gpu", "resourceClaimTemplateName": "nvidia-dra-validator-gpu"}
    ]
    (check,) = spec["initContainers"]
    assert check["name"] == "gpu-validation"
    assert check["command"] + check["args"] == ["sh", "-c", "nvidia-smi -L"]
    # Without the claim in resources.claims the kubelet injects no GPU (and no nvidia-smi) into it.
    assert check["resources"]["claims"] == [{"name": "validation-gpu"}]
    assert check["image"] == IMAGE


def test_the_main_container_only_idles_in_finite_sleeps(dra):
    (main,) = _pod(dra)["containers"]
    assert main["image"] == IMAGE
    script = " ".join(main["command"] + main["args"])
    assert "sleep infinity" not in script and "sleep 86400" in script  # busybox has no `sleep infinity`
    assert "claims" not in main["resources"]
    assert "nvidia.com/gpu" not in {**main["resources"]["requests"], **main["resources"]["limits"]}


def test_it_keeps_no_privilege_no_host_access_and_no_api_token(dra):
    spec = _pod(dra)
    for c in _all_containers(spec):
        ctx = c["securityContext"]
        assert ctx.get("privileged") is not True, c["name"]
        assert ctx["allowPrivilegeEscalation"] is False, c["name"]
        assert ctx["capabilities"] == {"drop": ["ALL"]}, c["name"]
        assert ctx["readOnlyRootFilesystem"] is True, c["name"]
        assert ctx["runAsNonRoot"] is True and ctx["runAsUser"] != 0, c["name"]
        assert "volumeMounts" not in c, c["name"]
        # A one-off check and a sleep loop: bounded on every GPU node (checkov CKV_K8S_11 passes).
        assert c["resources"]["limits"].get("cpu"), c["name"]
    for key in ("hostPID", "hostNetwork", "hostIPC", "runtimeClassName", "volumes"):
        assert key not in spec, key
    # It makes no API call: no token, and no role names its service account.
    assert spec["automountServiceAccountToken"] is False
    for kind in ("RoleBinding", "ClusterRoleBinding"):
        bound = [
            b
            for b in dra.of_type(f"kubernetes:rbac.authorization.k8s.io/v1:{kind}")
            if any(s["name"] == "nvidia-dra-validator" for s in b.inputs["subjects"])
        ]
        assert not bound, kind


def test_its_pods_and_the_validators_are_never_selected_by_each_others_daemonset(dra):
    # Both DaemonSets run in one namespace; a selector matching the other's pods would have the two
    # controllers fight over them.
    mine, theirs = _validator(dra).inputs, daemonset_of(dra, "validator").inputs

    def selects(ds, pod_labels):
        return all(pod_labels.get(k) == v for k, v in ds["spec"]["selector"]["matchLabels"].items())

    my_pods, their_pods = (d["spec"]["template"]["metadata"]["labels"] for d in (mine, theirs))
    assert selects(mine, my_pods) and selects(theirs, their_pods)
    assert not selects(mine, their_pods) and not selects(theirs, my_pods)
    # The MIG manager restarts the validator's pods by app=nvidia-operator-validator; not these.
    assert "app" not in my_pods


def test_it_is_created_after_the_dra_driver_and_waits_for_no_marker(dra):
    order = [s.operand for s in stages.active(True, any_mig=False, dra=True)]
    assert order.index("dra-driver") < order.index("dra-validator")
    assert daemonset_of(dra, "dra-driver").urn in dra.waits_for(_validator(dra).urn)
    (check,) = _pod(dra)["initContainers"]  # no wait-for-<marker> container before the check
    assert check["name"] == "gpu-validation"


def test_only_a_dra_stack_runs_it(stack):
    # dev and prod allocate through the device plugin: no DRA validator, no claim template of its own.
    assert _validator(stack) is None
    assert not [t for t in stack.of_type(CLAIM_TEMPLATE) if "dra-validator" in t.inputs["metadata"]["name"]]
    for ng in gpu_node_groups(stack):
        assert GATE not in ng.inputs.get("labels", {})


def test_a_validator_override_reaches_the_dra_validator_too(variant):
    # One image for both, as upstream's single validator image setting (internal/state/dra_validation.go:46-48).
    rec = variant(
        lambda cfg: (
            cfg.setdefault("gpu-platform:operator", {}).setdefault("overrides", {}).update(validator="v26.7.1"),
            cfg["gpu-platform:audit"].pop("approvedLedger", None),
        ),
        stack="dra",
    )
    images = {c["image"] for c in _all_containers(_pod(rec))}
    assert images == {"nvcr.io/nvidia/gpu-operator:v26.7.1"}
    assert {c["image"] for c in _all_containers(pod_spec(daemonset_of(rec, "validator")))} == images


def test_the_ledger_shows_its_admin_access_claim(dra):
    found = ledger.rows((r.type, r.name, r.inputs) for r in dra.resources)
    assert (
        "ResourceClaimTemplate gpu-operator/nvidia-dra-validator-gpu",
        "request validation-gpu",
        "adminAccess to devices of class gpu.nvidia.com, allocationMode ExactCount 1",
    ) in found


def test_its_objects_are_valid_under_kubernetes_1_34(dra):
    objects = [_template(dra), _validator(dra).inputs]
    errors = [f"{o['kind']}: {e}" for o in objects if (e := strict_error(o, "1.34"))]
    assert not errors, errors
