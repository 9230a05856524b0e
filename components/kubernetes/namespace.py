"""The operands' namespace and the cluster-wide objects they share: Pod Security Admission labels,
the stack's declared facts for the policy pack, the network policies of the namespace, and the
`nvidia` RuntimeClass (kept even when the node image owns the runtime: workloads ask for it by name)."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from gpu_platform.interface import contract
from gpu_platform.privileges import cluster_admins

NAMESPACE = contract.OPERATOR_NAMESPACE
RUNTIME_CLASS = contract.NVIDIA_RUNTIME_HANDLER
# The container ports that serve Prometheus metrics: `metrics` (DCGM exporter; NFD up to 0.17) and
# `http` (NFD 0.18+, one port for /metrics and /healthz: cmd/nfd-*/main.go v0.18.2). Nothing else in
# the namespace takes connections: the operands talk to the API server and the node, never to each
# other (NFD's worker publishes NodeFeature objects through the API since 0.14, not over gRPC).
METRICS_PORTS = ("metrics", "http")
# In allocation mode dra the DCGM exporter takes every GPU, and the DRA validator one GPU, through a claim
# with adminAccess: true (operands/dcgm_exporter/, operands/dra_validator/). The API server refuses a ResourceClaim or ResourceClaimTemplate that
# asks for admin access unless its namespace carries this label, in the strategies' Validate
# (kubernetes/kubernetes pkg/registry/resource/utils.go AuthorizedForAdmin, called from
# resourceclaimtemplate/strategy.go Validate and resourceclaim/strategy.go; the key is
# resource.DRAAdminNamespaceLabelKey), with the DRAAdminAccess feature, beta and on by default from
# 1.34 (pkg/features/kube_features.go, DRAAdminAccess: beta, default true, at 1.34). The GPU
# Operator labels its own namespace the same way before it renders its DRA operands
# (v26.7.0 controllers/gpucluster_controller.go:55-57, 116-120, 176-189). The label is a privilege:
# any ResourceClaim anyone may create in this namespace can then take admin access to every GPU of
# the cluster (the privilege ledger shows it: gpu_platform/privileges/device_access.py). Only in mode dra.
ADMIN_ACCESS_LABEL = {"resource.kubernetes.io/admin-access": "true"}


@dataclass(frozen=True)
class NamespaceArgs:
    kubernetes_version: str
    release: str
    cuda_versions: tuple[str, ...]
    overrides: dict[str, str]
    provider: k8s.Provider
    # Who scrapes the metrics ports: the namespace's name and the Prometheus pods' labels (config monitoring.*).
    prometheus_namespace: str = "monitoring"
    prometheus_labels: tuple[tuple[str, str], ...] = (("app.kubernetes.io/name", "prometheus"),)
    approved_ledger: str | None = None  # gpu-platform:audit.approvedLedger
    admins: tuple[str, ...] = ()  # gpu-platform:cluster.admins, all of them
    allocation_mode: str = "device-plugin"  # gpu-platform:allocation.mode
    acknowledged_alpha: tuple[str, ...] = ()  # gpu-platform:allocation.acknowledgeAlpha
    aws_account: str = ""  # the caller identity's account (the one the stack deploys into)
    node_image: str = ""  # contract.NODE_IMAGE_KEY
    cluster: str = ""  # contract.CLUSTER_KEY
    aws_provider: tuple[str, ...] = ()  # contract.AWS_PROVIDER_KEY: gpu-platform's config.StackConfig.aws_provider
    audit: tuple[str, str] | None = None  # (owner, approval): gpu-platform:audit, bound by the ledger


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
                "labels": {
                    **psa,
                    "app.kubernetes.io/part-of": "gpu-platform",
                    **(ADMIN_ACCESS_LABEL if args.allocation_mode == "dra" else {}),
                },
                "annotations": {
                    contract.OPERATOR_RELEASE_KEY: args.release,
                    contract.CUDA_VERSIONS_KEY: contract.join_values(args.cuda_versions),
                    contract.OVERRIDES_KEY: contract.format_overrides(args.overrides),
                    contract.KUBERNETES_VERSION_TAG: args.kubernetes_version,
                    contract.CLUSTER_ADMINS_KEY: cluster_admins.annotation(args.admins),
                    **({contract.AWS_ACCOUNT_KEY: args.aws_account} if args.aws_account else {}),
                    **({contract.NODE_IMAGE_KEY: args.node_image} if args.node_image else {}),
                    **({contract.CLUSTER_KEY: args.cluster} if args.cluster else {}),
                    **({contract.AWS_PROVIDER_KEY: "\n".join(args.aws_provider)} if args.aws_provider else {}),
                    **(
                        {contract.AUDIT_OWNER: args.audit[0], contract.AUDIT_APPROVAL: args.audit[1]}
                        if args.audit
                        else {}
                    ),
                    **({contract.APPROVED_LEDGER_KEY: args.approved_ledger} if args.approved_ledger else {}),
                    # Only off the default, so the device-plugin stacks' namespace is unchanged.
                    **(
                        {contract.ALLOCATION_MODE_KEY: args.allocation_mode}
                        if args.allocation_mode != "device-plugin"
                        else {}
                    ),
                    **(
                        {contract.ACKNOWLEDGED_ALPHA_KEY: contract.join_values(sorted(args.acknowledged_alpha))}
                        if args.acknowledged_alpha
                        else {}
                    ),
                },
            },
            opts=child,
        )
        # Ingress: metrics ports only, from Prometheus only. Every pod of the namespace is selected, so one that opens any
        # other port is unreachable; the kubelet's probes come from the node, which a network policy
        # always allows (kubernetes.io/docs/concepts/services-networking/network-policies/, "traffic
        # to and from the node where a Pod is running is always allowed"). Egress stays open: every
        # operand that calls the API server needs it, and the EKS endpoint's addresses (cross-account
        # interfaces EKS replaces at will) are no stable ipBlock. Pods with hostNetwork (the EFA device
        # plugin) are not subject to NetworkPolicy at all. Enforced only where the CNI enforces network
        # policies (on EKS, the VPC CNI with enableNetworkPolicy).
        in_namespace = pulumi.ResourceOptions.merge(child, pulumi.ResourceOptions(depends_on=[namespace]))
        k8s.networking.v1.NetworkPolicy(
            f"{name}-deny-ingress",
            metadata={
                "name": "default-deny-ingress",
                "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/part-of": "gpu-platform"},
            },
            spec={"podSelector": {}, "policyTypes": ["Ingress"]},
            opts=in_namespace,
        )
        k8s.networking.v1.NetworkPolicy(
            f"{name}-allow-metrics",
            metadata={
                "name": "allow-metrics",
                "namespace": NAMESPACE,
                "labels": {"app.kubernetes.io/part-of": "gpu-platform"},
            },
            spec={
                "podSelector": {"matchExpressions": [{"key": contract.OPERAND_KEY, "operator": "Exists"}]},
                "policyTypes": ["Ingress"],
                # Only Prometheus: the namespace by the name label the API server puts on every namespace
                # (kubernetes.io/docs/reference/labels-annotations-taints/, kubernetes.io/metadata.name; GA in 1.22).
                "ingress": [
                    {
                        "from": [
                            {
                                "namespaceSelector": {
                                    "matchLabels": {"kubernetes.io/metadata.name": args.prometheus_namespace}
                                },
                                "podSelector": {"matchLabels": dict(args.prometheus_labels)},
                            }
                        ],
                        "ports": [{"protocol": "TCP", "port": port} for port in METRICS_PORTS],
                    }
                ],
            },
            opts=in_namespace,
        )
        # The handler exists only on GPU nodes, so a pod of this class is placed there; it gets no
        # toleration of the GPU taint from here: a pod that runs on a GPU node says so itself (and
        # gets a GPU from the device plugin), or a pod asking only for the runtime (every CUDA base
        # image sets NVIDIA_VISIBLE_DEVICES=all) would be steered onto GPU nodes by the class alone.
        self.runtime_class = k8s.node.v1.RuntimeClass(
            f"{name}-runtime-class",
            metadata={"name": RUNTIME_CLASS, "labels": {"app.kubernetes.io/part-of": "gpu-platform"}},
            handler=RUNTIME_CLASS,
            scheduling={"nodeSelector": {contract.GPU_PRESENT_LABEL: "true"}},
            opts=child,
        )
        self.name = namespace.metadata["name"]
        self.register_outputs({"name": self.name})
