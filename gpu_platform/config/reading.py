"""Reading the raw config: the one place that turns a stack's `namespace:key` values into a
StackConfig, or into a ConfigError that lists every problem with its key path."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from gpu_platform.config import messages
from gpu_platform.config.aws_provider import provider_setting
from gpu_platform.config.config_keys import key_problem
from gpu_platform.config.errors import ConfigError
from gpu_platform.config.stack import PROJECT, StackConfig

_MAX_PROBLEMS = 20  # a file of 5,000 unknown keys is one mistake repeated, not a page per key


def parse(raw: Mapping[str, Any]) -> StackConfig:
    """Validate a stack's config (`project:key` -> value, objects already decoded) or raise
    ConfigError listing every problem as `key.path: what is wrong (what is valid)`."""
    problems = []
    values = {}
    for key, value in raw.items():
        problem = key_problem(key)
        if problem:
            problems.append(problem)
            continue
        if key.split(":", 1)[0] == PROJECT or key == "aws:region":
            values[key] = value
    try:
        if not problems:
            settings = tuple(
                sorted(
                    provider_setting(key.split(":", 1)[1], value)
                    for key, value in raw.items()
                    if key.startswith("aws:") and key != "aws:region"
                )
            )
            return StackConfig.model_validate(values).model_copy(update={"aws_provider": settings})
    except ValidationError as exc:
        problems += messages.problems(exc.errors())
    lines = [problem.line() for problem in problems[:_MAX_PROBLEMS]]
    if len(problems) > _MAX_PROBLEMS:
        lines.append(f"... and {len(problems) - _MAX_PROBLEMS} more")
    raise ConfigError("invalid stack configuration:\n  " + "\n  ".join(lines), tuple(problems))


def _decode(value: Any) -> Any:
    """Pulumi hands objects and lists over as JSON strings; plain strings stay strings."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except (ValueError, RecursionError):  # not JSON, or an integer of more than 4300 digits, or too deep
            return value
    return value


def from_pulumi() -> StackConfig:
    """The stack's config as the Pulumi engine hands it to the program."""
    from pulumi.runtime import config as runtime_config

    raw = {**runtime_config.get_config_env(), **runtime_config.CONFIG.get()}
    return parse({key: _decode(value) for key, value in raw.items()})
