"""The name and label forms of the Kubernetes docs ("Object Names and IDs": RFC 1123 label names;
"Labels and Selectors": syntax and character set), restated here rather than read from the module."""

from __future__ import annotations

import pytest

from gpu_platform.config.kubernetes_names import LABEL_KEY, LABEL_VALUE, NAMESPACE


@pytest.mark.parametrize(
    "name, valid",
    [
        ("gpu-monitoring", True),
        ("a" * 63, True),
        ("0ps", True),
        ("a" * 64, False),
        ("GPU", False),
        ("-gpu", False),
        ("gpu-", False),
        ("gpu.monitoring", False),
        ("", False),
    ],
)
def test_a_namespace_is_a_dns_1123_label_of_at_most_63_characters(name, valid):
    assert bool(NAMESPACE.fullmatch(name)) is valid


@pytest.mark.parametrize(
    "key, valid",
    [
        ("release", True),
        ("app.kubernetes.io/part-of", True),
        ("Team_Name.v2", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("Example.com/x", False),
        ("/release", False),
        ("-release", False),
        ("app kubernetes", False),
    ],
)
def test_a_label_key_is_a_name_of_at_most_63_characters_after_an_optional_dns_subdomain_prefix(key, valid):
    assert bool(LABEL_KEY.fullmatch(key)) is valid


@pytest.mark.parametrize(
    "value, valid",
    [
        ("", True),
        ("kube-prometheus-stack", True),
        ("a" * 63, True),
        ("a" * 64, False),
        ("prom etheus", False),
        ("kps\n", False),
        ("_x", False),
    ],
)
def test_a_label_value_is_empty_or_a_name_of_at_most_63_characters(value, valid):
    assert bool(LABEL_VALUE.fullmatch(value)) is valid
