"""gpu_platform/privileges/canonical_form.py: the forms every ledger row is written in, with expectations
written out by hand."""

from __future__ import annotations

import hashlib

import pytest

from gpu_platform.privileges import canonical_form


def test_canonical_json_sorts_keys_and_writes_integral_floats_as_integers():
    assert canonical_form.canonical({"b": 1.0, "a": [2.5, True]}) == '{"a":[2.5,true],"b":1}'


def test_lists_are_sorted_only_where_they_are_sets():
    assert canonical_form.canonical(["b", "a"]) == '["b","a"]'
    assert canonical_form.canonical(["b", "a"], sets=True) == '["a","b"]'


def test_text_and_bytes_hash_alike():
    expected = "sha256:" + hashlib.sha256(b"abc").hexdigest()
    assert canonical_form.sha256("abc") == canonical_form.sha256(b"abc") == expected
    assert expected == "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"  # FIPS 180-2 "abc"


@pytest.mark.parametrize(
    "value, name",
    [
        ("arn:aws:iam::123456789012:role/gpu-prod-cni-3f2a9c1", "gpu-prod-cni"),
        ("arn:aws:iam::123456789012:role/path/gpu-prod-cni", "gpu-prod-cni"),
        ("gpu-prod-node-role-0a1b2c3", "gpu-prod-node-role"),
        ("gpu-prod-node-role", "gpu-prod-node-role"),
        ("gpu-prod-node-role-0A1B2C3", "gpu-prod-node-role-0A1B2C3"),  # not Pulumi's suffix: lower-case hex only
    ],
)
def test_an_autonamed_name_or_arn_loses_the_suffix_only(value, name):
    assert canonical_form.without_autoname(value) == name


def test_subjects_are_named_with_their_namespace_when_they_have_one():
    assert canonical_form.subject("DaemonSet", "gpu-operator", "x") == "DaemonSet gpu-operator/x"
    assert canonical_form.subject("ClusterRole", "", "x") == "ClusterRole x"


@pytest.mark.parametrize("value, shown", [(300.0, "300"), (2.5, "2.5"), (8, "8"), ("TCP", "TCP")])
def test_engine_floats_read_as_the_integers_they_are(value, shown):
    assert canonical_form.number(value) == shown
