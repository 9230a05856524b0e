"""The readiness gate of a blue-green GPU pool: a Job that succeeds only once every node of the pool's
new generation serves GPUs, so that the old generation is removed only after it.

What "serves GPUs" means is the validator's own per-node proof: its plugin check runs a CUDA workload
that asks the device plugin for a GPU and, once that works, writes `plugin-ready` in
/run/nvidia/validations on that node (components/kubernetes/operands/stages.py). The gate runs one
pod per new node (required pod anti-affinity on the host name, as many completions as the pool's
desired size), each waiting for that marker on its own node, read-only. The Kubernetes provider waits
for a Job until it succeeds (pulumi-kubernetes provider/pkg/await/awaiters.go at v4.32.0-27-g94977969d,
lines 103, 154-161, 195), and the Job fails at its deadline, which fails the update before the engine
reaches the deletes of the replaced node group (components/aws/node_pool.py). A new generation is a
new Job: its template (node selector) and completions are replace-only fields of a Job
(provider/pkg/provider/diff.go lines 178-184 there); and a gate that failed is run again by the next
update (`pulumi.com/replaceUnready`, provider/pkg/provider/provider.go lines 1621-1635).

Cloud-neutral: it knows the new generation only by the labels the pool hands it.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import contract
from gpu_platform.config import Audit

MARKER_DIR = "/run/nvidia/validations"
MARKER = f"{MARKER_DIR}/plugin-ready"
# Nodes boot, join, and get the operands (NFD, validator, device plugin) in this time; past it the
# Job fails, and with it the update, while the old generation still serves.
DEADLINE_SECONDS = 45 * 60
NAME = "gpu-readiness-gate"


@dataclass(frozen=True)
class GateArgs:
    pool: str
    selector: dict[str, str]  # the labels of the new generation's nodes
    nodes: int  # how many new nodes must prove themselves (the pool's desired size)
    image: str  # the validator image: it has a shell (busybox from v25.10, the CUDA base before)
    namespace: pulumi.Input[str]
    audit: Audit
    release: str
    provider: pulumi.ProviderResource
    depends_on: list[pulumi.Resource]


def manifest_spec(args: GateArgs) -> dict:
    labels = {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform", contract.POOL_LABEL: args.pool}
    return {
        "completions": args.nodes,
        "parallelism": args.nodes,
        "backoffLimit": 0,
        "activeDeadlineSeconds": DEADLINE_SECONDS,
        "template": {
            "metadata": {"labels": labels},
            "spec": {
                "restartPolicy": "Never",
                "automountServiceAccountToken": False,
                "nodeSelector": dict(sorted(args.selector.items())),
                "tolerations": [{"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": contract.GPU_TAINT_EFFECT}],
                # One pod per node: each proves its own node.
                "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": labels}, "topologyKey": "kubernetes.io/hostname"}]}},
                "securityContext": {"runAsNonRoot": True, "runAsUser": 65534, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": "gpus-served",
                    "image": args.image,
                    "command": ["sh", "-c", f"until [ -f {MARKER} ]; do sleep 10; done; echo GPUs served on this node"],
                    "volumeMounts": [{"name": "run-nvidia-validations", "mountPath": MARKER_DIR, "readOnly": True}],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}, "limits": {"memory": "32Mi"}},
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}},
                }],
                "volumes": [{"name": "run-nvidia-validations", "hostPath": {"path": MARKER_DIR, "type": "Directory"}}],
            },
        },
    }


class ReadinessGate(pulumi.ComponentResource):
    job: k8s.batch.v1.Job

    def __init__(self, name: str, args: GateArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:ReadinessGate", name, None, opts)
        annotations = {
            contract.AUDIT_REASON: (f"readiness gate of GPU pool {args.pool!r}: reads the validator's {MARKER} on each node "
                                    "of the new generation (read-only) before the old generation is removed"),
            contract.AUDIT_HOST_PATHS: f"{MARKER_DIR}:ro",
            contract.AUDIT_OWNER: args.audit.owner,
            contract.AUDIT_APPROVAL: args.audit.approval,
            contract.OPERATOR_RELEASE_KEY: args.release,
            "pulumi.com/replaceUnready": "true",
        }
        self.job = k8s.batch.v1.Job(
            f"{name}-job",
            metadata={"namespace": args.namespace, "annotations": annotations,
                      "labels": {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform",
                                 contract.POOL_LABEL: args.pool}},
            spec=manifest_spec(args),
            opts=pulumi.ResourceOptions(
                parent=self, provider=args.provider, depends_on=args.depends_on,
                # Longer than the Job's own deadline, so that the Job's failure is what Pulumi reports.
                custom_timeouts=pulumi.CustomTimeouts(create=f"{DEADLINE_SECONDS // 60 + 5}m"),
            ),
        )
        self.register_outputs({})
