"""Privilege only where the job needs it, and audit annotations that tell the truth about it."""

from __future__ import annotations

from components.kubernetes.operands import stages
from gpu_platform.interface import contract
from tests.components.kubernetes.conftest import DEPLOYMENT, daemonset_of, daemonsets, pod_spec

# Operand (or other workload, by app name) -> the privileges its pods may keep (the list, and
# AWS's EFA device plugin as its chart runs it; everything else runs unprivileged).
EFA_DEVICE_PLUGIN = "aws-efa-k8s-device-plugin"
PRIVILEGED = {"container-toolkit", "mig-manager", "validator", EFA_DEVICE_PLUGIN}
HOST_PID = {"container-toolkit", "mig-manager"}
HOST_NETWORK = {EFA_DEVICE_PLUGIN}
CAPABILITIES = {"device-plugin": {"SYS_ADMIN"}, "gpu-feature-discovery": {"SYS_ADMIN"}, "dcgm-exporter": {"SYS_ADMIN"}}
# This is the security allowlist: a new privileged operand joins it by hand, on purpose.
# prod's MIG pool on toolkit 1.18.1 (baked): the runtime's default jit-cdi mode hands no MIG capability
# device to an unprivileged container (nvidia-container-toolkit issue #1740), so the operands that read
# MIG devices run privileged there, as the GPU Operator runs them everywhere.
MIG_READERS = {"prod": {"device-plugin", "gpu-feature-discovery", "dcgm-exporter"}}


def operand_of(ds) -> str:
    labels = ds.inputs["metadata"]["labels"]
    return labels.get(contract.OPERAND_KEY) or labels["app.kubernetes.io/name"]


def containers(spec: dict) -> list[dict]:
    return [*spec.get("initContainers", []), *spec["containers"]]


def test_only_the_toolkit_mig_manager_validator_and_prods_mig_readers_run_privileged(stack):
    for ds in daemonsets(stack):
        spec = pod_spec(ds)
        privileged = any(c["securityContext"].get("privileged") for c in containers(spec))
        # The MIG readers only in their DaemonSets for the MIG pools (app.kubernetes.io/name <operand>-mig).
        mig_pools = ds.inputs["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/name"].endswith("-mig")
        expected = operand_of(ds) in PRIVILEGED or (mig_pools and operand_of(ds) in MIG_READERS.get(stack.stack, set()))
        # Both directions: nothing else is privileged, and these really are (they cannot work otherwise).
        assert privileged == expected, ds.name
        assert bool(spec.get("hostPID")) == (operand_of(ds) in HOST_PID), ds.name
        assert bool(spec.get("hostNetwork")) == (operand_of(ds) in HOST_NETWORK), ds.name


def test_unprivileged_containers_drop_everything_and_add_only_what_is_listed(stack):
    for ds in daemonsets(stack):
        for c in containers(pod_spec(ds)):
            context = c["securityContext"]
            if context.get("privileged"):
                continue
            assert context["allowPrivilegeEscalation"] is False
            assert context["capabilities"]["drop"] == ["ALL"]
            assert set(context["capabilities"].get("add", [])) <= CAPABILITIES.get(operand_of(ds), set()), (
                ds.name,
                c["name"],
            )
            assert context["seccompProfile"] == {"type": "RuntimeDefault"}


def test_every_operand_pod_runs_under_the_runtimes_default_seccomp_profile(stack):
    # Privileged or not, no operand turns the syscall filter off: RuntimeDefault for the pod, and no
    # container overrides it with Unconfined (a privileged container's runtime ignores the profile anyway).
    names = {f"gpu-{stage.operand}-ds" for stage in stages.STAGES}
    found = [ds for ds in daemonsets(stack) if ds.name in names]
    assert found
    for ds in found:
        spec = pod_spec(ds)
        assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}, ds.name
        for c in spec["containers"] + spec.get("initContainers", []):
            assert (c.get("securityContext", {}).get("seccompProfile") or {}).get("type") in (None, "RuntimeDefault"), (
                ds.name,
                c["name"],
            )


def test_every_container_has_requests_and_a_memory_limit(stack):
    for workload in [*daemonsets(stack), *stack.of_type(DEPLOYMENT)]:
        for c in containers(pod_spec(workload)):
            assert c["resources"]["requests"]["cpu"] and c["resources"]["limits"]["memory"], (workload.name, c["name"])


# The MIG manager has no health endpoint, and a probe on the MIG state would hold the rollout for
# as long as a GPU reset takes: it is ready when it runs.
def test_deployments_keep_no_privilege(stack):
    for deployment in stack.of_type(DEPLOYMENT):
        spec = pod_spec(deployment)
        assert not spec.get("volumes") or all("hostPath" not in v for v in spec["volumes"])
        for c in spec["containers"]:
            assert c["securityContext"]["runAsNonRoot"] is True
            assert "add" not in c["securityContext"]["capabilities"]


def real_host_paths(spec: dict) -> dict[str, str]:
    """Host path -> rw/ro, from the volumes and mounts as Kubernetes will apply them."""
    by_volume = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
    modes: dict[str, str] = {}
    for c in containers(spec):
        for mount in c.get("volumeMounts", []):
            if mount["name"] in by_volume:
                path = by_volume[mount["name"]]
                mode = "ro" if mount.get("readOnly") else "rw"
                if modes.get(path) != "rw":
                    modes[path] = mode
    return modes


def test_audit_host_paths_are_the_real_host_path_mounts(stack):
    for ds in daemonsets(stack):
        spec = pod_spec(ds)
        annotations = ds.inputs["spec"]["template"]["metadata"]["annotations"]
        declared = dict(
            item.rsplit(":", 1) for item in annotations.get(contract.AUDIT_HOST_PATHS, "").split(",") if item
        )
        assert declared == real_host_paths(spec), ds.name
        # Every mounted host path volume is declared; no host path volume goes unmounted.
        assert {v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v} == set(declared), ds.name


def test_every_workload_that_keeps_a_privilege_carries_all_audit_annotations(stack):
    for ds in daemonsets(stack):
        spec = pod_spec(ds)
        keeps = (
            real_host_paths(spec)
            or spec.get("hostPID")
            or any(
                c["securityContext"].get("privileged") or c["securityContext"].get("capabilities", {}).get("add")
                for c in containers(spec)
            )
        )
        # The pod template carries all but the approval id, so a new approval restarts no pod.
        on_pods = [key for key in contract.AUDIT_ANNOTATIONS if key != contract.AUDIT_APPROVAL]
        for notes, keys in (
            (ds.inputs["metadata"]["annotations"], contract.AUDIT_ANNOTATIONS),
            (ds.inputs["spec"]["template"]["metadata"]["annotations"], on_pods),
        ):
            if keeps:
                assert all(notes.get(key) for key in keys), ds.name
            else:
                assert not any(key in notes for key in contract.AUDIT_ANNOTATIONS), ds.name
        assert contract.AUDIT_APPROVAL not in ds.inputs["spec"]["template"]["metadata"]["annotations"], ds.name


def test_added_capabilities_are_named_in_the_audit_reason(stack):
    for ds in daemonsets(stack):
        added = {
            cap for c in containers(pod_spec(ds)) for cap in c["securityContext"].get("capabilities", {}).get("add", [])
        }
        for cap in added:
            assert cap in ds.inputs["metadata"]["annotations"][contract.AUDIT_REASON], ds.name


def _bound_accounts(rec) -> set[str]:
    kinds = (
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
    )
    return {s["name"] for kind in kinds for b in rec.of_type(kind) for s in b.inputs.get("subjects") or []}


TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"  # where client-go's in-cluster config reads it


def token_holders(spec: dict) -> set[str]:
    """The containers that can read the pod's API token: all of them when the pod automounts it,
    else those that mount a volume at the token directory."""
    every = [*spec.get("initContainers", []), *spec["containers"]]
    if spec.get("automountServiceAccountToken"):
        return {c["name"] for c in every}
    return {c["name"] for c in every if any(m["mountPath"] == TOKEN_DIR for m in c.get("volumeMounts", []))}


def test_a_pod_carries_an_api_token_only_when_its_operand_has_rights_to_use(stack):
    bound = _bound_accounts(stack)
    for workload in [*daemonsets(stack), *stack.of_type(DEPLOYMENT)]:
        spec = pod_spec(workload)
        assert bool(token_holders(spec)) is (spec["serviceAccountName"] in bound), workload.name


def test_in_the_plugin_pod_only_config_manager_holds_the_token(stack):
    # The plugin makes no API call (k8s-device-plugin cmd/nvidia-device-plugin: no client); its
    # config-manager lists and watches the node (cmd/config-manager/main.go lines 256-293 at v0.18.1).
    spec = pod_spec(daemonset_of(stack, "device-plugin"))
    assert token_holders(spec) == {"config-manager-init", "config-manager"}
    [volume] = [v for v in spec["volumes"] if "projected" in v]
    kinds = [next(iter(source)) for source in volume["projected"]["sources"]]
    assert kinds == ["serviceAccountToken", "configMap", "downwardAPI"]


def test_a_pod_another_process_creates_under_an_operand_account_gets_no_token(stack):
    # The validator creates its CUDA workload pods (privileged) under its own account: they must not
    # inherit a token that may create pods. The accounts mount none unless the pod asks.
    for account in stack.of_type("kubernetes:core/v1:ServiceAccount"):
        if account.inputs["metadata"]["namespace"] == "gpu-operator":
            assert account.inputs["automountServiceAccountToken"] is False, account.name


# The API server's values for hostPath.type (Kubernetes API, HostPathType; "" checks nothing).
HOST_PATH_TYPES = {"", "DirectoryOrCreate", "Directory", "FileOrCreate", "File", "Socket", "CharDevice", "BlockDevice"}


def test_every_host_path_type_is_one_the_api_server_takes(stack):
    # The schema types it as a plain string, so a misspelt type passes schema checks and is refused
    # only by the API server at `pulumi up`.
    for ds in daemonsets(stack):
        for volume in pod_spec(ds).get("volumes", []):
            if "hostPath" in volume:
                assert volume["hostPath"].get("type", "") in HOST_PATH_TYPES, (ds.name, volume)


def test_no_daemonsets_selector_matches_another_daemonsets_pods(stack):
    # An operand's DaemonSet for MIG pools beside its own (mig_access.by_pool): a controller whose
    # selector matches pods it does not own would count them as its own (Kubernetes DaemonSet docs).
    found = daemonsets(stack)
    for ds in found:
        selector = ds.inputs["spec"]["selector"]["matchLabels"]
        for other in found:
            labels = other.inputs["spec"]["template"]["metadata"]["labels"]
            matches = all(labels.get(k) == v for k, v in selector.items())
            assert matches == (other is ds), (ds.name, other.name)


def test_a_mig_pools_daemonset_runs_under_its_operands_account(prod):
    for operand in ("device-plugin", "gpu-feature-discovery", "dcgm-exporter"):
        own, mig = daemonset_of(prod, operand), daemonset_of(prod, f"{operand}-mig")
        assert pod_spec(mig)["serviceAccountName"] == pod_spec(own)["serviceAccountName"] == f"nvidia-{operand}"
