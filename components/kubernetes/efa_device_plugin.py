"""The EFA device plugin on the nodes of EFA pools: it advertises each node's EFA interfaces as
`vpc.amazonaws.com/efa`, so a training pod asks for them as it asks for GPUs and gets them mounted
without running privileged itself (EKS User Guide, node-efa.adoc:138).

Its pod is AWS's chart's (gpu_platform/catalog/aws_limits.yaml `efa_device_plugin`, with the chart's file and
commit): privileged, as root, on the host network, with the kubelet's device-plugin directory and
/dev/infiniband read-write; no API token (it talks to the kubelet over its socket only). The plugin's
source is not public, so nothing narrower is claimed to work; the audit annotations say what it
holds. The chart's /opt/aws/neuron/ mount (Neuron tools, created empty where absent) is kept, read
only: the plugin is the same binary on Neuron and GPU nodes and its source is not public, so nothing
shows that it starts without the path; read-only since a GPU node has nothing there to change.

It runs on the nodes of the pools whose launch templates have EFA interfaces (the pool label), with
the GPU taint tolerated, and needs none of the NVIDIA operands: it is created with the namespace,
after the EFA pools' node groups.
"""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes.operands.manifests import AWAIT, audit_annotations, pod_template_audit
from gpu_platform.catalog import aws_limits
from gpu_platform.config.audit import Audit
from gpu_platform.interface import contract

NAME = "aws-efa-k8s-device-plugin"
DEVICE_PLUGINS = "/var/lib/kubelet/device-plugins"
INFINIBAND = "/dev/infiniband"
NEURON_TOOLS = "/opt/aws/neuron/"


@dataclass(frozen=True)
class EfaDevicePluginArgs:
    pools: tuple[str, ...]  # the EFA pools, by name (contract.POOL_LABEL)
    taints: tuple[dict[str, str], ...]  # the pools' taints, in Kubernetes spelling
    region: str
    namespace: pulumi.Input[str]
    audit: Audit
    provider: pulumi.ProviderResource
    depends_on: list[pulumi.Resource]


def image(region: str) -> str:
    registry = aws_limits.eks_addon_registry(region)
    if registry is None:
        raise ValueError(
            f"no EKS add-on image registry is recorded for region {region!r} (gpu_platform/catalog/aws_limits.yaml)"
        )
    plugin = aws_limits.efa_device_plugin()
    return f"{registry}/{plugin['repository']}:{plugin['tag']}"


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": NAME, "app.kubernetes.io/part-of": "gpu-platform"}


def manifest_spec(args: EfaDevicePluginArgs) -> dict:
    tolerations = [{"key": "CriticalAddonsOnly", "operator": "Exists"}]
    for taint in args.taints:
        toleration = {"key": taint["key"], "operator": "Equal", "value": taint["value"], "effect": taint["effect"]}
        if toleration not in tolerations:
            tolerations.append(toleration)
    return {
        "selector": {"matchLabels": _labels()},
        "updateStrategy": {"type": "RollingUpdate"},
        "template": {
            "metadata": {"labels": _labels()},
            "spec": {
                # Its own account, with no token and no rights: it talks to the kubelet's socket only.
                "serviceAccountName": NAME,
                "automountServiceAccountToken": False,
                "priorityClassName": "system-node-critical",
                "hostNetwork": True,
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": contract.POOL_LABEL, "operator": "In", "values": sorted(args.pools)}
                                    ]
                                },
                            ]
                        }
                    }
                },
                "tolerations": tolerations,
                "containers": [
                    {
                        "name": NAME,
                        "image": image(args.region),
                        "securityContext": {
                            "privileged": True,
                            "runAsUser": 0,
                            "allowPrivilegeEscalation": True,
                            "runAsNonRoot": False,
                        },
                        # The chart's requests; the limit is ours (the chart sets none): five times the request.
                        "resources": {"requests": {"cpu": "10m", "memory": "20Mi"}, "limits": {"memory": "100Mi"}},
                        "volumeMounts": [
                            {"name": "device-plugin", "mountPath": DEVICE_PLUGINS},
                            {"name": "infiniband", "mountPath": INFINIBAND + "/"},
                            {"name": "neuron-tools", "mountPath": NEURON_TOOLS, "readOnly": True},
                        ],
                    }
                ],
                "volumes": [
                    {"name": "device-plugin", "hostPath": {"path": DEVICE_PLUGINS}},
                    {"name": "infiniband", "hostPath": {"path": INFINIBAND + "/"}},
                    {"name": "neuron-tools", "hostPath": {"path": NEURON_TOOLS, "type": "DirectoryOrCreate"}},
                ],
            },
        },
    }


class EfaDevicePlugin(pulumi.ComponentResource):
    daemon_set: k8s.apps.v1.DaemonSet

    def __init__(self, name: str, args: EfaDevicePluginArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:EfaDevicePlugin", name, None, opts)
        spec = manifest_spec(args)
        reason = (
            f"EFA device plugin of the EFA pools {', '.join(sorted(args.pools))}: registers "
            f"{aws_limits.efa_device_plugin()['resource']} with the kubelet and hands pods the node's EFA devices "
            f"(privileged, host network, as AWS's chart runs it)"
        )
        # Pulumi waits for the DaemonSet controller, not for every node (as for the operands: one sick
        # EFA node must not hold every `pulumi up`).
        audit = audit_annotations(spec["template"]["spec"], reason, args.audit)
        spec["template"]["metadata"]["annotations"] = pod_template_audit(audit)
        account = k8s.core.v1.ServiceAccount(
            f"{name}-sa",
            metadata={"name": NAME, "namespace": args.namespace, "labels": _labels()},
            automount_service_account_token=False,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=args.depends_on),
        )
        annotations = {**audit, **AWAIT}
        self.daemon_set = k8s.apps.v1.DaemonSet(
            f"{name}-ds",
            metadata={"name": NAME, "namespace": args.namespace, "annotations": annotations, "labels": _labels()},
            spec=spec,
            opts=pulumi.ResourceOptions(parent=self, provider=args.provider, depends_on=[*args.depends_on, account]),
        )
        self.register_outputs({})
