"""Node feature discovery: the worker (on every node, whatever its taints) reads PCI data and labels
the node `feature.node.kubernetes.io/pci-10de.present=true` for NVIDIA GPUs, so GPU presence is
discovered, not assumed; the master turns the workers' NodeFeature objects into node labels; the
garbage collector removes NodeFeature objects of nodes that are gone.

NFD >= 0.16 (the matrix pins 0.18.x) has no gRPC between worker and master: workers publish
`nfd.k8s-sigs.io/v1alpha1` NodeFeature objects, so the CRDs must exist before any NFD pod. The CRDs
here carry an open schema (`x-kubernetes-preserve-unknown-fields`) rather than NFD's generated one:
enough for the API to store the objects; the release's full schemas can replace them without any
other change. Host paths and worker config follow NFD's own Helm chart (worker.yaml: /boot,
/etc/os-release, /sys, /usr/lib, /lib, features.d and source.d, all read-only) and the GPU
Operator's NFD values (pci deviceClassWhitelist, deviceLabelFields: [vendor]). Since NFD 0.17 every
daemon serves /healthz and /metrics on one HTTP port, 8080 by default.
"""

from __future__ import annotations

import yaml

from components.kubernetes.operands.base import Container, Deployment, HostPath, Operand, OperandSpec
from components.kubernetes.operands.context import OperandContext

GROUP = "nfd.k8s-sigs.io"
_PORT = 8080
_CONFIG_DIR = "/etc/nfd-config"

WORKER_CONFIG = yaml.safe_dump({
    "sources": {"pci": {
        # display, 3D and processing accelerators: where NVIDIA GPUs show up on the PCI bus
        "deviceClassWhitelist": ["02", "0200", "0207", "0300", "0302"],
        "deviceLabelFields": ["vendor"],
    }},
}, sort_keys=False)


def _crd(plural: str, kind: str, scope: str = "Namespaced") -> dict:
    return {"name": f"{plural}.{GROUP}", "spec": {
        "group": GROUP,
        "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
        "scope": scope,
        "versions": [{
            "name": "v1alpha1", "served": True, "storage": True,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            **({"subresources": {"status": {}}} if kind == "NodeFeatureGroup" else {}),
        }],
    }}


def _health() -> dict:
    return {"httpGet": {"path": "/healthz", "port": _PORT}, "initialDelaySeconds": 10, "periodSeconds": 10}


def spec(ctx: OperandContext) -> OperandSpec:
    image = ctx.images["node-feature-discovery"]
    read = (("NODE_NAME", "spec.nodeName"), ("POD_NAME", "metadata.name"), ("POD_UID", "metadata.uid"))
    worker = Container(
        name="worker",
        image=image,
        command=("nfd-worker",),
        args=(f"-config={_CONFIG_DIR}/nfd-worker.conf",),
        field_env=read,
        host_paths=("host-boot", "host-os-release", "host-sys", "host-usr-lib", "host-lib", "features-d", "source-d"),
        mounts=(("worker-config", _CONFIG_DIR, True),),
        ports=(("http", _PORT),),
        liveness=_health(),
        readiness=_health(),
    )
    master = Container(
        name="master",
        image=image,
        command=("nfd-master",),
        field_env=(("NODE_NAME", "spec.nodeName"), ("POD_NAME", "metadata.name")),
        requests=("50m", "64Mi"),
        memory_limit="512Mi",
        ports=(("http", _PORT),),
        liveness=_health(),
        readiness=_health(),
    )
    gc = Container(
        name="gc",
        image=image,
        command=("nfd-gc",),
        args=("-gc-interval=1h",),
        field_env=(("NODE_NAME", "spec.nodeName"),),
        ports=(("http", _PORT),),
        liveness=_health(),
        readiness=_health(),
    )

    def host(volume: str, path: str, mount: str) -> HostPath:
        return HostPath(volume, path, mount, True)

    return OperandSpec(
        operand="node-feature-discovery",
        reason="reads the host's PCI, kernel and OS data (/sys, /boot, /lib, /usr/lib, /etc/os-release, all read-only) to label nodes",
        containers=(worker,),
        host_paths=(
            host("host-boot", "/boot", "/host-boot"),
            host("host-os-release", "/etc/os-release", "/host-etc/os-release"),
            host("host-sys", "/sys", "/host-sys"),
            host("host-usr-lib", "/usr/lib", "/host-usr/lib"),
            host("host-lib", "/lib", "/host-lib"),
            # GFD writes its labels here; the worker publishes them.
            HostPath("features-d", "/etc/kubernetes/node-feature-discovery/features.d", "/etc/kubernetes/node-feature-discovery/features.d", True, "DirectoryOrCreate"),
            HostPath("source-d", "/etc/kubernetes/node-feature-discovery/source.d", "/etc/kubernetes/node-feature-discovery/source.d", True, "DirectoryOrCreate"),
        ),
        config_maps={"worker-config": {"nfd-worker.conf": WORKER_CONFIG}},
        # The worker publishes its own node's NodeFeature object and names its pod as the owner.
        namespace_rules=(
            {"apiGroups": [GROUP], "resources": ["nodefeatures"], "verbs": ["create", "get", "update", "delete"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]},
        ),
        tolerate_all=True,
        crds=(
            _crd("nodefeatures", "NodeFeature"),
            _crd("nodefeaturerules", "NodeFeatureRule", "Cluster"),
            _crd("nodefeaturegroups", "NodeFeatureGroup"),
        ),
        deployments=(
            Deployment(
                "master",
                (master,),
                cluster_rules=(
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
                    {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch", "update"]},
                    {"apiGroups": [GROUP], "resources": ["nodefeatures", "nodefeaturerules", "nodefeaturegroups"], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [GROUP], "resources": ["nodefeaturegroups/status"], "verbs": ["patch", "update"]},
                ),
                namespace_rules=({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["create", "get", "update"]},),
            ),
            Deployment(
                "gc",
                (gc,),
                cluster_rules=(
                    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
                    {"apiGroups": [GROUP], "resources": ["nodefeatures"], "verbs": ["list", "watch", "delete"]},
                ),
            ),
        ),
    )


class NodeFeatureDiscovery(Operand):
    """`gpu-platform:operands:NodeFeatureDiscovery`."""
