"""Kubernetes workloads as their manifests say (one reader for the program, the policy pack and the
preview, so the audit annotations, the policies and the audit report agree on what a privilege is): where the pod spec sits in each kind, which
privileges the pods keep, which host paths they really mount, which images they run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_platform.interface import contract
from gpu_platform.interface.props import dig, mapping, sequence, strings, text

# Every kind that runs pods, and the path from its manifest to the pod template.
_POD_SPEC_PATH = {
    "Pod": ("spec",),
    "DaemonSet": ("spec", "template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
    "PodTemplate": ("template", "spec"),
}


def kind(resource_type: str) -> str | None:
    """`kubernetes:apps/v1:DaemonSet` -> `DaemonSet` when it is a workload kind, else None."""
    if not resource_type.startswith("kubernetes:"):
        return None
    name = resource_type.rsplit(":", 1)[-1]
    return name if name in _POD_SPEC_PATH else None


def pod_spec(resource_type: str, props: Mapping[str, Any]) -> Mapping[str, Any]:
    workload = kind(resource_type)
    return dig(props, *_POD_SPEC_PATH[workload]) if workload else mapping(None)


def pod_annotations(resource_type: str, props: Mapping[str, Any]) -> dict[str, str]:
    """The workload's annotations over its pod template's (the workload's win)."""
    workload = kind(resource_type)
    template_meta = (
        dig(props, *_POD_SPEC_PATH[workload][:-1], "metadata") if workload and workload != "Pod" else mapping(None)
    )
    own = dig(props, "metadata")
    return {**strings(template_meta.get("annotations")), **strings(own.get("annotations"))}


def own_annotations(props: Mapping[str, Any]) -> dict[str, str]:
    return strings(dig(props, "metadata").get("annotations"))


def operand(props: Mapping[str, Any]) -> str | None:
    """The GPU operand a workload belongs to (the `gpu-platform.io/operand` label), if any."""
    return strings(dig(props, "metadata").get("labels")).get(contract.OPERAND_KEY)


def containers(spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [
        c
        for key in ("initContainers", "containers", "ephemeralContainers")
        for c in sequence(spec.get(key))
        if isinstance(c, Mapping)
    ]


def _context(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return mapping(container.get("securityContext"))


def privileges(spec: Mapping[str, Any]) -> list[str]:
    """Every privilege the pods keep, in words; empty means an unprivileged workload."""
    found = []
    every = containers(spec)
    if any(_context(c).get("privileged") is True for c in every):
        found.append("privileged")
    caps = sorted({text(cap) for c in every for cap in sequence(dig(_context(c), "capabilities").get("add"))})
    if caps:
        found.append("capabilities " + ",".join(caps))
    found += [key for key in ("hostPID", "hostNetwork", "hostIPC") if spec.get(key) is True]
    if any("hostPath" in mapping(v) for v in sequence(spec.get("volumes"))):
        found.append("hostPath")
    return found


def host_path_modes(spec: Mapping[str, Any]) -> dict[str, str]:
    """Host path -> 'rw' or 'ro' from what the containers really mount (rw wins; a mount without
    `readOnly: true` writes). A hostPath volume no container mounts gives no access and is left out."""
    by_volume = {
        text(v.get("name")): text(dig(v, "hostPath").get("path"))
        for v in map(mapping, sequence(spec.get("volumes")))
        if "hostPath" in v
    }
    modes: dict[str, str] = {}
    for c in containers(spec):
        for mount in map(mapping, sequence(c.get("volumeMounts"))):
            path = by_volume.get(text(mount.get("name")))
            if path is None:
                continue
            mode = "ro" if mount.get("readOnly") is True else "rw"
            if modes.get(path) != "rw":
                modes[path] = mode
    return dict(sorted(modes.items()))


def declared_host_paths(annotation: str) -> dict[str, str]:
    """The audit annotation `/a:ro,/b:rw` -> {path: mode}."""
    found = {}
    for item in filter(None, (part.strip() for part in annotation.split(","))):
        path, _, mode = item.rpartition(":")
        found[path or item] = mode if path else ""
    return found


def images(spec: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(text(c.get("name")) or "?", text(c.get("image"))) for c in containers(spec)]


def selector(spec: Mapping[str, Any]) -> dict[str, str]:
    return strings(spec.get("nodeSelector"))


def tolerations(spec: Mapping[str, Any]) -> list[dict[str, str]]:
    return [strings(t) for t in sequence(spec.get("tolerations"))]


def required_node_terms(spec: Mapping[str, Any]) -> tuple[tuple[Mapping[str, Any], ...], ...]:
    """A pod's required node affinity: its nodeSelectorTerms (any one matches), each the tuple of its
    matchExpressions (all must match)."""
    required = dig(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    return tuple(
        tuple(mapping(e) for e in sequence(mapping(t).get("matchExpressions")))
        for t in sequence(required.get("nodeSelectorTerms"))
    )


def container_privileges(spec: Mapping[str, Any]) -> list[tuple[str, str, list[str]]]:
    """(container, image, privileges) for every container that holds a privilege, in the audit
    report's vocabulary: its own (privileged, added capabilities, the host paths it mounts) and the
    pod's host namespaces, which every container of the pod shares."""
    shared = [key for key in ("hostPID", "hostNetwork", "hostIPC") if spec.get(key) is True]
    host_paths = {
        text(v.get("name")): text(dig(v, "hostPath").get("path"))
        for v in map(mapping, sequence(spec.get("volumes")))
        if "hostPath" in v
    }
    found = []
    for c in containers(spec):
        held = ["privileged"] if _context(c).get("privileged") is True else []
        held += [
            f"capability {text(cap)}"
            for cap in sorted({text(cap) for cap in sequence(dig(_context(c), "capabilities").get("add"))})
        ]
        held += sorted(
            {
                f"hostPath {host_paths[name]}"
                for name in (text(m.get("name")) for m in map(mapping, sequence(c.get("volumeMounts"))))
                if name in host_paths
            }
        )
        held += shared
        if held:
            found.append((text(c.get("name")) or "?", text(c.get("image")), held))
    return found
