"""gpu_platform/privileges/iam_document.py: the shapes IAM accepts for a document's elements (one value or a
list, a statement or a list of statements), read alike whether a plain value or the analyzer's
proxy (a Mapping/Sequence that is no dict/list) holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from gpu_platform.privileges.iam_document import parsed, statements, values


class _Object(Mapping):
    """Stands for pulumi_policy's _DictProxy: a Mapping, not a dict."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, key):
        value = self._data[key]
        return _Object(value) if isinstance(value, dict) else _List(value) if isinstance(value, list) else value

    def __iter__(self):
        return iter(self._data)

    def __len__(self):
        return len(self._data)


class _List(Sequence):
    """Stands for pulumi_policy's _ListProxy: a Sequence, not a list."""

    def __init__(self, data):
        self._data = data

    def __getitem__(self, i):
        value = self._data[i]
        return _Object(value) if isinstance(value, dict) else value

    def __len__(self):
        return len(self._data)


ALLOW = {"Effect": "Allow", "Action": "sts:AssumeRole"}


@pytest.mark.parametrize(
    "raw, expected",
    [
        ('{"Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole"}]}', [ALLOW]),
        ('{"Statement": {"Effect": "Allow", "Action": "sts:AssumeRole"}}', [ALLOW]),  # one statement, no list
        ({"Statement": [ALLOW, "not a statement", None]}, [ALLOW]),
        ('{"Statement": []}', []),
        ('{"Version": "2012-10-17"}', []),
        ("not JSON", []),
        ("", []),
        (None, []),
        ('["a list, not a document"]', []),
    ],
    ids=["list", "single", "junk-items", "empty", "no-statement", "not-json", "empty-text", "none", "json-list"],
)
def test_statements_of_every_shape_iam_takes(raw, expected):
    assert [dict(s) for s in statements(raw)] == expected


def test_statements_read_through_the_analyzers_proxies():
    document = _Object({"Statement": [ALLOW]})
    assert [dict(s) for s in statements(document)] == [ALLOW]
    assert [dict(s) for s in statements(_Object({"Statement": ALLOW}))] == [ALLOW]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("s3:GetObject", ["s3:GetObject"]),
        (["s3:GetObject", "s3:PutObject"], ["s3:GetObject", "s3:PutObject"]),
        (_List(["*"]), ["*"]),
        ([], []),
        (None, []),
        (True, ["True"]),
        ({"AWS": "*"}, []),  # an object is no value of these elements
    ],
    ids=["one", "list", "proxy-list", "empty-list", "missing", "bool", "object"],
)
def test_values_one_or_a_list(value, expected):
    assert values(value) == expected


def test_parsed_takes_text_or_an_object_and_nothing_else():
    assert dict(parsed('{"Version": "2012-10-17"}')) == {"Version": "2012-10-17"}
    assert parsed(_Object({"Version": "2012-10-17"}))["Version"] == "2012-10-17"
    assert dict(parsed("{")) == {} and dict(parsed(42)) == {}
