"""What an operand is, as plain data: its containers, host paths, RBAC rules, config maps and the
parts only some operands have (cluster-wide Deployments, Services, CRDs, custom resources). An
operand module builds one `OperandSpec` from the stack's `OperandContext`; nothing here renders or
registers anything."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.config.audit import Audit

# Readiness markers live on the host, so a node that joins later replays the same order.
VALIDATIONS_DIR = "/run/nvidia/validations"


@dataclass(frozen=True)
class HostPath:
    """A host directory or file a container mounts; every one shows up in the audit annotation."""

    volume: str
    path: str
    mount: str
    read_only: bool = True
    type: str = ""  # "" | Directory | DirectoryOrCreate | File | Socket ...
    # "" (None) | HostToContainer | Bidirectional: Bidirectional (mounts made in the container reach
    # the host) is allowed only to a privileged container (Kubernetes API, VolumeMount.mountPropagation).
    propagation: str = ""


@dataclass(frozen=True)
class Container:
    name: str
    image: str
    command: tuple[str, ...] = ()
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    host_paths: tuple[str, ...] = ()  # volume names of the operand's HostPaths this container mounts
    mounts: tuple[tuple[str, str, bool], ...] = ()  # other volumes: (volume, mountPath, readOnly)
    field_env: tuple[tuple[str, str], ...] = ()  # (NAME, fieldPath) from the downward API
    privileged: bool = False
    capabilities: tuple[str, ...] = ()  # added on top of dropping ALL
    run_as_root: bool = False
    read_only_root: bool = True
    requests: tuple[str, str] = ("10m", "32Mi")  # cpu, memory
    memory_limit: str = "256Mi"
    # None: no CPU limit (a node agent throttled by a CFS quota when it is busiest; tools/security/accepted.yaml
    # CKV_K8S_11); set where throttling costs nothing (a one-off check, a sleep loop).
    cpu_limit: str | None = None
    ports: tuple[tuple[str, int], ...] = ()
    readiness: dict | None = None
    liveness: dict | None = None
    startup: dict | None = None  # holds liveness and readiness off until it first succeeds
    pre_stop: tuple[str, ...] = ()  # a command the kubelet runs in the container before stopping it
    # The pod's resourceClaims (ClaimTemplate.claim) this container uses: listed in its
    # resources.claims, without which the kubelet injects none of the claim's devices into it.
    claims: tuple[str, ...] = ()
    # This container alone gets the pod's API token (the others of the pod none): set on the
    # containers that make API calls when others in the pod make none (config-manager beside the plugin).
    api_token: bool = False


@dataclass(frozen=True)
class OperandSpec:
    operand: str  # matrix image key and component name
    reason: str  # why this operand needs what privilege it keeps (audit annotation)
    containers: tuple[Container, ...]
    init_containers: tuple[Container, ...] = ()
    host_paths: tuple[HostPath, ...] = ()
    empty_dirs: tuple[str, ...] = ()
    config_maps: dict[str, dict[str, str]] = field(default_factory=dict)  # suffix -> data, mounted by name
    cluster_rules: tuple[dict, ...] = ()
    namespace_rules: tuple[dict, ...] = ()
    host_pid: bool = False
    host_network: bool = False
    runtime_class: str | None = None
    share_process_namespace: bool = False
    node_selector: dict[str, str] | None = None  # None: the gating label
    tolerate_all: bool = False  # NFD's worker runs on every node, whatever its taints
    deployments: tuple[Deployment, ...] = ()
    services: tuple[Service, ...] = ()
    crds: tuple[dict, ...] = ()  # CustomResourceDefinitions: metadata "name", optional "annotations", "spec"
    custom_resources: tuple[dict, ...] = ()  # apiVersion, kind, name suffix, labels, spec (e.g. a ServiceMonitor)
    # resource.k8s.io/v1 DeviceClasses (cluster-wide): (name, CEL selector) each, what a DRA driver's
    # devices are claimed by.
    device_classes: tuple[tuple[str, str], ...] = ()
    # resource.k8s.io/v1 ResourceClaimTemplates, one claim of the pod each (DRA: devices by class).
    claim_templates: tuple[ClaimTemplate, ...] = ()
    # The DaemonSet's, service account's and RBAC objects' name; None: nvidia-<operand>. An image that
    # looks itself up by name (the validator) gets the name it looks up.
    object_name: str | None = None
    # The GPU Operator's `app=` pod label for this operand, which other images select pods by (the MIG
    # manager waits for and restarts the GPU clients by it); kept beside our app.kubernetes.io labels.
    app_label: str | None = None
    # Required node affinity beyond the gating label: nodeSelectorTerms (any one matches), each a tuple
    # of matchExpressions.
    node_affinity: tuple[tuple[dict[str, Any], ...], ...] = ()
    # More DaemonSets of the operand, for other nodes (their node_affinity) with other containers, under
    # its service account, rules and config maps: the MIG pools' plugin, GFD and exporter (mig_access.py).
    variants: tuple[OperandSpec, ...] = ()
    # A variant's name: its DaemonSet is <name>-<variant>, its pods' app.kubernetes.io/name
    # <operand>-<variant>, so no two DaemonSets' selectors match each other's pods.
    variant: str = ""

    @property
    def name(self) -> str:
        return self.object_name or f"nvidia-{self.operand}"

    @property
    def app_name(self) -> str:
        """The pods' app.kubernetes.io/name, what the DaemonSet selects them by."""
        return f"{self.operand}-{self.variant}" if self.variant else self.operand


@dataclass(frozen=True)
class Deployment:
    """A cluster-wide part of an operand (NFD's master, its garbage collector): no host access, its
    own service account and RBAC, so each part holds only the rights it uses."""

    suffix: str
    containers: tuple[Container, ...]
    cluster_rules: tuple[dict, ...] = ()
    namespace_rules: tuple[dict, ...] = ()
    replicas: int = 1


@dataclass(frozen=True)
class ClaimTemplate:
    """A ResourceClaimTemplate (resource.k8s.io/v1) and the pod claim made from it: every pod gets its
    own ResourceClaim with one request (`exactly`: a device class, how many, admin access or not)."""

    claim: str  # the pod's resourceClaims[].name, which containers list in resources.claims
    suffix: str  # the template's name is <operand object name>-<suffix>
    request: str  # the request's name inside the claim
    device_class: str
    allocation_mode: str = "All"  # All | ExactCount
    count: int = 1  # how many devices an ExactCount request takes (rendered only for ExactCount)
    # Access to devices whatever else uses them, and no exclusive hold on them; the API server admits it
    # only in a namespace labelled resource.kubernetes.io/admin-access=true (components/kubernetes/namespace.py).
    admin_access: bool = False


@dataclass(frozen=True)
class Service:
    """A Service in front of the DaemonSet's pods (DCGM exporter's metrics)."""

    port_name: str
    port: int


@dataclass(frozen=True)
class OperandArgs:
    spec: OperandSpec
    namespace: pulumi.Input[str]
    gate: str | None
    waits_for: str | None  # readiness marker file the pods wait for on their node
    wait_image: str  # an image with a shell, for the wait init container (the validator's)
    audit: Audit
    release: str
    provider: k8s.Provider
    overrides: dict[str, str] = field(default_factory=dict)  # operator.overrides, declared for the policy pack
    depends_on: Sequence[pulumi.Resource] = ()


def wait_container(marker: str, image: str) -> Container:
    """Holds a pod on its node until the previous stage left its readiness marker there."""
    return Container(
        name=f"wait-for-{marker}",
        image=image,
        command=("sh", "-c"),
        args=(f"until [ -f {VALIDATIONS_DIR}/{marker} ]; do echo waiting for {marker}; sleep 5; done",),
        host_paths=("run-nvidia-validations",),
    )


def with_wait(spec: OperandSpec, marker: str | None, image: str) -> OperandSpec:
    """The spec with the wait for `marker` first among its init containers, in each of its DaemonSets."""
    if marker is None:
        return spec
    volumes = {hp.volume for hp in spec.host_paths}
    host_paths = spec.host_paths
    if "run-nvidia-validations" not in volumes:
        host_paths += (HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, True, "DirectoryOrCreate"),)
    return replace(
        spec,
        init_containers=(wait_container(marker, image), *spec.init_containers),
        host_paths=host_paths,
        variants=tuple(with_wait(v, marker, image) for v in spec.variants),
    )
