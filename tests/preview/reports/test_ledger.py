"""The privilege ledger: written into one audit report, read back by the next."""

from __future__ import annotations

from preview.reports import ledger

ROWS = [
    ("DaemonSet gpu-operator/a", "(pod)", "hostPID"),
    ("DaemonSet gpu-operator/a", "ctr", "hostPath /odd|path rw"),
    ("DaemonSet gpu-operator/a", "ctr", "capability SYS_ADMIN"),
]


def test_written_rows_read_back_exactly_even_with_a_pipe_in_a_cell():
    text = "# report\n\nprose | with a pipe\n\n" + "\n".join(ledger.write(ROWS)) + "\n\n| other | table |\n"
    assert ledger.parse(text) == set(ROWS)


def test_rows_are_written_sorted_and_once():
    lines = ledger.write(ROWS + ROWS)
    assert lines[0] == ledger.BEGIN and lines[-1] == ledger.END
    assert len(lines) == 2 + 2 + len(ROWS)
    assert lines[3] == "| DaemonSet gpu-operator/a | (pod) | hostPID |"


def test_text_without_a_ledger_gives_none():
    assert ledger.parse("# an audit report from before the ledger\n") is None


def test_diff_lists_added_and_removed_rows():
    old, new = set(ROWS[:2]), set(ROWS[1:])
    assert ledger.diff(old, new) == ([ROWS[2]], [ROWS[0]])
