"""The operands' namespace and the cluster-wide objects they share: Pod Security Admission labels,
the stack's declared facts for the policy pack, and the `nvidia` RuntimeClass (kept even when the
node image owns the runtime: workloads ask for it by name)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform import contract

NAMESPACE = "gpu-operator"
RUNTIME_CLASS = "nvidia"


@dataclass(frozen=True)
class NamespaceArgs:
    kubernetes_version: str
    release: str
    cuda_versions: tuple[str, ...]
    overrides: dict[str, str]
    provider: k8s.Provider


class GpuNamespace(pulumi.ComponentResource):
    name: pulumi.Output[str]

    def __init__(self, name: str, args: NamespaceArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("gpu-platform:kubernetes:GpuNamespace", name, None, opts)
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        # The toolkit and the MIG manager must run privileged, so the namespace enforces only
        # `privileged`; `restricted` is audited and warned so every exception stays visible.
        psa = {
            "pod-security.kubernetes.io/enforce": "privileged",
            "pod-security.kubernetes.io/enforce-version": f"v{args.kubernetes_version}",
            "pod-security.kubernetes.io/audit": "restricted",
            "pod-security.kubernetes.io/audit-version": f"v{args.kubernetes_version}",
            "pod-security.kubernetes.io/warn": "restricted",
            "pod-security.kubernetes.io/warn-version": f"v{args.kubernetes_version}",
        }
        namespace = k8s.core.v1.Namespace(
            name,
            metadata={
                "name": NAMESPACE,
                "labels": {**psa, "app.kubernetes.io/part-of": "gpu-platform"},
                "annotations": {
                    contract.OPERATOR_RELEASE_KEY: args.release,
                    contract.CUDA_VERSIONS_KEY: contract.join_values(args.cuda_versions),
                    contract.OVERRIDES_KEY: contract.format_overrides(args.overrides),
                    contract.KUBERNETES_VERSION_TAG: args.kubernetes_version,
                },
            },
            opts=child,
        )
        self.runtime_class = k8s.node.v1.RuntimeClass(
            f"{name}-runtime-class",
            metadata={"name": RUNTIME_CLASS, "labels": {"app.kubernetes.io/part-of": "gpu-platform"}},
            handler=RUNTIME_CLASS,
            scheduling={
                "nodeSelector": {contract.GPU_PRESENT_LABEL: "true"},
                "tolerations": [{"key": contract.GPU_TAINT_KEY, "operator": "Exists", "effect": contract.GPU_TAINT_EFFECT}],
            },
            opts=child,
        )
        self.name = namespace.metadata["name"]
        self.register_outputs({"name": self.name})
