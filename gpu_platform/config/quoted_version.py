"""A version as the stack file gives it. YAML reads 1.30 unquoted as the number 1.3, so a version
must arrive as text; only a number is told to quote itself (a quoted version that is unknown is
unknown, and a mapping or list is not a version however it is written: a `<<` merge entry in a list
makes a mapping)."""

from __future__ import annotations

import json
import re
from typing import Any

from gpu_platform.config.errors import ConfigProblem, KeyPath, NoValue, shown


def version_problem(
    value: Any, pattern: str, what: str, example: str, valid: str = "", path: KeyPath = ()
) -> ConfigProblem | None:
    """What is wrong with `value` as `what` (a version matching `pattern`), or None."""
    if isinstance(value, str) and re.fullmatch(pattern, value):
        return None
    listed = f" (valid: {valid})" if valid else ""
    if value is None or value == "":
        return NoValue(f'has no value (null or empty): give {what}, quoted, e.g. "{example}"{listed}', path=path)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        text = json.dumps(value)
        quoted = text if re.fullmatch(pattern, text) else example
        return ConfigProblem(
            f'the value was read as a number ({text}), not text: a version must be quoted, e.g. "{quoted}"{listed}',
            path=path,
        )
    if isinstance(value, (dict, list, tuple)):
        kind = "a mapping" if isinstance(value, dict) else "a list"
        return ConfigProblem(
            f'{shown(value)} is {kind}, not {what} (one quoted version, e.g. "{example}"){listed}', path=path
        )
    return ConfigProblem(f"{shown(value)} is not {what}" + (listed or f' (e.g. "{example}")'), path=path)


def quoted_version(value: Any, pattern: str, what: str, example: str) -> Any:
    problem = version_problem(value, pattern, what, example)
    if problem:
        raise problem
    return value
