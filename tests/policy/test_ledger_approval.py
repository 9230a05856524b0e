"""Approvals bound to the privilege ledger (policy/audit.py privilege-ledger-approved and
privilege-ledger-recorded), through the real analyzer: the pack computes the ledger from the
resources it is handed and compares it with the hash on the operands' namespace. Expected hashes
are SHA-256 over canonical bytes written by hand."""

from __future__ import annotations

import hashlib

from gpu_platform.interface import contract
from policy.audit import privilege_ledger_approved, privilege_ledger_recorded
from tests.policy.resources import namespace, resource, workload
from tests.policy.verdict import violations

# The rows of tests/policy/resources.py workload(), in the canonical form, by hand.
APPROVED = (
    "sha256:"
    + hashlib.sha256(
        b"gpu-platform privilege ledger v1\n"
        b"DaemonSet gpu-device-plugin-ds\t(pod)\tnodeSelector nvidia.com/gpu.deploy.device-plugin=true\n"
        b"DaemonSet gpu-device-plugin-ds\t(pod)\tserviceAccountName default\n"
        b"DaemonSet gpu-device-plugin-ds\t(pod)\ttoleration nvidia.com/gpu operator Exists, effect NoSchedule\n"
        b"DaemonSet gpu-device-plugin-ds\tmain\tcapability SYS_ADMIN\n"
        b"DaemonSet gpu-device-plugin-ds\tmain\thostPath /var/lib/kubelet/device-plugins rw\n"
        b"DaemonSet gpu-device-plugin-ds\tmain\timage nvcr.io/nvidia/k8s-device-plugin:v0.18.1\n"
        b'DaemonSet gpu-device-plugin-ds\tmain\tsecurityContext {"capabilities":{"add":["SYS_ADMIN"],"drop":["ALL"]}}\n'
        b"DaemonSet gpu-device-plugin-ds\twait-for-toolkit-ready\thostPath /run/nvidia/validations ro\n"
        b"DaemonSet gpu-device-plugin-ds\twait-for-toolkit-ready\timage nvcr.io/nvidia/gpu-operator:v25.10.1\n"
    ).hexdigest()
)
STALE = "sha256:" + "0" * 64


def _namespace(approved: str | None, name: str = "gpu-namespace"):
    ns = namespace()
    notes = dict(ns.props["metadata"]["annotations"])
    if approved is not None:
        notes[contract.APPROVED_LEDGER_KEY] = approved
    return resource(ns.type, name, {"metadata": {**ns.props["metadata"], "annotations": notes}})


def test_a_stack_whose_ledger_is_the_approved_one_passes():
    assert violations(privilege_ledger_approved, [_namespace(APPROVED), workload()]) == []
    assert violations(privilege_ledger_recorded, [_namespace(APPROVED), workload()]) == []


def test_a_stale_approval_fails_naming_both_hashes_and_the_command_that_shows_the_change():
    found = violations(privilege_ledger_approved, [_namespace(STALE), workload()])
    assert len(found) == 1
    message, _ = found[0]
    assert f"hashes to {APPROVED}" in message and f"approval covers {STALE}" in message
    assert "python -m preview --stack test --audit new.md --audit-against APPROVED.md" in message
    assert f"record {APPROVED} as gpu-platform:audit.approvedLedger" in message


def test_a_privilege_added_after_the_approval_fails():
    more = workload(main_container={"securityContext": {"privileged": True}})
    found = violations(privilege_ledger_approved, [_namespace(APPROVED), more])
    assert len(found) == 1 and f"approval covers {APPROVED}" in found[0][0]


def test_another_image_of_a_privileged_container_fails():
    # An operator.overrides digest swap: the approval covered the software holding the privilege.
    swapped = workload(image="nvcr.io/nvidia/k8s-device-plugin:v0.18.1@sha256:" + "c" * 64)
    found = violations(privilege_ledger_approved, [_namespace(APPROVED), swapped])
    assert len(found) == 1 and f"approval covers {APPROVED}" in found[0][0]


def test_a_vpc_cni_without_network_policy_fails():
    cni = {
        "addonName": "vpc-cni",
        "clusterName": "gpu",
        "configurationValues": '{"enableNetworkPolicy": "true"}',
        "podIdentityAssociations": [
            {"roleArn": "arn:aws:iam::123456789012:role/cni-0a1b2c3", "serviceAccount": "aws-node"}
        ],
    }
    # The approved hash of the stack with the add-on as configured, read from the first verdict's message.
    ((message, _),) = violations(
        privilege_ledger_approved, [_namespace(STALE), workload(), resource("aws:eks/addon:Addon", "cni", cni)]
    )
    approved = message.split("hashes to ", 1)[1].split(",", 1)[0]
    assert (
        violations(
            privilege_ledger_approved, [_namespace(approved), workload(), resource("aws:eks/addon:Addon", "cni", cni)]
        )
        == []
    )
    dropped = {**cni, "configurationValues": "{}"}
    found = violations(
        privilege_ledger_approved, [_namespace(approved), workload(), resource("aws:eks/addon:Addon", "cni", dropped)]
    )
    assert len(found) == 1 and f"approval covers {approved}" in found[0][0]


def test_a_privilege_removed_after_the_approval_fails_too():
    # Dropping a privilege is a change the approval must see: the record would otherwise be untrue.
    found = violations(privilege_ledger_approved, [_namespace(APPROVED), workload(wait_image=None)])
    assert len(found) == 1


def test_two_namespaces_stating_different_approvals_fail():
    found = violations(privilege_ledger_approved, [_namespace(APPROVED), _namespace(STALE, "other"), workload()])
    assert len(found) == 1 and "stated differently" in found[0][0]


def test_a_stack_without_a_recorded_hash_is_told_the_hash_to_record():
    assert violations(privilege_ledger_approved, [_namespace(None), workload()]) == []
    found = violations(privilege_ledger_recorded, [_namespace(None), workload()])
    assert len(found) == 1
    assert (
        f"record gpu-platform:audit.approvedLedger: {APPROVED}" in found[0][0] and "ledger has 9 rows" in found[0][0]
    )  # 3 privileges, 2 images, 3 of placement, 1 securityContext


def test_a_stack_without_privileges_needs_no_recorded_hash():
    plain = resource(
        "kubernetes:apps/v1:Deployment",
        "app",
        {
            "kind": "Deployment",
            "metadata": {"name": "app"},
            "spec": {"template": {"spec": {"containers": [{"name": "app"}]}}},
        },
    )
    assert violations(privilege_ledger_recorded, [_namespace(None), plain]) == []


# Where a privileged workload runs and what it reads belong to the approval (gpu_platform/privileges/workload_binding.py).
GPU_TOLERATION = {"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}


def _toolkit(tolerations: list):
    return workload(
        name="nvidia-container-toolkit-daemonset",
        operand="container-toolkit",
        gate="container-toolkit",
        tolerations=tolerations,
        main_container={"securityContext": {"privileged": True}},
    )


def _approved_hash(resources: list) -> str:
    """The stack's current hash, read from the verdict against a stale approval."""
    ((message, _),) = violations(privilege_ledger_approved, [_namespace(STALE), *resources])
    return message.split("hashes to ", 1)[1].split(",", 1)[0]


def test_a_toleration_of_every_taint_added_to_the_container_toolkit_fails_the_old_approval():
    approved = _approved_hash([_toolkit([GPU_TOLERATION])])
    assert violations(privilege_ledger_approved, [_namespace(approved), _toolkit([GPU_TOLERATION])]) == []
    everywhere = _toolkit([GPU_TOLERATION, {"operator": "Exists"}])
    found = violations(privilege_ledger_approved, [_namespace(approved), everywhere])
    assert len(found) == 1 and f"approval covers {approved}" in found[0][0]


def _mig_manager(data: dict):
    mig = workload(
        name="nvidia-mig-manager",
        operand="mig-manager",
        gate="mig-manager",
        pod={
            "volumes": [
                {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
                {"name": "run-nvidia-validations", "hostPath": {"path": "/run/nvidia/validations"}},
                {"name": "config", "configMap": {"name": "mig-parted-config"}},
            ]
        },
    )
    config = resource(
        "kubernetes:core/v1:ConfigMap",
        "mig-parted-config",
        {"kind": "ConfigMap", "metadata": {"name": "mig-parted-config"}, "data": data},
    )
    return [mig, config]


def test_a_change_of_the_mig_config_map_fails_the_old_approval_and_its_keys_reordered_do_not():
    data = {"config.yaml": "version: v1\nmig-configs:\n  all-1g.10gb: []\n", "clients.yaml": "version: v1\n"}
    approved = _approved_hash(_mig_manager(data))
    reordered = dict(reversed(list(data.items())))
    assert violations(privilege_ledger_approved, [_namespace(approved), *_mig_manager(reordered)]) == []
    changed = {**data, "config.yaml": "version: v1\nmig-configs:\n  all-7g.80gb: []\n"}
    found = violations(privilege_ledger_approved, [_namespace(approved), *_mig_manager(changed)])
    assert len(found) == 1 and f"approval covers {approved}" in found[0][0]


# What the stack grants through RBAC, IAM and its admission policies belongs to the approval
# (gpu_platform/privileges/grants.py): the five changes of the issue 17 review, each of which kept the hash.
_RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
_ADMISSION = "kubernetes:admissionregistration.k8s.io/v1:"
_GRANTS = {
    "role": [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
    ],
    "roleRef": "nvidia-mig-manager",
    "policyArn": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "expression": "object.spec.nodeName == ''",
    "actions": ["Deny"],
}


def _grants(**changed):
    g = {**_GRANTS, **changed}
    return [
        resource(_RBAC + "ClusterRole", "cr", {"metadata": {"name": "nvidia-mig-manager"}, "rules": g["role"]}),
        resource(
            _RBAC + "ClusterRoleBinding",
            "crb",
            {
                "metadata": {"name": "nvidia-mig-manager"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": g["roleRef"]},
                "subjects": [{"kind": "ServiceAccount", "name": "nvidia-mig-manager", "namespace": "gpu-operator"}],
            },
        ),
        resource(
            "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
            "att",
            {"policyArn": g["policyArn"], "role": "gpu-node-role-4ad3f2c"},
        ),
        resource(
            _ADMISSION + "ValidatingAdmissionPolicy",
            "vap",
            {
                "metadata": {"name": "gpu-platform-validator-pods"},
                "spec": {"failurePolicy": "Fail", "validations": [{"expression": g["expression"]}]},
            },
        ),
        resource(
            _ADMISSION + "ValidatingAdmissionPolicyBinding",
            "vapb",
            {
                "metadata": {"name": "gpu-platform-validator-pods"},
                "spec": {"policyName": "gpu-platform-validator-pods", "validationActions": g["actions"]},
            },
        ),
    ]


def test_each_grant_the_review_changed_fails_the_old_approval_and_reordered_rules_do_not():
    approved = _approved_hash(_grants())
    assert violations(privilege_ledger_approved, [_namespace(approved), *_grants()]) == []
    reordered = [
        {"verbs": ["list"], "resources": ["pods"], "apiGroups": [""]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["patch", "list", "get"]},
    ]
    assert violations(privilege_ledger_approved, [_namespace(approved), *_grants(role=reordered)]) == []
    for change in (
        {"role": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]},
        {"roleRef": "cluster-admin"},
        {"policyArn": "arn:aws:iam::aws:policy/AdministratorAccess"},
        {"expression": "true"},
        {"actions": ["Audit"]},
    ):
        found = violations(privilege_ledger_approved, [_namespace(approved), *_grants(**change)])
        assert len(found) == 1 and f"approval covers {approved}" in found[0][0], change


def test_a_privilege_whose_value_is_unknown_at_preview_fails_the_gate_not_an_advisory():
    # A cluster-admin binding named by a value generated at the update (random.RandomId(...).hex):
    # left to the analyzer, the unknown would make the policy "can't run during preview", an advisory.
    from tests.policy.verdict import UNKNOWN, diagnostics

    binding = resource(
        "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding",
        "evil",
        {
            "metadata": {"name": UNKNOWN},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"kind": "ServiceAccount", "name": "nvidia-device-plugin", "namespace": "gpu-operator"}],
        },
    )
    found = [
        d
        for d in diagnostics([_namespace(APPROVED), workload(), binding])
        if d.policyName == privilege_ledger_approved.name
    ]
    assert len(found) == 1
    assert found[0].enforcementLevel == 1  # MANDATORY (analyzer_pb2.EnforcementLevel), not "can't run"
    assert "the privilege ledger cannot be computed in this preview" in found[0].message
    assert ".metadata.name can't be known during preview" in found[0].message and "'evil'" in found[0].message
