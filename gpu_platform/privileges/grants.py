"""What the stack grants through Kubernetes RBAC, AWS IAM and KMS, and what its admission policies
enforce, as the privilege ledger (gpu_platform/privileges/ledger.py) reads it from resource properties alone:
widening a ClusterRole, binding `cluster-admin`, attaching AdministratorAccess, trusting another
principal or turning an admission policy into `true` or `Audit` is a different approval.

Rows (subject, part, privilege):

- every Role and ClusterRole (`ClusterRole NAME`, `Role NS/NAME`), part `(role)`: one row per rule,
  `rule {...}`, the rule's canonical JSON with every list sorted (apiGroups, resources, resourceNames,
  verbs, nonResourceURLs: RBAC unions the rules and each list is a set, Kubernetes API, PolicyRule),
  so reordering rules or verbs changes nothing; `aggregationRule {...}` likewise;
- every RoleBinding and ClusterRoleBinding, part `(binding)`: `roleRef KIND NAME`, and one
  `subject KIND NS/NAME` per subject;
- every IAM role (`IAM role NAME`: the `name` property, else the Pulumi name, either without
  Pulumi's autoname suffix), part `(trust)`: `assumeRolePolicy sha256:...` and, readable, one
  `trusts PRINCIPAL-KIND VALUE` per principal an Allow statement names; part `(policies)`: `policy
  ARN` per managed policy attached (RolePolicyAttachment, RolePolicyAttachmentsExclusive,
  managedPolicyArns), `inline policy NAME sha256:...` per inline policy (RolePolicy, inlinePolicies);
  every customer-managed IAM policy (`IAM policy NAME`) and KMS key (`KMS key PULUMI-NAME`), part
  `(document)`: `policy sha256:...`;
- every ValidatingAdmissionPolicy, part `(policy)`: `spec sha256:...` over the whole spec (match
  constraints, conditions, validations, failure policy; lists in their order, as CEL sees them);
  every ValidatingAdmissionPolicyBinding, part `(binding)`: `policyName NAME`,
  `validationActions [...]` (sorted: a set), `matchResources ...` and `paramRef ...` (readable when
  short, else a SHA-256; `(none)` when absent); of any API version (v1, v1beta1, v1alpha1: the program
  writes v1, an older one added to the stack is as strong);
- every MutatingWebhookConfiguration and ValidatingWebhookConfiguration, part `(webhook)`: `webhook
  NAME sha256:...` per webhook (its backend sees, and a mutating one rewrites, every object it
  matches); the program makes none, so one appearing is a new approval;
- every IAM OIDC provider (`IAM OIDC provider URL`), part `(trust anchor)`: its client IDs (a role
  trusting it as a Federated principal trusts what it signs; the roles' trust rows name it).

A policy document (JSON text in the properties) is hashed as its canonical JSON: keys sorted, no
spaces, and EVERY list sorted, since IAM evaluates Statement, Action, Resource, Principal values and
condition values as sets; so reordering statements or actions changes nothing, while any other change
does (text that is not JSON is hashed as it is). The stack's own AWS account, the one the program
declares on the operands' namespace (contract.AWS_ACCOUNT_KEY, from its caller-identity lookup), is
written `(stack account)`: the offline preview answers with a mock account
(preview/offline/outputs.py ACCOUNT) and the real preview with the deploying one, and both must give
the same hash (for the same reason an IAM role or policy ARN loses Pulumi's autoname suffix, random in
the real preview). Any other account stays as it is, so trusting or naming a foreign account shows,
even in every document at once; a stack whose namespace declares no account masks nothing, so its
ledger names real account numbers and matches no approval recorded with the mask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from gpu_platform.interface import contract
from gpu_platform.interface.props import dig, mapping, sequence, text
from gpu_platform.interface.resource_types import (
    IAM_ATTACHMENT,
    IAM_EXCLUSIVE,
    IAM_INLINE,
    IAM_OIDC_PROVIDER,
    IAM_POLICY,
    IAM_ROLE,
    KMS_KEY,
    MUTATING_WEBHOOKS,
    NAMESPACE as NAMESPACE_TYPE,
    VALIDATING_WEBHOOKS,
)
from gpu_platform.privileges import server_defaults
from gpu_platform.privileges.canonical_form import canonical, plain, sha256, subject, without_autoname
from gpu_platform.privileges.iam_document import statements, values
from gpu_platform.privileges.workload_binding import shown

Row = tuple[str, str, str]
_RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
ROLE_TYPES = {_RBAC + "ClusterRole": "ClusterRole", _RBAC + "Role": "Role"}
BINDING_TYPES = {_RBAC + "ClusterRoleBinding": "ClusterRoleBinding", _RBAC + "RoleBinding": "RoleBinding"}
_ADMISSION = "kubernetes:admissionregistration.k8s.io/"
# The program writes v1 only; a policy or binding of an older API version (still served by the
# Kubernetes versions EKS runs: v1beta1 from 1.28, v1alpha1 behind a gate) or a webhook configuration
# would be as strong, so it is in the ledger too, whoever adds it.
POLICY_TYPES = {_ADMISSION + f"{v}:ValidatingAdmissionPolicy" for v in ("v1", "v1beta1", "v1alpha1")}
POLICY_BINDING_TYPES = {_ADMISSION + f"{v}:ValidatingAdmissionPolicyBinding" for v in ("v1", "v1beta1", "v1alpha1")}
WEBHOOK_TYPES = {
    MUTATING_WEBHOOKS: "MutatingWebhookConfiguration",
    VALIDATING_WEBHOOKS: "ValidatingWebhookConfiguration",
}
TYPES = (
    *ROLE_TYPES,
    *BINDING_TYPES,
    *sorted(POLICY_TYPES),
    *sorted(POLICY_BINDING_TYPES),
    *WEBHOOK_TYPES,
    IAM_ROLE,
    IAM_ATTACHMENT,
    IAM_EXCLUSIVE,
    IAM_INLINE,
    IAM_POLICY,
    KMS_KEY,
    IAM_OIDC_PROVIDER,
)
# An AWS account ID: 12 digits (AWS Account Management Reference Guide, "View AWS account identifiers").
_ACCOUNT = re.compile(r"[0-9]{12}")
OWN_ACCOUNT = "(stack account)"


def own_account(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> str:
    """The account the stack's namespaces declare (contract.AWS_ACCOUNT_KEY); "" when none declares
    one, when they differ, or when it is no account ID: then nothing is masked."""
    declared = {
        text(dig(props, "metadata", "annotations").get(contract.AWS_ACCOUNT_KEY))
        for type_, _, props in resources
        if type_ == NAMESPACE_TYPE
    }
    declared.discard("")
    account = next(iter(declared)) if len(declared) == 1 else ""
    return account if _ACCOUNT.fullmatch(account) else ""


# An IAM role or policy ARN whose name ends in Pulumi's autoname suffix, inside a document or alone.
_AUTONAMED_ARN = re.compile(r'(arn:aws(?:-cn|-us-gov)?:iam::[^:"]*:(?:role|policy)/[^"\s]*?)-[0-9a-f]{7}(?=["\s]|$)')


def _masked(value: str, account: str) -> str:
    """The stack's account as OWN_ACCOUNT, and IAM role and policy ARNs without Pulumi's autoname
    suffix (a KMS key policy names the cluster role by its ARN: random in the real preview)."""
    value = _AUTONAMED_ARN.sub(r"\1", value)
    return re.sub(rf"(?<![0-9]){account}(?![0-9])", OWN_ACCOUNT, value) if account else value


def _masked_strings(value: Any, account: str) -> Any:
    if isinstance(value, str):
        return _masked(value, account)
    if isinstance(value, Mapping):
        return {_masked(str(k), account): _masked_strings(v, account) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_strings(v, account) for v in value]
    return value


def document(raw: Any, account: str = "") -> str:
    """A policy document's canonical JSON, the stack's account masked, then every list sorted: masked
    first, so the order of a list never depends on the account's digits or an autoname suffix, which
    differ between the offline and the real preview."""
    raw = text(raw)
    try:
        return canonical(_masked_strings(json.loads(raw), account), sets=True)
    except ValueError:
        return _masked(raw, account)


def _hashed(label: str, raw: Any, account: str) -> str:
    return f"{label} {sha256(document(raw, account))} (SHA-256 of the canonical JSON, lists sorted)"


def _key(kind: str, meta: Mapping[str, Any], resource_name: str) -> str:
    return subject(kind, text(meta.get("namespace")), text(meta.get("name")) or resource_name)


def _rbac_rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    meta = dig(props, "metadata")
    if resource_type in ROLE_TYPES:
        who = _key(ROLE_TYPES[resource_type], meta, resource_name)
        found = [(who, "(role)", f"rule {canonical(rule, sets=True)}") for rule in sequence(props.get("rules"))]
        if "aggregationRule" in props:
            found.append((who, "(role)", f"aggregationRule {canonical(props.get('aggregationRule'), sets=True)}"))
        return found
    who = _key(BINDING_TYPES[resource_type], meta, resource_name)
    ref = dig(props, "roleRef")
    found = [(who, "(binding)", f"roleRef {text(ref.get('kind'))} {text(ref.get('name'))}")]
    for s in map(mapping, sequence(props.get("subjects"))):
        target = f"{text(s.get('namespace'))}/{text(s.get('name'))}" if s.get("namespace") else text(s.get("name"))
        found.append((who, "(binding)", f"subject {text(s.get('kind'))} {target}"))
    return found


def _admission_rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    meta, spec = dig(props, "metadata"), dig(props, "spec")
    if resource_type in WEBHOOK_TYPES:
        # Each webhook's backend sees every object its rules match (and a mutating one rewrites it):
        # the whole webhook (client, rules, selectors, failure policy) by SHA-256.
        who = _key(WEBHOOK_TYPES[resource_type], meta, resource_name)
        mutating = resource_type == MUTATING_WEBHOOKS
        return [
            (
                who,
                "(webhook)",
                (
                    f"webhook {text(mapping(w).get('name'))} "
                    f"{sha256(canonical(server_defaults.webhook(w, mutating)))} (SHA-256 of the canonical JSON)"
                ),
            )
            for w in sequence(props.get("webhooks"))
        ] or [(who, "(webhook)", "webhooks (none)")]
    if resource_type in POLICY_TYPES:
        who = _key("ValidatingAdmissionPolicy", meta, resource_name)
        # With the API server's defaults, so the live policy (a real preview of a deployed stack) hashes alike.
        return [
            (
                who,
                "(policy)",
                f"spec {sha256(canonical(server_defaults.policy_spec(spec)))} (SHA-256 of the canonical JSON)",
            )
        ]
    who = _key("ValidatingAdmissionPolicyBinding", meta, resource_name)
    actions = sorted({text(a) for a in sequence(spec.get("validationActions"))})
    found = [
        (who, "(binding)", f"policyName {text(spec.get('policyName'))}"),
        (who, "(binding)", f"validationActions {canonical(actions)}"),
    ]
    if "matchResources" in spec:
        found.append(
            (who, "(binding)", shown("matchResources", server_defaults.binding_match(spec.get("matchResources"))))
        )
    else:
        found.append((who, "(binding)", "matchResources (none)"))
    # paramRef.parameterNotFoundAction defaults to Deny (admissionregistration/v1beta1/defaults.go SetDefaults_ParamRef).
    found.append(
        (
            who,
            "(binding)",
            shown("paramRef", {"parameterNotFoundAction": "Deny", **plain(mapping(spec.get("paramRef")))})
            if "paramRef" in spec
            else "paramRef (none)",
        )
    )
    return found


def _role_name(value: Any) -> str:
    """An IAM role or policy by name, from a name or an ARN, without Pulumi's autoname suffix: the
    program's props lack an autonamed `name`, the engine hands the pack the props after the provider's
    check, with the autoname filled in (and the attachments name the role by it), so all three agree."""
    return without_autoname(value)


def _trusted(raw: Any, account: str) -> list[str]:
    """`trusts KIND VALUE` for every principal an Allow statement of a trust policy names."""
    found = set()
    for s in statements(text(raw)):
        if s.get("Effect") != "Allow":
            continue
        principal = s.get("Principal")
        if not isinstance(principal, Mapping):
            found.add(f"trusts {_masked(text(principal), account)}")
            continue
        for kind, any_of in principal.items():
            found.update(f"trusts {kind} {_masked(value, account)}" for value in values(any_of))
    return sorted(found)


def _iam_rows(resource_type: str, resource_name: str, props: Mapping[str, Any], account: str) -> list[Row]:
    if resource_type == IAM_ROLE:
        who = f"IAM role {_role_name(props.get('name')) or resource_name}"
        trust = props.get("assumeRolePolicy")
        found = [(who, "(trust)", _hashed("assumeRolePolicy", trust, account))]
        found += [(who, "(trust)", row) for row in _trusted(trust, account)]
        found += [
            (who, "(policies)", f"policy {_masked(text(arn), account)}")
            for arn in sequence(props.get("managedPolicyArns"))
        ]
        found += [
            (who, "(policies)", _hashed(f"inline policy {text(p.get('name'))}", p.get("policy"), account))
            for p in map(mapping, sequence(props.get("inlinePolicies")))
        ]
        return found
    if resource_type == IAM_ATTACHMENT:
        return [
            (
                f"IAM role {_role_name(props.get('role'))}",
                "(policies)",
                f"policy {_masked(text(props.get('policyArn')), account)}",
            )
        ]
    if resource_type == IAM_EXCLUSIVE:
        who = f"IAM role {_role_name(props.get('roleName'))}"
        return [
            (who, "(policies)", f"policy {_masked(text(arn), account)}") for arn in sequence(props.get("policyArns"))
        ]
    if resource_type == IAM_INLINE:
        return [
            (
                f"IAM role {_role_name(props.get('role'))}",
                "(policies)",
                _hashed(
                    f"inline policy {_role_name(props.get('name')) or resource_name}", props.get("policy"), account
                ),
            )
        ]
    if resource_type == IAM_POLICY:
        return [
            (
                f"IAM policy {_role_name(props.get('name')) or resource_name}",
                "(document)",
                _hashed("policy", props.get("policy"), account),
            )
        ]
    return [(f"KMS key {resource_name}", "(document)", _hashed("policy", props.get("policy"), account))]


def rows(resource_type: str, resource_name: str, props: Mapping[str, Any], account: str = "") -> list[Row]:
    """The grant rows of one resource (of TYPES); none for anything else. `account` is own_account of the stack."""
    if resource_type in ROLE_TYPES or resource_type in BINDING_TYPES:
        return _rbac_rows(resource_type, resource_name, props)
    if resource_type in POLICY_TYPES or resource_type in POLICY_BINDING_TYPES or resource_type in WEBHOOK_TYPES:
        return _admission_rows(resource_type, resource_name, props)
    if resource_type == IAM_OIDC_PROVIDER:
        # A trust anchor: every role that trusts it as a Federated principal trusts what it signs.
        who = f"IAM OIDC provider {text(props.get('url')) or resource_name}"
        return [
            (
                who,
                "(trust anchor)",
                f"clientIdList {canonical(sorted(text(c) for c in sequence(props.get('clientIdLists'))))}",
            )
        ]
    if resource_type in TYPES:
        return _iam_rows(resource_type, resource_name, props, account)
    return []
