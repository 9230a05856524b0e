"""The operator namespace's guards are deployed: the platform's admission policies, each bound with
`Deny` (the GPU-privilege policy may be bound with `Warn`), for a cluster that runs the operands (on Kubernetes 1.30 or later, the first to serve them),
and the namespace's default-deny ingress NetworkPolicy. Both compare the operands with other
resources of the stack: stack policies.

Both are mandatory: the program always builds them, no stack key turns them off, so a stack without
them is a program fault that leaves the validator, the MIG manager and NFD with their full RBAC
reach (admission) or every operand port open to every pod (network)."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_platform.interface import admission, contract
from gpu_platform.interface.props import dig, mapping, sequence, text
from gpu_platform.interface.resource_types import (
    ADMISSION_BINDING as BINDING,
    ADMISSION_POLICY as POLICY,
    NETWORK_POLICY,
)
from policy import facts, workloads
from policy.declare import stack_policy


def _running(resources) -> set[str]:
    return {
        workloads.operand(r.props)
        for r in resources
        if workloads.kind(r.resource_type) is not None and workloads.operand(r.props) is not None
    }


@stack_policy(
    "gpu-admission-policies-deployed",
    EnforcementLevel.MANDATORY,
    "A cluster of Kubernetes 1.30 or later that runs the operands has the platform's admission policies, each with a "
    "binding that denies: the validator's pods, the MIG manager's and NFD's node writes, GPU access outside the operator namespace; "
    "the GPU-privilege policy's binding may warn instead (gpu-platform:workloads.privilegeAdmission).",
    fix="no stack key: the program builds them (components/kubernetes/admission.py); report it",
)
def gpu_admission_policies_deployed(args, report_violation) -> None:
    namespace = facts.operator_namespace(args.resources)
    running = _running(args.resources)
    if namespace is None or not running:
        return
    version = facts.annotations(namespace.props).get(contract.KUBERNETES_VERSION_TAG, "")
    if not version or not admission.supported(version):
        return  # served from 1.30 only; the program warns (docs/privileges.md "Admission policies")
    policies = {text(dig(r.props, "metadata").get("name")): r for r in args.resources if r.resource_type == POLICY}

    def acts(props, name: str) -> bool:
        # The GPU-privilege policy may only warn (gpu-platform:workloads.privilegeAdmission; the ledger binds it).
        actions = [text(a) for a in sequence(dig(props, "spec").get("validationActions"))]
        return "Deny" in actions or (name in admission.MAY_WARN and "Warn" in actions)

    denying = {
        name
        for r in args.resources
        if r.resource_type == BINDING and acts(r.props, name := text(dig(r.props, "spec").get("policyName")))
    }
    for name, operand in sorted(admission.REQUIRED_FOR.items()):
        if operand is not None and operand not in running:
            continue
        who = f"the {operand} operand runs" if operand else "GPU nodes run workloads"
        if name not in policies:
            report_violation(
                f"{who} but the ValidatingAdmissionPolicy {name!r} is missing: nothing narrows it beyond RBAC"
            )
        elif text(dig(policies[name].props, "spec").get("failurePolicy")) == "Ignore":
            report_violation(
                f"ValidatingAdmissionPolicy {name!r} has failurePolicy Ignore: an expression error would admit the request",
                policies[name].urn,
            )
        elif name not in denying:
            also = " (or Warn, for this one)" if name in admission.MAY_WARN else ""
            report_violation(
                f"ValidatingAdmissionPolicy {name!r} has no binding with validationActions Deny{also}: it would deny nothing",
                policies[name].urn,
            )


def _denies_all_ingress(props, namespace: str) -> bool:
    spec = dig(props, "spec")
    return (
        text(dig(props, "metadata").get("namespace")) == namespace
        and not mapping(spec.get("podSelector"))  # {}: every pod of the namespace
        and "Ingress" in [text(t) for t in sequence(spec.get("policyTypes"))]
        and not sequence(spec.get("ingress"))
    )


@stack_policy(
    "operator-namespace-default-deny",
    EnforcementLevel.MANDATORY,
    "The operator namespace has a NetworkPolicy that selects every pod and allows no ingress (others may then open the metrics ports).",
    fix="no stack key: the program builds it (components/kubernetes/namespace.py); report it",
)
def operator_namespace_default_deny(args, report_violation) -> None:
    namespace = facts.operator_namespace(args.resources)
    if namespace is None:
        return
    name = text(dig(namespace.props, "metadata").get("name"))
    if not any(r.resource_type == NETWORK_POLICY and _denies_all_ingress(r.props, name) for r in args.resources):
        report_violation(
            f"namespace {name!r} ({namespace.urn}) has no default-deny ingress NetworkPolicy (podSelector {{}}, "
            "policyTypes [Ingress], no ingress rule): every operand port is open to every pod of the cluster",
            namespace.urn,
        )
