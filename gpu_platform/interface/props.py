"""Reading resource properties as the analyzer hands them over: nested objects are pulumi_policy's
unknown-checking proxies, `Mapping`s and `Sequence`s that are neither `dict` nor `list`
(pulumi_policy/proxy.py, `_DictProxy`, `_ListProxy`). A check for `dict` or `list` is false for every
value the real analyzer passes and would silently skip the rule; reading an unknown value raises
`UnknownValueError`, which the analyzer reports as "can't run policy during preview". Nothing here
catches it (an undecided policy must say so, never pass), except `unless_filled_in` for the inputs a
provider fills in when the program leaves them out, where unknown means exactly "left out"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

_EMPTY: Mapping[str, Any] = {}

try:
    from pulumi_policy.proxy import UnknownValueError as _Unknown
except ImportError:  # the program's own runtime: plain values, nothing reads as unknown

    class _Unknown(Exception):  # type: ignore[no-redef]
        pass


def unless_filled_in(props: Mapping[str, Any], key: str, built_from: Mapping[str, Any] = _EMPTY) -> Any:
    """props[key], or None where it is unknown because the provider fills it in: for an input that
    is Optional and Computed in the provider's schema, a program that leaves it out gets an unknown
    in the first preview's planned state (a tfbridge provider plans computed attributes as unknown)
    and the value AWS chose afterwards. Only for such keys (the callers name their schema source):
    anywhere else an unknown must stay undecided. A value the program builds from another resource's
    output is unknown too, and is no value left out: where `built_from` (ledger.references) says the
    key is built from resources, an unknown is read as one (UnknownValueError)."""
    if key in built_from:
        return props.get(key)
    try:
        return props.get(key)
    except _Unknown:
        return None


def mapping(value: Any) -> Mapping[str, Any]:
    """The value if it is an object, else an empty one."""
    return value if isinstance(value, Mapping) else _EMPTY


def sequence(value: Any) -> Sequence[Any]:
    """The value if it is a list (text is not), else an empty one."""
    return value if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else ()


def dig(value: Any, *path: str) -> Mapping[str, Any]:
    """The object at `path` (`dig(props, "spec", "template")`), or an empty one."""
    for key in path:
        value = mapping(value).get(key)
    return mapping(value)


def text(value: Any) -> str:
    """A property as text: strings as they are, missing values as ""."""
    return value if isinstance(value, str) else ("" if value is None else str(value))


def strings(value: Any) -> dict[str, str]:
    """A map of strings (tags, labels, annotations) as a plain dict."""
    return {str(k): text(v) for k, v in mapping(value).items()}
