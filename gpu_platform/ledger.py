"""The privilege ledger: every privilege the stack grants, one row each, and its hash. One
implementation for the audit report (preview/reports/audit.py), the preview's summary and JSON
report, and the policy pack (policy/audit.py), computed from resource properties alone, exactly as
the Pulumi engine hands them to a policy: the pack sees no stack config and no program objects.

A row is (subject, part, privilege), the three columns of the audit report's ledger table:

- a Kubernetes workload that keeps a privilege (`DaemonSet gpu-operator/nvidia-mig-manager`): one
  row per host namespace (part `(pod)`: `hostPID`, `hostNetwork`, `hostIPC`), and per container
  `privileged`, `capability NAME`, `hostPath PATH rw|ro`;
- the DaemonSets an EKS add-on of the stack runs (gpu_platform/addon_privileges.py);
- the node image bake (gpu_platform/bake_document.py): what runs as root on the build host, its
  inputs, and what it downloads with the pins that check the downloads.

The hash, `sha256:<64 hex>`, is SHA-256 over the canonical form (version CANONICAL_VERSION):

    gpu-platform privilege ledger v1\\n
    <subject>\\t<part>\\t<privilege>\\n      one line per distinct row

in UTF-8, rows deduplicated and sorted by their UTF-8 bytes (so neither dict order nor the order
resources arrive in matters), with `\\` written `\\\\`, a tab `\\t` and a line break `\\n` inside a
cell. A change of this form is a new version line, and every recorded hash then changes with it.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any, Iterable, Mapping

from gpu_platform import addon_privileges, bake_document, workloads
from gpu_platform.props import dig, mapping, sequence, text

Row = tuple[str, str, str]
CANONICAL_VERSION = "gpu-platform privilege ledger v1"
HASH = re.compile(r"sha256:[0-9a-f]{64}")
# The part column for what belongs to the pod, not to one container.
POD = "(pod)"
HOST_NAMESPACES = ("hostPID", "hostNetwork", "hostIPC")
ADDON_TYPE = "aws:eks/addon:Addon"


def workload_key(kind: str, namespace: str, name: str) -> str:
    """How the ledger names a workload: stable across stacks, free of Pulumi URNs."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def workload_rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    """The rows of one Kubernetes workload; none when it keeps no privilege."""
    kind = workloads.kind(resource_type)
    if kind is None:
        return []
    spec = workloads.pod_spec(resource_type, props)
    if not workloads.privileges(spec):
        return []
    meta = dig(props, "metadata")
    key = workload_key(kind, text(meta.get("namespace")), text(meta.get("name")) or resource_name)
    found = [(key, POD, ns) for ns in HOST_NAMESPACES if spec.get(ns) is True]
    volumes = {text(v.get("name")): text(dig(v, "hostPath").get("path"))
               for v in map(mapping, sequence(spec.get("volumes"))) if "hostPath" in v}
    for c in workloads.containers(spec):
        name = text(c.get("name")) or "?"
        security = mapping(c.get("securityContext"))
        if security.get("privileged") is True:
            found.append((key, name, "privileged"))
        caps = {text(cap) for cap in sequence(dig(security, "capabilities").get("add"))}
        found += [(key, name, f"capability {cap}") for cap in sorted(caps)]
        modes: dict[str, str] = {}
        for mount in map(mapping, sequence(c.get("volumeMounts"))):
            path = volumes.get(text(mount.get("name")))
            if path is not None and modes.get(path) != "rw":
                modes[path] = "ro" if mount.get("readOnly") is True else "rw"
        found += [(key, name, f"hostPath {path} {mode}") for path, mode in sorted(modes.items())]
    return found


def addon_rows(props: Mapping[str, Any]) -> list[Row]:
    """The privileged DaemonSets an EKS add-on runs, at its version; an add-on whose DaemonSets are not
    written down gets one row that says so (its version is in it, so a change still changes the hash)."""
    name, version = text(props.get("addonName")), text(props.get("addonVersion"))
    known = addon_privileges.workloads(name, version)
    if known is not None:
        return list(known)
    if name == addon_privileges.ADDON:
        return [(f"EKS add-on {name} {version or '(EKS default version)'}", POD,
                 "privileges not written down in gpu_platform/addon_privileges.py")]
    return []


def resource_rows(resource_type: str, resource_name: str, props: Mapping[str, Any]) -> list[Row]:
    if resource_type == ADDON_TYPE:
        return addon_rows(props)
    if resource_type == bake_document.COMPONENT_TYPE:
        return bake_document.rows(resource_name, props)
    return workload_rows(resource_type, resource_name, props)


def rows(resources: Iterable[tuple[str, str, Mapping[str, Any]]]) -> list[Row]:
    """Every row of the stack, from (type, Pulumi name, properties) of each resource; sorted, distinct."""
    return sorted({row for type_, name, props in resources for row in resource_rows(type_, name, props)})


def _cell(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def canonical(found: Iterable[Row]) -> bytes:
    lines = sorted({"\t".join(_cell(c) for c in row).encode() for row in found})
    return CANONICAL_VERSION.encode() + b"\n" + b"".join(line + b"\n" for line in lines)


def digest(found: Iterable[Row]) -> str:
    return "sha256:" + hashlib.sha256(canonical(found)).hexdigest()
