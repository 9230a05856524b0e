"""Reading properties as the real analyzer hands them over: pulumi_policy wraps them in proxies that
are Mappings and Sequences but neither dicts nor lists, and that raise on an unknown value."""

from __future__ import annotations

import pytest
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from gpu_platform.interface.props import dig, mapping, sequence, strings, text
from tests.policy.verdict import UNKNOWN

PROPS = unknown_checking_proxy(
    {
        "tags": {"a": "1", "b": "2"},
        "list": [{"x": 1}, {"x": 2}],
        "name": "n",
        "unknown": UNKNOWN,
        "nested": {"unknown": UNKNOWN},
    }
)


def test_the_analyzers_objects_are_neither_dicts_nor_lists():
    # The trap this module exists for: `isinstance(x, dict)` is false for every object the CLI passes.
    assert not isinstance(PROPS["tags"], dict) and not isinstance(PROPS["list"], list)


def test_objects_and_lists_are_read_through_the_proxies():
    assert dict(mapping(PROPS["tags"])) == {"a": "1", "b": "2"}
    assert [dict(item) for item in sequence(PROPS["list"])] == [{"x": 1}, {"x": 2}]
    assert strings(PROPS["tags"]) == {"a": "1", "b": "2"}
    assert dig(PROPS, "nested") is PROPS["nested"]


@pytest.mark.parametrize("value", [None, "text", 3, True])
def test_anything_else_reads_as_empty(value):
    assert mapping(value) == {} and sequence(value) == ()


def test_text_is_never_a_list():
    assert sequence("abc") == ()


def test_an_unknown_value_raises_instead_of_reading_as_absent():
    with pytest.raises(UnknownValueError):
        text(PROPS["unknown"])
    with pytest.raises(UnknownValueError):
        strings(PROPS["nested"])
