"""The shape every operand shares, built once.

An operand file describes only what is particular to it (an `OperandSpec`: containers, host paths,
RBAC rules, config maps); `Operand` turns the spec into a service account, least-privilege RBAC,
config maps and a DaemonSet that tolerates the GPU taint, selects nodes by its gating label, waits
per node for the previous stage's readiness marker, and carries audit annotations derived from its
real privileges (so they cannot drift from the manifest). What only some operands have is data too:
cluster-wide Deployments with their own identity (NFD's master and GC), Services selecting the
DaemonSet's pods, CRDs the operand's image needs, and custom resources (a ServiceMonitor).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Sequence, TypeVar

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import contract, versions, workloads
from gpu_platform.config import Audit, ConfigError

# Readiness markers live on the host, so a node that joins later replays the same order.
VALIDATIONS_DIR = "/run/nvidia/validations"
PRIORITY_CLASS = "system-node-critical"
# What `pulumi up` waits for on an operand DaemonSet: the controller has seen its spec, not every
# node's pod ready (stages.py says why).
AWAIT = {"pulumi.com/waitFor": "jsonpath={.status.observedGeneration}"}
# On an operand's pod template: a digest of its config maps' content (config_hash below).
CONFIG_HASH_KEY = "gpu-platform.io/config-hash"


class VersionRow(Protocol):
    since: str  # the first image version this row describes; it holds until the next row's


Row = TypeVar("Row", bound=VersionRow)
_LEADING_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)")


def image_version(image: str) -> str:
    """The version in an image reference's tag: `...:v1.17.8-ubuntu20.04` -> `1.17.8`,
    `...:v0.18.2-minimal` -> `0.18.2` (flavour suffixes after the numbers are ignored). A tag that
    carries two versions gives the first: DCGM exporter's `3.2.6-3.1.9-ubuntu20.04` -> `3.2.6`."""
    name = image.rsplit("/", 1)[-1]
    if ":" not in name:
        raise ValueError(f"image {image!r} has no tag; operand traits are chosen by the tag's version")
    found = _LEADING_VERSION.match(versions.image_tag_version(name.rsplit(":", 1)[1]))
    if not found:
        raise ValueError(f"image {image!r}: tag is not a version; operand traits are chosen by it")
    return found.group(1)


def row_for(version: str, rows: Sequence[Row], what: str) -> Row:
    """The row of a version table (oldest first) that describes `version`. Older than the first row
    is an error: nothing here says what such an image expects."""
    chosen = [r for r in rows if versions.at_least(version, r.since)]
    if not chosen:
        # Every release's own images are covered (tests render all of them), so only an override
        # can be older than a table.
        raise ConfigError(
            f"gpu-platform:operator.overrides: {what}: version {version} is older than any this "
            f"platform renders ({rows[0].since} and later)"
        )
    return chosen[-1]


def for_version(image: str, rows: Sequence[Row]) -> Row:
    """The row of a version table that describes `image`, by its tag's version."""
    return row_for(image_version(image), rows, f"image {image!r}")


@dataclass(frozen=True)
class HostPath:
    """A host directory or file a container mounts; every one shows up in the audit annotation."""

    volume: str
    path: str
    mount: str
    read_only: bool = True
    type: str = ""  # "" | Directory | DirectoryOrCreate | File | Socket ...


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
    ports: tuple[tuple[str, int], ...] = ()
    readiness: Optional[dict] = None
    liveness: Optional[dict] = None
    startup: Optional[dict] = None  # holds liveness and readiness off until it first succeeds


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
    runtime_class: Optional[str] = None
    share_process_namespace: bool = False
    node_selector: Optional[dict[str, str]] = None  # None: the gating label
    tolerate_all: bool = False  # NFD's worker runs on every node, whatever its taints
    deployments: tuple["Deployment", ...] = ()
    services: tuple["Service", ...] = ()
    crds: tuple[dict, ...] = ()  # CustomResourceDefinition specs, each with its metadata name under "name"
    custom_resources: tuple[dict, ...] = ()  # apiVersion, kind, name suffix, labels, spec (e.g. a ServiceMonitor)
    # The DaemonSet's, service account's and RBAC objects' name; None: nvidia-<operand>. An image that
    # looks itself up by name (the validator) gets the name it looks up.
    object_name: Optional[str] = None
    # The GPU Operator's `app=` pod label for this operand, which other images select pods by (the MIG
    # manager waits for and restarts the GPU clients by it); kept beside our app.kubernetes.io labels.
    app_label: Optional[str] = None

    @property
    def name(self) -> str:
        return self.object_name or f"nvidia-{self.operand}"


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
class Service:
    """A Service in front of the DaemonSet's pods (DCGM exporter's metrics)."""

    port_name: str
    port: int


@dataclass(frozen=True)
class OperandArgs:
    spec: OperandSpec
    namespace: pulumi.Input[str]
    gate: Optional[str]
    waits_for: Optional[str]  # readiness marker file the pods wait for on their node
    wait_image: str  # an image with a shell, for the wait init container (the validator's)
    audit: Audit
    release: str
    provider: k8s.Provider
    overrides: dict[str, str] = field(default_factory=dict)  # operator.overrides, declared for the policy pack
    depends_on: Sequence[pulumi.Resource] = ()


def audit_annotations(pod_spec: dict, reason: str, audit: Audit) -> dict[str, str]:
    """The audit annotations of a workload that keeps a privilege, read from its rendered pod spec by
    the reader the policy pack and the audit report use (gpu_platform/workloads.py), so what the
    annotations declare is what the policy checks."""
    if not workloads.privileges(pod_spec):
        return {}
    return {
        contract.AUDIT_REASON: reason,
        contract.AUDIT_HOST_PATHS: ",".join(f"{p}:{m}" for p, m in workloads.host_path_modes(pod_spec).items()),
        contract.AUDIT_OWNER: audit.owner,
        contract.AUDIT_APPROVAL: audit.approval,
    }


def _security_context(c: Container) -> dict:
    if c.privileged:
        return {"privileged": True, "runAsUser": 0}
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], **({"add": list(c.capabilities)} if c.capabilities else {})},
        "readOnlyRootFilesystem": c.read_only_root,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # Talking to the GPU through NVML needs the device nodes' group or root; images run as root.
    context.update({"runAsUser": 0} if c.run_as_root else {"runAsNonRoot": True, "runAsUser": 65532})
    return context


def _container(c: Container, spec: OperandSpec) -> dict:
    by_volume = {hp.volume: hp for hp in spec.host_paths}
    mounts = [
        {"name": v, "mountPath": by_volume[v].mount, "readOnly": by_volume[v].read_only} for v in c.host_paths
    ] + [{"name": v, "mountPath": path, "readOnly": ro} for v, path, ro in c.mounts]
    env = [{"name": k, "value": v} for k, v in c.env] + [
        {"name": k, "valueFrom": {"fieldRef": {"fieldPath": path}}} for k, path in c.field_env
    ]
    body: dict[str, Any] = {
        "name": c.name,
        "image": c.image,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": _security_context(c),
        "resources": {
            "requests": {"cpu": c.requests[0], "memory": c.requests[1]},
            "limits": {"memory": c.memory_limit},
        },
    }
    optional = {
        "command": list(c.command),
        "args": list(c.args),
        "env": env,
        "volumeMounts": mounts,
        "ports": [{"name": n, "containerPort": p} for n, p in c.ports],
        "readinessProbe": c.readiness,
        "livenessProbe": c.liveness,
        "startupProbe": c.startup,
    }
    body.update({k: v for k, v in optional.items() if v})
    return body


def wait_container(marker: str, image: str) -> Container:
    """Holds a pod on its node until the previous stage left its readiness marker there."""
    return Container(
        name=f"wait-for-{marker}",
        image=image,
        command=("sh", "-c"),
        args=(f"until [ -f {VALIDATIONS_DIR}/{marker} ]; do echo waiting for {marker}; sleep 5; done",),
        host_paths=("run-nvidia-validations",),
    )


def with_wait(spec: OperandSpec, marker: Optional[str], image: str) -> OperandSpec:
    if marker is None:
        return spec
    volumes = {hp.volume for hp in spec.host_paths}
    host_paths = spec.host_paths
    if "run-nvidia-validations" not in volumes:
        host_paths += (HostPath("run-nvidia-validations", VALIDATIONS_DIR, VALIDATIONS_DIR, True, "DirectoryOrCreate"),)
    return OperandSpec(
        **{
            **spec.__dict__,
            "init_containers": (wait_container(marker, image), *spec.init_containers),
            "host_paths": host_paths,
        }
    )


def _declared(args: OperandArgs) -> dict[str, str]:
    """What a workload declares for the policy pack, which checks its images before it exists."""
    found = {contract.OPERATOR_RELEASE_KEY: args.release}
    if args.overrides:
        found[contract.OVERRIDES_KEY] = contract.format_overrides(args.overrides)
    return found


def deployment_manifest(spec: OperandSpec, part: Deployment, args: OperandArgs, name: str) -> dict:
    """A Deployment of a cluster-wide part: unprivileged by construction (host access belongs to
    the DaemonSet, where the audit annotations are)."""
    containers = [c for c in part.containers]
    if any(c.privileged or c.capabilities or c.host_paths for c in containers):
        raise ValueError(f"{spec.operand}-{part.suffix}: a Deployment part keeps no privilege")
    labels = {
        "app.kubernetes.io/name": f"{spec.operand}-{part.suffix}",
        "app.kubernetes.io/part-of": "gpu-platform",
        contract.OPERAND_KEY: spec.operand,
    }
    annotations = _declared(args)
    volumes = [{"name": d, "emptyDir": {}} for d in sorted({v for c in containers for v, _, _ in c.mounts})]
    pod_spec: dict[str, Any] = {
        "serviceAccountName": name,
        "automountServiceAccountToken": bool(part.cluster_rules or part.namespace_rules),
        "priorityClassName": "system-cluster-critical",
        "containers": [_container(c, spec) for c in containers],
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
        "enableServiceLinks": False,
    }
    if volumes:
        pod_spec["volumes"] = volumes
    return {
        "metadata": {"name": name, "labels": labels, "annotations": annotations},
        "spec": {
            "replicas": part.replicas,
            "selector": {"matchLabels": {"app.kubernetes.io/name": labels["app.kubernetes.io/name"]}},
            "template": {"metadata": {"labels": labels, "annotations": annotations}, "spec": pod_spec},
        },
    }


def config_hash(spec: OperandSpec) -> str:
    """A digest of the operand's config maps: on the pod template, so a change of their content rolls
    the pods (a mounted ConfigMap's new content is not re-read by the images: they read it at start,
    or through config-manager only on a label change)."""
    text = json.dumps(spec.config_maps, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def daemonset_manifest(spec: OperandSpec, args: OperandArgs, name: str, configmap_names: dict[str, str]) -> dict:
    """The DaemonSet's metadata and spec, as plain data (tests and the audit read the same)."""
    labels = {
        "app.kubernetes.io/name": spec.operand,
        "app.kubernetes.io/part-of": "gpu-platform",
        contract.OPERAND_KEY: spec.operand,
        **({"app": spec.app_label} if spec.app_label else {}),
    }
    if spec.node_selector is not None:
        selector = spec.node_selector
    elif args.gate is not None:
        selector = {contract.gate_label(args.gate): "true"}
    else:
        selector = {}
    tolerations = [{"operator": "Exists"}] if spec.tolerate_all else [
        {"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": contract.GPU_TAINT_EFFECT}
    ]
    volumes = [
        {"name": hp.volume, "hostPath": {"path": hp.path, **({"type": hp.type} if hp.type else {})}}
        for hp in spec.host_paths
    ] + [{"name": d, "emptyDir": {}} for d in spec.empty_dirs] + [
        {"name": suffix, "configMap": {"name": cm}} for suffix, cm in configmap_names.items()
    ]
    pod_spec: dict[str, Any] = {
        "serviceAccountName": name,
        "automountServiceAccountToken": bool(spec.cluster_rules or spec.namespace_rules),
        "priorityClassName": PRIORITY_CLASS,
        "tolerations": tolerations,
        "containers": [_container(c, spec) for c in spec.containers],
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
    }
    optional = {
        "nodeSelector": selector,
        "initContainers": [_container(c, spec) for c in spec.init_containers],
        "volumes": volumes,
        "hostPID": spec.host_pid,
        "hostNetwork": spec.host_network,
        "runtimeClassName": spec.runtime_class,
        "shareProcessNamespace": spec.share_process_namespace,
    }
    pod_spec.update({k: v for k, v in optional.items() if v})
    annotations = {**_declared(args), **audit_annotations(pod_spec, spec.reason, args.audit)}
    pod_annotations = {**annotations, **({CONFIG_HASH_KEY: config_hash(spec)} if spec.config_maps else {})}
    return {
        "metadata": {"name": name, "labels": labels, "annotations": {**annotations, **AWAIT}},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": spec.operand}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels, "annotations": pod_annotations},
                "spec": pod_spec,
            },
        },
    }


class Operand(pulumi.ComponentResource):
    """One GPU operand and everything it needs. Subclasses only build their `OperandSpec`."""

    daemonset: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, args: OperandArgs, opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__(f"gpu-platform:operands:{type(self).__name__}", name, None,
                         pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(args.depends_on))))
        spec = with_wait(args.spec, args.waits_for, args.wait_image)
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        object_name = spec.name
        # CRDs first: a workload whose image reads or writes its custom resources starts only
        # after the API knows them.
        crds = [
            k8s.apiextensions.v1.CustomResourceDefinition(
                f"{name}-crd-{crd['name'].split('.')[0]}",
                metadata={"name": crd["name"], "labels": {"app.kubernetes.io/part-of": "gpu-platform"}},
                spec=crd["spec"],
                opts=self._child,
            )
            for crd in spec.crds
        ]
        waits = [*crds, *self._identity(name, object_name, spec.operand, spec.cluster_rules, spec.namespace_rules)]
        configmap_names = {}
        for suffix, data in spec.config_maps.items():
            cm_name = f"{object_name}-{suffix}"
            waits.append(k8s.core.v1.ConfigMap(f"{name}-{suffix}", metadata=self._meta(cm_name, spec.operand), data=data, opts=self._child))
            configmap_names[suffix] = cm_name
        after_waits = pulumi.ResourceOptions.merge(self._child, pulumi.ResourceOptions(depends_on=waits))
        for part in spec.deployments:
            part_name = f"{object_name}-{part.suffix}"
            identity = self._identity(f"{name}-{part.suffix}", part_name, spec.operand, part.cluster_rules, part.namespace_rules)
            manifest = deployment_manifest(spec, part, args, part_name)
            manifest["metadata"]["namespace"] = args.namespace
            k8s.apps.v1.Deployment(
                f"{name}-{part.suffix}",
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=pulumi.ResourceOptions.merge(self._child, pulumi.ResourceOptions(depends_on=[*waits, *identity])),
            )
        manifest = daemonset_manifest(spec, args, object_name, configmap_names)
        manifest["metadata"]["namespace"] = args.namespace
        self.daemonset = k8s.apps.v1.DaemonSet(f"{name}-ds", metadata=manifest["metadata"], spec=manifest["spec"], opts=after_waits)
        selector = manifest["spec"]["selector"]["matchLabels"]
        for service in spec.services:
            k8s.core.v1.Service(
                f"{name}-{service.port_name}-svc",
                metadata=self._meta(object_name, spec.operand),
                spec={
                    "selector": selector,
                    "ports": [{"name": service.port_name, "port": service.port, "targetPort": service.port_name}],
                },
                opts=self._child,
            )
        for resource in spec.custom_resources:
            # A CRD object cannot be schema-checked offline; its CRD comes from outside this stack
            # (e.g. the Prometheus operator), which the stack option asserts.
            metadata = self._meta(f"{object_name}-{resource['suffix']}", spec.operand)
            metadata["labels"].update(resource.get("labels") or {})
            k8s.apiextensions.CustomResource(
                f"{name}-{resource['suffix']}",
                api_version=resource["apiVersion"],
                kind=resource["kind"],
                metadata=metadata,
                spec=resource["spec"],
                opts=self._child,
            )
        self.register_outputs({"daemonset": self.daemonset.metadata["name"]})

    def _meta(self, object_name: str, operand: str) -> dict:
        return {"name": object_name, "namespace": self._args.namespace,
                "labels": {"app.kubernetes.io/name": operand, "app.kubernetes.io/part-of": "gpu-platform"}}

    def _identity(self, name: str, object_name: str, operand: str, cluster_rules: tuple[dict, ...],
                  namespace_rules: tuple[dict, ...]) -> list[pulumi.Resource]:
        """A service account with exactly the given rights. It mounts no API token by default: the
        operand's own pod spec asks for one when it has rights to use, so a pod that another
        process creates under this account (the validator's workload pods) gets none."""
        args, child = self._args, self._child
        meta = self._meta(object_name, operand)
        cluster_meta = {"name": object_name, "labels": meta["labels"]}
        subjects = [{"kind": "ServiceAccount", "name": object_name, "namespace": args.namespace}]
        made: list[pulumi.Resource] = [k8s.core.v1.ServiceAccount(
            f"{name}-sa", metadata=meta, automount_service_account_token=False, opts=child)]
        if cluster_rules:
            role = k8s.rbac.v1.ClusterRole(f"{name}-clusterrole", metadata=cluster_meta, rules=list(cluster_rules), opts=child)
            made.append(k8s.rbac.v1.ClusterRoleBinding(
                f"{name}-clusterrolebinding", metadata=cluster_meta,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role.metadata["name"]},
                subjects=subjects, opts=child))
        if namespace_rules:
            role = k8s.rbac.v1.Role(f"{name}-role", metadata=meta, rules=list(namespace_rules), opts=child)
            made.append(k8s.rbac.v1.RoleBinding(
                f"{name}-rolebinding", metadata=meta,
                role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role.metadata["name"]},
                subjects=subjects, opts=child))
        return made
