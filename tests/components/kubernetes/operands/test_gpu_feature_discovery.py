"""GFD's DaemonSet as its image needs it on a real node: each expectation is a literal from upstream
(the GFD source in k8s-device-plugin or gpu-feature-discovery, the GPU Operator's asset, the MIG
manager), with the file and line it comes from."""

from __future__ import annotations

import pytest

from components.kubernetes.operands import gpu_feature_discovery
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.manifests import CONFIG_HASH_KEY, daemonset_manifest
from components.kubernetes.operands.sharing import PoolSharing
from components.kubernetes.operands.spec import OperandArgs
from components.kubernetes.operands.version_table import image_version
from gpu_platform.catalog import matrix, versions
from gpu_platform.config.audit import Audit

RELEASES = matrix.load().releases
H100 = matrix.load().gpus["H100-80GB"].mig.configs()["all-balanced"]
FEATURES_D = "/etc/kubernetes/node-feature-discovery/features.d"


def context(release: matrix.Release, replicas: int = 4) -> OperandContext:
    return OperandContext(
        images=dict(release.images),
        sharing=(PoolSharing("h100-mig", None, "mixed", "all-balanced"), PoolSharing("l4", replicas, "none", None)),
        mig_pools=(MigPool("h100-mig", "H100-80GB", "all-balanced", H100),),
        toolkit_baked=True,
        toolkit_version=release.toolkit_version,
        cdi=release.cdi,
    )


def daemonset(ctx: OperandContext) -> dict:
    spec = gpu_feature_discovery.spec(ctx)
    args = OperandArgs(
        spec=spec,
        namespace="gpu-operator",
        gate="gpu-feature-discovery",
        waits_for=None,
        wait_image="",
        provider=None,
        audit=Audit(owner="platform", approval="CHG-1"),
        release="test",
    )
    return daemonset_manifest(spec, args, spec.name, {s: f"{spec.name}-{s}" for s in spec.config_maps})


def containers(ds: dict) -> dict[str, dict]:
    pod = ds["spec"]["template"]["spec"]
    return {c["name"]: c for c in [*pod.get("initContainers", []), *pod["containers"]]}


def env(container: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def mounts(ds: dict, container: str) -> dict[str, dict]:
    volumes = {v["name"]: v for v in ds["spec"]["template"]["spec"]["volumes"]}
    return {m["mountPath"]: volumes[m["name"]] for m in containers(ds)[container].get("volumeMounts", [])}


def node_feature_api(release: matrix.Release) -> bool:
    # USE_NODE_FEATURE_API defaults to true from v0.19.0 (cmd/gpu-feature-discovery/main.go:100-105 at
    # v0.19.0; no default, so false, at v0.18.1 lines 100-104).
    return versions.at_least(image_version(release.images["gpu-feature-discovery"]), "0.19.0")


every_release = pytest.mark.parametrize("release", list(RELEASES.values()), ids=list(RELEASES))


@every_release
def test_gfd_mounts_the_configs_its_config_link_points_into(release):
    ds = daemonset(context(release))
    # upstream's chart mounts both in the GFD container (templates/daemonset-gfd.yml:189-192 at
    # v0.18.1); the link is CONFIG_FILE_SRCDIR/<name> (cmd/config-manager/main.go:394-398).
    gfd = mounts(ds, "gpu-feature-discovery")
    assert "configMap" in gfd["/available-configs"] and "emptyDir" in gfd["/config"]


@every_release
def test_config_manager_may_signal_gfd_by_its_argv0(release):
    ds = daemonset(context(release))
    by_name = containers(ds)
    sender, gfd = by_name["config-manager"], by_name["gpu-feature-discovery"]
    assert ds["spec"]["template"]["spec"]["shareProcessNamespace"] is True
    assert env(sender)["PROCESS_TO_SIGNAL"] == gfd["command"][0]
    assert sender["securityContext"]["runAsUser"] == gfd["securityContext"]["runAsUser"]
    assert sender["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    # The init container: SEND_SIGNAL false (assets/gpu-feature-discovery/0500_daemonset.yaml:59-60 at v25.10.1).
    assert env(by_name["config-manager-init"])["SEND_SIGNAL"] == "false"


@every_release
def test_gfd_has_no_probe(release):
    # No health endpoint; from v0.19.0 the features.d file is never written (API mode), so the old
    # `ls features.d/gfd` probe restarted GFD forever. Upstream defines none.
    for c in containers(daemonset(context(release))).values():
        assert not {"livenessProbe", "readinessProbe", "startupProbe"} & set(c), c["name"]


@every_release
def test_gfd_is_granted_exactly_the_api_calls_of_its_output_mode(release):
    spec = gpu_feature_discovery.spec(context(release))
    gfd = env(containers(daemonset(context(release)))["gpu-feature-discovery"])
    if node_feature_api(release):
        # Get, Create, Update of NodeFeature nvidia-features-for-<node> in NAMESPACE
        # (internal/lm/output.go:132, 147, 166 at v0.19.0), and its own pod for owner references
        # (output.go:182, POD_NAME: internal/flags/node.go:46-49).
        assert {
            "apiGroups": ["nfd.k8s-sigs.io"],
            "resources": ["nodefeatures"],
            "verbs": ["get", "create", "update"],
        } in spec.namespace_rules
        assert {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]} in spec.namespace_rules
        assert gfd["POD_NAME"] == {"fieldRef": {"fieldPath": "metadata.name"}}
    else:
        # File mode: no API call of GFD's own.
        assert spec.namespace_rules == ()
        assert "POD_NAME" not in gfd
    assert spec.cluster_rules == ({"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},)


@every_release
def test_gfd_mounts_the_feature_file_directory_only_where_it_writes_the_file(release):
    gfd = mounts(daemonset(context(release)), "gpu-feature-discovery")
    assert (FEATURES_D in gfd) == (not node_feature_api(release))
    if FEATURES_D in gfd:
        assert gfd[FEATURES_D]["hostPath"]["path"] == FEATURES_D


def test_a_change_of_time_slicing_replicas_changes_gfds_pod_template():
    release = RELEASES["v25.10.1"]
    four, eight = daemonset(context(release, replicas=4)), daemonset(context(release, replicas=8))
    assert (
        four["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_KEY]
        != eight["spec"]["template"]["metadata"]["annotations"][CONFIG_HASH_KEY]
    )


def test_gfds_pods_carry_the_label_the_mig_manager_waits_for():
    # mig-parted v0.15.0 pkg/mig/reconfigure/reconfigure.go:398; v0.5.5
    # deployments/gpu-operator/reconfigure-mig.sh:456.
    ds = daemonset(context(RELEASES["v25.10.1"]))
    assert ds["spec"]["template"]["metadata"]["labels"]["app"] == "gpu-feature-discovery"
