"""gpu_platform/privileges/server_defaults.py: the API server's defaults, each written out by hand from the
defaulting functions it cites; the program's input is never changed."""

from __future__ import annotations

import copy

from gpu_platform.privileges import server_defaults


def test_a_policy_spec_gets_the_failure_policy_and_match_defaults_and_keeps_its_own_values():
    spec = {
        "matchConstraints": {"resourceRules": [{"resources": ["pods"]}, {"resources": ["nodes"], "scope": "Cluster"}]}
    }
    before = copy.deepcopy(spec)
    assert server_defaults.policy_spec(spec) == {
        "failurePolicy": "Fail",
        "matchConstraints": {
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "resourceRules": [{"resources": ["pods"], "scope": "*"}, {"resources": ["nodes"], "scope": "Cluster"}],
        },
    }
    assert spec == before
    assert server_defaults.policy_spec({"failurePolicy": "Ignore"}) == {"failurePolicy": "Ignore"}


def test_a_validating_webhook_is_not_given_the_mutating_ones_reinvocation_policy():
    hook = {"name": "h", "rules": [{"resources": ["pods"]}], "clientConfig": {"service": {"name": "s", "port": 8443}}}
    assert server_defaults.webhook(hook, mutating=False) == {
        "name": "h",
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "namespaceSelector": {},
        "objectSelector": {},
        "timeoutSeconds": 10,
        "rules": [{"resources": ["pods"], "scope": "*"}],
        "clientConfig": {"service": {"name": "s", "port": 8443}},
    }
    assert server_defaults.webhook(hook, mutating=True)["reinvocationPolicy"] == "Never"


def test_env_keeps_a_set_api_version_and_drops_only_empty_values():
    env = [
        {"name": "A", "valueFrom": {"fieldRef": {"apiVersion": "v2", "fieldPath": "x"}}},
        {"name": "B", "value": "0"},
    ]
    assert server_defaults.env(env) == env


def test_a_network_policy_reads_as_the_live_object_serializes_it():
    # podSelector is always there ({}: every pod), an empty rule list is not (omitempty).
    written = {"ingress": [], "policyTypes": ["Ingress"]}
    assert server_defaults.network_policy_spec(written) == {"podSelector": {}, "policyTypes": ["Ingress"]}
    live = {"podSelector": {}, "policyTypes": ["Ingress"]}
    assert server_defaults.network_policy_spec(live) == server_defaults.network_policy_spec(written)
    selected = {"podSelector": {"matchLabels": {"app": "x"}}, "egress": [{}]}
    assert server_defaults.network_policy_spec(selected) == {
        "podSelector": {"matchLabels": {"app": "x"}},
        "egress": [{}],
        "policyTypes": ["Ingress", "Egress"],
    }
