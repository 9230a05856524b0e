"""The privilege ledger: the part of the audit report that a later report reads back.

One privilege per row of a Markdown table, between two HTML comment markers that render as nothing:

    <!-- privilege-ledger v1 -->
    | workload | container | privilege |
    | --- | --- | --- |
    | DaemonSet gpu-operator/nvidia-mig-manager | (pod) | hostPID |
    | DaemonSet gpu-operator/nvidia-mig-manager | nvidia-mig-manager | hostPath /sys rw |
    <!-- /privilege-ledger -->

The rows, and the hash printed with them, are gpu_platform/privileges/ledger.py's (the policy pack computes
the same from the resources it is handed): a workload privilege is `privileged`, `capability NAME`,
`hostPath PATH rw|ro` or a host namespace (`hostPID`, `hostNetwork`, `hostIPC`, on the container
`(pod)`), with weakened isolation, the image and command line of each container concerned, and the
workload's placement (node selector, affinity, tolerations, service account) and the ConfigMaps it
reads (gpu_platform/privileges/ledger.py lists them); every EKS add-on, the node image bake and cluster access have rows too. Rows are sorted and cells carry no
Markdown decoration, so reading the table back is a split on `|` (a `|` inside a cell is written
`\\|`). The same rows render visibly, so what the diff compares is what the approver signed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from gpu_platform.interface import contract
from gpu_platform.privileges import ledger as canonical
from preview.recording import Recording
from preview.reports.report import clean

BEGIN = "<!-- privilege-ledger v1 -->"
END = "<!-- /privilege-ledger -->"
HEADER = ("workload", "container", "privilege")

Row = tuple[str, str, str]

_CELL_SPLIT = re.compile(r"(?<!\\)\|")


def cell(text: str) -> str:
    return text.replace("|", "\\|")


def table(rows: Iterable[Row]) -> list[str]:
    lines = ["| " + " | ".join(HEADER) + " |", "| --- | --- | --- |"]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def write(rows: Iterable[Row]) -> list[str]:
    return [BEGIN, *table(sorted(set(rows))), END]


def parse(text: str) -> set[Row] | None:
    """The rows of the ledger in a report, or None when the report has none (an older format, or
    not an audit report at all)."""
    lines = text.splitlines()
    try:
        start = lines.index(BEGIN) + 1
        end = lines.index(END, start)
    except ValueError:
        return None
    found: set[Row] = set()
    for line in lines[start:end]:
        cells = [c.strip().replace("\\|", "|") for c in _CELL_SPLIT.split(line.strip())[1:-1]]
        if len(cells) != 3 or tuple(cells) == HEADER or set(cells) == {"---"}:
            continue
        found.add((cells[0], cells[1], cells[2]))
    return found


# The hash line the audit report writes above its ledger table (preview/reports/audit.py).
_STATED = re.compile(rf"^Hash: `({canonical.HASH.pattern})`", re.M)


def stated_hash(text: str) -> str | None:
    """The ledger hash a report states (None for a report written before reports carried one)."""
    found = _STATED.search(text)
    return found.group(1) if found else None


def checked(text: str, where: str) -> set[Row] | None:
    """parse(), and the rows must hash to the hash the report states: an approver reads a diff
    against this report, so a report edited after it was written (a row deleted, its hash swapped
    for the approved one) would show a change as "no privilege added". ValueError (exit 2) if not."""
    lines = text.splitlines()
    if lines.count(BEGIN) > 1 or len(_STATED.findall(text)) > 1:
        # parse() reads the first block and stated_hash() the first hash line: a second one
        # prepended or appended would let a report show one ledger and be read as another.
        raise ValueError(
            f"{where}: holds more than one privilege ledger or ledger hash; give a report as --audit wrote it"
        )
    rows = parse(text)
    stated = stated_hash(text)
    if rows is not None and stated is not None:
        actual = canonical.digest(rows)
        if actual != stated:
            raise ValueError(
                f"{where}: its ledger rows hash to {actual}, not to the {stated} it states above them: "
                "the report was edited after it was written; compare against the report as "
                "the approval received it"
            )
    return rows


def diff(old: set[Row], new: set[Row]) -> tuple[list[Row], list[Row]]:
    """(added, removed), each sorted."""
    return sorted(new - old), sorted(old - new)


def of(recording: Recording) -> list[Row]:
    """The stack's ledger, as the policy pack computes it from the same resources."""
    by_urn = recording.by_urn()

    def named(urns):
        return [(by_urn[u].type, by_urn[u].name) for u in urns if u in by_urn]

    # The engine records property dependencies, as the CLI hands them to the pack (policy/audit.py).
    references = {
        (r.type, r.name): canonical.references(
            r.type, named(r.dependencies), {key: named(urns) for key, urns in r.property_dependencies}
        )
        for r in recording.resources
        if r.dependencies or r.property_dependencies
    }
    return canonical.rows(((r.type, r.name, clean(r.inputs)) for r in recording.resources), references)


def approved(recording: Recording) -> list[str]:
    """The approved hashes the stack records (gpu-platform:audit.approvedLedger, on its namespace)."""
    return sorted(
        {
            str(notes[contract.APPROVED_LEDGER_KEY])
            for r in recording.of_type("kubernetes:core/v1:Namespace")
            if contract.APPROVED_LEDGER_KEY
            in (notes := (clean(r.inputs).get("metadata") or {}).get("annotations") or {})
        }
    )


def status(recording: Recording) -> str:
    """One line: the hash, and how it stands against the approved one."""
    current = canonical.digest(of(recording))
    recorded = approved(recording)
    if not recorded:
        said = "no approved hash recorded (gpu-platform:audit.approvedLedger)"
    elif recorded == [current]:
        said = "the approved hash (gpu-platform:audit.approvedLedger)"
    else:
        said = f"NOT the approved {', '.join(recorded)} (gpu-platform:audit.approvedLedger)"
    return f"Privilege ledger: {current}, {said}"


def baseline(old: set[Row], recording: Recording, where: str) -> str:
    """One line for the terminal with --audit-against: whether the previous report is the approved one
    (its rows' hash against gpu-platform:audit.approvedLedger) and how many rows changed since it, so
    a forged or wrong baseline shows without opening the report."""
    previous = canonical.digest(old)
    recorded = approved(recording)
    said = (
        "the approved hash"
        if previous in recorded
        else f"NOT the approved {', '.join(recorded)}"
        if recorded
        else "no approved hash recorded to compare with"
    )
    added, removed = diff(old, set(of(recording)))
    return f"Audit baseline {where}: {previous}, {said}; {len(added)} rows added, {len(removed)} removed since"
