"""A problem at one key path of the stack file, and the error that lists a stack's problems."""

from __future__ import annotations

import json
from typing import Any

import pulumi

KeyPath = tuple[str | int, ...]


def key_path(path: KeyPath) -> str:
    """`("gpu-platform:nodePools", 0, "mig")` -> `gpu-platform:nodePools[0].mig`, as the stack file spells it."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif not text:
            text = str(part)
        else:
            text += f".{part}"
    return text


class ConfigProblem(ValueError):
    """What is wrong at one key path. The models' validators raise it, and pydantic reports it where
    the validator ran (a field, or a section); `path` goes on from there to the item at fault (an
    index, a key, another section's key), as pydantic does for its own item errors. A ValueError, so
    pydantic takes it as a validator's error and hands it back whole: parse() reads the path from it."""

    def __init__(self, message: str, *, path: KeyPath = ()):
        super().__init__(message)
        self.message, self.path = message, tuple(path)

    def line(self) -> str:
        return f"{key_path(self.path)}: {self.message}" if self.path else self.message


class NoValue(ConfigProblem):
    """A key given null or empty, answered by its own validator (with the key's default): parse()
    keeps this answer instead of its own."""


class ConfigError(pulumi.RunError):
    """A user mistake in the stack configuration. A RunError, so `pulumi up` prints the message
    without a traceback; the offline preview prints it and exits 2. `problems` holds what parse()
    found, each with its key path; a component's own check (AWS knows no such instance type) gives
    its message only."""

    def __init__(self, message: str, problems: tuple[ConfigProblem, ...] = ()):
        super().__init__(message)
        self.problems = problems


def shown(value: Any) -> str:
    """A value in a message, short: text quoted as the other messages quote it, anything else spelt
    as in the stack file (true, null, 3), not as Python (True, None)."""
    if isinstance(value, str):
        text = repr(value)
    else:
        try:
            text = json.dumps(value)
        except (TypeError, ValueError):
            text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def listed(options) -> str:
    """Valid options in a message: sorted, comma-separated."""
    return ", ".join(sorted(options))
