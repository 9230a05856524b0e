"""The platform's admission policies: ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1)
and their bindings, each with `validationActions: [Deny]`, that narrow what the operands' service
accounts may do beyond what RBAC can say, and what pods outside the operator namespace may ask the
NVIDIA runtime for. What each rule allows, with sources, is data in gpu_platform/interface/admission.py; this
module only writes it as CEL. The expressions use standard CEL only (has, all, exists, in, size,
matches, startsWith, contains), compiled by the API server with `object` and `oldObject` untyped;
tests/components/kubernetes/test_admission.py evaluates each against admission requests shaped as
the API server sends them.

1. validator pods: pods the validator's service account creates or updates run as that service account, only the
   validator image with upstream's workload commands, on the node the requesting validator pod runs
   on, without host namespaces, volumes (but the service account token), hooks, probes or added
   capabilities; privileged only for upstream's own CUDA workload containers.
2. node writers: the MIG manager and NFD's master change only the node label (and annotation, and
   extended-resource) keys of their namespaces, no taints or other spec, the MIG manager only on its
   own node. Node status writes are checked too (`nodes/status`: NFD patches its extended resources there).
3. GPU access: outside the operator namespace no pod selects devices through the runtime's environment
   variables (but "no device"), CDI annotations or device volume mounts, and `runtimeClassName: nvidia` comes only
   with a GPU request; a pod that can land on a GPU node runs no privileged container and adds no SYS_ADMIN (or
   ALL), but in kube-system and the namespaces the stack lists (the toolkit takes such a container's own device
   variables).
4. DRA ResourceSlices (allocation mode dra): the DRA kubelet plugin writes only its own node's slices
   of its own driver. Built here, registered by the DRA driver's component, which owns it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.interface import admission, contract
from gpu_platform.interface.admission import NodeWriter

LABELS = {"app.kubernetes.io/part-of": "gpu-platform"}


def cel_string(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def cel_list(values) -> str:
    return "[" + ", ".join(cel_string(v) if isinstance(v, str) else cel_list(v) for v in values) + "]"


def service_account(namespace: str, name: str) -> str:
    return f"system:serviceaccount:{namespace}:{name}"


def _is_account(username: str) -> list[dict]:
    return [{"name": "service-account", "expression": f"request.userInfo.username == {cel_string(username)}"}]


# Every container of a pod, ephemeral ones included (added later through pods/ephemeralcontainers).
_CONTAINERS = {
    "name": "containers",
    "expression": (
        "object.spec.containers"
        " + (has(object.spec.initContainers) ? object.spec.initContainers : [])"
        " + (has(object.spec.ephemeralContainers) ? object.spec.ephemeralContainers : [])"
    ),
}
_NODE = {
    "name": "node",
    "expression": (
        f"has(request.userInfo.extra) && {cel_string(admission.NODE_NAME_EXTRA)} in request.userInfo.extra"
        f" ? request.userInfo.extra[{cel_string(admission.NODE_NAME_EXTRA)}][0] : ''"
    ),
}
# Pod creation, and the one update that adds a container. Not other pod updates: what the policies
# check is immutable after creation or (annotations) read by the runtime only when the pod's sandbox
# is created, and denying updates would also deny removing a finalizer from a pod admitted before the
# policy existed, leaving it terminating forever.
_POD_RULES = [
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]},
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["pods/ephemeralcontainers"]},
]
# The validator's own pods on update too: a pod update may change spec.containers[*].image and
# spec.initContainers[*].image (Kubernetes ValidatePodUpdate), and the kubelet restarts the container
# with the new image, so a validator (whose Role grants update and patch on pods: NVIDIA/gpu-operator
# v25.10.1 assets/state-operator-validation/0200_role.yaml) could swap the image of its privileged CUDA
# container after admission. Upstream never updates these pods (cmd/nvidia-validator/main.go at
# v25.10.1 has no Pods().Update or Patch), and the match condition keeps the rule to its account, so
# no one else's finalizer removal is affected.
_VALIDATOR_POD_RULES = [
    {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["pods"]},
    _POD_RULES[1],
]


def validator_pods(namespace: str, account: str, images: Sequence[str]) -> dict:
    """The spec of the validator-pods policy."""
    privileged = "has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged"
    upstream = (
        f"has(c.command) && c.command == {cel_list(admission.PRIVILEGED_COMMAND)}"
        f" && has(c.args) && c.args in {cel_list(admission.PRIVILEGED_ARGS)}"
        f" && !has(c.envFrom) && (!has(c.env) || c.env.all(e, e.name in {cel_list(admission.PRIVILEGED_ENV)}))"
    )
    # What else could run code, or put a file where `sh -c vectorAdd` looks for it, in a container
    # that (in the CUDA pod) is privileged: none of upstream's containers sets any of it.
    runs_code = " || ".join(
        f"has(c.{f})"
        for f in (
            "lifecycle",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "workingDir",
            "envFrom",
            "volumeDevices",
        )
    )
    token_mount = f"m.mountPath == {cel_string(admission.TOKEN_MOUNT_PATH)} && has(m.readOnly) && m.readOnly && !has(m.subPath) && !has(m.subPathExpr)"
    token_volume = (
        "has(v.projected) && has(v.projected.sources) && v.projected.sources.all(s, has(s.serviceAccountToken)"
        f" || has(s.downwardAPI) || (has(s.configMap) && s.configMap.name == {cel_string(admission.TOKEN_CA_CONFIGMAP)}))"
    )
    sa = cel_string(account)
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": _VALIDATOR_POD_RULES},
        "matchConditions": _is_account(service_account(namespace, account)),
        "variables": [_CONTAINERS, _NODE],
        "validations": [
            {
                "expression": (
                    f"has(object.spec.serviceAccountName) && object.spec.serviceAccountName == {sa}"
                    f" && (!has(object.spec.serviceAccount) || object.spec.serviceAccount == {sa})"
                ),
                "message": f"the validator's pods run as its own service account ({account}), never with another account's token",
            },
            {
                "expression": f"variables.containers.all(c, c.image in {cel_list(sorted(images))})",
                "message": f"the validator's pods run only the validator image ({', '.join(sorted(images))})",
            },
            {
                "expression": "variables.node != '' && has(object.spec.nodeName) && object.spec.nodeName == variables.node",
                "message": "the validator creates pods only on the node its own pod runs on (spec.nodeName = the token's node)",
            },
            {
                "expression": (
                    "!(has(object.spec.hostNetwork) && object.spec.hostNetwork)"
                    " && !(has(object.spec.hostPID) && object.spec.hostPID)"
                    " && !(has(object.spec.hostIPC) && object.spec.hostIPC)"
                ),
                "message": "the validator's pods use no host network, PID or IPC namespace",
            },
            {
                "expression": "!has(object.spec.volumes) || object.spec.volumes.all(v, !has(v.hostPath))",
                "message": "the validator's pods mount no hostPath volume",
            },
            {
                "expression": (
                    "variables.containers.all(c, !has(c.securityContext) || !has(c.securityContext.capabilities)"
                    " || !has(c.securityContext.capabilities.add) || size(c.securityContext.capabilities.add) == 0)"
                ),
                "message": "the validator's pods add no capability",
            },
            {
                "expression": f"variables.containers.all(c, !({privileged}) || ({upstream}))",
                "message": "a privileged container of the validator runs only upstream's CUDA check (sh -c vectorAdd, or its echo)",
            },
            {
                "expression": (
                    f"variables.containers.all(c, has(c.command) && c.command == {cel_list(admission.PRIVILEGED_COMMAND)}"
                    f" && has(c.args) && c.args in {cel_list(admission.WORKLOAD_ARGS)})"
                ),
                "message": "every container of the validator's pods runs upstream's workload check (sh -c vectorAdd, or an echo)",
            },
            {
                "expression": (
                    f"variables.containers.all(c, !({runs_code})"
                    f" && (!has(c.env) || c.env.all(e, e.name in {cel_list(admission.PRIVILEGED_ENV)} && !has(e.valueFrom)))"
                    f" && (!has(c.volumeMounts) || c.volumeMounts.all(m, {token_mount})))"
                ),
                "message": (
                    "the validator's containers have no lifecycle hooks, probes, workingDir, envFrom, volume devices or "
                    f"environment beyond {', '.join(admission.PRIVILEGED_ENV)}, and mount only the read-only service account "
                    f"token ({admission.TOKEN_MOUNT_PATH})"
                ),
            },
            # Weakenings of isolation none of upstream's pods asks for (the ledger counts each as a
            # privilege, gpu_platform/privileges/ledger.py): a host port, an Unmasked /proc, an Unconfined profile,
            # sysctls, another runtime class, a priority that preempts system pods, resource claims.
            {
                "expression": (
                    "variables.containers.all(c, (!has(c.ports) || c.ports.all(p, !has(p.hostPort) || p.hostPort == 0))"
                    " && (!has(c.securityContext) || ("
                    "(!has(c.securityContext.procMount) || c.securityContext.procMount != 'Unmasked')"
                    " && (!has(c.securityContext.seccompProfile) || c.securityContext.seccompProfile.type != 'Unconfined')"
                    " && (!has(c.securityContext.appArmorProfile) || c.securityContext.appArmorProfile.type != 'Unconfined'))))"
                    " && (!has(object.spec.securityContext) || ("
                    "!has(object.spec.securityContext.sysctls)"
                    " && (!has(object.spec.securityContext.seccompProfile) || object.spec.securityContext.seccompProfile.type != 'Unconfined')"
                    " && (!has(object.spec.securityContext.appArmorProfile) || object.spec.securityContext.appArmorProfile.type != 'Unconfined')))"
                    f" && (!has(object.spec.runtimeClassName) || object.spec.runtimeClassName == {cel_string(admission.VALIDATOR_RUNTIME_CLASS)})"
                    f" && (!has(object.spec.priorityClassName) || !object.spec.priorityClassName.startsWith({cel_string(admission.SYSTEM_PRIORITY_PREFIX)}))"
                    " && !has(object.spec.resourceClaims)"
                ),
                "message": (
                    "the validator's pods use no host port, Unmasked /proc, Unconfined seccomp or AppArmor profile, sysctl, "
                    f"system priority class ({admission.SYSTEM_PRIORITY_PREFIX}*) or resource claim, and no runtime class "
                    f"but {admission.VALIDATOR_RUNTIME_CLASS}"
                ),
            },
            {
                "expression": (
                    f"(!has(object.spec.volumes) || object.spec.volumes.all(v, {token_volume}))"
                    " && !(has(object.spec.shareProcessNamespace) && object.spec.shareProcessNamespace)"
                ),
                "message": (
                    "the validator's pods have no volume but the service account token's projected volume, "
                    "and do not share a process namespace"
                ),
            },
        ],
    }


def _changed_only(variable: str, pattern: str | None, reserved: str | None = None) -> str:
    """Keys of `variables.<variable>` (old and new) change only where they match `pattern` and not
    `reserved`."""
    new, old = f"variables.new{variable}", f"variables.old{variable}"
    if pattern is None:
        return f"{new} == {old}"
    free = f"k.matches({cel_string(pattern)})"
    if reserved is not None:
        free = f"({free} && !k.matches({cel_string(reserved)}))"
    return f"{new}.all(k, (k in {old} && {old}[k] == {new}[k]) || {free}) && {old}.all(k, k in {new} || {free})"


def _map_variables(name: str, path: str) -> list[dict]:
    *parents, leaf = path.split(".")

    def guarded(root: str) -> str:
        steps, checks = root, []
        for part in [*parents, leaf]:
            steps = f"{steps}.{part}"
            checks.append(f"has({steps})")
        return f"{' && '.join(checks)} ? {steps} : {{}}"

    return [
        {"name": f"new{name}", "expression": guarded("object")},
        {"name": f"old{name}", "expression": guarded("oldObject")},
    ]


def node_writer(namespace: str, account: str, writer: NodeWriter) -> dict:
    """The spec of a node-writer policy."""

    def pattern(namespaces):
        return admission.key_pattern(namespaces) if namespaces else None

    validations = [
        {
            "expression": _changed_only(
                "Labels", pattern(writer.label_namespaces), admission.reserved_pattern(writer.reserved_labels)
            ),
            "message": f"{writer.operand} changes only node labels in {admission.shown(writer.label_namespaces)}"
            + (f", none of {', '.join(writer.reserved_labels)}" if writer.reserved_labels else ""),
        },
        {
            "expression": _changed_only("Annotations", pattern(writer.annotation_namespaces)),
            "message": (
                f"{writer.operand} changes only node annotations in {admission.shown(writer.annotation_namespaces)}"
                if writer.annotation_namespaces
                else f"{writer.operand} changes no node annotation"
            ),
        },
        {
            "expression": "variables.newSpec == variables.oldSpec",
            "message": f"{writer.operand} changes no node spec (taints, unschedulable, ...)",
        },
        # Neither writer sets these; an owner reference to an object that does not exist gets the Node
        # deleted by the garbage collector, and a finalizer keeps a deleted one from going.
        {
            "expression": " && ".join(
                f"(has(object.metadata.{f}) ? object.metadata.{f} : []) == (has(oldObject.metadata.{f}) ? oldObject.metadata.{f} : [])"
                for f in ("ownerReferences", "finalizers")
            ),
            "message": f"{writer.operand} changes no node owner references or finalizers",
        },
        {
            "expression": _changed_only("Capacity", pattern(writer.resource_namespaces))
            + " && "
            + _changed_only("Allocatable", pattern(writer.resource_namespaces)),
            "message": (
                f"{writer.operand} changes only extended resources in {admission.shown(writer.resource_namespaces)}"
                if writer.resource_namespaces
                else f"{writer.operand} changes no node capacity"
            ),
        },
    ]
    variables = [
        *_map_variables("Labels", "metadata.labels"),
        *_map_variables("Annotations", "metadata.annotations"),
        *_map_variables("Spec", "spec"),
        *_map_variables("Capacity", "status.capacity"),
        *_map_variables("Allocatable", "status.allocatable"),
    ]
    if writer.own_node:
        variables.append(_NODE)
        validations.insert(
            0,
            {
                "expression": "variables.node != '' && object.metadata.name == variables.node",
                "message": f"{writer.operand} changes only the node its own pod runs on",
            },
        )
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["UPDATE"],
                    "resources": ["nodes", "nodes/status"],
                }
            ]
        },
        "matchConditions": _is_account(service_account(namespace, account)),
        "variables": variables,
        "validations": validations,
    }


# The GPU-access policy's requests: pod creation, added ephemeral containers, and the one other pod
# update that can move a pod onto a GPU node, added tolerations (on a pod still pending); not other
# updates, for the reasons of _POD_RULES.
_GPU_ACCESS_RULES = [{**_POD_RULES[0], "operations": ["CREATE", "UPDATE"]}, _POD_RULES[1]]
_TOLERATIONS = "(has({0}.spec.tolerations) ? {0}.spec.tolerations : [])"
_CREATE_OR_NEW_TOLERATION = {
    "name": "create-ephemeral-or-toleration",
    "expression": (
        "request.operation == 'CREATE' || (has(request.subResource) && request.subResource == 'ephemeralcontainers')"
        f" || {_TOLERATIONS.format('object')} != {_TOLERATIONS.format('oldObject')}"
    ),
}


def _gpu_node_variables() -> list[dict]:
    """`gpuNode`: the pod can land on a GPU node; `elevated`: its privileged or SYS_ADMIN containers
    (the facts: gpu_platform/interface/admission.py)."""
    effect, key = cel_string(contract.GPU_TAINT_EFFECT), cel_string(contract.GPU_TAINT_KEY)
    tolerates = (
        f"object.spec.tolerations.exists(t, (!has(t.effect) || t.effect == '' || t.effect == {effect})"
        f" && ((has(t.key) && t.key == {key})"
        " || ((!has(t.key) || t.key == '') && has(t.operator) && t.operator == 'Exists')))"
    )
    sc = "c.securityContext"
    elevated = (
        f"has({sc}) && ((has({sc}.privileged) && {sc}.privileged) || (has({sc}.capabilities)"
        f" && has({sc}.capabilities.add) && {sc}.capabilities.add.exists(a, a.matches("
        f"{cel_string(admission.PRIVILEGE_CAPABILITY)}))))"
    )
    return [
        {
            "name": "gpuNode",
            "expression": (
                f"(has(object.spec.tolerations) && {tolerates})"
                " || (has(object.spec.nodeName) && object.spec.nodeName != '')"
            ),
        },
        {"name": "elevated", "expression": f"variables.containers.filter(c, {elevated})"},
    ]


def _pod_policy(outside: Sequence[str], variables: list[dict], validations: list[dict]) -> dict:
    """A policy on the pods of every namespace but `outside`, less the pods admitted by name
    (admission.EXEMPT_PODS), on creation and on the updates that can move a pod onto a GPU node."""
    exempt = " || ".join(
        f"(request.namespace == {cel_string(ns)} && has(object.metadata.labels) && {cel_string(key)} in object.metadata.labels"
        f" && object.metadata.labels[{cel_string(key)}] == {cel_string(value)})"
        for ns, key, value in admission.EXEMPT_PODS
    )
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "resourceRules": _GPU_ACCESS_RULES,
            "namespaceSelector": {
                "matchExpressions": [
                    {"key": "kubernetes.io/metadata.name", "operator": "NotIn", "values": list(outside)}
                ]
            },
        },
        "matchConditions": [
            _CREATE_OR_NEW_TOLERATION,
            *([{"name": "not-exempt", "expression": f"!({exempt})"}] if exempt else []),
        ],
        "variables": [_CONTAINERS, *variables],
        "validations": validations,
    }


def _allocator(dra: bool) -> str:
    return (
        "ResourceClaims on the DRA driver's DeviceClasses (gpu.nvidia.com, mig.nvidia.com)"
        if dra
        else "the device plugin"
    )


def gpu_privilege(operator_namespace: str, dra: bool = False, privileged_namespaces: Sequence[str] = ()) -> dict:
    """The spec of the GPU-privilege policy: no privileged, SYS_ADMIN or ALL container on a pod that can
    land on a GPU node, outside the operator namespace, admission.PRIVILEGED_NAMESPACES and the stack's
    `privileged_namespaces` (the toolkit counts such a container as privileged and honours its image's
    NVIDIA_VISIBLE_DEVICES: gpu_platform/interface/admission.py)."""
    source = _allocator(dra)
    trusted = f"{operator_namespace} or a namespace listed in gpu-platform:workloads.privilegedNamespaces"
    return _pod_policy(
        # The user's list sorted: its order in the stack file must not move the ledger's spec hash.
        [operator_namespace, *admission.PRIVILEGED_NAMESPACES, *sorted(privileged_namespaces)],
        _gpu_node_variables(),
        [
            {
                "expression": "!variables.gpuNode || size(variables.elevated) == 0",
                # Names the first such container (standard CEL has no join).
                "messageExpression": (
                    cel_string(
                        f"outside {operator_namespace}, a pod that can run on a GPU node (it tolerates the "
                        f"{contract.GPU_TAINT_KEY} taint or names its node) has no privileged container and adds "
                        "no SYS_ADMIN or ALL capability: container "
                    )
                    + " + variables.elevated[0].name + "
                    + cel_string(
                        f" does, and would get every GPU of the node, around {source}. Drop it from the "
                        f"container, or run the pod in {trusted}"
                    )
                ),
                "message": (
                    f"outside {operator_namespace}, a pod that can run on a GPU node has no privileged container "
                    f"and adds no SYS_ADMIN or ALL capability (the toolkit would give it every GPU of the node, "
                    f"around {source}); drop it, or run the pod in {trusted}"
                ),
            }
        ],
    )


def gpu_access(operator_namespace: str, dra: bool = False, privileged_namespaces: Sequence[str] = ()) -> dict:
    """The spec of the GPU-access policy (pods outside the operator namespace and the stack's
    `privileged_namespaces`, which are trusted with the node's GPUs). `dra`: the stack allocates GPUs
    through the DRA driver, which the messages then point at (the rules are the same: a claim's devices
    come by CDI from the kubelet, never from a pod's own env, mounts or annotations)."""
    source = _allocator(dra)
    gpu = f"r == {cel_string(admission.GPU_RESOURCE)} || r.startsWith({cel_string(admission.MIG_RESOURCE_PREFIX)})"
    asks_gpu = (
        "variables.containers.exists(c, has(c.resources) && ("
        f"(has(c.resources.limits) && c.resources.limits.exists(r, {gpu}))"
        f" || (has(c.resources.requests) && c.resources.requests.exists(r, {gpu}))))"
    )
    cdi = admission.key_pattern((f"*.{admission.CDI_ANNOTATION_DOMAIN}",))
    return _pod_policy(
        [operator_namespace, *sorted(privileged_namespaces)],
        [],
        [
            {
                "expression": (
                    "variables.containers.all(c, !has(c.env) || c.env.all(e, !(e.name in "
                    f"{cel_list(admission.DEVICE_ENV)}) || (e.name == 'NVIDIA_VISIBLE_DEVICES' && !has(e.valueFrom)"
                    f" && has(e.value) && e.value in {cel_list(admission.NO_DEVICE_VALUES)})))"
                ),
                "message": (
                    f"outside {operator_namespace}, no container sets {', '.join(admission.DEVICE_ENV)} "
                    f"(but NVIDIA_VISIBLE_DEVICES={' or '.join(admission.NO_DEVICE_VALUES)}): GPUs come from {source}"
                ),
            },
            {
                "expression": (
                    "variables.containers.all(c, !has(c.volumeMounts) || c.volumeMounts.all(m, "
                    f"!m.mountPath.contains({cel_string(admission.DEVICE_MOUNT_NAME)})))"
                ),
                "message": (
                    f"outside {operator_namespace}, no container mounts anything under {admission.DEVICE_MOUNT_ROOT} "
                    "(the toolkit's device requests by volume mount)"
                ),
            },
            {
                "expression": f"!has(object.metadata.annotations) || object.metadata.annotations.all(k, !k.matches({cel_string(cdi)}))",
                "message": f"outside {operator_namespace}, no pod carries CDI device annotations ({admission.CDI_ANNOTATION_DOMAIN}/)",
            },
            {
                "expression": f"!has(object.spec.runtimeClassName) || object.spec.runtimeClassName != 'nvidia' || {asks_gpu}",
                "message": (
                    f"runtimeClassName nvidia only for pods that request {admission.GPU_RESOURCE} or {admission.MIG_RESOURCE_PREFIX}*"
                    + (
                        "; with DRA a pod claims GPUs through a ResourceClaim and needs no runtime class (the kubelet "
                        "injects the claimed devices by CDI)"
                        if dra
                        else ""
                    )
                ),
            },
        ],
    )


# The slices a write touches: the one it deletes, the one it creates, or on update both the stored
# and the new one.
_SLICES = {
    "name": "slices",
    "expression": (
        "request.operation == 'DELETE' ? [oldObject] : request.operation == 'UPDATE' ? [object, oldObject] : [object]"
    ),
}


def resource_slices(namespace: str, account: str, driver: str) -> dict:
    """The spec of the DRA kubelet plugin's ResourceSlice policy: it writes only its own node's
    slices of its own driver (the facts and how they differ from upstream's: gpu_platform/interface/admission.py)."""
    return {
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": [admission.RESOURCE_SLICE_RULE]},
        "matchConditions": _is_account(service_account(namespace, account)),
        "variables": [_NODE, _SLICES],
        "validations": [
            {
                "expression": "variables.node != ''",
                "message": (
                    f"the DRA kubelet plugin's token names no node ({admission.NODE_NAME_EXTRA}): it must run in a pod, on a "
                    "cluster whose API server puts the pod's node in its token (ServiceAccountTokenPodNodeInfo, locked on from "
                    "Kubernetes 1.32)"
                ),
            },
            {
                "expression": "variables.slices.all(s, has(s.spec.nodeName) && s.spec.nodeName == variables.node)",
                "message": (
                    "the DRA kubelet plugin writes only the ResourceSlices of the node its pod runs on (spec.nodeName = its "
                    "token's node), no other node's and no cluster-wide slice (allNodes, nodeSelector, perDeviceNodeSelection)"
                ),
            },
            {
                "expression": f"variables.slices.all(s, s.spec.driver == {cel_string(driver)})",
                "message": f"the DRA kubelet plugin writes only ResourceSlices of its own driver, {driver}",
            },
        ],
    }


def privilege_warning(by_default: bool) -> str:
    """Said at `pulumi up` when the GPU-privilege policy only warns."""
    why = (
        "the default on an adopted cluster, whose own agents may run privileged on every node"
        if by_default
        else "as the stack sets"
    )
    return (
        f"gpu-platform:workloads.privilegeAdmission is warn ({why}): a pod outside {contract.OPERATOR_NAMESPACE} that "
        "can run on a GPU node with a privileged, SYS_ADMIN or ALL container is admitted with a warning and an "
        f"audit-log entry, and can take every GPU of its node. List the namespaces of your own such agents in "
        f'gpu-platform:workloads.privilegedNamespaces, then set privilegeAdmission: deny (docs/privileges.md, "Admission policies")'
    )


@dataclass(frozen=True)
class AdmissionArgs:
    namespace: str  # the operator namespace (its service accounts' usernames)
    kubernetes_version: str
    provider: k8s.Provider
    validator_account: str | None  # None: no validator
    validator_images: tuple[str, ...]
    node_writers: tuple[tuple[NodeWriter, str], ...]  # each active writer with its service account
    depends_on: Sequence[pulumi.Resource] = field(default_factory=tuple)
    dra: bool = False  # GPUs allocated through the DRA driver (allocation mode dra)
    privileged_namespaces: tuple[str, ...] = ()  # gpu-platform:workloads.privilegedNamespaces
    privilege_actions: tuple[str, ...] = admission.DENY_ACTIONS  # gpu-platform:workloads.privilegeAdmission


class AdmissionPolicies(pulumi.ComponentResource):
    """`gpu-platform:kubernetes:AdmissionPolicies`."""

    def __init__(self, name: str, args: AdmissionArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:AdmissionPolicies", name, None, opts)
        self.policies: list[k8s.admissionregistration.v1.ValidatingAdmissionPolicy] = []
        if not admission.supported(args.kubernetes_version):
            pulumi.log.warn(
                f"gpu-platform:cluster.kubernetesVersion {args.kubernetes_version!r}: ValidatingAdmissionPolicy v1 needs "
                "Kubernetes 1.30 or later; the operands run without the platform's admission policies (the validator may "
                "create pods on any node, the MIG manager and NFD may patch any node key): upgrade the cluster"
            )
            self.register_outputs({})
            return
        specs = {
            admission.GPU_ACCESS: gpu_access(args.namespace, args.dra, args.privileged_namespaces),
            admission.GPU_PRIVILEGE: gpu_privilege(args.namespace, args.dra, args.privileged_namespaces),
        }
        actions = {admission.GPU_PRIVILEGE: args.privilege_actions}
        if args.validator_account:
            specs[admission.VALIDATOR_PODS] = validator_pods(
                args.namespace, args.validator_account, args.validator_images
            )
        for writer, account in args.node_writers:
            specs[writer.policy] = node_writer(args.namespace, account, writer)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=list(args.depends_on))
        for policy_name, spec in sorted(specs.items()):
            policy = k8s.admissionregistration.v1.ValidatingAdmissionPolicy(
                f"{name}-{policy_name}", metadata={"name": policy_name, "labels": LABELS}, spec=spec, opts=child
            )
            # The binding waits for its policy: a binding to a policy not there yet is ignored until it is.
            k8s.admissionregistration.v1.ValidatingAdmissionPolicyBinding(
                f"{name}-{policy_name}-binding",
                metadata={"name": policy_name, "labels": LABELS},
                spec={
                    "policyName": policy_name,
                    "validationActions": list(actions.get(policy_name, admission.DENY_ACTIONS)),
                },
                opts=pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[policy])),
            )
            self.policies.append(policy)
        self.register_outputs({"policies": [p.metadata["name"] for p in self.policies]})
