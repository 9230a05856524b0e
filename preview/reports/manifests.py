"""Every Kubernetes object of a stack as YAML, one object a file, numbered in rollout order (shared
objects first, then each operand's objects in the declared stage order)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from preview.recording import Recording, Registration
from preview.reports.report import clean, operand_order

_TOP = ("apiVersion", "kind", "metadata")


def is_kubernetes_object(r: Registration) -> bool:
    return r.custom and r.type.startswith("kubernetes:") and not r.is_provider


def manifest(r: Registration) -> dict[str, Any]:
    body = clean(r.inputs)
    ordered = {k: body[k] for k in _TOP if k in body}
    ordered.update({k: v for k, v in body.items() if k not in _TOP})
    return ordered


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9.-]+", "-", text.lower()).strip("-")


def files(recording: Recording) -> dict[str, str]:
    """File name -> YAML text, for every Kubernetes object."""
    stage_of = {op.urn: number for number, op in enumerate(operand_order(recording), 1)}

    def operand_stage(urn: str) -> int:
        node = recording.owner(urn, stage_of)
        return stage_of[node.urn] if node is not None else 0

    out: dict[str, str] = {}
    for r in sorted(filter(is_kubernetes_object, recording.resources), key=lambda r: r.urn):
        # An operand's own objects take its number; anything else (the dashboard) the number of
        # the last stage it waits for, so files sort in the order they are created.
        stage = operand_stage(r.urn) or max((operand_stage(u) for u in recording.waits_for(r.urn)), default=0)
        doc = manifest(r)
        meta = doc.get("metadata", {})
        name = "-".join(filter(None, [meta.get("namespace"), meta.get("name", r.name)]))
        filename = f"{stage:02d}-{_slug(doc.get('kind', 'object'))}-{_slug(name)}.yaml"
        out[filename] = yaml.safe_dump(doc, sort_keys=False, width=1000)
    return dict(sorted(out.items()))


def write(recording: Recording, directory: Path) -> None:
    """Every manifest into `directory`, replacing the numbered files of an earlier run (only those:
    nothing else a user keeps there), all or nothing."""
    from preview.writing import Output, write_all

    write_all([Output("--manifests", directory, lambda: files(recording))])
