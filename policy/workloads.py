"""Kubernetes workloads as their manifests say: where the pod spec sits in each kind, which
privileges the pods keep, which host paths they really mount, which images they run."""

from __future__ import annotations

from typing import Any, Optional

from gpu_platform import contract

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


def kind(resource_type: str) -> Optional[str]:
    """`kubernetes:apps/v1:DaemonSet` -> `DaemonSet` when it is a workload kind, else None."""
    if not resource_type.startswith("kubernetes:"):
        return None
    name = resource_type.rsplit(":", 1)[-1]
    return name if name in _POD_SPEC_PATH else None


def _dig(value: Any, path: tuple[str, ...]) -> dict:
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def pod_spec(resource_type: str, props: dict) -> dict:
    workload = kind(resource_type)
    return _dig(props, _POD_SPEC_PATH[workload]) if workload else {}


def pod_annotations(resource_type: str, props: dict) -> dict[str, str]:
    """The workload's annotations over its pod template's (the workload's win)."""
    workload = kind(resource_type)
    template_meta = _dig(props, _POD_SPEC_PATH[workload][:-1] + ("metadata",)) if workload and workload != "Pod" else {}
    own = _dig(props, ("metadata",))
    return {**(template_meta.get("annotations") or {}), **(own.get("annotations") or {})}


def operand(props: dict) -> Optional[str]:
    """The GPU operand a workload belongs to (the `gpu-platform.io/operand` label), if any."""
    labels = _dig(props, ("metadata",)).get("labels") or {}
    return labels.get(contract.OPERAND_KEY)


def containers(spec: dict) -> list[dict]:
    return [c for key in ("initContainers", "containers", "ephemeralContainers") for c in spec.get(key) or () if isinstance(c, dict)]


def privileges(spec: dict) -> list[str]:
    """Every privilege the pods keep, in words; empty means an unprivileged workload."""
    found = []
    every = containers(spec)
    if any((c.get("securityContext") or {}).get("privileged") is True for c in every):
        found.append("privileged")
    caps = sorted({cap for c in every for cap in ((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or ()})
    if caps:
        found.append("capabilities " + ",".join(caps))
    found += [key for key in ("hostPID", "hostNetwork", "hostIPC") if spec.get(key) is True]
    if any("hostPath" in v for v in spec.get("volumes") or ()):
        found.append("hostPath")
    return found


def host_path_modes(spec: dict) -> dict[str, str]:
    """Host path -> 'rw' or 'ro' from what the containers really mount (rw wins; a mount without
    `readOnly: true` writes). A hostPath volume no container mounts gives no access and is left out."""
    by_volume = {v["name"]: v["hostPath"].get("path", "") for v in spec.get("volumes") or () if "hostPath" in v}
    modes: dict[str, str] = {}
    for c in containers(spec):
        for mount in c.get("volumeMounts") or ():
            path = by_volume.get(mount.get("name"))
            if path is None:
                continue
            mode = "ro" if mount.get("readOnly") is True else "rw"
            if modes.get(path) != "rw":
                modes[path] = mode
    return dict(sorted(modes.items()))


def declared_host_paths(text: str) -> dict[str, str]:
    """The audit annotation `/a:ro,/b:rw` -> {path: mode}."""
    found = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        path, _, mode = item.rpartition(":")
        found[path or item] = mode if path else ""
    return found


def images(spec: dict) -> list[tuple[str, str]]:
    return [(c.get("name", "?"), c.get("image", "")) for c in containers(spec)]


def selector(spec: dict) -> dict[str, str]:
    return dict(spec.get("nodeSelector") or {})
