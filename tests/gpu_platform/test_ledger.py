"""The privilege ledger's hash (gpu_platform/ledger.py): what an approver records. Every expected
hash here is SHA-256 over canonical bytes written out by hand, never over the code's own output."""

from __future__ import annotations

import copy
import hashlib

import pytest

from gpu_platform import ledger

WORKLOAD = "DaemonSet gpu-operator/plugin"
# The canonical form, by hand: the version line, then one line per row, sorted by bytes, cells
# separated by tabs.
TINY = (b"gpu-platform privilege ledger v1\n"
        b"DaemonSet gpu-operator/plugin\t(pod)\thostPID\n"
        b"DaemonSet gpu-operator/plugin\tmain\tcapability SYS_ADMIN\n"
        b"DaemonSet gpu-operator/plugin\tmain\thostPath /var/lib/kubelet/device-plugins rw\n"
        b"DaemonSet gpu-operator/plugin\tmain\timage nvcr.io/nvidia/k8s-device-plugin:v0.18.1\n"
        b"DaemonSet gpu-operator/plugin\twait\thostPath /run/nvidia/validations ro\n"
        b"DaemonSet gpu-operator/plugin\twait\timage nvcr.io/nvidia/gpu-operator:v25.10.1\n")
TINY_HASH = "sha256:" + hashlib.sha256(TINY).hexdigest()


def _daemonset(reverse: bool = False) -> dict:
    """A DaemonSet with hostPID, SYS_ADMIN, one rw and one ro host path; `reverse` builds every mapping
    and list of volumes in the opposite order (what the engine may hand over)."""
    def ordered(d: dict) -> dict:
        return dict(reversed(list(d.items()))) if reverse else d

    volumes = [{"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
               {"name": "validations", "hostPath": ordered({"path": "/run/nvidia/validations", "type": "DirectoryOrCreate"})}]
    spec = ordered({
        "hostPID": True,
        "initContainers": [ordered({"name": "wait", "image": "nvcr.io/nvidia/gpu-operator:v25.10.1", "volumeMounts": [{"name": "validations", "mountPath": "/v", "readOnly": True}]})],
        "containers": [ordered({"name": "main", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
                                "securityContext": ordered({"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}}),
                                "volumeMounts": [{"name": "plugins", "mountPath": "/p"}]})],
        "volumes": volumes[::-1] if reverse else volumes,
    })
    return ordered({"kind": "DaemonSet", "metadata": ordered({"name": "plugin", "namespace": "gpu-operator"}),
                    "spec": {"template": {"spec": spec}}})


def _rows(props: dict) -> list:
    return ledger.rows([("kubernetes:apps/v1:DaemonSet", "plugin-ds", props)])


def test_a_tiny_ledger_hashes_to_the_sha256_of_its_canonical_form_written_by_hand():
    rows = [(WORKLOAD, "wait", "hostPath /run/nvidia/validations ro"), (WORKLOAD, "main", "capability SYS_ADMIN"),
            (WORKLOAD, "(pod)", "hostPID"), (WORKLOAD, "main", "hostPath /var/lib/kubelet/device-plugins rw"),
            (WORKLOAD, "(pod)", "hostPID"),  # a duplicate counts once
            (WORKLOAD, "wait", "image nvcr.io/nvidia/gpu-operator:v25.10.1"),
            (WORKLOAD, "main", "image nvcr.io/nvidia/k8s-device-plugin:v0.18.1")]
    assert ledger.canonical(rows) == TINY
    assert ledger.digest(rows) == TINY_HASH


def test_the_hash_is_the_same_whatever_order_the_properties_arrive_in():
    assert ledger.digest(_rows(_daemonset())) == TINY_HASH
    assert ledger.digest(_rows(_daemonset(reverse=True))) == TINY_HASH


def test_a_tab_or_line_break_inside_a_cell_cannot_forge_another_row():
    forged = [("a", "b", "c\td\ne\\")]
    assert ledger.canonical(forged) == b"gpu-platform privilege ledger v1\na\tb\tc\\td\\ne\\\\\n"


def _set(props: dict, path: tuple, value) -> dict:
    changed = copy.deepcopy(props)
    node = changed["spec"]["template"]["spec"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


@pytest.mark.parametrize("path, value", [
    (("containers", 0, "securityContext", "privileged"), True),
    (("containers", 0, "securityContext", "capabilities", "add"), ["SYS_ADMIN", "NET_ADMIN"]),
    (("initContainers", 0, "volumeMounts", 0, "readOnly"), False),  # ro -> rw
    (("hostNetwork",), True),
    (("hostIPC",), True),
    (("volumes", 0, "hostPath", "path"), "/"),
    (("initContainers", 0, "securityContext"), {"privileged": True}),
], ids=["privileged", "capability", "ro-to-rw", "hostNetwork", "hostIPC", "other-host-path", "privileged-init"])
def test_any_added_privilege_changes_the_hash(path, value):
    assert ledger.digest(_rows(_set(_daemonset(), path, value))) != TINY_HASH


def test_an_unprivileged_workload_adds_no_row():
    plain = {"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": {"spec": {"containers": [{"name": "app"}]}}}}
    assert ledger.rows([("kubernetes:apps/v1:Deployment", "app", plain)]) == []


# EKS add-ons: every one the stack installs contributes rows, not only the one whose DaemonSets are
# written down (gpu_platform/addon_privileges.py).
ADDON = "aws:eks/addon:Addon"
# As the program creates it: no creator bootstrap, access entries only (else the cluster has rows of its
# own, tests/gpu_platform/test_cluster_admins.py).
CLUSTER = ("aws:eks/cluster:Cluster", "cluster",
           {"version": "1.33", "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False}})
ROLE_ARN = "arn:aws:iam::123456789012:role/gpu-cluster-vpc-cni-role-0a1b2c3"
# SHA-256 of the canonical JSON written by hand: sorted keys, no spaces.
CONFIG_HASH = "sha256:" + hashlib.sha256(b'{"enableNetworkPolicy":"true"}').hexdigest()
EMPTY_CONFIG_HASH = "sha256:" + hashlib.sha256(b"{}").hexdigest()
ASSOCIATIONS_HASH = "sha256:" + hashlib.sha256(b'[{"role":"gpu-cluster-vpc-cni-role","serviceAccount":"aws-node"}]').hexdigest()
NO_ASSOCIATIONS_HASH = "sha256:" + hashlib.sha256(b"[]").hexdigest()


def _vpc_cni(**changes) -> dict:
    props = {"addonName": "vpc-cni", "clusterName": "gpu",
             "configurationValues": '{"enableNetworkPolicy": "true"}',
             "podIdentityAssociations": [{"roleArn": ROLE_ARN, "serviceAccount": "aws-node"}]}
    return {**props, **changes}


def _addon_ledger(props: dict) -> list:
    return ledger.rows([CLUSTER, (ADDON, "cni", props)])


def test_an_unpinned_add_on_names_its_version_configuration_and_pod_identity_and_says_its_privileges_are_not_written_down():
    subject = "EKS add-on vpc-cni"
    assert _addon_ledger(_vpc_cni()) == sorted([
        (subject, "(add-on)", f"configurationValues {CONFIG_HASH} (SHA-256 of the canonical JSON)"),
        (subject, "(add-on)", f"podIdentityAssociations {ASSOCIATIONS_HASH} (SHA-256 of the canonical JSON of service "
                              "account and role name)"),
        (subject, "(add-on)", "privileges of its DaemonSets not written down in gpu_platform/addon_privileges.py for this version"),
        (subject, "(add-on)", "version EKS default for Kubernetes 1.33"),
    ])


def test_the_pod_identity_agent_without_configuration_or_associations_still_has_rows():
    rows = _addon_ledger({"addonName": "eks-pod-identity-agent", "clusterName": "gpu"})
    assert ("EKS add-on eks-pod-identity-agent", "(add-on)",
            f"configurationValues {EMPTY_CONFIG_HASH} (SHA-256 of the canonical JSON)") in rows
    assert ("EKS add-on eks-pod-identity-agent", "(add-on)",
            f"podIdentityAssociations {NO_ASSOCIATIONS_HASH} (SHA-256 of the canonical JSON of service account and role name)") in rows
    assert ("EKS add-on eks-pod-identity-agent", "(add-on)", "version EKS default for Kubernetes 1.33") in rows


def test_a_pinned_version_is_named_as_the_stack_sets_it():
    assert ("EKS add-on vpc-cni", "(add-on)", "version v1.20.4-eksbuild.1") in _addon_ledger(_vpc_cni(addonVersion="v1.20.4-eksbuild.1"))


@pytest.mark.parametrize("changes", [
    {"configurationValues": "{}"},  # enableNetworkPolicy dropped
    {"configurationValues": '{"enableNetworkPolicy": "false"}'},
    {"podIdentityAssociations": []},
    {"podIdentityAssociations": [{"roleArn": "arn:aws:iam::123456789012:role/admin", "serviceAccount": "aws-node"}]},
    {"podIdentityAssociations": [{"roleArn": ROLE_ARN, "serviceAccount": "default"}]},
    {"addonVersion": "v1.19.0-eksbuild.1"},
], ids=["network-policy-dropped", "network-policy-false", "association-dropped", "other-role", "other-service-account", "pinned"])
def test_a_change_of_an_add_on_changes_the_hash(changes):
    assert ledger.digest(_addon_ledger(_vpc_cni(**changes))) != ledger.digest(_addon_ledger(_vpc_cni()))


def test_the_same_add_on_hashes_the_same_offline_and_for_real():
    """Reformatted JSON, another account and another autonaming suffix (the mocks' ARN against the real
    one) are the same approval."""
    real = _vpc_cni(configurationValues='{ "enableNetworkPolicy" : "true" }',
                    podIdentityAssociations=[{"roleArn": "arn:aws:iam::999999999999:role/gpu-cluster-vpc-cni-role-ffee001",
                                              "serviceAccount": "aws-node"}])
    assert ledger.digest(_addon_ledger(real)) == ledger.digest(_addon_ledger(_vpc_cni()))


# Images and weakened isolation of workloads.
def test_each_privileged_container_is_bound_to_its_image_as_rendered():
    props = _set(_daemonset(), ("containers", 0, "image"), "nvcr.io/nvidia/gpu-operator:v25.10.1@sha256:" + "a" * 64)
    props = _set(props, ("initContainers", 0, "image"), "nvcr.io/nvidia/gpu-operator:v25.10.1")
    rows = _rows(props)
    assert (WORKLOAD, "main", "image nvcr.io/nvidia/gpu-operator:v25.10.1@sha256:" + "a" * 64) in rows
    assert (WORKLOAD, "wait", "image nvcr.io/nvidia/gpu-operator:v25.10.1") in rows


def test_an_override_digest_changes_the_hash():
    one = _set(_daemonset(), ("containers", 0, "image"), "nvcr.io/nvidia/gpu-operator:v25.10.1@sha256:" + "a" * 64)
    other = _set(_daemonset(), ("containers", 0, "image"), "nvcr.io/nvidia/gpu-operator:v25.10.1@sha256:" + "b" * 64)
    assert ledger.digest(_rows(one)) != ledger.digest(_rows(other))


def _plain() -> dict:
    return {"kind": "Deployment", "metadata": {"name": "app", "namespace": "apps"},
            "spec": {"template": {"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:2"}]}}}}


APP = "Deployment apps/app"


@pytest.mark.parametrize("path, value, expected", [
    (("containers", 0, "securityContext"), {"allowPrivilegeEscalation": True},
     {(APP, "app", "allowPrivilegeEscalation"), (APP, "app", "image app:1")}),
    (("containers", 0, "securityContext"), {"seccompProfile": {"type": "Unconfined"}},
     {(APP, "app", "seccompProfile Unconfined"), (APP, "app", "image app:1")}),
    (("containers", 0, "securityContext"), {"appArmorProfile": {"type": "Unconfined"}},
     {(APP, "app", "appArmorProfile Unconfined"), (APP, "app", "image app:1")}),
    (("containers", 0, "securityContext"), {"procMount": "Unmasked"},
     {(APP, "app", "procMount Unmasked"), (APP, "app", "image app:1")}),
    (("containers", 0, "ports"), [{"containerPort": 80.0, "hostPort": 8080.0}],
     {(APP, "app", "hostPort 8080/TCP"), (APP, "app", "image app:1")}),
    # What the pod weakens reaches every container, so each is bound to its image.
    (("securityContext",), {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
     {(APP, "(pod)", "sysctl net.core.somaxconn=1024"), (APP, "app", "image app:1"), (APP, "side", "image side:2")}),
    (("securityContext",), {"seccompProfile": {"type": "Unconfined"}},
     {(APP, "(pod)", "seccompProfile Unconfined"), (APP, "app", "image app:1"), (APP, "side", "image side:2")}),
    (("shareProcessNamespace",), True,
     {(APP, "(pod)", "shareProcessNamespace"), (APP, "app", "image app:1"), (APP, "side", "image side:2")}),
], ids=["allowPrivilegeEscalation", "seccomp", "apparmor", "procMount", "hostPort", "sysctl", "pod-seccomp", "shareProcessNamespace"])
def test_a_weakened_isolation_gets_its_rows(path, value, expected):
    assert set(ledger.rows([("kubernetes:apps/v1:Deployment", "app", _set(_plain(), path, value))])) == expected


def test_a_default_profile_or_escalation_turned_off_adds_no_row():
    props = _set(_plain(), ("containers", 0, "securityContext"),
                 {"allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}, "procMount": "Default"})
    assert ledger.rows([("kubernetes:apps/v1:Deployment", "app", props)]) == []
