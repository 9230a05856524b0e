"""The audit report (`python -m preview --audit FILE`): the Markdown written into the approval
record of a stack's privileged software, built from the recording alone, so the same stack file
gives byte-identical text.

Sections, in order:

1. header: the stack, the operator release (the namespace's `gpu-platform.io/operator-release`),
   owner and approval (the audit annotations and tags; every distinct value is shown, so a
   disagreement is visible);
2. summary: one row per operand (DaemonSets and Deployments labelled `gpu-platform.io/operand`,
   in rollout order): containers, privileged containers, added capabilities, host paths written and
   read, host namespaces;
3. with `--audit-against OLD`: whether OLD's ledger is the approved one, and the privileges added
   and removed since OLD;
4. one section per Kubernetes workload that keeps a privilege: the stated reason, owner, approval,
   host namespaces, whether the declared host paths agree with the real mounts, and each container
   (init and main) with privileged or not, added capabilities and every host path it mounts;
5. the node image bake: what runs as root on the build instance, its inputs, downloads and pins;
6. cluster access: the ledger's rows of who may administer the cluster (gpu_platform/privileges/cluster_admins.py);
7. the Kubernetes guards: admission policies and network policies (`preview/reports/kubernetes_guards.py`);
8. the AWS side (`preview/reports/aws_exposure.py`);
9. the privilege ledger (`preview/reports/ledger.py`): one privilege per table row, between HTML comment
   markers, and its hash (gpu_platform/privileges/ledger.py), which `gpu-platform:audit.approvedLedger` records
   and the policy pack checks; the table is what `--audit-against` reads back from the previous report.

A host path a privileged container mounts is listed with its mount mode, but not as a boundary: a
privileged container has CAP_SYS_ADMIN and every device, so it can remount the path (or the host's
root) read-write; the summary counts such a path as writable.
"""

from __future__ import annotations

from collections import Counter

from gpu_platform.interface import contract
from gpu_platform.interface.resource_types import NAMESPACE as _NAMESPACE
from gpu_platform.privileges import cluster_admins, ledger as canonical
from preview.recording import Recording
from preview.reports import aws_exposure, kubernetes_guards, ledger, privileges
from preview.reports.privileges import Workload
from preview.reports.report import clean

_OPERAND_KINDS = ("DaemonSet", "Deployment")
_MODE = {"rw": "read-write", "ro": "read-only"}


def report(recording: Recording, against: set[ledger.Row] | None = None) -> str:
    """The report; `against` is the ledger of an older report (`ledger.parse`)."""
    found = privileges.read(recording)
    privileged = [w for w in found if w.privileges]
    rows = ledger.of(recording)
    addon_rows = _addon_rows(rows)
    lines = [
        *_header(recording, privileged),
        f"- {ledger.status(recording)}",
        "",
        *_summary(found),
        *(_changes(against, rows, ledger.approved(recording)) if against is not None else []),
        "## Kubernetes workloads with a privilege",
        "",
    ]
    for w in privileged:
        lines += _workload(w)
    if not privileged:
        lines += ["None.", ""]
    lines += _addon_section(recording, addon_rows)
    lines += _bake_section(rows)
    lines += _access_section(rows)
    lines += kubernetes_guards.section(recording)
    lines += aws_exposure.section(recording)
    lines += [
        "## Privilege ledger",
        "",
        "One row per privilege; `python -m preview --audit NEW --audit-against THIS_FILE` compares against it.",
        (
            f"Hash: `{canonical.digest(rows)}` (SHA-256 of the rows in the canonical form `{canonical.CANONICAL_VERSION}`, "
            "gpu_platform/privileges/ledger.py); an approval of this report records it as `gpu-platform:audit.approvedLedger`."
        ),
        "",
        *ledger.write(rows),
    ]
    return "\n".join(lines) + "\n"


def _addons(recording: Recording) -> list[dict]:
    return [clean(r.inputs) for r in recording.of_type(aws_exposure.ADDON)]


def _addon_rows(rows: list[ledger.Row]) -> list[ledger.Row]:
    """The ledger's rows of the EKS add-ons: each add-on's version, configuration and Pod Identity
    hashes, and the privileges of the DaemonSets it runs on every node where they are written down
    with the add-on's pinned version (gpu_platform/catalog/addon_privileges.py): EKS creates those DaemonSets,
    so no stack resource shows them."""
    return [row for row in rows if row[0].startswith("EKS add-on ") or "(EKS add-on " in row[0]]


def _bake_section(rows: list[ledger.Row]) -> list[str]:
    baked = [row for row in rows if row[0].startswith("node image bake ")]
    if not baked:
        return []
    return [
        "## The node image bake",
        "",
        (
            "What the Image Builder component runs as root on the build instance (each script by its SHA-256), its "
            "inputs, what it downloads and the pins that check the downloads (read from the component document, "
            "gpu_platform/privileges/bake_document.py):"
        ),
        "",
        *ledger.table(baked),
        "",
    ]


def _access_section(rows: list[ledger.Row]) -> list[str]:
    granted = [row for row in rows if row[0] == cluster_admins.SUBJECT]
    lines = ["## Cluster access", ""]
    if not granted:
        return [
            *lines,
            (
                "The stack names no cluster admin and grants no cluster access (an adopted cluster keeps the access "
                "it had)."
            ),
            "",
        ]
    return [
        *lines,
        (
            "Who may administer the cluster, by IAM principal (path left out, name in lower case): every "
            "`gpu-platform:cluster.admins` entry, including one whose existing access entry the stack leaves as it is, "
            "every access policy association with its policy and scope, and the cluster's own access settings "
            "(gpu_platform/privileges/cluster_admins.py):"
        ),
        "",
        *ledger.table(granted),
        "",
    ]


def _addon_section(recording: Recording, rows: list[ledger.Row]) -> list[str]:
    if not rows:
        return []
    lines = ["## EKS add-ons and their privileged DaemonSets", ""]
    for props in _addons(recording):
        tags = props.get("tags") if isinstance(props.get("tags"), dict) else {}
        lines += [
            (
                f"Add-on `{props.get('addonName')}` version `{props.get('addonVersion') or 'EKS default'}` "
                f"(its DaemonSets are created by EKS, not by this stack):"
            ),
            "",
            f"- owner: {tags.get(contract.AUDIT_TAG_OWNER, '(not stated)')}",
            f"- approval: {tags.get(contract.AUDIT_TAG_APPROVAL, '(not stated)')}",
            "",
        ]
    lines += [*ledger.table(rows), ""]
    return lines


def _values(label: str, values: list[str]) -> str:
    """One value, or every distinct value with how many resources state it."""
    counted = Counter(values)
    if not counted:
        return f"- {label}: (not stated)"
    if len(counted) == 1:
        return f"- {label}: {values[0]}"
    listed = ", ".join(f"{value} ({n})" for value, n in sorted(counted.items()))
    return f"- {label}: **the resources disagree**: {listed}"


def _header(recording: Recording, privileged: list[Workload]) -> list[str]:
    releases = [
        str(notes[contract.OPERATOR_RELEASE_KEY])
        for r in recording.of_type(_NAMESPACE)
        if contract.OPERATOR_RELEASE_KEY in (notes := (clean(r.inputs).get("metadata") or {}).get("annotations") or {})
    ]

    def audit(key: str) -> list[str]:
        notes = [str(w.annotations[key]) for w in privileged if w.annotations.get(key)]
        return notes + aws_exposure.audit_tag_values(recording, key)

    return [
        f"# Privileged software audit: stack {recording.stack}",
        "",
        (
            "Generated by `python -m preview --audit` from the resources the stack registers (their inputs as "
            "the Pulumi engine sees them). Do not edit: regenerate."
        ),
        "",
        _values("Operator release", releases),
        _values("Owner", audit(contract.AUDIT_OWNER)),
        _values("Approval", audit(contract.AUDIT_APPROVAL)),
        "",
    ]


def _count(names: list[str]) -> str:
    return f"{len(names)} ({', '.join(names)})" if names else "0"


def _summary(found: list[Workload]) -> list[str]:
    operands: dict[str, list[Workload]] = {}
    for w in found:
        if w.kind in _OPERAND_KINDS and w.operand:
            operands.setdefault(w.operand, []).append(w)
    lines = [
        "## Summary per operand",
        "",
        "| stage | operand | workloads | containers | privileged containers | added capabilities | host paths writable | host paths read-only | host namespaces |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, group in sorted(operands.items(), key=lambda item: (min(w.stage for w in item[1]) or 999, item[0])):
        containers = [c for w in group for c in w.containers]
        # A path a privileged container (or one with CAP_SYS_ADMIN) mounts is writable whatever its
        # mount says: it can remount it.
        modes: dict[str, str] = {}
        for c in containers:
            for path, mode in c.host_paths().items():
                mode = "rw" if c.can_remount else mode
                modes[path] = "rw" if "rw" in (mode, modes.get(path)) else mode
        stage = min(w.stage for w in group)
        lines.append(
            f"| {stage or '-'} | {name} | {len(group)} | {len(containers)} | {sum(c.privileged for c in containers)} "
            f"| {_count(sorted({cap for c in containers for cap in c.capabilities}))} "
            f"| {sum(m == 'rw' for m in modes.values())} | {sum(m == 'ro' for m in modes.values())} "
            f"| {_count(sorted({ns for w in group for ns in w.host_namespaces}))} |"
        )
    return [*lines, ""]


def _changes(old: set[ledger.Row], rows: list[ledger.Row], approved: list[str]) -> list[str]:
    lines = ["## Changes since the previous report", "", _baseline(canonical.digest(old), approved), ""]
    added, removed = ledger.diff(old, set(rows))
    if not added and not removed:
        return [*lines, f"No privilege added or removed ({len(old)} in both).", ""]
    for title, changed in (("Added", added), ("Removed", removed)):
        lines += [f"### {title} ({len(changed)})", ""]
        lines += [*ledger.table(changed), ""] if changed else ["None.", ""]
    return lines


def _baseline(previous: str, approved: list[str]) -> str:
    """Whether the report compared against is the one the approval covered. --audit-against checks
    that a report's rows hash to the hash it states, but rows edited and their hash recomputed (or the
    hash line removed) pass that check: only the hash the stack records as approved, which changes
    under review with the stack file, tells such a report from the approved one."""
    said = f"The previous report's ledger hashes to `{previous}`"
    if not approved:
        return (
            f"{said}; the stack records no approved hash (gpu-platform:audit.approvedLedger), so nothing "
            "says whether that report is the one an approval covered."
        )
    if previous in approved:
        return (
            f"{said}, the approved hash (gpu-platform:audit.approvedLedger): below is what changed since the approval."
        )
    return (
        f"{said}: **NOT the approved {', '.join(f'`{h}`' for h in approved)}** (gpu-platform:audit.approvedLedger). "
        "Below is what changed since that report, not since the approval: compare against the report the "
        "approval covered."
    )


def _agreement(w: Workload) -> str:
    declared = w.declared_host_paths()
    label = f"Declared host paths (`{contract.AUDIT_HOST_PATHS}`)"
    if declared is None:
        return f"- {label}: **missing**; the mounts give `{_joined(w.host_paths)}`"
    if declared == w.host_paths:
        return f"- {label}: agree with the mounts"
    problems = [
        f"declared only: {', '.join(f'`{p}:{m}`' for p, m in declared.items() if p not in w.host_paths)}",
        f"mounted only: {', '.join(f'`{p}:{m}`' for p, m in w.host_paths.items() if p not in declared)}",
        f"mode differs: {', '.join(f'`{p}` declared {declared[p]}, mounted {m}' for p, m in w.host_paths.items() if p in declared and declared[p] != m)}",
    ]
    return f"- {label}: **disagree with the mounts**; " + "; ".join(p for p in problems if not p.endswith(": "))


def _joined(modes: dict[str, str]) -> str:
    return ",".join(f"{p}:{m}" for p, m in modes.items()) or "(none)"


def _mount(mode: str, container) -> str:
    if container.can_remount and mode == "ro":
        # CAP_SYS_ADMIN (which privileged includes): `mount -o remount,rw` undoes the flag.
        who = "a privileged container" if container.privileged else "a container with CAP_SYS_ADMIN"
        return f"mounted read-only, which is no boundary for {who} (it can remount it read-write),"
    return _MODE[mode]


def _workload(w: Workload) -> list[str]:
    def note(key: str) -> str:
        return str(w.annotations.get(key) or "**(not stated)**")

    lines = [
        f"### {w.key}",
        "",
        f"- Operand: {w.operand or '(none)'}; Pulumi resource `{w.resource}`",
        f"- Privileges: {'; '.join(w.privileges)}",
        f"- Reason: {note(contract.AUDIT_REASON)}",
        f"- Owner: {note(contract.AUDIT_OWNER)}",
        f"- Approval: {note(contract.AUDIT_APPROVAL)}",
        f"- Host namespaces: {', '.join(w.host_namespaces) or 'none'}",
        _agreement(w),
    ]
    if w.unmounted_host_paths:
        lines.append(
            f"- hostPath volumes no container mounts (no access): {', '.join(f'`{p}`' for p in w.unmounted_host_paths)}"
        )
    lines += ["", "Containers:", ""]
    for c in w.containers:
        caps = ", ".join(c.capabilities) or "none"
        lines.append(
            f"- `{c.name}`{' (init)' if c.init else ''}: {'privileged' if c.privileged else 'not privileged'}; added capabilities: {caps}"
        )
        lines += [f"  - `{m.host_path}` {_mount(m.mode, c)} at `{m.at}`" for m in c.mounts]
        if not c.mounts:
            lines.append("  - no host paths")
    return [*lines, ""]
