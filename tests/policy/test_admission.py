"""The operator namespace's guards: the admission policies and the default-deny NetworkPolicy must be
deployed. The program always builds them, so the failing stacks are built by dropping them from
the prod stack's own recording (and small resources), and go through the real analyzer."""

from __future__ import annotations

import pytest

from policy.admission import gpu_admission_policies_deployed, operator_namespace_default_deny
from tests.policy.resources import Resource, namespace, resource, workload
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("gpu-admission-policies-deployed", "stack", "mandatory"),
    ("operator-namespace-default-deny", "stack", "mandatory"),
]


POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
NAMES = (
    "gpu-platform-gpu-access",
    "gpu-platform-gpu-privilege",
    "gpu-platform-validator-pods",
    "gpu-platform-mig-manager-nodes",
    "gpu-platform-nfd-master-nodes",
)


def _policy(name: str, failure: str = "Fail") -> Resource:
    return resource(
        POLICY,
        f"p-{name}",
        {"metadata": {"name": name}, "spec": {"failurePolicy": failure, "validations": [{"expression": "true"}]}},
    )


def _binding(name: str, actions=("Deny",)) -> Resource:
    return resource(
        BINDING,
        f"b-{name}",
        {"metadata": {"name": name}, "spec": {"policyName": name, "validationActions": list(actions)}},
    )


def _operands() -> list[Resource]:
    return [
        workload(name=f"w-{o}", operand=o)
        for o in ("validator", "mig-manager", "node-feature-discovery", "device-plugin")
    ]


def _deny_all() -> Resource:
    return resource(
        NETWORK_POLICY,
        "deny",
        {
            "metadata": {"name": "default-deny-ingress", "namespace": "gpu-operator"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"]},
        },
    )


def _guarded(**kw) -> list[Resource]:
    return [namespace(**kw), *_operands(), *(_policy(n) for n in NAMES), *(_binding(n) for n in NAMES), _deny_all()]


def test_the_prod_stack_has_its_admission_policies_and_default_deny(prod):
    # the recording's resources, as the preview hands them over
    found = [resource(r.type, r.name, r.inputs) for r in prod.resources if r.custom]
    assert violations(gpu_admission_policies_deployed, found) == []
    assert violations(operator_namespace_default_deny, found) == []


def test_a_guarded_stack_passes():
    assert violations(gpu_admission_policies_deployed, _guarded()) == []


@pytest.mark.parametrize("missing", NAMES)
def test_a_missing_admission_policy_fails_naming_it(missing):
    stack = [r for r in _guarded() if not (r.type == POLICY and r.props["metadata"]["name"] == missing)]
    found = violations(gpu_admission_policies_deployed, stack)
    assert len(found) == 1 and repr(missing) in found[0][0] and "missing" in found[0][0]


def test_a_binding_that_only_warns_fails():
    stack = [
        r for r in _guarded() if r.type != BINDING or r.props["spec"]["policyName"] != "gpu-platform-validator-pods"
    ]
    found = violations(
        gpu_admission_policies_deployed, [*stack, _binding("gpu-platform-validator-pods", ("Warn", "Audit"))]
    )
    assert len(found) == 1 and "no binding with validationActions Deny" in found[0][0]


@pytest.mark.parametrize("name, passes", [("gpu-platform-gpu-privilege", True), ("gpu-platform-gpu-access", False)])
def test_only_the_privilege_policy_may_warn(name, passes):
    # gpu-platform:workloads.privilegeAdmission: warn (an adopted cluster's default); the ledger binds the actions.
    stack = [r for r in _guarded() if r.type != BINDING or r.props["spec"]["policyName"] != name]
    found = violations(gpu_admission_policies_deployed, [*stack, _binding(name, ("Warn", "Audit"))])
    assert (found == []) is passes, found


def test_a_privilege_policy_bound_to_audit_only_fails():
    stack = [
        r for r in _guarded() if r.type != BINDING or r.props["spec"]["policyName"] != "gpu-platform-gpu-privilege"
    ]
    found = violations(gpu_admission_policies_deployed, [*stack, _binding("gpu-platform-gpu-privilege", ("Audit",))])
    assert len(found) == 1 and "Deny (or Warn, for this one)" in found[0][0]


def test_a_policy_that_ignores_its_errors_fails():
    stack = [r for r in _guarded() if r.type != POLICY or r.props["metadata"]["name"] != "gpu-platform-gpu-access"]
    found = violations(gpu_admission_policies_deployed, [*stack, _policy("gpu-platform-gpu-access", "Ignore")])
    assert len(found) == 1 and "failurePolicy Ignore" in found[0][0]


def test_a_policy_for_an_operand_that_does_not_run_is_not_required():
    stack = [
        r
        for r in _guarded()
        if not (r.type == POLICY and r.props["metadata"]["name"] == "gpu-platform-mig-manager-nodes")
        and r.name != "w-mig-manager"
    ]
    assert violations(gpu_admission_policies_deployed, stack) == []


def test_a_cluster_before_1_30_is_not_asked_for_them():
    stack = [r for r in _guarded(kubernetes="1.29") if r.type not in (POLICY, BINDING)]
    assert violations(gpu_admission_policies_deployed, stack) == []


def test_the_operator_namespace_without_default_deny_fails():
    allow_only = resource(
        NETWORK_POLICY,
        "allow",
        {
            "metadata": {"name": "allow-metrics", "namespace": "gpu-operator"},
            "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [{"ports": [{"port": "metrics"}]}]},
        },
    )
    stack = [r for r in _guarded() if r.type != NETWORK_POLICY] + [allow_only]
    found = violations(operator_namespace_default_deny, stack)
    assert len(found) == 1 and "'gpu-operator'" in found[0][0] and "default-deny" in found[0][0]
    assert violations(operator_namespace_default_deny, _guarded()) == []
