"""How the program reads YAML it ships or renders: libyaml's safe loader where PyYAML was built with
it (a tenth of the pure-Python loader's time, the same YAML 1.1 resolution), the pure one otherwise.
Stack files are read elsewhere, as Pulumi reads them (preview/stack_file.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import yaml

LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load(text: str) -> Any:
    return yaml.load(text, Loader=LOADER)


def load_all(text: str) -> Iterator[Any]:
    return yaml.load_all(text, Loader=LOADER)
