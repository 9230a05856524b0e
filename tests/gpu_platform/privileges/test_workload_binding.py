"""The words and canonical JSON of the ledger's placement and configuration rows
(gpu_platform/privileges/workload_binding.py); their effect on the hash is tested in test_ledger.py. Every
expectation is written out by hand."""

from __future__ import annotations

import hashlib

import pytest

from gpu_platform.privileges import workload_binding


@pytest.mark.parametrize(
    "toleration, words",
    [
        (
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            "toleration nvidia.com/gpu operator Exists, effect NoSchedule",
        ),
        ({"key": "dedicated", "value": "system"}, "toleration dedicated=system operator Equal, EVERY effect"),
        (
            {
                "key": "node.kubernetes.io/not-ready",
                "operator": "Exists",
                "effect": "NoExecute",
                "tolerationSeconds": 300.0,
            },
            "toleration node.kubernetes.io/not-ready operator Exists, effect NoExecute for 300s",
        ),
        ({"operator": "Exists"}, "toleration of EVERY taint (EVERY effect; no key, operator Exists)"),
        (
            {"operator": "Exists", "effect": "NoExecute"},
            "toleration of EVERY taint (effect NoExecute; no key, operator Exists)",
        ),
        # Lt/Gt (alpha in Kubernetes 1.35) compare the taint's value with this threshold: it is bound too.
        (
            {"key": "example.com/rack", "operator": "Gt", "value": "4", "effect": "NoSchedule"},
            "toleration example.com/rack=4 operator Gt, effect NoSchedule",
        ),
    ],
    ids=["gpu-taint", "default-operator", "seconds-as-float", "every-taint", "every-noexecute-taint", "threshold"],
)
def test_a_toleration_reads_as_what_it_admits(toleration, words):
    assert workload_binding.toleration(toleration) == words


def test_a_short_value_is_shown_and_a_long_one_is_its_sha256_with_its_length():
    assert workload_binding.shown("args", ["-v"]) == 'args ["-v"]'
    long = ["x" * 300]
    expected = "sha256:" + hashlib.sha256(('["' + "x" * 300 + '"]').encode()).hexdigest()
    assert workload_binding.shown("args", long) == f"args {expected} (1 entry, SHA-256 of the canonical JSON)"


def test_a_node_group_selector_is_named_by_its_key_since_its_value_is_known_only_once_the_group_exists():
    def rows(group: str) -> list:
        spec = {"nodeSelector": {"gpu-platform.io/pool": "l40s", "eks.amazonaws.com/nodegroup": group}}
        return workload_binding.placement_rows("DaemonSet gpu-operator/gate", spec)

    assert (
        rows("gpu-l40s-41edb14861f30e6e9e7cb9791a")
        == rows("gpu-l40s-0123456789abcdef0123456789")
        == [
            (
                "DaemonSet gpu-operator/gate",
                "(pod)",
                (
                    "nodeSelector eks.amazonaws.com/nodegroup=(the name of a managed node group "
                    "the stack creates, known once it exists; not bound)"
                ),
            ),
            ("DaemonSet gpu-operator/gate", "(pod)", "nodeSelector gpu-platform.io/pool=l40s"),
            ("DaemonSet gpu-operator/gate", "(pod)", "serviceAccountName default"),
        ]
    )


def test_a_containers_env_reads_alike_as_written_and_as_the_api_server_stores_it():
    # The API server drops an empty value (omitempty) and gives a fieldRef apiVersion v1; the live
    # container below is the program's as it comes back from the cluster, written by hand.
    written = {
        "name": "c",
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
            {"name": "EMPTY", "value": ""},
            {"name": "MODE", "value": "x"},
        ],
    }
    live = {
        "name": "c",
        "env": [
            {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}},
            {"name": "EMPTY"},
            {"name": "MODE", "value": "x"},
        ],
    }
    rows = workload_binding.container_rows("DaemonSet gpu-operator/x", "c", written)
    assert rows == workload_binding.container_rows("DaemonSet gpu-operator/x", "c", live)
    # One row per variable (which one changed is what a review reads) and one of the names in order.
    assert rows == [
        (
            "DaemonSet gpu-operator/x",
            "c",
            'env NODE_NAME from {"fieldRef":{"apiVersion":"v1","fieldPath":"spec.nodeName"}}',
        ),
        ("DaemonSet gpu-operator/x", "c", 'env EMPTY=""'),
        ("DaemonSet gpu-operator/x", "c", 'env MODE="x"'),
        ("DaemonSet gpu-operator/x", "c", 'env order ["NODE_NAME","EMPTY","MODE"]'),
    ]


def test_a_reordered_or_changed_env_changes_its_rows_and_names_the_variable():
    env = [{"name": "FEATURE_GATES", "value": "DeviceMetadata=true"}, {"name": "A", "value": "1"}]
    rows = set(workload_binding.container_rows("k", "c", {"env": env}))
    gates = set(
        workload_binding.container_rows(
            "k",
            "c",
            {"env": [{"name": "FEATURE_GATES", "value": "DeviceMetadata=true,PassthroughSupport=true"}, env[1]]},
        )
    )
    assert gates - rows == {("k", "c", 'env FEATURE_GATES="DeviceMetadata=true,PassthroughSupport=true"')}
    swapped = set(workload_binding.container_rows("k", "c", {"env": env[::-1]}))
    assert swapped - rows == {("k", "c", 'env order ["A","FEATURE_GATES"]')}


def test_a_pod_without_a_service_account_runs_as_default_as_the_live_pod_says():
    written = workload_binding.placement_rows("DaemonSet gpu-operator/x", {"nodeName": "n"})
    live = workload_binding.placement_rows(
        "DaemonSet gpu-operator/x", {"nodeName": "n", "serviceAccountName": "default"}
    )
    assert written == live and ("DaemonSet gpu-operator/x", "(pod)", "serviceAccountName default") in written
