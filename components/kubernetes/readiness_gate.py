"""The readiness gate of a blue-green GPU pool: a DaemonSet on the nodes of the pool's current node
group, ready only once every one of those nodes serves GPUs, so that the old group is removed only
after it.

What "serves GPUs" means depends on how pods get GPUs (gpu-platform:allocation.mode):
- device-plugin: the validator's own per-node proof. Its init checks ran nvidia-smi through the
  nvidia runtime and a CUDA workload (cuda-ready), and its plugin check writes `plugin-ready` in
  /run/nvidia/validations once the node advertises GPUs, i.e. the device plugin has registered them
  with the kubelet (components/kubernetes/operands/stages.py). It runs without the workload that would
  take a GPU from the device plugin (validator/: on a full node that never succeeds), so the gate
  does not prove an allocation through the plugin, as the GPU Operator's own validator has not from
  v25.3.3. Each gate pod reads that marker on its own node, read-only, as its readiness probe.
- dra: nothing writes plugin-ready (no device plugin, no plugin check), so each gate pod proves it
  itself, the way the DRA validator does (components/kubernetes/operands/dra_validator/): it claims
  one GPU of class gpu.nvidia.com with admin access through its pool's ResourceClaimTemplate, and its
  init container runs `nvidia-smi -L`, which only the claim's CDI injection brings into the container.
  The scheduler cannot place the pod before the DRA driver on that node has published its GPUs as a
  ResourceSlice, the kubelet starts no container before the driver has prepared the claim, and the
  pod is ready only after the init container succeeded: the node allocated and injected a working
  GPU. Admin access keeps the gate off the GPUs' accounting: it neither waits for nor holds a GPU a
  workload uses (the namespace carries resource.kubernetes.io/admin-access=true in mode dra,
  components/kubernetes/namespace.py). No host path, no marker: the proof is the claim.

Why a DaemonSet and not a Job: a Job needs a count, and there is none to give. The pool's desiredSize
is what a new group starts with, but the cluster autoscaler owns the count afterwards (the node
group ignores desiredSize changes), and a Job's completions, parallelism and template are
replace-only in pulumi-kubernetes (provider/pkg/provider/diff.go at v4.32.0 lines 178-186; completions
is immutable in the API too: kubernetes pkg/apis/batch/validation/validation.go ValidateJobSpecUpdate
and validateCompletions, search-index file id 159273491), so any count
in a Job re-runs the gate against a group the count no longer describes and can wait forever. A
DaemonSet needs no count: Pulumi waits for its rollout until every node its selector matches runs a
ready pod (provider/pkg/await/daemonset.go at v4.32.0 lines 184-202: kstatus Current, i.e.
desiredNumberScheduled equal to current, updated, available and ready, sigs.k8s.io/cli-utils
pkg/kstatus/status/core.go daemonsetConditions), however many nodes that is.

Zero included, which is the gate's weak spot: the awaiter returns as soon as kstatus says Current
(daemonset.go lines 169-171, 186-193), and a DaemonSet that wants no pod is Current at once. So:
- the new group must not shrink to no node: its nodes run only DaemonSet pods until the old group
  goes, and the cluster autoscaler removes such nodes as unneeded down to minSize, so the configuration
  refuses blue-green with minSize 0 (gpu_platform/config/node_pool.py NodePool._rollout);
- a node that has registered but is not Ready yet must count: it carries
  node.kubernetes.io/not-ready:NoSchedule (and node.cloudprovider.kubernetes.io/uninitialized:NoSchedule
  until the cloud controller has initialised it), which the DaemonSet controller does not tolerate for
  us, and a node a DaemonSet's pods do not tolerate is not in desiredNumberScheduled. The gate tolerates
  every NoSchedule taint (and the pool's own taints), so such a node wants a gate pod, and that pod is not
  ready before the node serves GPUs.
What it still cannot see is a node that is gone: one removed by node repair, or by the autoscaler
above minSize, before it was proven, is simply not counted.

Which nodes: those of the pool's current node group, by the label EKS puts on every node of a managed
node group, `eks.amazonaws.com/nodegroup=<node group name>` (EKS User Guide,
managed-node-update-behavior.adoc lines 44-55 at 4d52b4d0), the name being an output of the node group
(components/aws/node_pool.py). A replaced group has a new name, so the gate's template changes with
every replacement and with nothing else, and Pulumi waits for the new rollout before the engine's
post-steps delete the old group (components/aws/node_pool.py). A rollout that is not ready by the
deadline fails the update with both groups up; the DaemonSet is then recorded with initialization
errors, and the next `pulumi up` waits for it again before it deletes anything (pulumi/pulumi
pkg/resource/deploy/step_generator.go at v3.259.0 lines 2178-2194).

Cloud-neutral: it knows the pool's nodes only by the labels the pool hands it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes.operands.dra_driver import GPU_CLASS
from components.kubernetes.operands.manifests import (
    PRIORITY_CLASS,
    claim_template_name as operand_claim_template_name,
    claim_template_spec,
)
from components.kubernetes.operands.spec import ClaimTemplate
from gpu_platform.config.audit import Audit
from gpu_platform.interface import contract

MARKER_DIR = "/run/nvidia/validations"
MARKER = f"{MARKER_DIR}/plugin-ready"
# Nodes boot, join, and get the operands (NFD, validator, device plugin or DRA driver) in this time;
# past it the update fails, while the old node group still serves.
DEADLINE_MINUTES = 45
NAME = "gpu-readiness-gate"
# Mode dra: the gate pod's own claim, as the DRA validator's (one GPU of the DRA driver's whole-GPU
# class, admin access). The template is the pool's: <NAME>-<pool>-gpu.
CLAIM = ClaimTemplate(
    claim="gate-gpu",
    suffix="gpu",
    request="gate-gpu",
    device_class=GPU_CLASS,
    allocation_mode="ExactCount",
    count=1,
    admin_access=True,
)
# A shell loop in finite sleeps: busybox's sleep (the validator image from v25.10) has no `infinity`.
_IDLE = ["sh", "-c", "while true; do sleep 3600; done"]
_CONTAINER_SECURITY = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
_RESOURCES = {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}}
# nvidia-smi loads the driver's NVML library: the DRA validator's check container's bounds
# (components/kubernetes/operands/dra_validator/, spec.Container's memory limit).
_CHECK_RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "500m", "memory": "256Mi"}}


@dataclass(frozen=True)
class GateArgs:
    pool: str
    selector: dict[str, pulumi.Input[str]]  # the labels of the pool's current node group's nodes
    taints: tuple[dict[str, str], ...]  # the pool's own taints, in Kubernetes spelling
    image: str  # the validator image: it has a shell (busybox from v25.10, the CUDA base before)
    namespace: pulumi.Input[str]
    audit: Audit
    release: str
    provider: pulumi.ProviderResource
    depends_on: list[pulumi.Resource]
    dra: bool = False  # gpu-platform:allocation.mode dra: the gate claims a GPU instead of reading plugin-ready


def _labels(pool: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform", contract.POOL_LABEL: pool}


def claim_template_name(pool: str) -> str:
    """<NAME>-<pool>-gpu: named as an operand's templates are, after the pool's gate."""
    return operand_claim_template_name(f"{NAME}-{pool}", CLAIM)


def tolerations(taints: tuple[dict[str, str], ...]) -> list[dict[str, str]]:
    """Every NoSchedule taint, so that a node that has registered but is not Ready yet (not-ready,
    uninitialized) wants a gate pod and holds the gate (see the module doc), and the pool's own taints
    whatever their effect."""
    found = [{"operator": "Exists", "effect": "NoSchedule"}]
    for taint in taints:
        toleration = {"key": taint["key"], "operator": "Exists", "effect": taint["effect"]}
        if toleration not in found:
            found.append(toleration)
    return found


def _proof(args: GateArgs) -> dict:
    """The part of the pod that makes it ready only on a node that serves GPUs (module doc)."""
    if args.dra:
        # Not root: the claim's device nodes are the container user's (dra_validator/ explains why
        # that works), and nvidia-smi -L only opens them and reads the injected libraries.
        return {
            "resourceClaims": [{"name": CLAIM.claim, "resourceClaimTemplateName": claim_template_name(args.pool)}],
            "initContainers": [
                {
                    "name": "gpu-claimed",
                    "image": args.image,
                    "command": ["sh", "-c"],
                    "args": ["nvidia-smi -L"],
                    "resources": {**_CHECK_RESOURCES, "claims": [{"name": CLAIM.claim}]},
                    "securityContext": _CONTAINER_SECURITY,
                }
            ],
            "containers": [
                {
                    "name": "gpus-served",
                    "image": args.image,
                    "command": _IDLE,
                    "resources": _RESOURCES,
                    "securityContext": _CONTAINER_SECURITY,
                }
            ],
        }
    return {
        "containers": [
            {
                "name": "gpus-served",
                "image": args.image,
                "command": _IDLE,
                "readinessProbe": {"exec": {"command": ["test", "-f", MARKER]}, "periodSeconds": 10},
                "volumeMounts": [{"name": "run-nvidia-validations", "mountPath": MARKER_DIR, "readOnly": True}],
                "resources": _RESOURCES,
                "securityContext": _CONTAINER_SECURITY,
            }
        ],
        "volumes": [{"name": "run-nvidia-validations", "hostPath": {"path": MARKER_DIR, "type": "Directory"}}],
    }


def manifest_spec(args: GateArgs) -> dict:
    labels = _labels(args.pool)
    return {
        # The selector never changes (a new selector would replace the DaemonSet); the nodes it runs
        # on are the template's nodeSelector.
        "selector": {"matchLabels": labels},
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "automountServiceAccountToken": False,
                # As the operands': on a node whose CPU and memory are all requested, a gate pod of
                # lower priority would stay Pending and fail the roll at its timeout.
                "priorityClassName": PRIORITY_CLASS,
                "nodeSelector": dict(sorted(args.selector.items())),
                "tolerations": tolerations(args.taints),
                "securityContext": {
                    "runAsNonRoot": True,
                    "runAsUser": 65534,
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                # The idle loop is a shell loop: nothing to shut down.
                "terminationGracePeriodSeconds": 5,
                **_proof(args),
            },
        },
    }


class ReadinessGate(pulumi.ComponentResource):
    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, args: GateArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:ReadinessGate", name, None, opts)
        proof = (
            f"claims one GPU with admin access (ResourceClaimTemplate {claim_template_name(args.pool)}, class {GPU_CLASS}) "
            "and lists it with nvidia-smi -L"
            if args.dra
            else f"reads the validator's {MARKER} (read-only)"
        )
        annotations = {
            contract.AUDIT_REASON: (
                f"readiness gate of GPU pool {args.pool!r}: on each node of the pool's current node group, "
                f"{proof}, before an old node group is removed"
            ),
            contract.AUDIT_HOST_PATHS: "" if args.dra else f"{MARKER_DIR}:ro",
            contract.AUDIT_OWNER: args.audit.owner,
            contract.AUDIT_APPROVAL: args.audit.approval,
            contract.OPERATOR_RELEASE_KEY: args.release,
        }
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # Before the DaemonSet: a pod whose claim template does not exist yet stays Pending.
        claims = (
            [
                k8s.resource.v1.ResourceClaimTemplate(
                    f"{name}-claim-{CLAIM.suffix}",
                    metadata={
                        "namespace": args.namespace,
                        "name": claim_template_name(args.pool),
                        "labels": _labels(args.pool),
                    },
                    spec=claim_template_spec(CLAIM),
                    opts=child,
                ),
            ]
            if args.dra
            else []
        )
        deadline = f"{DEADLINE_MINUTES}m"
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-ds",
            metadata={"namespace": args.namespace, "annotations": annotations, "labels": _labels(args.pool)},
            spec=manifest_spec(args),
            opts=pulumi.ResourceOptions.merge(
                child,
                pulumi.ResourceOptions(
                    depends_on=[*args.depends_on, *claims],
                    custom_timeouts=pulumi.CustomTimeouts(create=deadline, update=deadline),
                ),
            ),
        )
        self.register_outputs({})
