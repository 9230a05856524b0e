"""cluster-access-declared (policy/audit.py), through the real analyzer: every access policy
association is for a principal the operands' namespace names as a cluster admin, or the privilege
ledger would not show who the stack makes admin. And the approval binds the admin list: a named
admin added after it fails privilege-ledger-approved."""

from __future__ import annotations

import hashlib

from gpu_platform.interface import contract
from policy.audit import cluster_access_declared, privilege_ledger_approved
from tests.policy.resources import namespace, resource
from tests.policy.verdict import violations

ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
DEPLOYER = "arn:aws:iam::123456789012:role/gpu-platform-deployer"
MALLORY = "arn:aws:iam::123456789012:user/mallory"
# The ledger of a namespace naming DEPLOYER and nothing else, in the canonical form, by hand.
APPROVED = (
    "sha256:"
    + hashlib.sha256(
        b"gpu-platform privilege ledger v1\n"
        b"EKS cluster access\tarn:aws:iam::123456789012:role/gpu-platform-deployer\tAmazonEKSClusterAdminPolicy (cluster scope)\n"
    ).hexdigest()
)


def _namespace(admins: str | None, approved: str | None = None):
    ns = namespace()
    notes = dict(ns.props["metadata"]["annotations"])
    if admins is not None:
        notes[contract.CLUSTER_ADMINS_KEY] = admins
    if approved is not None:
        notes[contract.APPROVED_LEDGER_KEY] = approved
    return resource(ns.type, ns.name, {"metadata": {**ns.props["metadata"], "annotations": notes}})


def _association(principal: str, name: str = "gpu-cluster-admin"):
    return resource(
        ASSOCIATION,
        name,
        {
            "clusterName": "gpu-test",
            "principalArn": principal,
            "policyArn": "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy",
            "accessScope": {"type": "cluster"},
        },
    )


def test_associations_for_named_admins_pass():
    assert violations(cluster_access_declared, [_namespace(DEPLOYER), _association(DEPLOYER)]) == []


def test_a_named_admin_spelt_with_a_path_and_capitals_is_the_same_principal():
    spelt = "arn:aws:iam::123456789012:role/ci/GPU-Platform-Deployer"
    assert violations(cluster_access_declared, [_namespace(spelt), _association(DEPLOYER)]) == []


def test_an_association_for_a_principal_the_namespace_does_not_name_fails_naming_both():
    found = violations(
        cluster_access_declared, [_namespace(DEPLOYER), _association(DEPLOYER), _association(MALLORY, "backdoor")]
    )
    assert len(found) == 1
    message, _ = found[0]
    assert "'backdoor'" in message and MALLORY in message and "AmazonEKSClusterAdminPolicy (cluster scope)" in message
    assert f"{contract.CLUSTER_ADMINS_KEY} on the namespace names only {DEPLOYER}" in message
    assert "gpu-platform:cluster.admins" in message


def test_an_association_when_no_namespace_names_admins_fails():
    found = violations(cluster_access_declared, [_namespace(None), _association(DEPLOYER)])
    assert len(found) == 1 and "names only (none)" in found[0][0]


def test_the_approved_admin_list_passes_and_an_added_admin_fails_the_approval():
    assert violations(privilege_ledger_approved, [_namespace(DEPLOYER, APPROVED), _association(DEPLOYER)]) == []
    found = violations(
        privilege_ledger_approved,
        [_namespace(f"{DEPLOYER} {MALLORY}", APPROVED), _association(DEPLOYER), _association(MALLORY, "m")],
    )
    assert len(found) == 1 and f"approval covers {APPROVED}" in found[0][0]


def test_an_admin_whose_entry_the_stack_leaves_alone_is_still_in_the_approved_ledger():
    # No association (discovery found its entry): the namespace still names it, so dropping it from
    # the list changes the ledger, and the approval of the list with it still holds.
    assert violations(privilege_ledger_approved, [_namespace(DEPLOYER, APPROVED)]) == []
    assert len(violations(privilege_ledger_approved, [_namespace("", APPROVED)])) == 1
