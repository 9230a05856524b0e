"""The stack file: where it is (`--stack NAME` or `--config FILE`), how the commands name it, and
its `config:` map as Pulumi reads it."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import yaml

ROOT = Path(__file__).resolve().parent.parent
STACKS = ROOT / "stacks"


def stack_file(stack: str) -> Path:
    return STACKS / f"Pulumi.{stack}.yaml"


def read_stack_file(path: Path) -> dict[str, Any]:
    """The `config:` map of a stack file, as Pulumi reads it."""
    document = yaml.load(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
    if not isinstance(document, dict) or not isinstance(document.get("config", {}), dict):
        raise ValueError(f"{path}: a stack file is a mapping with a 'config:' mapping")
    return dict(document.get("config") or {})


def resolve_stack(stack: Optional[str], config: Optional[Path]) -> tuple[Path, str]:
    """The stack file a command reads (`--config FILE`, else `--stack NAME`, default dev), and how
    to name it in output: relative, so reports do not depend on where the clone lives."""
    if config is not None:
        if not config.is_file():
            raise FileNotFoundError(f"--config {config}: no such stack file")
        return config, str(config)
    name = stack or "dev"
    path = stack_file(name)
    if not path.is_file():
        known = sorted(p.name.split(".")[1] for p in STACKS.glob("Pulumi.*.yaml"))
        raise FileNotFoundError(f"--stack {name}: no stacks/Pulumi.{name}.yaml (stacks: {', '.join(known)})")
    return path, f"stacks/{path.name}"


def stack_name(path: Path) -> str:
    name = path.name
    if name.startswith("Pulumi.") and name.endswith((".yaml", ".yml")):
        return name.split(".", 1)[1].rsplit(".", 1)[0]
    return path.stem
