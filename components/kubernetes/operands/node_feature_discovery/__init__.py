"""Node feature discovery: the worker (on every node, whatever its taints) reads PCI data and labels
the node `feature.node.kubernetes.io/pci-10de.present=true` for NVIDIA GPUs, so GPU presence is
discovered, not assumed; the master turns the workers' NodeFeature objects into node labels; the
garbage collector removes NodeFeature objects of nodes that are gone.

Written against kubernetes-sigs/node-feature-discovery at the tags the matrix ships (v0.14.2,
v0.15.4, v0.16.3, v0.16.6, v0.17.2, v0.17.3, v0.18.2, v0.18.3, v0.19.0): the flags in
cmd/nfd-{master,worker,gc}/main.go, what pkg/nfd-{master,worker,gc}/*.go and pkg/apihelper really
call, and the Helm chart in deployment/helm/node-feature-discovery/ (templates/master.yaml,
worker.yaml, nfd-gc.yaml, clusterrole.yaml, role.yaml, values.yaml, crds/nfd-api-crds.yaml).

- Workers publish `nfd.k8s-sigs.io/v1alpha1` NodeFeature objects (the default since 0.14; the gRPC
  path between worker and master is gone since 0.17), so the CRDs exist before any NFD pod. They
  are the ones the tag publishes, unmodified (third_party/node-feature-discovery/): structural
  schemas, so a NodeFeature with a non-string label or without spec is refused, an unknown field
  dropped; NodeFeatureGroup from 0.16.
- What differs between image lines (listeners, health checks, owner references, host paths)
  is the `TRAITS` table below, chosen by the image tag's version; the rest is the same at every tag.
- Worker config follows the GPU Operator's NFD values (pci deviceClassWhitelist,
  deviceLabelFields: [vendor]); both keys exist unchanged since before 0.14.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import yaml

from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import Container, Deployment, HostPath, OperandSpec
from components.kubernetes.operands.version_table import for_version, image_version
from gpu_platform.catalog import yaml_files
from gpu_platform.config import ConfigError

GROUP = "nfd.k8s-sigs.io"
# The lease nfd-master's leader election takes in its own namespace (pkg/nfd-master/nfd-master.go,
# the same name at every tag from v0.14.2 to v0.19.0).
LEADER_LEASE = "nfd-master.nfd.kubernetes.io"
_CONFIG_DIR = "/etc/nfd-config"
# The one HTTP port of 0.18+ (-port): /healthz and /metrics.
PORT = 8080

WORKER_CONFIG = yaml.safe_dump(
    {
        "sources": {
            "pci": {
                # Network controllers (02, Ethernet 0200, InfiniBand 0207: NVIDIA NICs) and the VGA (0300)
                # and 3D (0302) display classes, where NVIDIA GPUs show up on the PCI bus.
                "deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
                "deviceLabelFields": ["vendor"],
            }
        },
    },
    sort_keys=False,
)


@dataclass(frozen=True)
class Listener:
    """How one NFD daemon of an image line listens: the flags that name its ports (each passed
    although it is the default, so flag, container port and probe come from the same row), its
    container ports, and its health check: `http` is GET /healthz on the port named http, `grpc`
    the standard gRPC health service on `health_port` (a grpc probe takes a number, not a name);
    None when the daemon serves no health check at all, which then gets no probe."""

    args: tuple[str, ...] = ()
    ports: tuple[tuple[str, int], ...] = ()
    health: str | None = None  # None | "http" | "grpc"
    health_port: int = 0


@dataclass(frozen=True)
class Traits:
    since: str
    worker: Listener
    master: Listener
    gc: Listener
    # The worker sets ownerReferences on its NodeFeature (POD_NAME, POD_UID): since 0.15
    # (pkg/nfd-worker/nfd-worker.go v0.15.4). Changing ownerReferences needs delete on the object
    # under the OwnerReferencesPermissionEnforcement admission plugin (upstream commit b5b503c6a).
    owner_refs: bool
    # ... and GETs its own pod to add the DaemonSet as owner: since 0.16 (v0.16.3 nfd-worker.go).
    reads_own_pod: bool
    # The memory source reads /proc/swaps: since 0.16 (chart templates/worker.yaml v0.16.3).
    swaps: bool
    # The master informs on NodeFeatureGroups in every namespace and writes their status in its
    # own, whatever the feature gates, from v0.16.3 to v0.17.2: nothing sets DisableNodeFeatureGroup
    # (pkg/nfd-master/nfd-master.go:1514-1517 v0.16.3, :1350-1354 v0.17.2;
    # nfd-api-controller.go:137-164 v0.16.3). It waits for that informer's cache before serving
    # health, so without list/watch it never becomes healthy. From v0.17.3 only with the
    # NodeFeatureGroupAPI gate, off by default (nfd-master.go:1364 v0.17.3, :1304 v0.18.2).
    master_informs_groups: bool = False


_METRICS = Listener(args=("-metrics=8081",), ports=(("metrics", 8081),))
# 0.16.x-0.17.x: metrics on -metrics (8081), the gRPC health service on 8082. 0.16.0-0.16.5 have no
# -grpc-health flag (the port is a constant in cmd/nfd-{master,worker}/main.go v0.16.3; the flag
# appears in v0.16.6), so it is never passed: an unknown flag stops the daemon.
_GRPC_HEALTH = Listener(
    args=("-metrics=8081",), ports=(("metrics", 8081), ("health", 8082)), health="grpc", health_port=8082
)
# 0.18+: one plain HTTP port, -port (8080), for /healthz and /metrics (cmd/nfd-*/main.go v0.18.2,
# v0.19.0); -metrics and -grpc-health are gone.
_HTTP = Listener(args=(f"-port={PORT}",), ports=(("http", PORT),), health="http")

TRAITS: tuple[Traits, ...] = (
    # v0.14.2: nfd-master always runs its (deprecated) gRPC server on -port (8080) with the gRPC
    # health service registered on it (pkg/nfd-master/nfd-master.go runGrpcServer), plain text
    # without the -ca/-cert/-key flags; the worker serves metrics only; nfd-gc has no listener.
    Traits(
        "0.14",
        worker=_METRICS,
        gc=Listener(),
        master=Listener(
            args=("-port=8080", "-metrics=8081"),
            ports=(("grpc", 8080), ("metrics", 8081)),
            health="grpc",
            health_port=8080,
        ),
        owner_refs=False,
        reads_own_pod=False,
        swaps=False,
    ),
    # v0.15.4: nfd-gc gains -metrics (cmd/nfd-gc/main.go); the worker sets owner references.
    Traits(
        "0.15",
        worker=_METRICS,
        gc=_METRICS,
        master=Listener(
            args=("-port=8080", "-metrics=8081"),
            ports=(("grpc", 8080), ("metrics", 8081)),
            health="grpc",
            health_port=8080,
        ),
        owner_refs=True,
        reads_own_pod=False,
        swaps=False,
    ),
    # v0.16.3, v0.16.6, v0.17.x: with the NodeFeature API on (the default, locked on in 0.17) the
    # master's gRPC server no longer starts, health moves to its own port; nfd-gc still has none.
    Traits(
        "0.16",
        worker=_GRPC_HEALTH,
        master=_GRPC_HEALTH,
        gc=_METRICS,
        owner_refs=True,
        reads_own_pod=True,
        swaps=True,
        master_informs_groups=True,
    ),
    # v0.17.3: the NodeFeatureGroup informer goes behind its feature gate.
    Traits(
        "0.17.3",
        worker=_GRPC_HEALTH,
        master=_GRPC_HEALTH,
        gc=_METRICS,
        owner_refs=True,
        reads_own_pod=True,
        swaps=True,
    ),
    Traits(
        "0.18",
        worker=_HTTP,
        master=_HTTP,
        gc=_HTTP,
        owner_refs=True,
        reads_own_pod=True,
        swaps=True,
    ),
)


def traits(image: str) -> Traits:
    return for_version(image, TRAITS)


# The CRDs each release publishes, kept unmodified (third_party/node-feature-discovery/README.md).
VENDORED = Path(__file__).parents[4] / "third_party" / "node-feature-discovery"


@functools.cache
def _sources() -> dict:
    return yaml_files.load((VENDORED / "SOURCES.yaml").read_text())


def release_crds(version: str) -> tuple[dict, ...]:
    """The CustomResourceDefinitions NFD `version` (`0.18.2`) publishes, as OperandSpec.crds: name,
    controller-gen's annotations and spec, in the file's order."""
    tag = f"v{version}"
    row = _sources()["releases"].get(tag)
    if row is None:
        raise ConfigError(
            f"gpu-platform:operator.overrides.node-feature-discovery: NFD {tag} publishes CRDs this "
            f"repository does not hold (third_party/node-feature-discovery/SOURCES.yaml has "
            f"{', '.join(_sources()['releases'])}); add them with `python -m tools.vendor.nfd_crds {tag}`"
        )
    return _read(row["file"], row["sha256"])


@functools.cache
def _read(file: str, sha256: str) -> tuple[dict, ...]:
    data = (VENDORED / file).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha256:
        # A vendored file edited by hand would install CRDs no release publishes.
        raise RuntimeError(
            f"{VENDORED / file}: sha256 is not {sha256} as SOURCES.yaml records; restore it from the "
            "release (python -m tools.vendor.nfd_crds)"
        )
    return tuple(
        {"name": d["metadata"]["name"], "annotations": d["metadata"].get("annotations", {}), "spec": d["spec"]}
        for d in yaml_files.load_all(data)
        if d
    )


def _probe(listener: Listener, **timing: int) -> dict | None:
    if listener.health == "http":
        return {"httpGet": {"path": "/healthz", "port": "http"}, **timing}
    if listener.health == "grpc":
        return {"grpc": {"port": listener.health_port}, **timing}
    return None


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["node-feature-discovery"]
    t = traits(image)
    # Requests, limits and probe timings are the chart's values.yaml defaults.
    worker = Container(
        name="worker",
        image=image,
        command=("nfd-worker",),
        args=(f"-config={_CONFIG_DIR}/nfd-worker.conf", *t.worker.args),
        # With owner references the worker names its pod (and through it the DaemonSet) as owner
        # of its NodeFeature, so the object goes when the DaemonSet does.
        field_env=(
            ("NODE_NAME", "spec.nodeName"),
            *((("POD_NAME", "metadata.name"), ("POD_UID", "metadata.uid")) if t.owner_refs else ()),
        ),
        host_paths=(
            "host-boot",
            "host-os-release",
            "host-sys",
            "host-usr-lib",
            "host-lib",
            *(("host-proc-swaps",) if t.swaps else ()),
            "features-d",
        ),
        mounts=(("worker-config", _CONFIG_DIR, True),),
        requests=("5m", "64Mi"),
        memory_limit="512Mi",
        ports=t.worker.ports,
        liveness=_probe(t.worker, initialDelaySeconds=10),
        readiness=_probe(t.worker, initialDelaySeconds=5, failureThreshold=10),
    )
    master = Container(
        name="master",
        image=image,
        command=("nfd-master",),
        # Leader election as in the chart: a rolling update runs two masters for a while.
        args=("-enable-leader-election", *t.master.args),
        # Its node gets the master-version annotation; the lease holder identity starts with it.
        field_env=(("NODE_NAME", "spec.nodeName"),),
        requests=("100m", "128Mi"),
        memory_limit="4Gi",
        ports=t.master.ports,
        # Health answers only once the informer caches have synced: the chart's startup probe
        # (30 failures, since v0.17) holds the liveness probe off until then.
        startup=_probe(t.master, failureThreshold=30),
        liveness=_probe(t.master),
        readiness=_probe(t.master, failureThreshold=10),
    )
    gc = Container(
        name="gc",
        image=image,
        command=("nfd-gc",),
        args=("-gc-interval=1h", *t.gc.args),
        requests=("10m", "128Mi"),
        memory_limit="1Gi",
        ports=t.gc.ports,
        liveness=_probe(t.gc, initialDelaySeconds=10),
        readiness=_probe(t.gc, initialDelaySeconds=5),
    )

    def host(volume: str, path: str, mount: str, type_: str = "") -> HostPath:
        return HostPath(volume, path, mount, True, type_)

    return OperandSpec(
        operand="node-feature-discovery",
        reason=(
            "reads the host's PCI, kernel, memory and OS data (/sys, /boot, /lib, /usr/lib, "
            f"{'/proc/swaps, ' if t.swaps else ''}/etc/os-release) and GFD's feature files (features.d), "
            "all read-only, to label nodes"
        ),
        containers=(worker,),
        host_paths=(
            host("host-boot", "/boot", "/host-boot"),
            host("host-os-release", "/etc/os-release", "/host-etc/os-release"),
            host("host-sys", "/sys", "/host-sys"),
            host("host-usr-lib", "/usr/lib", "/host-usr/lib"),
            host("host-lib", "/lib", "/host-lib"),
            # The memory source's swap detection (0.16+); without it every pass logs an error.
            *((host("host-proc-swaps", "/proc/swaps", "/host-proc/swaps"),) if t.swaps else ()),
            # GFD writes its labels here; the worker publishes them. The path is fixed in the
            # image (source/local/local.go), so it is mounted where it is on the host.
            host(
                "features-d",
                "/etc/kubernetes/node-feature-discovery/features.d",
                "/etc/kubernetes/node-feature-discovery/features.d",
                "DirectoryOrCreate",
            ),
        ),
        config_maps={"worker-config": {"nfd-worker.conf": WORKER_CONFIG}},
        # The worker gets, creates and updates its own node's NodeFeature; with owner references
        # also delete (see Traits.owner_refs; the chart's role.yaml has it only since v0.17) and,
        # from 0.16, get on its own pod.
        namespace_rules=(
            {
                "apiGroups": [GROUP],
                "resources": ["nodefeatures"],
                "verbs": ["create", "get", "update", *(("delete",) if t.owner_refs else ())],
            },
            *(({"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},) if t.reads_own_pod else ()),
        ),
        tolerate_all=True,
        crds=release_crds(image_version(image)),
        deployments=(
            Deployment(
                "master",
                (master,),
                # Narrower than the chart's clusterrole.yaml, to what the master calls with the flags
                # above, the same calls from v0.14.2 (through pkg/apihelper) to v0.19.0 (through
                # the client directly): node get/list/patch and a status patch for extended resources (update is
                # only for `-prune`; no node informer, so no watch); informers (list, watch) on
                # NodeFeatures and NodeFeatureRules. NodeFeatureGroups always from v0.16.3 to v0.17.2,
                # later only behind the NodeFeatureGroupAPI feature gate (off by default:
                # pkg/features/features.go; Traits.master_informs_groups), and namespaces only with a
                # nodeFeatureNamespaceSelector in the master config.
                cluster_rules=(
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "patch"]},
                    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]},
                    {
                        "apiGroups": [GROUP],
                        "verbs": ["list", "watch"],
                        "resources": [
                            "nodefeatures",
                            "nodefeaturerules",
                            *(("nodefeaturegroups",) if t.master_informs_groups else ()),
                        ],
                    },
                ),
                # Creating a lease cannot be limited by name; reading and renewing it can.
                namespace_rules=(
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create"]},
                    {
                        "apiGroups": ["coordination.k8s.io"],
                        "resources": ["leases"],
                        "resourceNames": [LEADER_LEASE],
                        "verbs": ["get", "update"],
                    },
                    *(
                        ({"apiGroups": [GROUP], "resources": ["nodefeaturegroups/status"], "verbs": ["update"]},)
                        if t.master_informs_groups
                        else ()
                    ),
                ),
            ),
            Deployment(
                "gc",
                (gc,),
                # An informer on nodes (typed up to 0.16, metadata-only from 0.17); paged lists and deletes of NodeFeatures in every
                # namespace. nfd-gc also lists and deletes NodeResourceTopologies on every pass and
                # node deletion whatever is installed; no topology updater runs here, so the right
                # reaches no object, and without it each pass logs a Forbidden error and counts a
                # delete error in its metrics.
                cluster_rules=(
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
                    {"apiGroups": [GROUP], "resources": ["nodefeatures"], "verbs": ["list", "delete"]},
                    {
                        "apiGroups": ["topology.node.k8s.io"],
                        "resources": ["noderesourcetopologies"],
                        "verbs": ["list", "delete"],
                    },
                ),
            ),
        ),
    )


class NodeFeatureDiscovery(Operand):
    """`gpu-platform:operands:NodeFeatureDiscovery`."""
