"""An IAM or KMS policy document as the policy pack, the privilege ledger and the audit report read
it: JSON text (as the AWS provider takes `policy` and `assumeRolePolicy`) or an object; `Statement`
one statement or a list of them; `Action`, `Resource`, each principal kind and each condition value
one value or a list (IAM User Guide, "IAM JSON policy element reference": every one of these
elements takes a single string or an array). Read through gpu_platform/interface/props.py, so the analyzer's
proxies (Mappings and Sequences, not dicts and lists) read like plain values."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from gpu_platform.interface.props import mapping, sequence, text


def parsed(raw: Any) -> Mapping[str, Any]:
    """The document: JSON text parsed, an object as it is; an empty one for anything else."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return mapping(raw)


def statements(raw: Any) -> list[Mapping[str, Any]]:
    """Every statement of the document that is an object, one statement or a list of them."""
    statement = parsed(raw).get("Statement")
    found = [statement] if isinstance(statement, Mapping) else sequence(statement)
    return [s for s in found if isinstance(s, Mapping)]


def values(value: Any) -> list[str]:
    """An element that is one value or a list of them, as a list of text; none for a missing one."""
    if value is None:
        return []
    if isinstance(value, (str, int, float, bool)):
        return [text(value)]
    return [text(v) for v in sequence(value)]
