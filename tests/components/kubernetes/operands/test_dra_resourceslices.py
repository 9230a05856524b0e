"""The DRA kubelet plugin's ResourceSlice admission policy (allocation mode dra), evaluated as CEL
against admission requests shaped as the API server sends them: the plugin keeps to its own node's
slices of its own driver. The policy is the one the dra stack records, so what is tested is what is
deployed. Expectations are restated from upstream: NVIDIA/gpu-operator v26.7.0
manifests/state-dra-driver/0700_resourceslices-policy.yaml (its node check, :18-36) and the slices
the plugin writes (kubernetes-sigs/dra-driver-nvidia-gpu main 95932046: one pool keyed by its node,
owned by its Node, driver gpu.nvidia.com), never read from the module under test."""

from __future__ import annotations

import copy
import re

import pytest

from preview.reports import ledger
from tests.components.kubernetes.admission_cel import evaluate
from tests.components.kubernetes.conftest import daemonset_of, pod_spec
from tests.release_stacks import strict_error

POLICY = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicy"
BINDING = "kubernetes:admissionregistration.k8s.io/v1:ValidatingAdmissionPolicyBinding"
CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
CLUSTER_ROLE_BINDING = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding"
NODE = "ip-10-0-1-17.us-west-2.compute.internal"
OTHER_NODE = "ip-10-0-2-9.us-west-2.compute.internal"
DRIVER = "gpu.nvidia.com"  # cmd/gpu-kubelet-plugin/main.go:45 at main


def _slice_policies(rec) -> list:
    return [
        p
        for p in rec.of_type(POLICY)
        if any("resourceslices" in r["resources"] for r in p.inputs["spec"]["matchConstraints"]["resourceRules"])
    ]


@pytest.fixture(scope="module")
def policy(dra) -> dict:
    (found,) = _slice_policies(dra)
    return found.inputs


@pytest.fixture(scope="module")
def plugin_user(dra) -> str:
    """The kubelet plugin's username, as the API server writes it for the DaemonSet's own account."""
    ds = daemonset_of(dra, "dra-driver")
    return f"system:serviceaccount:{ds.inputs['metadata']['namespace']}:{pod_spec(ds)['serviceAccountName']}"


def _user(username: str, node: str | None = NODE) -> dict:
    # What a token bound to the plugin's pod carries (kubernetes/apiserver v0.34.0
    # pkg/authentication/serviceaccount/util.go:152-160): pod name and uid, and the node's name and uid.
    user = {
        "username": username,
        "groups": ["system:serviceaccounts", "system:serviceaccounts:gpu-operator"],
        "extra": {
            "authentication.kubernetes.io/pod-name": ["nvidia-dra-driver-kubelet-plugin-x7k2p"],
            "authentication.kubernetes.io/pod-uid": ["3d1c"],
        },
    }
    if node is not None:
        user["extra"]["authentication.kubernetes.io/node-name"] = [node]
        user["extra"]["authentication.kubernetes.io/node-uid"] = ["9f0a"]
    return user


def _slice(node: str | None = NODE, driver: str = DRIVER, **selection) -> dict:
    """A ResourceSlice as the plugin's ResourceSlice controller writes it (resourceslicecontroller.go:862-887
    at main: generateName index-driver-owner-, owned by the Node, one pool named for the node)."""
    spec = {
        "driver": driver,
        "pool": {"name": node or "cluster", "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {
                "name": "gpu-0",
                "attributes": {"type": {"string": "gpu"}, "productName": {"string": "NVIDIA H100 80GB HBM3"}},
            }
        ],
    }
    if node is not None and not selection:
        spec["nodeName"] = node
    spec.update(selection)
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"0-{driver}-{node}-abcde",
            "generateName": f"0-{driver}-{node}-",
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Node", "name": node or "", "uid": "9f0a", "controller": True}
            ],
        },
        "spec": spec,
    }


def _request(operation: str, username: str, new: dict | None, old: dict | None, node: str | None = NODE) -> dict:
    return {
        "operation": operation,
        "resource": "resourceslices",
        "userInfo": _user(username, node),
        "object": new,
        "oldObject": old,
    }


def _write(policy, username, operation, stored: dict | None = None, new: dict | None = None, node: str | None = NODE):
    return evaluate(policy["spec"], _request(operation, username, new, stored, node))


def _updated(stored: dict) -> dict:
    new = copy.deepcopy(stored)
    new["spec"]["pool"]["generation"] = 2
    new["spec"]["devices"][0]["attributes"]["health"] = {"string": "Unhealthy"}
    return new


# ---------------------------------------------------------------- what the plugin does


def test_the_plugin_creates_updates_and_deletes_its_own_nodes_slices(policy, plugin_user):
    own = _slice(NODE)
    assert _write(policy, plugin_user, "CREATE", new=own) == []
    assert _write(policy, plugin_user, "UPDATE", stored=own, new=_updated(own)) == []
    assert _write(policy, plugin_user, "DELETE", stored=own) == []


# ---------------------------------------------------------------- what a compromised plugin could try


@pytest.mark.parametrize("operation", ["CREATE", "UPDATE", "DELETE"])
def test_the_plugin_may_not_touch_another_nodes_slices(policy, plugin_user, operation):
    other = _slice(OTHER_NODE)
    stored, new = {"CREATE": (None, other), "UPDATE": (other, _updated(other)), "DELETE": (other, None)}[operation]
    failed = _write(policy, plugin_user, operation, stored=stored, new=new)
    assert failed and any("node its pod runs on" in m for m in failed), failed


def test_an_update_that_moves_a_slice_onto_its_node_is_refused(policy, plugin_user):
    # spec.nodeName is immutable (the API server refuses the change anyway); judged on both sides all the same.
    moved = _slice(NODE)
    assert _write(policy, plugin_user, "UPDATE", stored=_slice(OTHER_NODE), new=moved)
    assert _write(policy, plugin_user, "UPDATE", stored=moved, new=_slice(OTHER_NODE))


@pytest.mark.parametrize(
    "selection",
    [
        {"allNodes": True},
        {
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [NODE]}]}
                ]
            }
        },
        {"perDeviceNodeSelection": True},
    ],
    ids=["allNodes", "nodeSelector", "perDeviceNodeSelection"],
)
def test_the_plugin_may_not_publish_or_delete_cluster_wide_slices(policy, plugin_user, selection):
    # Upstream's policy admits these (0700_resourceslices-policy.yaml:34); the GPU plugin never writes one.
    cluster = _slice(None, **selection)
    for operation, stored, new in (
        ("CREATE", None, cluster),
        ("UPDATE", cluster, _updated(cluster)),
        ("DELETE", cluster, None),
    ):
        failed = _write(policy, plugin_user, operation, stored=stored, new=new)
        assert failed and any("cluster-wide" in m for m in failed), (operation, failed)


def test_the_plugin_may_not_publish_another_drivers_slices_on_its_node(policy, plugin_user):
    failed = _write(policy, plugin_user, "CREATE", new=_slice(NODE, driver="compute-domain.nvidia.com"))
    assert failed and any(DRIVER in m for m in failed), failed


def test_a_token_without_its_node_is_refused(policy, plugin_user):
    # A token not bound to a pod (a long-lived Secret token, or a cluster without ServiceAccountTokenPodNodeInfo).
    failed = _write(policy, plugin_user, "CREATE", new=_slice(NODE), node=None)
    assert failed and any("ServiceAccountTokenPodNodeInfo" in m for m in failed), failed


def test_other_users_are_not_matched(policy, plugin_user):
    namespace = plugin_user.split(":")[2]
    for user in (
        f"system:serviceaccount:{namespace}:nvidia-dra-driver-kubeletplugin",  # upstream's account name
        f"system:serviceaccount:kube-system:{plugin_user.split(':')[3]}",  # the same name elsewhere
        "system:node:" + NODE,
    ):  # the kubelet, which deletes a plugin's slices when it goes
        assert _write(policy, user, "CREATE", new=_slice(OTHER_NODE)) is None, user


# ---------------------------------------------------------------- the objects


def test_the_policy_names_the_plugins_own_service_account(dra, policy, plugin_user):
    # Both ways: the DaemonSet's account is the one matched, and the one user the match condition names is it.
    named = {
        u
        for c in policy["spec"]["matchConditions"]
        for u in re.findall(r"system:serviceaccount:[a-z0-9.:-]+", c["expression"])
    }
    assert named == {plugin_user}
    assert _write(policy, plugin_user, "CREATE", new=_slice(NODE)) == []
    # ... and the account the ClusterRole on resourceslices is bound to.
    slices_roles = {
        r.inputs["metadata"]["name"]
        for r in dra.of_type(CLUSTER_ROLE)
        if any("resourceslices" in rule["resources"] and "create" in rule["verbs"] for rule in r.inputs["rules"])
    }
    subjects = {
        f"system:serviceaccount:{s['namespace']}:{s['name']}"
        for b in dra.of_type(CLUSTER_ROLE_BINDING)
        if b.inputs["roleRef"]["name"] in slices_roles
        for s in b.inputs["subjects"]
    }
    assert subjects == {plugin_user}


def test_the_binding_denies_and_names_the_policy_both_ways(dra, policy):
    bindings = [b.inputs for b in dra.of_type(BINDING) if b.inputs["spec"]["policyName"] == policy["metadata"]["name"]]
    assert len(bindings) == 1
    assert bindings[0]["spec"]["validationActions"] == ["Deny"]
    assert "matchResources" not in bindings[0]["spec"]  # every request the policy matches
    named = [b.inputs for b in dra.of_type(BINDING) if b.inputs["metadata"]["name"] == policy["metadata"]["name"]]
    assert [b["spec"]["policyName"] for b in named] == [policy["metadata"]["name"]]


def test_the_policy_fails_closed_on_every_version_and_write(policy):
    spec = policy["spec"]
    assert spec["failurePolicy"] == "Fail"
    (rule,) = spec["matchConstraints"]["resourceRules"]
    assert rule["apiGroups"] == ["resource.k8s.io"] and rule["apiVersions"] == ["*"]
    assert sorted(rule["operations"]) == ["CREATE", "DELETE", "UPDATE"]


def test_the_policy_is_owned_by_the_dra_driver_and_made_before_the_plugin(dra):
    (found,) = _slice_policies(dra)
    owner = dra.by_urn()[found.parent]
    assert owner.type == "gpu-platform:operands:DraDriver"
    binding = next(
        b for b in dra.of_type(BINDING) if b.inputs["spec"]["policyName"] == found.inputs["metadata"]["name"]
    )
    assert binding.parent == owner.urn
    waits = dra.waits_for(daemonset_of(dra, "dra-driver").urn)
    assert {found.urn, binding.urn} <= waits


@pytest.mark.parametrize("kubernetes", ["1.34", "1.36"])
def test_the_policy_and_binding_are_valid_kubernetes(dra, policy, kubernetes):
    binding = next(
        b.inputs for b in dra.of_type(BINDING) if b.inputs["spec"]["policyName"] == policy["metadata"]["name"]
    )
    for obj in (policy, binding):
        assert strict_error(obj, kubernetes) is None


def test_the_policy_and_its_binding_are_rows_of_the_privilege_ledger(dra, policy):
    # Loosening either (another account, `true`, Audit) changes the ledger, so it needs a new approval.
    name = policy["metadata"]["name"]
    rows = {row for row in ledger.of(dra) if row[0].endswith(f" {name}")}
    assert {(who, part) for who, part, _ in rows} == {
        (f"ValidatingAdmissionPolicy {name}", "(policy)"),
        (f"ValidatingAdmissionPolicyBinding {name}", "(binding)"),
    }
    assert (f"ValidatingAdmissionPolicyBinding {name}", "(binding)", f"policyName {name}") in rows
    assert (f"ValidatingAdmissionPolicyBinding {name}", "(binding)", 'validationActions ["Deny"]') in rows


def test_the_device_plugin_stacks_have_no_resourceslice_policy(stack):
    assert _slice_policies(stack) == []
