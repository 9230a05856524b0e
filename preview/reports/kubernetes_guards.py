"""The Kubernetes guards of the audit report: what narrows the privileged operands beyond RBAC (the
ValidatingAdmissionPolicies and their bindings) and who may connect to the operator namespace (its
NetworkPolicies), read from resource inputs and printed as recorded (the pack judges them).
"""

from __future__ import annotations

from typing import Any

from gpu_platform.interface.resource_types import (
    ADMISSION_BINDING as BINDING,
    ADMISSION_POLICY as POLICY,
    NETWORK_POLICY,
)
from preview.recording import Recording
from preview.reports.report import clean


def _inputs(recording: Recording, type_: str) -> list[dict[str, Any]]:
    found = [clean(r.inputs) for r in recording.of_type(type_)]
    return sorted(
        found, key=lambda p: (p.get("metadata", {}).get("namespace", ""), p.get("metadata", {}).get("name", ""))
    )


def _selector(selector: dict) -> str:
    parts = [f"{k}={v}" for k, v in sorted((selector.get("matchLabels") or {}).items())]
    parts += [
        f"{e['key']} {e['operator']} {','.join(e.get('values') or [])}".rstrip()
        for e in selector.get("matchExpressions") or []
    ]
    return ", ".join(parts) or "every pod"


def _admission(recording: Recording) -> list[str]:
    policies = _inputs(recording, POLICY)
    if not policies:
        return ["No admission policy (a cluster before Kubernetes 1.30 serves none).", ""]
    actions: dict[str, list[str]] = {}
    for binding in _inputs(recording, BINDING):
        spec = binding.get("spec", {})
        actions.setdefault(spec.get("policyName", ""), []).extend(spec.get("validationActions") or [])
    lines = []
    for policy in policies:
        name, spec = policy["metadata"]["name"], policy.get("spec", {})
        rules = spec.get("matchConstraints", {}).get("resourceRules", [])
        on = "; ".join(f"{'/'.join(r.get('operations', []))} {', '.join(r.get('resources', []))}" for r in rules)
        lines += [
            f"### ValidatingAdmissionPolicy `{name}`",
            "",
            f"- on: {on}",
            (
                f"- bound with: {', '.join(sorted(set(actions.get(name, [])))) or 'no binding'}"
                f" (failurePolicy {spec.get('failurePolicy', 'Fail')})"
            ),
        ]
        lines += [f"- only when: `{c['expression']}`" for c in spec.get("matchConditions", [])]
        lines += [f"- requires: {v.get('message') or v['expression']}" for v in spec.get("validations", [])]
        lines.append("")
    return lines


def _network(recording: Recording) -> list[str]:
    policies = _inputs(recording, NETWORK_POLICY)
    if not policies:
        return ["No NetworkPolicy.", ""]
    lines = ["| NetworkPolicy | pods | types | ingress allowed |", "|---|---|---|---|"]
    for policy in policies:
        meta, spec = policy["metadata"], policy.get("spec", {})
        allowed = []
        for rule in spec.get("ingress") or []:
            peers = (
                "; ".join(
                    f"namespace {_selector(p.get('namespaceSelector', {}))}, pods {_selector(p.get('podSelector', {}))}"
                    for p in rule.get("from") or []
                )
                or "anyone"
            )
            ports = (
                ", ".join(f"{p.get('port')}/{p.get('protocol', 'TCP')}" for p in rule.get("ports") or [])
                or "every port"
            )
            allowed.append(f"{ports} from {peers}")
        lines.append(
            f"| `{meta.get('namespace')}/{meta['name']}` | {_selector(spec.get('podSelector', {}))} | "
            f"{', '.join(spec.get('policyTypes') or [])} | {'; '.join(allowed) or 'none'} |"
        )
    return [
        *lines,
        "",
        "Enforced only where the CNI enforces NetworkPolicies (on EKS, the VPC CNI's network policy agent).",
        "",
    ]


def section(recording: Recording) -> list[str]:
    return ["## Kubernetes guards", "", *_admission(recording), "### Network policies", "", *_network(recording)]
