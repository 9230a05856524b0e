"""Node feature discovery: the worker (on every node, whatever its taints) reads PCI data and labels
the node `feature.node.kubernetes.io/pci-10de.present=true` for NVIDIA GPUs, so GPU presence is
discovered, not assumed; the master turns the workers' NodeFeature objects into node labels; the
garbage collector removes NodeFeature objects of nodes that are gone.

Checked against kubernetes-sigs/node-feature-discovery at tag v0.18.2 (the image of release
v25.10.1): the flags in cmd/nfd-{master,worker,gc}/main.go, what pkg/nfd-{master,worker,gc}/*.go
really call, and the Helm chart in deployment/helm/node-feature-discovery/ (templates/master.yaml,
worker.yaml, nfd-gc.yaml, clusterrole.yaml, role.yaml, values.yaml, crds/nfd-api-crds.yaml).

- Workers publish `nfd.k8s-sigs.io/v1alpha1` NodeFeature objects (the default since 0.14; the gRPC
  path between worker and master is gone since 0.17), so the CRDs exist before any NFD pod. They
  carry an open schema (`x-kubernetes-preserve-unknown-fields`) rather than NFD's generated one:
  enough for the API to store the objects; the release's full schemas can replace them without any
  other change.
- Since 0.18 each daemon serves /healthz and /metrics over plain HTTP on the one port `-port`
  (default 8080). Older images in the matrix differ, see VERSION NOTES below.
- Host paths follow the chart's worker.yaml (/boot, /etc/os-release, /sys, /usr/lib, /lib,
  /proc/swaps, features.d, all read-only); worker config follows the GPU Operator's NFD values
  (pci deviceClassWhitelist, deviceLabelFields: [vendor]).

VERSION NOTES for the older rows of gpu_platform/matrix.yaml (the shipped stacks use v0.18.x; these
manifests are written for it):
- 0.17.x: no `-port`; metrics on `-metrics` (8081) and a gRPC health service on `-grpc-health`
  (8082), probed with `grpc:` probes; nfd-gc has no health endpoint at all.
- 0.14.x-0.16.x: nfd-master's `-port` (8080) is the deprecated gRPC server, metrics on 8081, the
  gRPC health port (8082) only from 0.16.6; workers still accept `-server` and the unused source.d
  hooks directory (hooks off by default, removed in 0.17).
- /proc/swaps is read by the memory source since 0.16.
"""

from __future__ import annotations

import yaml

from components.kubernetes.operands.base import Container, Deployment, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext

GROUP = "nfd.k8s-sigs.io"
PORT = 8080
# The lease nfd-master's leader election takes in its own namespace (pkg/nfd-master/nfd-master.go).
LEADER_LEASE = "nfd-master.nfd.kubernetes.io"
_CONFIG_DIR = "/etc/nfd-config"

WORKER_CONFIG = yaml.safe_dump({
    "sources": {"pci": {
        # Network controllers (02, Ethernet 0200, InfiniBand 0207: NVIDIA NICs) and the VGA (0300)
        # and 3D (0302) display classes, where NVIDIA GPUs show up on the PCI bus.
        "deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
        "deviceLabelFields": ["vendor"],
    }},
}, sort_keys=False)


def _crd(plural: str, kind: str, scope: str = "Namespaced", short: str = "", status: bool = False) -> dict:
    names = {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()}
    return {"name": f"{plural}.{GROUP}", "spec": {
        "group": GROUP,
        "names": {**names, **({"shortNames": [short]} if short else {})},
        "scope": scope,
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            **({"subresources": {"status": {}}} if status else {}),
        }],
    }}


def _health(**timing: int) -> dict:
    return {"httpGet": {"path": "/healthz", "port": "http"}, **timing}


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["node-feature-discovery"]
    # `-port` is passed although 8080 is the default, so the listener, the container port and the
    # probes come from one constant. Requests and limits are the chart's values.yaml defaults.
    worker = Container(
        name="worker",
        image=image,
        command=("nfd-worker",),
        args=(f"-config={_CONFIG_DIR}/nfd-worker.conf", f"-port={PORT}"),
        # The worker names its pod (and through it the DaemonSet) as owner of its NodeFeature.
        field_env=(("NODE_NAME", "spec.nodeName"), ("POD_NAME", "metadata.name"), ("POD_UID", "metadata.uid")),
        host_paths=("host-boot", "host-os-release", "host-sys", "host-usr-lib", "host-lib", "host-proc-swaps", "features-d"),
        mounts=(("worker-config", _CONFIG_DIR, True),),
        requests=("5m", "64Mi"),
        memory_limit="512Mi",
        ports=(("http", PORT),),
        liveness=_health(initialDelaySeconds=10),
        readiness=_health(initialDelaySeconds=5, failureThreshold=10),
    )
    master = Container(
        name="master",
        image=image,
        command=("nfd-master",),
        # Leader election as in the chart: a rolling update runs two masters for a while.
        args=("-enable-leader-election", f"-port={PORT}"),
        # Its node gets the master-version annotation; the lease holder identity starts with it.
        field_env=(("NODE_NAME", "spec.nodeName"),),
        requests=("100m", "128Mi"),
        memory_limit="4Gi",
        ports=(("http", PORT),),
        # /healthz answers only after the informer caches synced. The chart gives that a startup
        # probe of 30 failures; the shared Container has no startup probe, so liveness allows it.
        liveness=_health(initialDelaySeconds=10, failureThreshold=30),
        readiness=_health(failureThreshold=10),
    )
    gc = Container(
        name="gc",
        image=image,
        command=("nfd-gc",),
        args=("-gc-interval=1h", f"-port={PORT}"),
        requests=("10m", "128Mi"),
        memory_limit="1Gi",
        ports=(("http", PORT),),
        liveness=_health(initialDelaySeconds=10),
        readiness=_health(initialDelaySeconds=5),
    )

    def host(volume: str, path: str, mount: str, type_: str = "") -> HostPath:
        return HostPath(volume, path, mount, True, type_)

    return OperandSpec(
        operand="node-feature-discovery",
        reason=(
            "reads the host's PCI, kernel, memory and OS data (/sys, /boot, /lib, /usr/lib, /proc/swaps, "
            "/etc/os-release) and GFD's feature files (features.d), all read-only, to label nodes"
        ),
        containers=(worker,),
        host_paths=(
            host("host-boot", "/boot", "/host-boot"),
            host("host-os-release", "/etc/os-release", "/host-etc/os-release"),
            host("host-sys", "/sys", "/host-sys"),
            host("host-usr-lib", "/usr/lib", "/host-usr/lib"),
            host("host-lib", "/lib", "/host-lib"),
            # The memory source's swap detection; without it every pass logs an error.
            host("host-proc-swaps", "/proc/swaps", "/host-proc/swaps"),
            # GFD writes its labels here; the worker publishes them. The path is fixed in the
            # image (source/local/local.go), so it is mounted where it is on the host.
            host("features-d", "/etc/kubernetes/node-feature-discovery/features.d",
                 "/etc/kubernetes/node-feature-discovery/features.d", "DirectoryOrCreate"),
        ),
        config_maps={"worker-config": {"nfd-worker.conf": WORKER_CONFIG}},
        # The worker gets, creates and updates its own node's NodeFeature and reads its own pod for
        # the owner references. Delete too: with the OwnerReferencesPermissionEnforcement admission
        # plugin, changing an object's ownerReferences needs delete on it (upstream commit
        # b5b503c6a, in the chart's role.yaml since v0.17).
        namespace_rules=(
            {"apiGroups": [GROUP], "resources": ["nodefeatures"], "verbs": ["create", "get", "update", "delete"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        ),
        tolerate_all=True,
        crds=(
            _crd("nodefeatures", "NodeFeature"),
            _crd("nodefeaturerules", "NodeFeatureRule", "Cluster", short="nfr"),
            _crd("nodefeaturegroups", "NodeFeatureGroup", short="nfg", status=True),
        ),
        deployments=(
            Deployment(
                "master",
                (master,),
                # Narrower than the chart's clusterrole.yaml, to what v0.18.2 calls with the flags
                # above: node get/list/patch and a status patch for extended resources (update is
                # only for `-prune`; no node informer, so no watch); informers (list, watch) on
                # NodeFeatures and NodeFeatureRules. NodeFeatureGroups only behind the
                # NodeFeatureGroupAPI feature gate (off by default: pkg/features/features.go), and
                # namespaces only with a nodeFeatureNamespaceSelector in the master config.
                cluster_rules=(
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
                    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
                    {"apiGroups": [GROUP], "resources": ["nodefeatures", "nodefeaturerules"], "verbs": ["list", "watch"]},
                ),
                # Creating a lease cannot be limited by name; reading and renewing it can.
                namespace_rules=(
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [LEADER_LEASE],
                     "verbs": ["get", "update"]},
                ),
            ),
            Deployment(
                "gc",
                (gc,),
                # A metadata informer on nodes; paged lists and deletes of NodeFeatures in every
                # namespace. nfd-gc also lists and deletes NodeResourceTopologies on every pass and
                # node deletion whatever is installed; no topology updater runs here, so the right
                # reaches no object, and without it each pass logs a Forbidden error and counts a
                # delete error in its metrics.
                cluster_rules=(
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
                    {"apiGroups": [GROUP], "resources": ["nodefeatures"], "verbs": ["list", "delete"]},
                    {"apiGroups": ["topology.node.k8s.io"], "resources": ["noderesourcetopologies"], "verbs": ["list", "delete"]},
                ),
            ),
        ),
    )


class NodeFeatureDiscovery(Operand):
    """`gpu-platform:operands:NodeFeatureDiscovery`."""
