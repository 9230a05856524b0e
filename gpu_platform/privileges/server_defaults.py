"""What the Kubernetes API server writes into an object the program left out, for the parts the
privilege ledger hashes, so the program's object (the offline preview, and a first `pulumi
preview`) and the live one (a real preview of a deployed stack: the engine hands the pack the
resources' outputs, which pulumi-kubernetes reads back from the cluster) give the same rows.

Each default as the API server's defaulting functions set it (kubernetes/kubernetes pkg/apis/.../
defaults.go; the v1 copies of the admission ones were not readable here, their v1beta1 and v1alpha1
copies are, and the types are the same since the v1 API (GA 1.30) was copied from v1beta1):
- an env var's `value` is `omitempty` (kubernetes/api core/v1 types.go EnvVar.Value): an empty one
  is not in the live object;
- a `fieldRef` without `apiVersion` gets "v1" (pkg/apis/core/v1/defaults.go SetDefaults_ObjectFieldSelector);
- a ValidatingAdmissionPolicy's `failurePolicy` is Fail (admissionregistration/v1beta1/defaults.go
  SetDefaults_ValidatingAdmissionPolicySpec); its and a binding's `matchConstraints`/`matchResources`
  get matchPolicy Equivalent and empty namespace and object selectors (SetDefaults_MatchResources);
  every rule's scope is "*" (SetDefaults_Rule, admissionregistration/v1/defaults.go);
- a webhook (v1) gets failurePolicy Fail, matchPolicy Equivalent, empty selectors, timeoutSeconds 10,
  a mutating one reinvocationPolicy Never, a service reference port 443
  (admissionregistration/v1/defaults.go SetDefaults_ValidatingWebhook, SetDefaults_MutatingWebhook,
  SetDefaults_ServiceReference).
Applied to a plain copy: the input is left as it is."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_platform.privileges.canonical_form import plain


def _rules(rules: Any) -> Any:
    return [{"scope": "*", **r} if isinstance(r, dict) else r for r in rules] if isinstance(rules, list) else rules


def _match(match: Any) -> Any:
    if not isinstance(match, dict):
        return match
    found = {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}, **match}
    for key in ("resourceRules", "excludeResourceRules"):
        if key in found:
            found[key] = _rules(found[key])
    return found


def env(entries: Any) -> Any:
    """A container's env as the live object has it."""
    entries = plain(entries)
    if not isinstance(entries, list):
        return entries
    found = []
    for e in entries:
        if isinstance(e, dict):
            e = {k: v for k, v in e.items() if not (k == "value" and v == "")}
            field = (e.get("valueFrom") or {}).get("fieldRef") if isinstance(e.get("valueFrom"), dict) else None
            if isinstance(field, dict) and not field.get("apiVersion"):
                e = {**e, "valueFrom": {**e["valueFrom"], "fieldRef": {**field, "apiVersion": "v1"}}}
        found.append(e)
    return found


def policy_spec(spec: Mapping[str, Any]) -> dict:
    """A ValidatingAdmissionPolicy's spec as the live object has it."""
    found = {"failurePolicy": "Fail", **plain(spec)}
    if "matchConstraints" in found:
        found["matchConstraints"] = _match(found["matchConstraints"])
    return found


def binding_match(match: Any) -> Any:
    """A ValidatingAdmissionPolicyBinding's matchResources as the live object has it."""
    return _match(plain(match))


def network_policy_spec(spec: Mapping[str, Any]) -> dict:
    """A NetworkPolicy's spec as the live object has it (networking/v1/defaults.go
    SetDefaults_NetworkPolicyPort: protocol TCP; SetDefaults_NetworkPolicy: policyTypes Ingress, and
    Egress when there are egress rules, where none are given)."""
    found = plain(spec)
    if not isinstance(found, dict):
        return {}
    # podSelector is always serialized (NetworkPolicySpec.PodSelector has no omitempty: {} selects every
    # pod), and an empty ingress or egress list is not (omitempty): a live object has `podSelector: {}`
    # and no `ingress: []` (kubernetes/api networking/v1 types.go, NetworkPolicySpec).
    found.setdefault("podSelector", {})
    for direction in ("ingress", "egress"):
        if found.get(direction) == []:
            del found[direction]
    if not found.get("policyTypes"):
        found["policyTypes"] = ["Ingress", *(["Egress"] if found.get("egress") else [])]
    for direction in ("ingress", "egress"):
        if isinstance(found.get(direction), list):
            found[direction] = [
                {**rule, "ports": [{"protocol": "TCP", **p} if isinstance(p, dict) else p for p in rule["ports"]]}
                if isinstance(rule, dict) and isinstance(rule.get("ports"), list)
                else rule
                for rule in found[direction]
            ]
    return found


def webhook(hook: Any, mutating: bool) -> Any:
    """One webhook of a webhook configuration as the live object has it."""
    hook = plain(hook)
    if not isinstance(hook, dict):
        return hook
    found = {
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": 10,
        **({"reinvocationPolicy": "Never"} if mutating else {}),
        **hook,
    }
    if "rules" in found:
        found["rules"] = _rules(found["rules"])
    service = (found.get("clientConfig") or {}).get("service") if isinstance(found.get("clientConfig"), dict) else None
    if isinstance(service, dict):
        found["clientConfig"] = {**found["clientConfig"], "service": {"port": 443, **service}}
    return found
