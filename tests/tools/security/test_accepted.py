"""The accepted-failures list: what the scan refuses, and how `make scan-accept` rewrites it."""

import pytest
import yaml

from tools.security import accepted
from tools.security.findings import Finding

PLUGIN = "DaemonSet/gpu-operator/nvidia-device-plugin"
VALIDATOR = "DaemonSet/gpu-operator/nvidia-validator"


def listed(text):
    return accepted.parse(yaml.safe_load(text))


ONE = listed(f"""
CKV_K8S_16:
  title: Container should not be privileged
  resources:
    {VALIDATOR}: {{stacks: [dev, prod], reason: the driver check chroots into the host to run nvidia-smi}}
""")


def priv(resource, stack):
    return Finding("CKV_K8S_16", resource, stack, "Container should not be privileged", "02-daemonset.yaml")


def test_the_listed_failures_and_nothing_else_pass():
    assert accepted.problems(ONE, [priv(VALIDATOR, "dev"), priv(VALIDATOR, "prod")]) == []


def test_a_failure_not_listed_names_the_check_the_resource_and_what_to_do():
    (problem,) = accepted.problems(ONE, [priv(VALIDATOR, "dev"), priv(VALIDATOR, "prod"), priv(PLUGIN, "prod")])
    assert "CKV_K8S_16" in problem and PLUGIN in problem and "prod" in problem
    assert "fix the manifest" in problem and "make scan-accept" in problem


def test_a_listed_entry_that_no_longer_fails_is_stale():
    (problem,) = accepted.problems(ONE, [priv(VALIDATOR, "dev")])
    assert "no longer fails (prod)" in problem and VALIDATOR in problem


def test_a_todo_reason_is_refused():
    todo = accepted.regenerate({}, [priv(PLUGIN, "prod")])
    (problem,) = accepted.problems(todo, [priv(PLUGIN, "prod")])
    assert "TODO" in problem and PLUGIN in problem


def test_a_new_resource_gets_todo_even_under_a_check_with_a_reason():
    shared = listed(f"""
CKV_K8S_43:
  title: Image should use digest
  reason: tags are what the matrix pins
  resources:
    {VALIDATOR}: {{stacks: [prod]}}
""")
    out = accepted.regenerate(shared, [Finding("CKV_K8S_43", r, "prod") for r in (VALIDATOR, PLUGIN)])
    assert accepted.reason_of(out["CKV_K8S_43"], VALIDATOR) == "tags are what the matrix pins"
    assert accepted.reason_of(out["CKV_K8S_43"], PLUGIN) == accepted.TODO


def test_regenerating_keeps_reasons_drops_fixed_failures_and_records_stacks():
    out = accepted.regenerate(ONE, [priv(VALIDATOR, "prod")])
    assert out["CKV_K8S_16"].resources[VALIDATOR].stacks == ["prod"]
    assert accepted.reason_of(out["CKV_K8S_16"], VALIDATOR).startswith("the driver check")
    assert accepted.regenerate(ONE, []) == {}


def test_the_written_list_reads_back_the_same():
    out = accepted.regenerate(ONE, [priv(VALIDATOR, "prod"), priv(PLUGIN, "dev"), Finding("CKV_K8S_8", PLUGIN, "dev")])
    assert accepted.parse(yaml.safe_load(accepted.dump(out))) == out
    assert list(out) == ["CKV_K8S_8", "CKV_K8S_16"]  # numeric order, not text order


@pytest.mark.parametrize(
    "text, where",
    [
        ("CKV_K8S_16: {resources: {X: {stacks: prod, reason: r}}}", "CKV_K8S_16.resources[X].stacks"),
        ("CKV_K8S_16: {resources: {X: {stacks: [prod]}}}", "CKV_K8S_16.resources[X]: no reason"),
        ("CKV_K8S_16: {resources: {X: {stacks: [prod], reason: r, why: r}}}", "unknown key(s) ['why']"),
        ("CKV_K8S_16: [X]", "CKV_K8S_16.resources"),
    ],
)
def test_a_malformed_list_names_the_key_path(text, where):
    with pytest.raises(accepted.ListError) as exc:
        listed(text)
    assert where in str(exc.value)


def test_the_shipped_list_parses_and_has_no_todo():
    checks = accepted.load()
    assert all(accepted.reason_of(c, r) != accepted.TODO for c in checks.values() for r in c.resources)
