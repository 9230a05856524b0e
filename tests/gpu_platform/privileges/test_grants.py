"""What the stack grants through RBAC, IAM and KMS, and what its admission policies enforce, in the
privilege ledger (gpu_platform/privileges/grants.py through gpu_platform/privileges/ledger.py rows): the rows a reviewer
reads, and the canonical documents behind each hash, written out by hand."""

from __future__ import annotations

import hashlib
import json

from gpu_platform.privileges import ledger

RBAC = "kubernetes:rbac.authorization.k8s.io/v1:"
ADMISSION = "kubernetes:admissionregistration.k8s.io/v1:"
ACCOUNT = "123456789012"
DOCUMENT = "(SHA-256 of the canonical JSON, lists sorted)"
FOREIGN = "444455556666"


def _namespace(account: str = ACCOUNT) -> tuple[str, str, dict]:
    """The operands' namespace, declaring the account the stack deploys into (as the program writes it)."""
    return (
        "kubernetes:core/v1:Namespace",
        "gpu-namespace",
        {"metadata": {"name": "gpu-operator", "annotations": {"gpu-platform.io/aws-account": account}}},
    )


def _sha(canonical: str) -> str:
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def _cluster_role(rules: list, name: str = "nvidia-mig-manager") -> tuple[str, str, dict]:
    return (
        RBAC + "ClusterRole",
        f"gpu-{name}-clusterrole",
        {"kind": "ClusterRole", "metadata": {"name": name}, "rules": rules},
    )


MIG_RULES = [
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
]


def test_every_rule_of_a_cluster_role_is_a_row_with_its_lists_sorted():
    assert ledger.rows([_cluster_role(MIG_RULES)]) == [
        (
            "ClusterRole nvidia-mig-manager",
            "(role)",
            'rule {"apiGroups":[""],"resources":["nodes"],"verbs":["get","list","patch","update","watch"]}',
        ),
        ("ClusterRole nvidia-mig-manager", "(role)", 'rule {"apiGroups":[""],"resources":["pods"],"verbs":["list"]}'),
    ]


def test_reordering_the_verbs_or_the_rules_of_a_role_changes_nothing():
    reordered = [
        {"verbs": ["list"], "resources": ["pods"], "apiGroups": [""]},
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["update", "patch", "watch", "list", "get"]},
    ]
    assert ledger.digest(ledger.rows([_cluster_role(reordered)])) == ledger.digest(
        ledger.rows([_cluster_role(MIG_RULES)])
    )


def test_a_cluster_role_widened_to_everything_is_another_row():
    wide = [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
    assert ledger.rows([_cluster_role(wide)]) == [
        ("ClusterRole nvidia-mig-manager", "(role)", 'rule {"apiGroups":["*"],"resources":["*"],"verbs":["*"]}')
    ]


def test_a_namespaced_role_and_an_aggregation_rule_are_rows_too():
    role = (
        RBAC + "Role",
        "r",
        {
            "metadata": {"name": "nvidia-operator-validator", "namespace": "gpu-operator"},
            "rules": [
                {
                    "apiGroups": ["apps"],
                    "resources": ["daemonsets"],
                    "resourceNames": ["nvidia-operator-validator"],
                    "verbs": ["get"],
                }
            ],
        },
    )
    aggregated = (
        RBAC + "ClusterRole",
        "a",
        {
            "metadata": {"name": "gpu-view"},
            "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example/aggregate": "true"}}]},
        },
    )
    assert ledger.rows([role, aggregated]) == [
        (
            "ClusterRole gpu-view",
            "(role)",
            'aggregationRule {"clusterRoleSelectors":[{"matchLabels":{"rbac.example/aggregate":"true"}}]}',
        ),
        (
            "Role gpu-operator/nvidia-operator-validator",
            "(role)",
            'rule {"apiGroups":["apps"],"resourceNames":["nvidia-operator-validator"],"resources":["daemonsets"],"verbs":["get"]}',
        ),
    ]


def _binding(role: str, kind: str = "ClusterRoleBinding", namespace: str = "") -> tuple[str, str, dict]:
    meta = {"name": "nvidia-mig-manager", **({"namespace": namespace} if namespace else {})}
    return (
        RBAC + kind,
        "b",
        {
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [
                {"kind": "ServiceAccount", "name": "nvidia-mig-manager", "namespace": "gpu-operator"},
                {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "gpu-admins"},
            ],
        },
    )


def test_a_binding_names_its_role_and_every_subject():
    assert ledger.rows([_binding("nvidia-mig-manager")]) == [
        ("ClusterRoleBinding nvidia-mig-manager", "(binding)", "roleRef ClusterRole nvidia-mig-manager"),
        ("ClusterRoleBinding nvidia-mig-manager", "(binding)", "subject Group gpu-admins"),
        (
            "ClusterRoleBinding nvidia-mig-manager",
            "(binding)",
            "subject ServiceAccount gpu-operator/nvidia-mig-manager",
        ),
    ]
    assert (
        "RoleBinding gpu-operator/nvidia-mig-manager",
        "(binding)",
        "roleRef ClusterRole cluster-admin",
    ) in ledger.rows([_binding("cluster-admin", "RoleBinding", "gpu-operator")])


TRUST = {
    "Version": "2012-10-17",
    "Statement": [
        {
            "Effect": "Allow",
            "Principal": {"Service": "eks.amazonaws.com"},
            "Action": ["sts:TagSession", "sts:AssumeRole"],
            "Condition": {"StringEquals": {"aws:SourceAccount": ACCOUNT}},
        }
    ],
}
# TRUST by hand: keys sorted, every list sorted, the stack's account masked.
TRUST_CANONICAL = (
    '{"Statement":[{"Action":["sts:AssumeRole","sts:TagSession"],"Condition":{"StringEquals":'
    '{"aws:SourceAccount":"(stack account)"}},"Effect":"Allow","Principal":{"Service":"eks.amazonaws.com"}}],'
    '"Version":"2012-10-17"}'
)


def _role(trust: dict, name: str | None = None) -> tuple[str, str, dict]:
    props = {"assumeRolePolicy": json.dumps(trust), **({"name": name} if name else {})}
    return "aws:iam/role:Role", "gpu-cluster-control-plane", props


def _attachment(policy: str, account: str = ACCOUNT) -> tuple[str, str, dict]:
    return (
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        f"gpu-cluster-control-plane-{policy}",
        {
            "policyArn": f"arn:aws:iam::aws:policy/{policy}"
            if policy[0].isupper()
            else f"arn:aws:iam::{account}:policy/{policy}",
            "role": "gpu-cluster-control-plane-03a07aa",
        },
    )


def test_an_iam_role_shows_its_trust_policy_hash_its_principals_and_its_attached_policies():
    assert ledger.rows([_namespace(), _role(TRUST), _attachment("AmazonEKSClusterPolicy")]) == [
        ("IAM role gpu-cluster-control-plane", "(policies)", "policy arn:aws:iam::aws:policy/AmazonEKSClusterPolicy"),
        ("IAM role gpu-cluster-control-plane", "(trust)", f"assumeRolePolicy {_sha(TRUST_CANONICAL)} {DOCUMENT}"),
        ("IAM role gpu-cluster-control-plane", "(trust)", "trusts Service eks.amazonaws.com"),
    ]


def test_the_role_is_named_alike_in_the_program_the_pack_and_the_attachment():
    # The pack gets the props after the provider's check, with the autoname filled in.
    assert ledger.rows([_role(TRUST, "gpu-cluster-control-plane-03a07aa")]) == ledger.rows([_role(TRUST)])


def test_administrator_access_attached_is_another_row():
    assert ledger.rows([_attachment("AdministratorAccess")]) == [
        ("IAM role gpu-cluster-control-plane", "(policies)", "policy arn:aws:iam::aws:policy/AdministratorAccess")
    ]


def test_a_trust_policy_change_changes_the_hash_and_reordering_its_lists_does_not():
    base = ledger.digest(ledger.rows([_role(TRUST)]))
    statement = TRUST["Statement"][0]
    reordered = {"Statement": [{**statement, "Action": ["sts:AssumeRole", "sts:TagSession"]}], "Version": "2012-10-17"}
    assert ledger.digest(ledger.rows([_role(reordered)])) == base
    anyone = {**TRUST, "Statement": [{**statement, "Principal": {"AWS": "arn:aws:iam::444455556666:root"}}]}
    assert ledger.digest(ledger.rows([_role(anyone)])) != base
    assert (
        "IAM role gpu-cluster-control-plane",
        "(trust)",
        "trusts AWS arn:aws:iam::444455556666:root",
    ) in ledger.rows([_role(anyone), _attachment("AmazonEKSClusterPolicy")])


def test_the_stack_account_is_masked_so_the_offline_and_the_real_preview_agree():
    # Offline, the mocks answer account 123456789012; the real preview the deploying account.
    real = json.loads(json.dumps(TRUST).replace(ACCOUNT, "210987654321"))
    offline = ledger.rows([_namespace(), _role(TRUST), _attachment("gpu-ssm-agent")])
    assert (
        ledger.rows([_namespace("210987654321"), _role(real), _attachment("gpu-ssm-agent", "210987654321")]) == offline
    )
    assert (
        "IAM role gpu-cluster-control-plane",
        "(policies)",
        "policy arn:aws:iam::(stack account):policy/gpu-ssm-agent",
    ) in offline


def test_every_document_naming_another_account_at_once_shows_it():
    # The account is the one the namespace declares, not the one the documents name most: a trust
    # policy and a policy ARN both moved to a foreign account keep their foreign number.
    moved = json.loads(json.dumps(TRUST).replace(ACCOUNT, FOREIGN))
    found = ledger.rows([_namespace(), _role(moved), _attachment("gpu-ssm-agent", FOREIGN)])
    assert (
        "IAM role gpu-cluster-control-plane",
        "(policies)",
        f"policy arn:aws:iam::{FOREIGN}:policy/gpu-ssm-agent",
    ) in found
    assert ledger.digest(found) != ledger.digest(
        ledger.rows([_namespace(), _role(TRUST), _attachment("gpu-ssm-agent")])
    )


def test_without_one_declared_account_nothing_is_masked():
    arn = f"policy arn:aws:iam::{ACCOUNT}:policy/gpu-ssm-agent"
    for declared in ([], [_namespace(ACCOUNT), _namespace("210987654321")], [_namespace("not-an-account")]):
        found = ledger.rows([*declared, _attachment("gpu-ssm-agent")])
        assert found == [("IAM role gpu-cluster-control-plane", "(policies)", arn)], declared


def test_a_key_policy_naming_an_autonamed_role_is_the_same_offline_and_in_the_real_preview():
    # The role's autoname suffix is derived from its name offline and random in the real preview.
    def key(account: str, suffix: str) -> tuple[str, str, dict]:
        statement = {
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": "*",
            "Principal": {"AWS": f"arn:aws:iam::{account}:role/gpu-cluster-control-plane-{suffix}"},
        }
        return "aws:kms/key:Key", "gpu-cluster-secrets", {"policy": json.dumps({"Statement": [statement]})}

    by_hand = (
        '{"Statement":[{"Action":"kms:Decrypt","Effect":"Allow","Principal":{"AWS":'
        '"arn:aws:iam::(stack account):role/gpu-cluster-control-plane"},"Resource":"*"}]}'
    )
    assert (
        ledger.rows([_namespace(), key(ACCOUNT, "03a07aa")])
        == ledger.rows([_namespace("210987654321"), key("210987654321", "9f8e7d6")])
        == [("KMS key gpu-cluster-secrets", "(document)", f"policy {_sha(by_hand)} {DOCUMENT}")]
    )


def test_policy_documents_inline_policies_and_key_policies_are_hashed():
    doc = {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Action": "kms:*", "Resource": "*"},
            {"Effect": "Allow", "Action": ["ssm:UpdateInstanceInformation"], "Resource": "*"},
        ],
    }
    # doc by hand, statements sorted by their canonical text (lists are sets in IAM).
    by_hand = (
        '{"Statement":[{"Action":"kms:*","Effect":"Allow","Resource":"*"},'
        '{"Action":["ssm:UpdateInstanceInformation"],"Effect":"Allow","Resource":"*"}],"Version":"2012-10-17"}'
    )
    found = ledger.rows(
        [
            ("aws:iam/policy:Policy", "p", {"name": "gpu-ssm-agent", "policy": json.dumps(doc)}),
            (
                "aws:iam/rolePolicy:RolePolicy",
                "i",
                {"name": "extra", "role": "gpu-node-role-4ad3f2c", "policy": json.dumps(doc)},
            ),
            (
                "aws:kms/key:Key",
                "gpu-cluster-secrets",
                {"policy": json.dumps({**doc, "Statement": doc["Statement"][::-1]})},
            ),
        ]
    )
    assert found == [
        ("IAM policy gpu-ssm-agent", "(document)", f"policy {_sha(by_hand)} {DOCUMENT}"),
        ("IAM role gpu-node-role", "(policies)", f"inline policy extra {_sha(by_hand)} {DOCUMENT}"),
        ("KMS key gpu-cluster-secrets", "(document)", f"policy {_sha(by_hand)} {DOCUMENT}"),
    ]


SPEC = {"failurePolicy": "Fail", "validations": [{"expression": "object.spec.nodeName == ''"}]}


def _policy(spec: dict) -> tuple[str, str, dict]:
    return (
        ADMISSION + "ValidatingAdmissionPolicy",
        "p",
        {"metadata": {"name": "gpu-platform-validator-pods"}, "spec": spec},
    )


def _policy_binding(actions: list) -> tuple[str, str, dict]:
    return (
        ADMISSION + "ValidatingAdmissionPolicyBinding",
        "b",
        {
            "metadata": {"name": "gpu-platform-validator-pods"},
            "spec": {
                "policyName": "gpu-platform-validator-pods",
                "validationActions": actions,
                "matchResources": {"namespaceSelector": {"matchLabels": {"gpu": "yes"}}},
            },
        },
    )


def test_an_admission_policy_is_its_spec_hash_and_its_binding_readable():
    spec_by_hand = '{"failurePolicy":"Fail","validations":[{"expression":"object.spec.nodeName == \'\'"}]}'
    subject = "ValidatingAdmissionPolicyBinding gpu-platform-validator-pods"
    assert ledger.rows([_policy(SPEC), _policy_binding(["Warn", "Deny"])]) == [
        (
            "ValidatingAdmissionPolicy gpu-platform-validator-pods",
            "(policy)",
            f"spec {_sha(spec_by_hand)} (SHA-256 of the canonical JSON)",
        ),
        # With the API server's defaults (matchPolicy, an empty objectSelector), as the live object has them.
        (
            subject,
            "(binding)",
            (
                'matchResources {"matchPolicy":"Equivalent","namespaceSelector":{"matchLabels":{"gpu":"yes"}},'
                '"objectSelector":{}}'
            ),
        ),
        (subject, "(binding)", "paramRef (none)"),
        (subject, "(binding)", "policyName gpu-platform-validator-pods"),
        (subject, "(binding)", 'validationActions ["Deny","Warn"]'),
    ]


def test_an_expression_replaced_with_true_or_deny_switched_to_audit_changes_the_hash():
    base = ledger.digest(ledger.rows([_policy(SPEC), _policy_binding(["Deny"])]))
    assert (
        ledger.digest(
            ledger.rows([_policy({**SPEC, "validations": [{"expression": "true"}]}), _policy_binding(["Deny"])])
        )
        != base
    )
    assert ledger.digest(ledger.rows([_policy(SPEC), _policy_binding(["Audit"])])) != base


def test_an_admission_policy_of_an_older_api_version_has_the_same_rows_as_v1():
    spec = {"failurePolicy": "Fail", "validations": [{"expression": "true"}]}
    v1 = ledger.rows([(ADMISSION + "ValidatingAdmissionPolicy", "p", {"metadata": {"name": "guard"}, "spec": spec})])
    beta = ledger.rows(
        [
            (
                "kubernetes:admissionregistration.k8s.io/v1beta1:ValidatingAdmissionPolicy",
                "p",
                {"metadata": {"name": "guard"}, "spec": spec},
            )
        ]
    )
    assert beta == v1 and len(v1) == 1 and v1[0][0] == "ValidatingAdmissionPolicy guard"


def test_a_webhook_configuration_is_in_the_ledger_one_row_per_webhook():
    hook = {
        "name": "inject.example.com",
        "clientConfig": {"url": "https://hooks.example.com/inject"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    mutating = (
        "kubernetes:admissionregistration.k8s.io/v1:MutatingWebhookConfiguration",
        "m",
        {"metadata": {"name": "injector"}, "webhooks": [hook]},
    )
    (row,) = ledger.rows([mutating])
    # hook by hand: keys sorted, no spaces, lists in their order, with the API server's defaults for a
    # mutating webhook (failure and match policy, selectors, timeout, reinvocation, the rule's scope).
    by_hand = (
        '{"admissionReviewVersions":["v1"],"clientConfig":{"url":"https://hooks.example.com/inject"},'
        '"failurePolicy":"Fail","matchPolicy":"Equivalent","name":"inject.example.com","namespaceSelector":{},'
        '"objectSelector":{},"reinvocationPolicy":"Never","rules":[{"apiGroups":[""],"apiVersions":["v1"],'
        '"operations":["CREATE"],"resources":["pods"],"scope":"*"}],"sideEffects":"None","timeoutSeconds":10}'
    )
    assert row == (
        "MutatingWebhookConfiguration injector",
        "(webhook)",
        f"webhook inject.example.com {_sha(by_hand)} (SHA-256 of the canonical JSON)",
    )
    elsewhere = {**hook, "clientConfig": {"url": "https://evil.example.com/inject"}}
    assert ledger.rows([(mutating[0], "m", {"metadata": {"name": "injector"}, "webhooks": [elsewhere]})]) != [row]


def test_an_oidc_provider_is_a_trust_anchor_row():
    provider = (
        "aws:iam/openIdConnectProvider:OpenIdConnectProvider",
        "oidc",
        {"url": "https://oidc.eks.us-west-2.amazonaws.com/id/ABC", "clientIdLists": ["sts.amazonaws.com"]},
    )
    assert ledger.rows([provider]) == [
        (
            "IAM OIDC provider https://oidc.eks.us-west-2.amazonaws.com/id/ABC",
            "(trust anchor)",
            'clientIdList ["sts.amazonaws.com"]',
        )
    ]


def test_a_list_naming_the_stack_account_and_another_sorts_alike_offline_and_for_real():
    # Sorted before masking, the own account's digits (123... offline, 999... for real) would put
    # the foreign principal first in one preview and second in the other.
    def key(account: str, suffix: str) -> tuple[str, str, dict]:
        statement = {
            "Effect": "Allow",
            "Action": "kms:Decrypt",
            "Resource": "*",
            "Principal": {
                "AWS": [
                    f"arn:aws:iam::{account}:root",
                    "arn:aws:iam::555555555555:role/partner",
                    f"arn:aws:iam::{account}:role/gpu-node-role-{suffix}",
                    f"arn:aws:iam::{account}:role/gpu-node-role-builder",
                ]
            },
        }
        return "aws:kms/key:Key", "k", {"policy": json.dumps({"Statement": [statement]})}

    offline = ledger.rows([_namespace(ACCOUNT), key(ACCOUNT, "0a1b2c3")])
    assert ledger.rows([_namespace("999999999999"), key("999999999999", "f00d123")]) == offline


def test_the_live_objects_with_the_api_servers_defaults_give_the_program_objects_rows():
    # A real preview of a deployed stack hands the pack the live objects: the program's policy,
    # binding and webhook, and below them the same as the API server stores them (written by hand).
    spec = {
        "validations": [{"expression": "true"}],
        "matchConstraints": {
            "resourceRules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}
            ]
        },
    }
    live = {
        "failurePolicy": "Fail",
        "validations": [{"expression": "true"}],
        "matchConstraints": {
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "resourceRules": [
                {
                    "apiGroups": [""],
                    "apiVersions": ["v1"],
                    "operations": ["CREATE"],
                    "resources": ["pods"],
                    "scope": "*",
                }
            ],
        },
    }
    binding = {
        "policyName": "p",
        "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"a": "b"}}},
    }
    live_binding = {
        **binding,
        "matchResources": {
            "matchPolicy": "Equivalent",
            "objectSelector": {},
            "namespaceSelector": {"matchLabels": {"a": "b"}},
        },
    }
    hook = {
        "name": "h.example.com",
        "clientConfig": {"service": {"name": "s", "namespace": "n"}},
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    live_hook = {
        **hook,
        "clientConfig": {"service": {"name": "s", "namespace": "n", "port": 443}},
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": 10,
    }

    def objects(policy, bound, webhook):
        return [
            (ADMISSION + "ValidatingAdmissionPolicy", "p", {"metadata": {"name": "p"}, "spec": policy}),
            (ADMISSION + "ValidatingAdmissionPolicyBinding", "b", {"metadata": {"name": "b"}, "spec": bound}),
            (ADMISSION + "ValidatingWebhookConfiguration", "w", {"metadata": {"name": "w"}, "webhooks": [webhook]}),
        ]

    assert ledger.rows(objects(live, live_binding, live_hook)) == ledger.rows(objects(spec, binding, hook))
    # A default the program overrides is its own value, not the default: Ignore is another policy.
    assert ledger.rows(objects({**spec, "failurePolicy": "Ignore"}, binding, hook)) != ledger.rows(
        objects(spec, binding, hook)
    )
