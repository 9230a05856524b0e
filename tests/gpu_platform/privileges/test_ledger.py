"""The privilege ledger's hash (gpu_platform/privileges/ledger.py): what an approver records. Every expected
hash here is SHA-256 over canonical bytes written out by hand, never over the code's own output."""

from __future__ import annotations

import copy
import hashlib

import pytest

from gpu_platform.privileges import ledger

WORKLOAD = "DaemonSet gpu-operator/plugin"
# The canonical form, by hand: the version line, then one line per row, sorted by bytes, cells
# separated by tabs.
TINY = (
    b"gpu-platform privilege ledger v1\n"
    b"DaemonSet gpu-operator/plugin\t(pod)\thostPID\n"
    b"DaemonSet gpu-operator/plugin\t(pod)\truns on EVERY node its tolerations admit (no nodeSelector, nodeName or affinity)\n"
    b"DaemonSet gpu-operator/plugin\t(pod)\tserviceAccountName default\n"
    b"DaemonSet gpu-operator/plugin\tmain\tcapability SYS_ADMIN\n"
    b"DaemonSet gpu-operator/plugin\tmain\thostPath /var/lib/kubelet/device-plugins rw\n"
    b"DaemonSet gpu-operator/plugin\tmain\timage nvcr.io/nvidia/k8s-device-plugin:v0.18.1\n"
    b'DaemonSet gpu-operator/plugin\tmain\tsecurityContext {"capabilities":{"add":["SYS_ADMIN"],"drop":["ALL"]}}\n'
    b"DaemonSet gpu-operator/plugin\twait\thostPath /run/nvidia/validations ro\n"
    b"DaemonSet gpu-operator/plugin\twait\timage nvcr.io/nvidia/gpu-operator:v25.10.1\n"
)
TINY_HASH = "sha256:" + hashlib.sha256(TINY).hexdigest()


def _daemonset(reverse: bool = False) -> dict:
    """A DaemonSet with hostPID, SYS_ADMIN, one rw and one ro host path; `reverse` builds every mapping
    and list of volumes in the opposite order (what the engine may hand over)."""

    def ordered(d: dict) -> dict:
        return dict(reversed(list(d.items()))) if reverse else d

    volumes = [
        {"name": "plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
        {"name": "validations", "hostPath": ordered({"path": "/run/nvidia/validations", "type": "DirectoryOrCreate"})},
    ]
    spec = ordered(
        {
            "hostPID": True,
            "initContainers": [
                ordered(
                    {
                        "name": "wait",
                        "image": "nvcr.io/nvidia/gpu-operator:v25.10.1",
                        "volumeMounts": [{"name": "validations", "mountPath": "/v", "readOnly": True}],
                    }
                )
            ],
            "containers": [
                ordered(
                    {
                        "name": "main",
                        "image": "nvcr.io/nvidia/k8s-device-plugin:v0.18.1",
                        "securityContext": ordered({"capabilities": {"add": ["SYS_ADMIN"], "drop": ["ALL"]}}),
                        "volumeMounts": [{"name": "plugins", "mountPath": "/p"}],
                    }
                )
            ],
            "volumes": volumes[::-1] if reverse else volumes,
        }
    )
    return ordered(
        {
            "kind": "DaemonSet",
            "metadata": ordered({"name": "plugin", "namespace": "gpu-operator"}),
            "spec": {"template": {"spec": spec}},
        }
    )


def _rows(props: dict) -> list:
    return ledger.rows([("kubernetes:apps/v1:DaemonSet", "plugin-ds", props)])


def test_a_tiny_ledger_hashes_to_the_sha256_of_its_canonical_form_written_by_hand():
    rows = [
        (WORKLOAD, "wait", "hostPath /run/nvidia/validations ro"),
        (WORKLOAD, "main", "capability SYS_ADMIN"),
        (WORKLOAD, "(pod)", "hostPID"),
        (WORKLOAD, "main", "hostPath /var/lib/kubelet/device-plugins rw"),
        (WORKLOAD, "(pod)", "hostPID"),  # a duplicate counts once
        (WORKLOAD, "wait", "image nvcr.io/nvidia/gpu-operator:v25.10.1"),
        (WORKLOAD, "main", "image nvcr.io/nvidia/k8s-device-plugin:v0.18.1"),
        (WORKLOAD, "(pod)", "runs on EVERY node its tolerations admit (no nodeSelector, nodeName or affinity)"),
        (WORKLOAD, "(pod)", "serviceAccountName default"),
        (WORKLOAD, "main", 'securityContext {"capabilities":{"add":["SYS_ADMIN"],"drop":["ALL"]}}'),
    ]
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


@pytest.mark.parametrize(
    "path, value",
    [
        (("containers", 0, "securityContext", "privileged"), True),
        (("containers", 0, "securityContext", "capabilities", "add"), ["SYS_ADMIN", "NET_ADMIN"]),
        (("initContainers", 0, "volumeMounts", 0, "readOnly"), False),  # ro -> rw
        (("hostNetwork",), True),
        (("hostIPC",), True),
        (("volumes", 0, "hostPath", "path"), "/"),
        (("initContainers", 0, "securityContext"), {"privileged": True}),
    ],
    ids=["privileged", "capability", "ro-to-rw", "hostNetwork", "hostIPC", "other-host-path", "privileged-init"],
)
def test_any_added_privilege_changes_the_hash(path, value):
    assert ledger.digest(_rows(_set(_daemonset(), path, value))) != TINY_HASH


def test_an_unprivileged_workload_adds_no_row():
    plain = {
        "kind": "Deployment",
        "metadata": {"name": "app"},
        "spec": {"template": {"spec": {"containers": [{"name": "app"}]}}},
    }
    assert ledger.rows([("kubernetes:apps/v1:Deployment", "app", plain)]) == []


# EKS add-ons: every one the stack installs contributes rows, not only the one whose DaemonSets are
# written down (gpu_platform/catalog/addon_privileges.py).
ADDON = "aws:eks/addon:Addon"
# As the program creates it: no creator bootstrap, access entries only (else the cluster has rows of its
# own, tests/gpu_platform/privileges/test_cluster_admins.py).
CLUSTER = (
    "aws:eks/cluster:Cluster",
    "cluster",
    {
        "version": "1.33",
        "accessConfig": {"authenticationMode": "API", "bootstrapClusterCreatorAdminPermissions": False},
        "vpcConfig": {"endpointPublicAccess": False},
    },
)
ROLE_ARN = "arn:aws:iam::123456789012:role/gpu-cluster-vpc-cni-role-0a1b2c3"
# SHA-256 of the canonical JSON written by hand: sorted keys, no spaces.
CONFIG_HASH = "sha256:" + hashlib.sha256(b'{"enableNetworkPolicy":"true"}').hexdigest()
EMPTY_CONFIG_HASH = "sha256:" + hashlib.sha256(b"{}").hexdigest()
ASSOCIATIONS_HASH = (
    "sha256:" + hashlib.sha256(b'[{"role":"gpu-cluster-vpc-cni-role","serviceAccount":"aws-node"}]').hexdigest()
)
NO_ASSOCIATIONS_HASH = "sha256:" + hashlib.sha256(b"[]").hexdigest()


def _vpc_cni(**changes) -> dict:
    props = {
        "addonName": "vpc-cni",
        "clusterName": "gpu",
        "configurationValues": '{"enableNetworkPolicy": "true"}',
        "podIdentityAssociations": [{"roleArn": ROLE_ARN, "serviceAccount": "aws-node"}],
    }
    return {**props, **changes}


def _addon_ledger(props: dict) -> list:
    return [row for row in ledger.rows([CLUSTER, (ADDON, "cni", props)]) if not row[0].startswith("EKS cluster")]


def test_an_unpinned_add_on_names_its_version_configuration_and_pod_identity_and_says_its_privileges_are_not_written_down():
    subject = "EKS add-on vpc-cni"
    assert _addon_ledger(_vpc_cni()) == sorted(
        [
            (subject, "(add-on)", f"configurationValues {CONFIG_HASH} (SHA-256 of the canonical JSON)"),
            (
                subject,
                "(add-on)",
                (
                    f"podIdentityAssociations {ASSOCIATIONS_HASH} (SHA-256 of the canonical JSON of service "
                    "account and role name)"
                ),
            ),
            (subject, "(add-on)", "privileges of its DaemonSets unknown: none written down for this version"),
            (subject, "(add-on)", "version EKS default for Kubernetes 1.33"),
        ]
    )


def test_an_add_on_left_to_eks_reads_alike_before_and_after_eks_picks_its_version():
    # The program tags what it leaves unpinned (gpu-platform.io/addon-version: eks-default); once
    # deployed the add-on reads back the version EKS installed, which is what the approval let EKS pick.
    tagged = _vpc_cni(tags={"gpu-platform.io/addon-version": "eks-default"})
    assert (
        _addon_ledger({**tagged, "addonVersion": "v1.21.1-eksbuild.5"})
        == _addon_ledger(tagged)
        == _addon_ledger(_vpc_cni())
    )
    # Without the tag a version is one the program pinned: another version is another approval.
    assert ("EKS add-on vpc-cni", "(add-on)", "version v1.21.1-eksbuild.5") in _addon_ledger(
        _vpc_cni(addonVersion="v1.21.1-eksbuild.5")
    )


def test_the_pod_identity_agent_without_configuration_or_associations_still_has_rows():
    rows = _addon_ledger({"addonName": "eks-pod-identity-agent", "clusterName": "gpu"})
    assert (
        "EKS add-on eks-pod-identity-agent",
        "(add-on)",
        f"configurationValues {EMPTY_CONFIG_HASH} (SHA-256 of the canonical JSON)",
    ) in rows
    assert (
        "EKS add-on eks-pod-identity-agent",
        "(add-on)",
        f"podIdentityAssociations {NO_ASSOCIATIONS_HASH} (SHA-256 of the canonical JSON of service account and role name)",
    ) in rows
    assert ("EKS add-on eks-pod-identity-agent", "(add-on)", "version EKS default for Kubernetes 1.33") in rows


def test_a_pinned_version_is_named_as_the_stack_sets_it():
    assert ("EKS add-on vpc-cni", "(add-on)", "version v1.20.4-eksbuild.1") in _addon_ledger(
        _vpc_cni(addonVersion="v1.20.4-eksbuild.1")
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"configurationValues": "{}"},  # enableNetworkPolicy dropped
        {"configurationValues": '{"enableNetworkPolicy": "false"}'},
        {"podIdentityAssociations": []},
        {
            "podIdentityAssociations": [
                {"roleArn": "arn:aws:iam::123456789012:role/admin", "serviceAccount": "aws-node"}
            ]
        },
        {"podIdentityAssociations": [{"roleArn": ROLE_ARN, "serviceAccount": "default"}]},
        {"addonVersion": "v1.19.0-eksbuild.1"},
    ],
    ids=[
        "network-policy-dropped",
        "network-policy-false",
        "association-dropped",
        "other-role",
        "other-service-account",
        "pinned",
    ],
)
def test_a_change_of_an_add_on_changes_the_hash(changes):
    assert ledger.digest(_addon_ledger(_vpc_cni(**changes))) != ledger.digest(_addon_ledger(_vpc_cni()))


def test_the_same_add_on_hashes_the_same_offline_and_for_real():
    """Reformatted JSON, another account and another autonaming suffix (the mocks' ARN against the real
    one) are the same approval."""
    real = _vpc_cni(
        configurationValues='{ "enableNetworkPolicy" : "true" }',
        podIdentityAssociations=[
            {"roleArn": "arn:aws:iam::999999999999:role/gpu-cluster-vpc-cni-role-ffee001", "serviceAccount": "aws-node"}
        ],
    )
    assert ledger.digest(_addon_ledger(real)) == ledger.digest(_addon_ledger(_vpc_cni()))


def test_a_number_written_with_a_zero_fraction_is_the_same_configuration():
    # JSON has one number type: 2.0 and 2 are the same value to the add-on's schema; 2.5 is another.
    def config(value: str) -> dict:
        return _vpc_cni(configurationValues=f'{{"enableNetworkPolicy": "true", "env": {{"WARM_IP_TARGET": {value}}}}}')

    assert ledger.digest(_addon_ledger(config("2.0"))) == ledger.digest(_addon_ledger(config("2")))
    assert ledger.digest(_addon_ledger(config("2.5"))) != ledger.digest(_addon_ledger(config("2")))


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
    return {
        "kind": "Deployment",
        "metadata": {"name": "app", "namespace": "apps"},
        "spec": {
            "template": {
                "spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:2"}]}
            }
        },
    }


APP = "Deployment apps/app"


@pytest.mark.parametrize(
    "path, value, expected",
    [
        (
            ("containers", 0, "securityContext"),
            {"allowPrivilegeEscalation": True},
            {
                (APP, "app", "allowPrivilegeEscalation"),
                (APP, "app", "image app:1"),
                (APP, "app", 'securityContext {"allowPrivilegeEscalation":true}'),
            },
        ),
        (
            ("containers", 0, "securityContext"),
            {"seccompProfile": {"type": "Unconfined"}},
            {
                (APP, "app", "seccompProfile Unconfined"),
                (APP, "app", "image app:1"),
                (APP, "app", 'securityContext {"seccompProfile":{"type":"Unconfined"}}'),
            },
        ),
        (
            ("containers", 0, "securityContext"),
            {"appArmorProfile": {"type": "Unconfined"}},
            {
                (APP, "app", "appArmorProfile Unconfined"),
                (APP, "app", "image app:1"),
                (APP, "app", 'securityContext {"appArmorProfile":{"type":"Unconfined"}}'),
            },
        ),
        (
            ("containers", 0, "securityContext"),
            {"procMount": "Unmasked"},
            {
                (APP, "app", "procMount Unmasked"),
                (APP, "app", "image app:1"),
                (APP, "app", 'securityContext {"procMount":"Unmasked"}'),
            },
        ),
        (
            ("containers", 0, "ports"),
            [{"containerPort": 80.0, "hostPort": 8080.0}],
            {(APP, "app", "hostPort 8080/TCP"), (APP, "app", "image app:1")},
        ),
        # What the pod weakens reaches every container, so each is bound to its image.
        (
            ("securityContext",),
            {"sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
            {
                (APP, "(pod)", "sysctl net.core.somaxconn=1024"),
                (APP, "app", "image app:1"),
                (APP, "side", "image side:2"),
                (APP, "(pod)", 'securityContext {"sysctls":[{"name":"net.core.somaxconn","value":"1024"}]}'),
            },
        ),
        (
            ("securityContext",),
            {"seccompProfile": {"type": "Unconfined"}},
            {
                (APP, "(pod)", "seccompProfile Unconfined"),
                (APP, "app", "image app:1"),
                (APP, "side", "image side:2"),
                (APP, "(pod)", 'securityContext {"seccompProfile":{"type":"Unconfined"}}'),
            },
        ),
        (
            ("shareProcessNamespace",),
            True,
            {(APP, "(pod)", "shareProcessNamespace"), (APP, "app", "image app:1"), (APP, "side", "image side:2")},
        ),
    ],
    ids=[
        "allowPrivilegeEscalation",
        "seccomp",
        "apparmor",
        "procMount",
        "hostPort",
        "sysctl",
        "pod-seccomp",
        "shareProcessNamespace",
    ],
)
def test_a_weakened_isolation_gets_its_rows(path, value, expected):
    # Where the privileged pod runs and as whom are rows too (gpu_platform/privileges/workload_binding.py).
    placement = {
        (APP, "(pod)", "runs on EVERY node its tolerations admit (no nodeSelector, nodeName or affinity)"),
        (APP, "(pod)", "serviceAccountName default"),
    }
    assert (
        set(ledger.rows([("kubernetes:apps/v1:Deployment", "app", _set(_plain(), path, value))]))
        == expected | placement
    )


@pytest.mark.parametrize(
    "path, value, row",
    [
        # Each loosens the privileged container without adding a privilege of its own row.
        (
            ("containers", 0, "securityContext", "capabilities", "drop"),
            [],
            ("main", 'securityContext {"capabilities":{"add":["SYS_ADMIN"],"drop":[]}}'),
        ),
        (
            ("containers", 0, "securityContext", "runAsUser"),
            0,
            ("main", 'securityContext {"capabilities":{"add":["SYS_ADMIN"],"drop":["ALL"]},"runAsUser":0}'),
        ),
        (("runtimeClassName",), "nvidia", ("(pod)", "runtimeClassName nvidia")),
        (("priorityClassName",), "system-node-critical", ("(pod)", "priorityClassName system-node-critical")),
        (("automountServiceAccountToken",), True, ("(pod)", "automountServiceAccountToken true")),
        (
            ("initContainers", 0, "volumeMounts", 0, "mountPropagation"),
            "Bidirectional",
            ("wait", "hostPath /run/nvidia/validations ro mountPropagation Bidirectional"),
        ),
        (
            ("resourceClaims",),
            [{"name": "gpus", "resourceClaimTemplateName": "all-gpus"}],
            ("(pod)", 'resourceClaims [{"name":"gpus","resourceClaimTemplateName":"all-gpus"}]'),
        ),
        (
            ("containers", 0, "resources"),
            {"claims": [{"name": "gpus"}]},
            ("main", 'resources.claims [{"name":"gpus"}]'),
        ),
    ],
    ids=[
        "capabilities-not-dropped",
        "root",
        "runtime-class",
        "priority-class",
        "api-token",
        "mount-propagation",
        "pod-claims",
        "container-claims",
    ],
)
def test_what_else_confines_a_privileged_workload_is_bound(path, value, row):
    rows = _rows(_set(_daemonset(), path, value))
    assert (WORKLOAD, *row) in rows
    assert ledger.digest(rows) != TINY_HASH


def test_a_mount_without_propagation_or_with_none_reads_as_before_and_a_writable_mount_holds_a_read_only_one():
    props = _set(_daemonset(), ("initContainers", 0, "volumeMounts", 0, "mountPropagation"), "None")
    assert ledger.digest(_rows(props)) == TINY_HASH
    both = _set(
        _daemonset(),
        ("containers", 0, "volumeMounts"),
        [{"name": "plugins", "mountPath": "/p"}, {"name": "plugins", "mountPath": "/q", "readOnly": True}],
    )
    assert ledger.digest(_rows(both)) == TINY_HASH


def test_a_default_profile_or_escalation_turned_off_adds_no_row():
    props = _set(
        _plain(),
        ("containers", 0, "securityContext"),
        {"allowPrivilegeEscalation": False, "seccompProfile": {"type": "RuntimeDefault"}, "procMount": "Default"},
    )
    assert ledger.rows([("kubernetes:apps/v1:Deployment", "app", props)]) == []


# Where a privileged workload runs and what it reads (gpu_platform/privileges/workload_binding.py): an approval
# covers a blast radius, so other nodes, another service account, another command line or another
# ConfigMap content is another ledger.
TOOLKIT = "DaemonSet gpu-operator/nvidia-container-toolkit"
MIG_CONFIG = {"config.yaml": "version: v1\nmig-configs:\n  all-1g.10gb: []\n"}
# SHA-256 of the ConfigMap's canonical JSON written by hand: sorted keys, no spaces, ASCII escapes.
MIG_CONFIG_HASH = (
    "sha256:"
    + hashlib.sha256(
        b'{"binaryData":{},"data":{"config.yaml":"version: v1\\nmig-configs:\\n  all-1g.10gb: []\\n"}}'
    ).hexdigest()
)


def _toolkit(**spec_changes) -> dict:
    """A privileged toolkit-like DaemonSet: writes /etc/containerd, placed on GPU nodes by a gate label
    and the GPU taint's toleration, reading the MIG ConfigMap by a volume and a missing one by env."""
    spec = {
        "serviceAccountName": "nvidia-container-toolkit",
        "nodeSelector": {"nvidia.com/gpu.deploy.container-toolkit": "true"},
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "containers": [
            {
                "name": "toolkit",
                "image": "nvcr.io/nvidia/k8s/container-toolkit:v1.18.1",
                "command": ["nvidia-ctk-installer"],
                "args": ["/usr/local/nvidia"],
                "env": [
                    {"name": "RUNTIME", "value": "containerd"},
                    {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "toolkit-mode", "key": "mode"}}},
                ],
                "securityContext": {"privileged": True},
                "volumeMounts": [
                    {"name": "containerd", "mountPath": "/etc/containerd"},
                    {"name": "mig", "mountPath": "/mig"},
                ],
            }
        ],
        "volumes": [
            {"name": "containerd", "hostPath": {"path": "/etc/containerd"}},
            {"name": "mig", "configMap": {"name": "mig-parted-config"}},
        ],
        **spec_changes,
    }
    return {
        "kind": "DaemonSet",
        "metadata": {"name": "nvidia-container-toolkit", "namespace": "gpu-operator"},
        "spec": {"template": {"spec": spec}},
    }


def _config_map(name: str = "mig-parted-config", namespace: str = "gpu-operator", data: dict = MIG_CONFIG) -> tuple:
    return (
        "kubernetes:core/v1:ConfigMap",
        name,
        {"kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data},
    )


def _stack(toolkit: dict, *others: tuple) -> list:
    return ledger.rows([("kubernetes:apps/v1:DaemonSet", "toolkit", toolkit), _config_map(), *others])


def test_a_privileged_workload_is_bound_to_its_placement_its_service_account_its_command_line_and_its_config_maps():
    assert _stack(_toolkit()) == sorted(
        [
            (
                TOOLKIT,
                "(pod)",
                "configMap mig-parted-config data "
                + MIG_CONFIG_HASH
                + " (SHA-256 of the canonical JSON of data and binaryData)",
            ),
            (TOOLKIT, "(pod)", "configMap toolkit-mode not in the stack"),
            (TOOLKIT, "(pod)", "nodeSelector nvidia.com/gpu.deploy.container-toolkit=true"),
            (TOOLKIT, "(pod)", "serviceAccountName nvidia-container-toolkit"),
            (TOOLKIT, "(pod)", "toleration nvidia.com/gpu operator Exists, effect NoSchedule"),
            (TOOLKIT, "toolkit", 'args ["/usr/local/nvidia"]'),
            (TOOLKIT, "toolkit", 'command ["nvidia-ctk-installer"]'),
            (TOOLKIT, "toolkit", 'env MODE from {"configMapKeyRef":{"key":"mode","name":"toolkit-mode"}}'),
            (TOOLKIT, "toolkit", 'env RUNTIME="containerd"'),
            (TOOLKIT, "toolkit", 'env order ["RUNTIME","MODE"]'),
            (TOOLKIT, "toolkit", "hostPath /etc/containerd rw"),
            (TOOLKIT, "toolkit", "image nvcr.io/nvidia/k8s/container-toolkit:v1.18.1"),
            (TOOLKIT, "toolkit", "privileged"),
            (TOOLKIT, "toolkit", 'securityContext {"privileged":true}'),
        ]
    )


def test_a_toleration_of_every_taint_reads_as_such_and_changes_the_hash():
    every = _toolkit(
        tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}, {"operator": "Exists"}]
    )
    assert (TOOLKIT, "(pod)", "toleration of EVERY taint (EVERY effect; no key, operator Exists)") in _stack(every)
    assert ledger.digest(_stack(every)) != ledger.digest(_stack(_toolkit()))


@pytest.mark.parametrize(
    "toleration, row",
    [
        (
            {
                "key": "dedicated",
                "operator": "Equal",
                "value": "system",
                "effect": "NoExecute",
                "tolerationSeconds": 300.0,
            },
            "toleration dedicated=system operator Equal, effect NoExecute for 300s",
        ),
        ({"key": "dedicated", "value": "system"}, "toleration dedicated=system operator Equal, EVERY effect"),
        (
            {"operator": "Exists", "effect": "NoSchedule"},
            "toleration of EVERY taint (effect NoSchedule; no key, operator Exists)",
        ),
    ],
    ids=["equal-with-seconds", "default-operator-every-effect", "every-noschedule-taint"],
)
def test_each_toleration_is_a_readable_row(toleration, row):
    assert (TOOLKIT, "(pod)", row) in _stack(_toolkit(tolerations=[toleration]))


AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "pool", "operator": "In", "values": ["gpu-b", "gpu-a"]},
                        {"key": "zone", "operator": "Exists"},
                    ]
                }
            ]
        },
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {
                "weight": 1.0,
                "preference": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "a"]}]},
            }
        ],
    }
}


@pytest.mark.parametrize(
    "changes",
    [
        {"nodeSelector": {}},
        {"nodeSelector": {"nvidia.com/gpu.deploy.container-toolkit": "true", "node-role": "system"}},
        {"affinity": AFFINITY},
        {"nodeName": "ip-10-0-0-1.ec2.internal"},
        {
            "tolerations": [
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule", "tolerationSeconds": 60}
            ]
        },
        {"serviceAccountName": "default"},
    ],
    ids=[
        "selector-dropped",
        "selector-changed",
        "affinity-added",
        "node-name",
        "toleration-seconds",
        "service-account",
    ],
)
def test_another_placement_changes_the_hash(changes):
    assert ledger.digest(_stack(_toolkit(**changes))) != ledger.digest(_stack(_toolkit()))


def test_a_workload_without_selector_affinity_or_node_name_is_said_to_run_everywhere():
    assert (
        TOOLKIT,
        "(pod)",
        "runs on EVERY node its tolerations admit (no nodeSelector, nodeName or affinity)",
    ) in _stack(_toolkit(nodeSelector={}))


def test_a_short_affinity_is_shown_and_a_long_one_hashed_with_its_lists_sorted():
    short = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["b", "a"]}]}]
            }
        }
    }
    assert (
        TOOLKIT,
        "(pod)",
        (
            'affinity {"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":'
            '[{"matchExpressions":[{"key":"pool","operator":"In","values":["a","b"]}]}]}}}'
        ),
    ) in _stack(_toolkit(affinity=short))
    # AFFINITY's canonical JSON by hand: keys sorted, every list sorted by its items' canonical JSON,
    # the engine's float weight an integer.
    expected = (
        "sha256:"
        + hashlib.sha256(
            b'{"nodeAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"preference":{"matchExpressions":'
            b'[{"key":"zone","operator":"In","values":["a","b"]}]},"weight":1}],'
            b'"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":'
            b'[{"key":"pool","operator":"In","values":["gpu-a","gpu-b"]},{"key":"zone","operator":"Exists"}]}]}}}'
        ).hexdigest()
    )
    assert (TOOLKIT, "(pod)", f"affinity {expected} (SHA-256 of the canonical JSON, lists sorted)") in _stack(
        _toolkit(affinity=AFFINITY)
    )


@pytest.mark.parametrize(
    "path, value",
    [
        (("containers", 0, "env", 0, "value"), "docker"),
        (("containers", 0, "args"), ["/usr/local/nvidia", "--no-restart"]),
        (("containers", 0, "command"), ["sh", "-c", "nvidia-ctk-installer"]),
        (("containers", 0, "envFrom"), [{"configMapRef": {"name": "mig-parted-config"}}]),
        (
            ("containers", 0, "env"),
            [
                {"name": "MODE", "valueFrom": {"configMapKeyRef": {"name": "toolkit-mode", "key": "mode"}}},
                {"name": "RUNTIME", "value": "containerd"},
            ],
        ),  # order: a later entry wins, $(VAR) sees earlier
    ],
    ids=["env-value", "args", "command", "envFrom", "env-order"],
)
def test_what_a_privileged_container_runs_changes_the_hash(path, value):
    toolkit = _toolkit()
    node = toolkit["spec"]["template"]["spec"]
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert ledger.digest(_stack(toolkit)) != ledger.digest(_stack(_toolkit()))


def test_a_change_of_the_mig_config_map_data_changes_the_hash():
    other = _config_map(data={"config.yaml": "version: v1\nmig-configs:\n  all-7g.80gb: []\n"})
    base = ledger.rows([("kubernetes:apps/v1:DaemonSet", "toolkit", _toolkit()), _config_map()])
    changed = ledger.rows([("kubernetes:apps/v1:DaemonSet", "toolkit", _toolkit()), other])
    assert ledger.digest(changed) != ledger.digest(base)


def test_a_config_map_of_the_same_name_in_another_namespace_is_not_the_one_read():
    rows = ledger.rows([("kubernetes:apps/v1:DaemonSet", "toolkit", _toolkit()), _config_map(namespace="kube-system")])
    assert (TOOLKIT, "(pod)", "configMap mig-parted-config not in the stack") in rows


def test_a_projected_config_map_is_read_too():
    projected = {
        "name": "token",
        "projected": {
            "sources": [{"serviceAccountToken": {"path": "token"}}, {"configMap": {"name": "kube-root-ca.crt"}}]
        },
    }
    toolkit = _toolkit()
    toolkit["spec"]["template"]["spec"]["volumes"].append(projected)
    assert (
        TOOLKIT,
        "(pod)",
        (
            "configMap kube-root-ca.crt not in the stack (Kubernetes publishes it in every namespace: "
            "the API server's CA bundle)"
        ),
    ) in _stack(toolkit)


def test_the_same_placement_and_config_in_another_order_hash_the_same():
    reordered = _toolkit(
        nodeSelector={"b": "2", "a": "1"},
        tolerations=[
            {"operator": "Exists", "effect": "NoExecute", "key": "x", "tolerationSeconds": 300.0},
            {"effect": "NoSchedule", "operator": "Exists", "key": "nvidia.com/gpu"},
        ],
        affinity={
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "preference": {"matchExpressions": [{"values": ["a", "b"], "key": "zone", "operator": "In"}]},
                        "weight": 1,
                    }
                ],
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"operator": "Exists", "key": "zone"},
                                {"values": ["gpu-a", "gpu-b"], "operator": "In", "key": "pool"},
                            ]
                        }
                    ]
                },
            }
        },
    )
    original = _toolkit(
        nodeSelector={"a": "1", "b": "2"},
        tolerations=[
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "x", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ],
        affinity=AFFINITY,
    )
    two_keys = {"b.yaml": "b", "a.yaml": "a"}
    one = ledger.rows([("kubernetes:apps/v1:DaemonSet", "toolkit", original), _config_map(data=two_keys)])
    other = ledger.rows(
        [
            _config_map(data=dict(reversed(list(two_keys.items())))),
            ("kubernetes:apps/v1:DaemonSet", "toolkit", reordered),
        ]
    )
    assert ledger.digest(one) == ledger.digest(other)


def test_a_config_map_no_privileged_workload_reads_changes_nothing():
    app = _plain()
    app["spec"]["template"]["spec"]["volumes"] = [{"name": "dash", "configMap": {"name": "dashboard"}}]
    base = _stack(_toolkit())
    for data in ({"a": "1"}, {"a": "2"}):
        with_maps = _stack(
            _toolkit(),
            ("kubernetes:apps/v1:Deployment", "app", app),
            _config_map(name="dashboard", namespace="apps", data=data),
            _config_map(name="unmounted", data=data),
        )
        assert with_maps == base


def test_an_unprivileged_workload_s_placement_and_config_add_no_row():
    spec = {
        "serviceAccountName": "app",
        "nodeSelector": {"node-role": "system"},
        "tolerations": [{"operator": "Exists"}],
        "affinity": AFFINITY,
        "containers": [
            {
                "name": "app",
                "image": "app:1",
                "command": ["app"],
                "env": [{"name": "A", "value": "1"}],
                "envFrom": [{"configMapRef": {"name": "settings"}}],
            }
        ],
        "volumes": [{"name": "settings", "configMap": {"name": "settings"}}],
    }
    plain = {
        "kind": "Deployment",
        "metadata": {"name": "app", "namespace": "apps"},
        "spec": {"template": {"spec": spec}},
    }
    assert (
        ledger.rows([("kubernetes:apps/v1:Deployment", "app", plain), _config_map(name="settings", namespace="apps")])
        == []
    )


def test_a_config_map_volume_that_remaps_its_keys_changes_the_hash_and_shows_the_mapping():
    remapped = _toolkit()
    remapped["spec"]["template"]["spec"]["volumes"][1]["configMap"]["items"] = [
        {"key": "other.yaml", "path": "config.yaml"}
    ]
    rows = _stack(remapped)
    assert (TOOLKIT, "(pod)", 'configMap mig-parted-config items [{"key":"other.yaml","path":"config.yaml"}]') in rows
    assert ledger.digest(rows) != ledger.digest(_stack(_toolkit()))


# Types the ledger does not read: bound as a whole.
def test_a_resource_of_a_type_the_ledger_does_not_know_is_bound_as_a_whole():
    patch = (
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBindingPatch",
        "open",
        {"metadata": {"name": "gpu-admins"}, "subjects": [{"kind": "Group", "name": "system:authenticated"}]},
    )
    by_hand = '{"metadata":{"name":"gpu-admins"},"subjects":[{"kind":"Group","name":"system:authenticated"}]}'
    assert ledger.rows([patch]) == [
        (
            "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBindingPatch open",
            "(not reviewed)",
            (
                f"inputs sha256:{hashlib.sha256(by_hand.encode()).hexdigest()} (SHA-256 of the canonical JSON; the ledger does not "
                "read this type: approve it as a whole)"
            ),
        )
    ]
    for kind in (
        "helm.sh/v3:Release",
        "aws:iam/accessKey:AccessKey",
        "aws:kms/grant:Grant",
        "aws:eks/podIdentityAssociation:PodIdentityAssociation",
    ):
        assert len(ledger.rows([(kind, "x", {"a": 1})])) == 1, kind


def test_the_types_the_program_makes_are_all_known_to_the_ledger(dev, prod):
    # No shipped stack has a "(not reviewed)" row: each type is read by a module or listed in
    # gpu_platform/privileges/ledger_scope.yaml with why it holds nothing.
    for recording in (dev, prod):
        assert sorted({r.type for r in recording.resources if not ledger.reviewed(r.type)}) == []


def test_the_namespace_binds_the_cluster_the_node_image_and_the_approval_record():
    notes = {
        "gpu-platform.io/cluster": "gpu-dev in us-west-2, adopted",
        "gpu-platform.io/node-image": "ami ami-0123456789abcdef0",
        "audit.gpu-platform.io/approval": "SEC-1",
        "audit.gpu-platform.io/owner": "ml",
    }
    ns = ("kubernetes:core/v1:Namespace", "ns", {"metadata": {"name": "gpu-operator", "annotations": notes}})
    assert ledger.rows([ns]) == sorted(
        [
            ("EKS cluster access", "(cluster)", "cluster gpu-dev in us-west-2, adopted"),
            ("GPU node image", "(boots as root)", "ami ami-0123456789abcdef0"),
            ("Approval record", "(gpu-platform:audit)", "approval SEC-1, owner ml"),
        ]
    )


def test_the_aws_provider_settings_of_the_stack_are_rows_and_credentials_show_only_that_they_are_set():
    # Where the program's AWS calls go (an SSM endpoint answers which AMI the nodes boot) and as whom.
    from gpu_platform import config as config_model
    from preview.offline import engine

    raw = engine.read_stack_file(engine.stack_file("dev"))
    web_identity = {
        "roleArn": "arn:aws:iam::123456789012:role/deployer",
        "webIdentityToken": "eyJhbGciOiJSUzI1NiJ9.c2VjcmV0",
    }
    raw.update(
        {
            "aws:endpoints": [{"ssm": "https://ssm.example.internal"}],
            "aws:insecure": "true",
            "aws:secretKey": "wJalrXUtnFEMI/K7MDENG",
            "aws:accessKey": "AKIAEXAMPLE",
            "aws:assumeRoleWithWebIdentity": web_identity,
            "aws:httpsProxy": "http://user:hunter2@proxy:3128",
        }
    )
    settings = config_model.parse(raw).aws_provider
    # A value that may hold a credential is its SHA-256, written out by hand here.
    identity_hash = hashlib.sha256(
        b'{"roleArn":"arn:aws:iam::123456789012:role/deployer","webIdentityToken":"eyJhbGciOiJSUzI1NiJ9.c2VjcmV0"}'
    ).hexdigest()
    proxy_hash = hashlib.sha256(b'"http://user:hunter2@proxy:3128"').hexdigest()
    assert settings == (
        "accessKey (set)",
        f"assumeRoleWithWebIdentity sha256:{identity_hash} (SHA-256 of the value: it may hold a credential)",
        'endpoints [{"ssm":"https://ssm.example.internal"}]',
        f"httpsProxy sha256:{proxy_hash} (SHA-256 of the value: it may hold a credential)",
        'insecure "true"',
        "secretKey (set)",
    )
    assert config_model.parse(engine.read_stack_file(engine.stack_file("dev"))).aws_provider == ()
    ns = (
        "kubernetes:core/v1:Namespace",
        "ns",
        {"metadata": {"name": "gpu-operator", "annotations": {"gpu-platform.io/aws-provider": "\n".join(settings)}}},
    )
    rows = ledger.rows([ns])
    assert (
        "AWS provider",
        "(where its calls go, as whom)",
        'aws:endpoints [{"ssm":"https://ssm.example.internal"}]',
    ) in rows
    assert ("AWS provider", "(where its calls go, as whom)", "aws:secretKey (set)") in rows
    assert not any(
        secret in row[2]
        for row in rows
        for secret in ("wJalrXUtnFEMI", "AKIAEXAMPLE", "eyJhbGciOiJSUzI1NiJ9", "hunter2")
    )


def test_every_type_the_scope_file_lists_is_one_an_sdk_class_registers_or_the_crd_the_program_makes():
    # A misspelt token would never match a resource and would list nothing (gpu_platform/privileges/ledger_scope.yaml).
    import importlib
    import inspect

    custom = {"kubernetes:monitoring.coreos.com/v1:ServiceMonitor"}  # a CustomResource of the Prometheus operator's CRD
    for token in ledger.no_privilege_types() - custom:
        package, module, name = token.split(":")
        if package == "aws":
            path = f"pulumi_aws.{module.split('/')[0]}"
        else:
            group, version = module.split("/")
            path = f"pulumi_kubernetes.{group.split('.')[0]}.{version}"
        cls = getattr(importlib.import_module(path), name)
        assert f"'{token}'" in inspect.getsource(cls), token
