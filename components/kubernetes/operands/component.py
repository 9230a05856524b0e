"""`Operand`: the ComponentResource that registers one operand and everything it needs (CRDs, a
service account with exactly its rights, config maps, the DaemonSet, its Deployments, Services and
custom resources), in the order the API server needs them."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes.operands.manifests import (
    claim_template_name,
    claim_template_spec,
    daemonset_manifest,
    deployment_manifest,
)
from components.kubernetes.operands.spec import OperandArgs, OperandSpec, with_wait
from gpu_platform.interface import contract


class Operand(pulumi.ComponentResource):
    """One GPU operand and everything it needs. Subclasses only build their `OperandSpec`."""

    daemonset: k8s.apps.v1.DaemonSet  # the first of its DaemonSets
    daemonsets: list[k8s.apps.v1.DaemonSet]

    def __init__(self, name: str, args: OperandArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__(
            f"gpu-platform:operands:{type(self).__name__}",
            name,
            None,
            pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(args.depends_on))),
        )
        spec = with_wait(args.spec, args.waits_for, args.wait_image)
        self._name, self._args = name, args
        self._child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        object_name = spec.name
        # CRDs first: a workload whose image reads or writes its custom resources starts only
        # after the API knows them.
        crds = [
            k8s.apiextensions.v1.CustomResourceDefinition(
                f"{name}-crd-{crd['name'].split('.')[0]}",
                metadata={
                    "name": crd["name"],
                    "labels": {"app.kubernetes.io/part-of": "gpu-platform"},
                    **({"annotations": crd["annotations"]} if crd.get("annotations") else {}),
                },
                spec=crd["spec"],
                opts=self._child,
            )
            for crd in spec.crds
        ]
        waits = [*crds, *self._identity(name, object_name, spec.operand, spec.cluster_rules, spec.namespace_rules)]
        # DeviceClasses before the kubelet plugin, as the GPU Operator orders them (state-dra-driver
        # 0400-0430 before 0500): a claim made as the first node joins finds its class.
        waits += [
            k8s.resource.v1.DeviceClass(
                f"{name}-deviceclass-{class_name.split('.')[0]}",
                metadata={
                    "name": class_name,
                    "labels": {"app.kubernetes.io/name": spec.operand, "app.kubernetes.io/part-of": "gpu-platform"},
                },
                spec={"selectors": [{"cel": {"expression": expression}}]},
                opts=self._child,
            )
            for class_name, expression in spec.device_classes
        ]
        waits += self._guards(name, spec)
        # Before the DaemonSet: a pod whose claim template does not exist yet stays Pending.
        waits += [
            k8s.resource.v1.ResourceClaimTemplate(
                f"{name}-claim-{template.suffix}",
                metadata=self._meta(claim_template_name(object_name, template), spec.operand),
                spec=claim_template_spec(template),
                opts=self._child,
            )
            for template in spec.claim_templates
        ]
        configmap_names = {}
        for suffix, data in spec.config_maps.items():
            cm_name = f"{object_name}-{suffix}"
            waits.append(
                k8s.core.v1.ConfigMap(
                    f"{name}-{suffix}", metadata=self._meta(cm_name, spec.operand), data=data, opts=self._child
                )
            )
            configmap_names[suffix] = cm_name
        after_waits = pulumi.ResourceOptions.merge(self._child, pulumi.ResourceOptions(depends_on=waits))
        for part in spec.deployments:
            part_name = f"{object_name}-{part.suffix}"
            identity = self._identity(
                f"{name}-{part.suffix}", part_name, spec.operand, part.cluster_rules, part.namespace_rules
            )
            manifest = deployment_manifest(spec, part, args, part_name)
            manifest["metadata"]["namespace"] = args.namespace
            k8s.apps.v1.Deployment(
                f"{name}-{part.suffix}",
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=pulumi.ResourceOptions.merge(self._child, pulumi.ResourceOptions(depends_on=[*waits, *identity])),
            )
        self.daemonsets = [
            self._daemonset(name, spec, object_name, configmap_names, after_waits),
            *(
                self._daemonset(f"{name}-{v.variant}", v, f"{object_name}-{v.variant}", configmap_names, after_waits)
                for v in spec.variants
            ),
        ]
        self.daemonset = self.daemonsets[0]
        for service in spec.services:
            k8s.core.v1.Service(
                f"{name}-{service.port_name}-svc",
                metadata=self._meta(object_name, spec.operand),
                spec={
                    # Every DaemonSet's pods of the operand, its variants' too (none of its Deployments
                    # serves a port).
                    "selector": {contract.OPERAND_KEY: spec.operand},
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

    def _daemonset(
        self,
        name: str,
        spec: OperandSpec,
        object_name: str,
        configmap_names: dict[str, str],
        opts: pulumi.ResourceOptions,
    ) -> k8s.apps.v1.DaemonSet:
        base = self._args.spec
        if (spec.cluster_rules, spec.namespace_rules) != (base.cluster_rules, base.namespace_rules) or not set(
            spec.config_maps
        ) <= set(configmap_names):
            # A variant runs under its operand's account and mounts its config maps: it can hold no other.
            raise ValueError(f"{spec.operand}-{spec.variant}: a variant has its operand's rules and config maps")
        manifest = daemonset_manifest(spec, self._args, object_name, configmap_names, account=base.name)
        manifest["metadata"]["namespace"] = self._args.namespace
        return k8s.apps.v1.DaemonSet(f"{name}-ds", metadata=manifest["metadata"], spec=manifest["spec"], opts=opts)

    def _guards(self, name: str, spec: OperandSpec) -> list[pulumi.Resource]:
        """Admission policies that narrow this operand's own rights, made before its workloads so that
        their first requests are already checked; none by default."""
        return []

    def _meta(self, object_name: str, operand: str) -> dict:
        return {
            "name": object_name,
            "namespace": self._args.namespace,
            "labels": {"app.kubernetes.io/name": operand, "app.kubernetes.io/part-of": "gpu-platform"},
        }

    def _identity(
        self,
        name: str,
        object_name: str,
        operand: str,
        cluster_rules: tuple[dict, ...],
        namespace_rules: tuple[dict, ...],
    ) -> list[pulumi.Resource]:
        """A service account with exactly the given rights. It mounts no API token by default: the
        operand's own pod spec asks for one when it has rights to use, so a pod that another
        process creates under this account (the validator's workload pods) gets none."""
        args, child = self._args, self._child
        meta = self._meta(object_name, operand)
        cluster_meta = {"name": object_name, "labels": meta["labels"]}
        subjects = [{"kind": "ServiceAccount", "name": object_name, "namespace": args.namespace}]
        made: list[pulumi.Resource] = [
            k8s.core.v1.ServiceAccount(f"{name}-sa", metadata=meta, automount_service_account_token=False, opts=child)
        ]
        # One role and one binding per scope that has rules: cluster-wide, then in the namespace.
        scopes = (
            (
                cluster_rules,
                "clusterrole",
                "ClusterRole",
                cluster_meta,
                k8s.rbac.v1.ClusterRole,
                k8s.rbac.v1.ClusterRoleBinding,
            ),
            (namespace_rules, "role", "Role", meta, k8s.rbac.v1.Role, k8s.rbac.v1.RoleBinding),
        )
        for rules, suffix, kind, metadata, role_type, binding_type in scopes:
            if not rules:
                continue
            role = role_type(f"{name}-{suffix}", metadata=metadata, rules=list(rules), opts=child)
            made.append(
                binding_type(
                    f"{name}-{suffix}binding",
                    metadata=metadata,
                    role_ref={"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role.metadata["name"]},
                    subjects=subjects,
                    opts=child,
                )
            )
        return made
