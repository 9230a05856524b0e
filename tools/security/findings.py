"""What checkov reported, as findings keyed the way a reviewer names things.

checkov names a resource `Kind.namespace.name` (cluster-scoped ones in `default`), and the Pods its
graph checks build from a workload's template by their labels. A finding is keyed instead by the
object in the manifest file checkov read (the preview writes one object per file): `Kind/namespace/
name`, or `Kind/name` for a cluster-scoped object, so a graph check's Pod is named after the
DaemonSet that makes it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


class ReportError(Exception):
    """checkov's output is not a report this code can read, or checkov could not read a manifest."""


@dataclass(frozen=True, order=True)
class Finding:
    check: str
    resource: str
    stack: str
    title: str = field(default="", compare=False)
    file: str = field(default="", compare=False)


def resource_key(obj: dict) -> str:
    meta = obj.get("metadata") or {}
    parts = [obj.get("kind", "?"), meta.get("namespace"), meta.get("name", "?")]
    return "/".join(p for p in parts if p)


def _resource_of(failed: dict, manifests: Path) -> str:
    path = Path(failed.get("file_abs_path") or manifests / failed.get("file_path", "").lstrip("/"))
    try:
        docs = [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    except (OSError, yaml.YAMLError):
        docs = []
    if len(docs) == 1:
        return resource_key(docs[0])
    # Several objects in one file (not what the preview writes): match checkov's own id.
    for doc in docs:
        meta = doc.get("metadata") or {}
        if failed.get("resource") == f"{doc.get('kind')}.{meta.get('namespace', 'default')}.{meta.get('name')}":
            return resource_key(doc)
    return str(failed.get("resource"))


def _reports(output: dict | list) -> Iterable[dict]:
    # One framework gives one report object; checkov gives a list when there are several, and a
    # bare summary (no "results") when it found nothing to scan.
    for report in output if isinstance(output, list) else [output]:
        if not isinstance(report, dict) or "summary" not in report:
            raise ReportError(f"not a checkov JSON report: {str(report)[:200]}")
        yield report


def read(output: Any, stack: str, manifests: Path) -> list[Finding]:
    """The failed checks of one stack's checkov JSON output (`checkov -o json` over `manifests`)."""
    found: set[Finding] = set()
    scanned = 0
    for report in _reports(output):
        summary = report["summary"]
        if summary.get("parsing_errors"):
            raise ReportError(
                f"{stack}: checkov could not parse {summary['parsing_errors']} manifest(s): "
                f"{report.get('results', {}).get('parsing_errors', [])}"
            )
        scanned += summary.get("resource_count", 0)
        for failed in report.get("results", {}).get("failed_checks", []):
            found.add(
                Finding(
                    failed["check_id"],
                    _resource_of(failed, manifests),
                    stack,
                    failed.get("check_name", ""),
                    Path(failed.get("file_path", "")).name,
                )
            )
    if not scanned:
        raise ReportError(f"{stack}: checkov scanned no resource in {manifests}")
    return sorted(found)
