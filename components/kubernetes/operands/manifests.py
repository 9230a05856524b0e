"""An operand's spec rendered into Kubernetes objects as plain data (what the component registers and
what the tests read): a DaemonSet that tolerates the GPU taint, selects nodes by its gating label and
carries audit annotations read from its own rendered pod spec, and unprivileged Deployments for the
cluster-wide parts."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from components.kubernetes.operands.spec import ClaimTemplate, Container, Deployment, OperandArgs, OperandSpec
from gpu_platform.config.audit import Audit
from gpu_platform.interface import contract, workloads

PRIORITY_CLASS = "system-node-critical"


# What `pulumi up` waits for on an operand DaemonSet: the controller has seen its spec, not every
# node's pod ready (stages.py says why).
AWAIT = {"pulumi.com/waitFor": "jsonpath={.status.observedGeneration}"}


# On an operand's pod template: a digest of its config maps' content (config_hash below).
CONFIG_HASH_KEY = "gpu-platform.io/config-hash"


def audit_annotations(pod_spec: dict, reason: str, audit: Audit) -> dict[str, str]:
    """The audit annotations of a workload that keeps a privilege, read from its rendered pod spec by
    the reader the policy pack and the audit report use (gpu_platform/interface/workloads.py), so what the
    annotations declare is what the policy checks."""
    if not workloads.privileges(pod_spec):
        return {}
    return {
        contract.AUDIT_REASON: reason,
        contract.AUDIT_HOST_PATHS: ",".join(f"{p}:{m}" for p, m in workloads.host_path_modes(pod_spec).items()),
        contract.AUDIT_OWNER: audit.owner,
        contract.AUDIT_APPROVAL: audit.approval,
    }


def pod_template_audit(annotations: dict[str, str]) -> dict[str, str]:
    """The audit annotations a pod template carries: all but the approval id, which stays on the
    workload object (the policy reads it there first, gpu_platform/interface/workloads.py). A new approval id
    then updates each DaemonSet in place instead of restarting every GPU operand on every node."""
    return {k: v for k, v in annotations.items() if k != contract.AUDIT_APPROVAL}


def _security_context(c: Container) -> dict:
    if c.privileged:
        # The runtime gives a privileged container every capability and no seccomp filter whatever the
        # context says (containerd v2.2.4 pkg/oci/spec_opts.go:1423-1434), and the API server refuses
        # allowPrivilegeEscalation: false with it; a read-only root still holds.
        return {"privileged": True, "runAsUser": 0, **({"readOnlyRootFilesystem": True} if c.read_only_root else {})}
    context: dict[str, Any] = {
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"], **({"add": list(c.capabilities)} if c.capabilities else {})},
        "readOnlyRootFilesystem": c.read_only_root,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # Talking to the GPU through NVML needs the device nodes' group or root; images run as root.
    context.update({"runAsUser": 0} if c.run_as_root else {"runAsNonRoot": True, "runAsUser": 65532})
    return context


# Where client-go's in-cluster config reads the token, CA and namespace, and the projected volume the
# kubelet mounts there when a pod automounts its token (the same three sources: a bound token of
# about an hour, the cluster's root CA, the pod's namespace), for the containers that alone get it.
TOKEN_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME = {
    "name": "kube-api-access",
    "projected": {
        "defaultMode": 0o644,
        "sources": [
            {"serviceAccountToken": {"path": "token", "expirationSeconds": 3607}},
            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}]}},
        ],
    },
}


def _token(spec: OperandSpec) -> tuple[bool, bool]:
    """(the pod automounts its token, some containers mount it themselves)."""
    rights = bool(spec.cluster_rules or spec.namespace_rules)
    per_container = any(c.api_token for c in (*spec.init_containers, *spec.containers))
    return rights and not per_container, rights and per_container


def _container(c: Container, spec: OperandSpec) -> dict:
    by_volume = {hp.volume: hp for hp in spec.host_paths}
    mounts = (
        [
            {
                "name": v,
                "mountPath": by_volume[v].mount,
                "readOnly": by_volume[v].read_only,
                **({"mountPropagation": by_volume[v].propagation} if by_volume[v].propagation else {}),
            }
            for v in c.host_paths
        ]
        + [{"name": v, "mountPath": path, "readOnly": ro} for v, path, ro in c.mounts]
        + (
            [{"name": TOKEN_VOLUME["name"], "mountPath": TOKEN_DIR, "readOnly": True}]
            if c.api_token and _token(spec)[1]
            else []
        )
    )
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
            "limits": {"memory": c.memory_limit, **({"cpu": c.cpu_limit} if c.cpu_limit else {})},
            **({"claims": [{"name": claim} for claim in c.claims]} if c.claims else {}),
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
        "lifecycle": {"preStop": {"exec": {"command": list(c.pre_stop)}}} if c.pre_stop else None,
    }
    body.update({k: v for k, v in optional.items() if v})
    return body


def _declared(args: OperandArgs) -> dict[str, str]:
    """What a workload declares for the policy pack, which checks its images before it exists."""
    found = {contract.OPERATOR_RELEASE_KEY: args.release}
    if args.overrides:
        found[contract.OVERRIDES_KEY] = contract.format_overrides(args.overrides)
    return found


def deployment_manifest(spec: OperandSpec, part: Deployment, args: OperandArgs, name: str) -> dict:
    """A Deployment of a cluster-wide part: unprivileged by construction (host access belongs to
    the DaemonSet, where the audit annotations are)."""
    containers = list(part.containers)
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


def daemonset_manifest(
    spec: OperandSpec, args: OperandArgs, name: str, configmap_names: dict[str, str], account: str | None = None
) -> dict:
    """The DaemonSet's metadata and spec, as plain data (tests and the audit read the same); `account`:
    the service account, when not `name` (a variant's is its operand's)."""
    labels = {
        "app.kubernetes.io/name": spec.app_name,
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
    tolerations = (
        [{"operator": "Exists"}]
        if spec.tolerate_all
        else [{"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": contract.GPU_TAINT_EFFECT}]
    )
    volumes = (
        [
            {"name": hp.volume, "hostPath": {"path": hp.path, **({"type": hp.type} if hp.type else {})}}
            for hp in spec.host_paths
        ]
        + [{"name": d, "emptyDir": {}} for d in spec.empty_dirs]
        + [{"name": suffix, "configMap": {"name": cm}} for suffix, cm in configmap_names.items()]
        + ([TOKEN_VOLUME] if _token(spec)[1] else [])
    )
    pod_spec: dict[str, Any] = {
        "serviceAccountName": account or name,
        "automountServiceAccountToken": _token(spec)[0],
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
        "affinity": node_affinity(spec.node_affinity),
    }
    pod_spec.update({k: v for k, v in optional.items() if v})
    if spec.claim_templates:
        pod_spec["resourceClaims"] = [
            {"name": t.claim, "resourceClaimTemplateName": claim_template_name(name, t)} for t in spec.claim_templates
        ]
    annotations = {**_declared(args), **audit_annotations(pod_spec, spec.reason, args.audit)}
    pod_annotations = {
        **pod_template_audit(annotations),
        **({CONFIG_HASH_KEY: config_hash(spec)} if spec.config_maps else {}),
    }
    return {
        "metadata": {"name": name, "labels": labels, "annotations": {**annotations, **AWAIT}},
        "spec": {
            "selector": {"matchLabels": {"app.kubernetes.io/name": spec.app_name}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": labels, "annotations": pod_annotations},
                "spec": pod_spec,
            },
        },
    }


def node_affinity(terms: tuple[tuple[dict[str, Any], ...], ...]) -> dict | None:
    """A pod's required node affinity from nodeSelectorTerms, each a tuple of matchExpressions."""
    if not terms:
        return None
    required = {"nodeSelectorTerms": [{"matchExpressions": [dict(e) for e in term]} for term in terms]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": required}}


def claim_template_name(object_name: str, template: ClaimTemplate) -> str:
    return f"{object_name}-{template.suffix}"


def claim_template_spec(template: ClaimTemplate) -> dict:
    """A ResourceClaimTemplate's spec in resource.k8s.io/v1, where a request names its devices under
    `exactly` (the v1beta1 form put the fields on the request itself: GPU Operator v26.7.0
    manifests/state-dcgm-exporter/0400_resourceclaimtemplate.yaml:11-19 renders both)."""
    exactly: dict[str, Any] = {"deviceClassName": template.device_class, "allocationMode": template.allocation_mode}
    # A count belongs to ExactCount only (kubernetes/api v0.34.0 resource/v1/types.go:839-866: "Count is used
    # only when the count mode is ExactCount", one of AllocationMode's oneOf fields).
    if template.allocation_mode == "ExactCount":
        exactly["count"] = template.count
    if template.admin_access:
        exactly["adminAccess"] = True
    return {"spec": {"devices": {"requests": [{"name": template.request, "exactly": exactly}]}}}
