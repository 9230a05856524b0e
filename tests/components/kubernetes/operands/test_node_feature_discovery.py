"""NFD's three daemons get the flags, health endpoint, host paths and API rights the v0.18 image
uses (kubernetes-sigs/node-feature-discovery v0.18.2: cmd/nfd-*/main.go, pkg/nfd-*, the Helm
chart), and nothing more."""

from __future__ import annotations

import pytest

from components.kubernetes.operands import node_feature_discovery as nfd
from tests.components.kubernetes.conftest import DAEMONSET, DEPLOYMENT, pod_spec

CLUSTER_ROLE = "kubernetes:rbac.authorization.k8s.io/v1:ClusterRole"
ROLE = "kubernetes:rbac.authorization.k8s.io/v1:Role"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
PREFIX = "gpu-node-feature-discovery"

# Flags v0.18 no longer defines: the flag package exits on any of them.
GONE_IN_018 = ("-metrics", "-grpc-health", "-server", "-enable-nodefeature-api", "-ca-file", "-cert-file", "-key-file")


def workload(rec, part: str):
    return rec.one(DAEMONSET, f"{PREFIX}-ds") if part == "worker" else rec.one(DEPLOYMENT, f"{PREFIX}-{part}")


def container(rec, part: str) -> dict:
    return pod_spec(workload(rec, part))["containers"][0]


def rules(rec, type_: str, name: str) -> list[dict]:
    return rec.one(type_, name).inputs["rules"]


def verbs(rule_list: list[dict], resource: str, group: str = "") -> set[str]:
    return {v for r in rule_list if resource in r["resources"] and group in r["apiGroups"] for v in r["verbs"]}


@pytest.mark.parametrize("part", ["worker", "master", "gc"])
def test_each_daemon_listens_probes_and_exposes_the_same_http_port(stack, part):
    c = container(stack, part)
    assert f"-port={nfd.PORT}" in c["args"]
    assert c["ports"] == [{"name": "http", "containerPort": nfd.PORT}]
    for probe in (c["livenessProbe"], c["readinessProbe"]):
        assert probe["httpGet"] == {"path": "/healthz", "port": "http"}


@pytest.mark.parametrize("part", ["worker", "master", "gc"])
def test_no_daemon_gets_a_flag_that_v018_removed(stack, part):
    for arg in container(stack, part).get("args", []):
        assert not arg.startswith(GONE_IN_018), (part, arg)


def test_the_worker_reads_its_mounted_config_and_knows_its_pod_for_owner_references(stack):
    c = container(stack, "worker")
    mount = next(m for m in c["volumeMounts"] if m["name"] == "worker-config")
    config = f"-config={mount['mountPath']}/nfd-worker.conf"
    assert c["command"] == ["nfd-worker"] and c["args"] == [config, f"-port={nfd.PORT}"]
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in c["env"]}
    assert env == {"NODE_NAME": "spec.nodeName", "POD_NAME": "metadata.name", "POD_UID": "metadata.uid"}


def test_the_worker_mounts_the_charts_host_paths_read_only_and_no_hooks_directory(stack):
    spec = pod_spec(workload(stack, "worker"))
    paths = {v["name"]: v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v}
    mounts = {m["name"]: m for m in spec["containers"][0]["volumeMounts"] if m["name"] in paths}
    assert sorted(paths[name] for name in mounts) == sorted(
        [
            "/boot",
            "/etc/os-release",
            "/sys",
            "/usr/lib",
            "/lib",
            "/proc/swaps",
            "/etc/kubernetes/node-feature-discovery/features.d",
        ]
    )
    assert mounts["host-proc-swaps"]["mountPath"] == "/host-proc/swaps"
    assert all(m["readOnly"] for m in mounts.values())


def test_the_master_runs_leader_election_on_its_own_lease_only(stack):
    assert container(stack, "master")["args"] == ["-enable-leader-election", f"-port={nfd.PORT}"]
    leases = [r for r in rules(stack, ROLE, f"{PREFIX}-master-role") if r["resources"] == ["leases"]]
    assert {tuple(r["verbs"]): r.get("resourceNames") for r in leases} == {
        ("create",): None,
        ("get", "update"): [nfd.LEADER_LEASE],
    }


def test_the_master_patches_nodes_and_only_watches_nfd_objects(stack):
    role = rules(stack, CLUSTER_ROLE, f"{PREFIX}-master-clusterrole")
    assert verbs(role, "nodes") == {"get", "list", "patch"}
    assert verbs(role, "nodes/status") == {"patch"}
    assert verbs(role, "nodefeatures", nfd.GROUP) == verbs(role, "nodefeaturerules", nfd.GROUP) == {"list", "watch"}
    # The NodeFeatureGroupAPI gate is off by default, and no namespace selector is configured.
    assert not verbs(role, "nodefeaturegroups", nfd.GROUP) and not verbs(role, "namespaces")


def test_the_gc_only_lists_and_deletes_what_it_collects(stack):
    role = rules(stack, CLUSTER_ROLE, f"{PREFIX}-gc-clusterrole")
    assert verbs(role, "nodes") == {"list", "watch"}
    assert verbs(role, "nodefeatures", nfd.GROUP) == {"list", "delete"}
    assert verbs(role, "noderesourcetopologies", "topology.node.k8s.io") == {"list", "delete"}
    assert "-gc-interval=1h" in container(stack, "gc")["args"]


def test_the_worker_may_write_only_nodefeatures_in_its_namespace(stack):
    role = rules(stack, ROLE, f"{PREFIX}-role")
    assert verbs(role, "nodefeatures", nfd.GROUP) == {"create", "get", "update", "delete"}
    assert verbs(role, "pods") == {"get"}
    assert len(role) == 2


def test_the_crds_are_the_releases_three_with_their_scopes(stack):
    crds = {r.inputs["metadata"]["name"]: r.inputs["spec"] for r in stack.of_type(CRD) if r.name.startswith(PREFIX)}
    assert {name: s["scope"] for name, s in crds.items()} == {
        f"nodefeatures.{nfd.GROUP}": "Namespaced",
        f"nodefeaturerules.{nfd.GROUP}": "Cluster",
        f"nodefeaturegroups.{nfd.GROUP}": "Namespaced",
    }
    with_status = {name for name, s in crds.items() if "subresources" in s["versions"][0]}
    assert with_status == {f"nodefeaturegroups.{nfd.GROUP}"}


def test_the_worker_config_labels_nvidia_gpus_by_vendor_alone():
    # kubernetes-sigs/node-feature-discovery v0.14.2 source/pci/pci.go:38-46,87-139: deviceLabelFields
    # [vendor] with classes 0300/0302 in the whitelist gives feature.node.kubernetes.io/pci-10de.present.
    import yaml

    pci = yaml.safe_load(nfd.WORKER_CONFIG)["sources"]["pci"]
    assert pci["deviceLabelFields"] == ["vendor"]
    assert {"0300", "0302"} <= set(pci["deviceClassWhitelist"])


@pytest.mark.parametrize(
    "image, informs",
    [
        ("v0.16.3", True),
        ("v0.16.6", True),
        ("v0.17.2", True),
        ("v0.17.3", False),
        ("v0.18.2", False),
        ("v0.15.4", False),
    ],
)
def test_the_master_of_v0_16_3_to_v0_17_2_informs_on_node_feature_groups(image, informs):
    # v0.16.3 pkg/nfd-master/nfd-api-controller.go:137-164: the informer starts unless
    # DisableNodeFeatureGroup, which nfd-master.go sets only from v0.17.3 (:1364, from the gate).
    assert nfd.traits(f"registry.k8s.io/nfd/node-feature-discovery:{image}").master_informs_groups is informs
