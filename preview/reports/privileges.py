"""What each recorded Kubernetes workload keeps on the host, container by container: privileged or
not, added capabilities, the host paths it mounts and how, and the pod's host namespaces.

Read from resource inputs only, through the readers the policy pack and the operands' audit
annotations use (`gpu_platform/interface/workloads.py`), so the audit report, the annotations and the
`privileged-workloads-audited` policy can never disagree about what a privilege is or which host
paths a workload really mounts.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpu_platform.interface import contract, workloads
from gpu_platform.privileges import ledger
from preview.recording import Recording
from preview.reports.report import clean, operand_order


@dataclass(frozen=True)
class Mount:
    host_path: str
    mode: str  # "rw" or "ro": a mount without `readOnly: true` writes
    at: str


@dataclass(frozen=True)
class Container:
    name: str
    init: bool
    privileged: bool
    capabilities: tuple[str, ...]
    mounts: tuple[Mount, ...]

    @property
    def can_remount(self) -> bool:
        """Whether a read-only mount binds it: privileged, or CAP_SYS_ADMIN, can `mount -o remount,rw`
        (the runtime's default seccomp profile allows mount to a container with CAP_SYS_ADMIN)."""
        return self.privileged or "SYS_ADMIN" in self.capabilities

    def host_paths(self) -> dict[str, str]:
        """Host path -> mode for this container; rw wins when it mounts a path twice."""
        modes: dict[str, str] = {}
        for m in self.mounts:
            if modes.get(m.host_path) != "rw":
                modes[m.host_path] = m.mode
        return dict(sorted(modes.items()))


@dataclass(frozen=True)
class Workload:
    kind: str
    namespace: str
    name: str
    resource: str  # the Pulumi resource name, to find it in the preview's other outputs
    operand: str | None
    stage: int  # the operand's rollout position; 0 outside the operands
    containers: tuple[Container, ...]
    host_namespaces: tuple[str, ...]
    unmounted_host_paths: tuple[str, ...]
    host_paths: dict[str, str]  # path -> rw|ro over all containers, as the policy computes it
    annotations: dict[str, str]
    privileges: tuple[str, ...]  # in policy words; empty: an unprivileged workload

    @property
    def key(self) -> str:
        """How the ledger names the workload (gpu_platform/privileges/ledger.py, which the pack uses too)."""
        return ledger.workload_key(self.kind, self.namespace, self.name)

    def declared_host_paths(self) -> dict[str, str] | None:
        text = self.annotations.get(contract.AUDIT_HOST_PATHS)
        return None if text is None else workloads.declared_host_paths(str(text))


def _container(raw: dict, init: bool, volumes: dict[str, str]) -> Container:
    security = raw.get("securityContext") or {}
    mounts = tuple(
        Mount(volumes[m.get("name")], "ro" if m.get("readOnly") is True else "rw", str(m.get("mountPath", "")))
        for m in raw.get("volumeMounts") or ()
        if m.get("name") in volumes
    )
    return Container(
        name=str(raw.get("name", "?")),
        init=init,
        privileged=security.get("privileged") is True,
        capabilities=tuple(sorted(set((security.get("capabilities") or {}).get("add") or ()))),
        mounts=mounts,
    )


def _stages(recording: Recording) -> dict[str, int]:
    """Workload URN -> the rollout position of the operand component that owns it."""
    stage_of = {op.urn: n for n, op in enumerate(operand_order(recording), 1)}
    found = {}
    for r in recording.resources:
        node = recording.owner(r.urn, stage_of)
        if node is not None:
            found[r.urn] = stage_of[node.urn]
    return found


def read(recording: Recording) -> list[Workload]:
    """Every Kubernetes workload of the stack, in rollout order (then by name)."""
    stages = _stages(recording)
    found = []
    for r in recording.resources:
        kind = workloads.kind(r.type)
        if kind is None:
            continue
        props = clean(r.inputs)
        spec = workloads.pod_spec(r.type, props)
        volumes = {v["name"]: str(v["hostPath"].get("path", "")) for v in spec.get("volumes") or () if "hostPath" in v}
        containers = tuple(
            _container(c, key == "initContainers", volumes)
            for key in ("initContainers", "containers", "ephemeralContainers")
            for c in spec.get(key) or ()
            if isinstance(c, dict)
        )
        mounted = {m.host_path for c in containers for m in c.mounts}
        meta = props.get("metadata") or {}
        found.append(
            Workload(
                kind=kind,
                namespace=str(meta.get("namespace") or ""),
                name=str(meta.get("name") or r.name),
                resource=r.name,
                operand=workloads.operand(props),
                stage=stages.get(r.urn, 0),
                containers=containers,
                host_namespaces=tuple(k for k in ledger.HOST_NAMESPACES if spec.get(k) is True),
                unmounted_host_paths=tuple(sorted(set(volumes.values()) - mounted)),
                host_paths=workloads.host_path_modes(spec),
                annotations=workloads.pod_annotations(r.type, props),
                privileges=tuple(workloads.privileges(spec)),
            )
        )
    # Outside the operands (stage 0) last: the operands are what the approval is about.
    return sorted(found, key=lambda w: (w.stage == 0, w.stage, w.key))
