"""The scan command's own refusals (the full scan runs in CI as `make scan`)."""

from tools.security import scan


def test_a_missing_checkov_is_exit_2_naming_how_to_install_it(tmp_path, capsys):
    assert scan.main(["--checkov", str(tmp_path / "checkov")]) == 2
    assert "make scan" in capsys.readouterr().err


def test_every_stack_file_is_scanned():
    assert {"dev", "prod"} <= set(scan.stacks())
