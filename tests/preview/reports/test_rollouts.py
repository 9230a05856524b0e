"""`--against` per GPU pool (preview/reports/rollouts.py): what a change of a pinned AMI's stack does
to its nodes, as a platform engineer reads it before `pulumi up`."""

from __future__ import annotations

import copy

from preview.__main__ import main
from tests.conftest import stack_config, unapproved, write_stack

OLD_AMI, NEW_AMI = "ami-0123456789abcdef0", "ami-0fedcba9876543210"


def _pinned(driver: str, ami: str) -> dict:
    config = stack_config("dev")  # one pool, l4: g6.2xlarge, desiredSize 1, surge
    config["gpu-platform:nodeImage"] = {"source": "ami", "driverVersion": driver, "amiId": ami}
    return config


def _rollouts(tmp_path, capsys, old: dict, new: dict) -> list[str]:
    for name, config in (("old", old), ("new", new)):
        (tmp_path / name).mkdir()
        write_stack(tmp_path / name, unapproved(config), name="dev")
    assert main(["--config", str(tmp_path / "old" / "Pulumi.dev.yaml"), "--json", str(tmp_path / "old.json")]) == 0
    capsys.readouterr()
    assert main(["--config", str(tmp_path / "new" / "Pulumi.dev.yaml"), "--against", str(tmp_path / "old.json")]) == 0
    out = capsys.readouterr().out
    return out[out.index("GPU node rollouts") :].splitlines()


def test_a_driver_bump_on_the_same_pinned_ami_warns_that_the_nodes_roll_onto_the_old_driver(tmp_path, capsys):
    # The AMI holds the driver: a new driverVersion with the same amiId retags and rolls the nodes,
    # and every new node boots the same AMI, so the driver on the nodes does not change.
    old = _pinned("580.105.08", OLD_AMI)
    new = copy.deepcopy(old)
    new["gpu-platform:nodeImage"]["driverVersion"] = "580.95.05"
    lines = _rollouts(tmp_path, capsys, old, new)
    assert lines[1].startswith("  l4  surge: replaces 1 GPU node (1 GPU) inside the node group")
    (warning,) = [line.strip() for line in lines if line.strip().startswith("warning:")]
    assert warning.startswith(
        f"warning: every node rolls onto the same AMI {OLD_AMI}: the launch template changes only in "
    )
    assert warning.endswith(
        "a new nodeImage.driverVersion needs a new amiId of an AMI that has that driver "
        "(python -m preview verify-ami checks its tags)"
    )


def test_a_driver_bump_with_a_new_pinned_ami_rolls_without_the_warning(tmp_path, capsys):
    old = _pinned("580.105.08", OLD_AMI)
    new = copy.deepcopy(old)
    new["gpu-platform:nodeImage"].update(driverVersion="580.95.05", amiId=NEW_AMI)
    lines = _rollouts(tmp_path, capsys, old, new)
    assert lines[1].startswith("  l4  surge: replaces 1 GPU node (1 GPU) inside the node group")
    assert not any("warning:" in line for line in lines)
