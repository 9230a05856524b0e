"""The policy pack end to end through the offline preview: every stack of tests/fixtures/violating.yaml
fails with the policy its row names and a message naming both sides; the shipped stacks pass."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from gpu_platform.interface import contract
from preview.__main__ import main
from preview.offline.analyze import analyze
from tests import fixture_stacks
from tests.conftest import LEDGER_RECORDED, SHIPPED_STACKS, stack_config, unapproved, write_stack

# tests/fixtures/violating.yaml: each row's policy (violates) and the two facts that disagree, as
# each violation message must name them (names).
VIOLATING = fixture_stacks.rows("violating")


# Advisory on every stack while the shipped matrix pins no image by digest (tests/policy/test_images.py
# checks it); the tests below are about the other policies.
DIGEST_ADVISORY = "privileged-images-pinned-by-digest"


def run(tmp_path: Path, stack: Path, *extra: str) -> tuple[int, dict]:
    report = tmp_path / "report.json"
    code = main(["--config", str(stack), "--json", str(report), *extra])
    found = json.loads(report.read_text())
    found["violations"] = [v for v in found["violations"] if v["policy"] != DIGEST_ADVISORY]
    return code, found


def test_every_violating_fixture_names_both_sides():
    assert [row.name for row in VIOLATING if len(row.expect["names"]) != 2] == []


@pytest.mark.parametrize("row", VIOLATING, ids=lambda row: row.name)
def test_violating_stack_exits_1_with_its_violation_naming_both_sides(row, tmp_path):
    code, report = run(tmp_path, row.path)
    assert code == 1
    mandatory = [v for v in report["violations"] if v["enforcementLevel"] == "mandatory"]
    assert {v["policy"] for v in mandatory} == {row.expect["violates"]}
    for fact in row.expect["names"]:
        assert all(fact in v["message"] for v in mandatory), (fact, mandatory)


@pytest.mark.parametrize("stack", SHIPPED_STACKS, ids=lambda p: p.stem)
def test_shipped_stacks_pass_with_no_mandatory_violation(stack, tmp_path):
    code, report = run(tmp_path, stack)
    assert code == 0
    assert [v for v in report["violations"] if v["enforcementLevel"] == "mandatory"] == []


def test_policy_config_lowers_a_violation_to_advisory(tmp_path):
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"driver-supports-gpu": {"enforcementLevel": "advisory"}}))
    stack = fixture_stacks.row("violating", "driver-too-old-for-gpu").path
    code, report = run(tmp_path, stack, "--policy-config", str(levels))
    assert code == 0
    # On the B200 pool's node group and on the image built for it, both now advisory.
    assert [(v["policy"], v["enforcementLevel"]) for v in report["violations"] if v["policy"] != LEDGER_RECORDED] == [
        ("driver-supports-gpu", "advisory")
    ] * 2


def test_policy_config_can_disable_a_policy(tmp_path):
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"release-supports-kubernetes": "disabled"}))
    stack = fixture_stacks.row("violating", "release-too-old-for-kubernetes").path
    code, report = run(tmp_path, stack, "--policy-config", str(levels))
    assert code == 0 and [v for v in report["violations"] if v["policy"] != LEDGER_RECORDED] == []


def test_a_public_cluster_endpoint_limited_to_named_networks_is_advisory(tmp_path):
    config = unapproved(stack_config("dev"))
    config["gpu-platform:cluster"].update(
        {"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24", "198.51.100.0/24"]}
    )
    code, report = run(tmp_path, write_stack(tmp_path, config, "dev"))
    assert code == 0
    assert [(v["policy"], v["enforcementLevel"]) for v in report["violations"]] == [
        ("cluster-endpoint-private", "advisory"),
        (LEDGER_RECORDED, "advisory"),
    ]
    assert "203.0.113.0/24, 198.51.100.0/24" in report["violations"][0]["message"]


def test_opening_the_endpoint_of_an_approved_stack_needs_a_new_approval(tmp_path):
    # The endpoint's exposure is in the privilege ledger: dev's approval covered a private endpoint.
    config = stack_config("dev")
    config["gpu-platform:cluster"].update({"endpointPublicAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]})
    code, report = run(tmp_path, write_stack(tmp_path, config, "dev"))
    assert code == 1
    assert ("privilege-ledger-approved", "mandatory") in [
        (v["policy"], v["enforcementLevel"]) for v in report["violations"]
    ]


def test_an_untested_driver_of_a_supported_branch_is_advisory(tmp_path):
    config = unapproved(stack_config("dev"))
    config["gpu-platform:nodeImage"]["driverVersion"] = "580.65.06"
    code, report = run(tmp_path, write_stack(tmp_path, config))
    assert code == 0
    assert [v["policy"] for v in report["violations"]] == ["driver-version-tested-by-release", LEDGER_RECORDED]
    assert "580.65.06" in report["violations"][0]["message"]


def test_violating_fixtures_are_valid_stack_files():
    for row in VIOLATING:
        assert set(yaml.safe_load(row.path.read_text())["config"]) >= {"gpu-platform:cluster", "gpu-platform:nodePools"}


# No valid stack file makes the program skip its audit or its own images, so these run the pack
# over a real recording with one resource's inputs tampered after the fact.
def _mandatory(recording) -> list:
    return [v for v in analyze(recording) if v.enforcement_level == "mandatory"]


def test_an_unaudited_privileged_daemonset_in_a_real_recording_fails(prod):
    def strip(inputs):
        for meta in (inputs["metadata"], inputs["spec"]["template"]["metadata"]):
            meta["annotations"] = {
                k: v for k, v in meta["annotations"].items() if not k.startswith(contract.AUDIT_PREFIX)
            }

    found = _mandatory(prod.replaced("kubernetes:apps/v1:DaemonSet", "gpu-device-plugin-mig-ds", strip))
    assert [v.policy for v in found] == ["privileged-workloads-audited"]
    # prod's MIG pool's plugin runs privileged (toolkit 1.18.1's jit-cdi: toolkit issue #1740).
    assert "gpu-device-plugin-mig-ds" in found[0].message and "privileged" in found[0].message


def test_a_foreign_image_in_a_real_recording_fails(prod):
    def swap(inputs):
        inputs["spec"]["template"]["spec"]["containers"][0]["image"] = "docker.io/someone/k8s-device-plugin:v0.18.1"

    found = _mandatory(prod.replaced("kubernetes:apps/v1:DaemonSet", "gpu-device-plugin-mig-ds", swap))
    # The swapped image runs privileged, so the privilege ledger no longer matches the approval either.
    assert sorted(v.policy for v in found) == ["operand-images-match-release", "privilege-ledger-approved"]
    found = [v for v in found if v.policy == "operand-images-match-release"]
    assert "docker.io/someone" in found[0].message and "nvcr.io/nvidia/k8s-device-plugin:v0.18.1" in found[0].message


def test_a_node_group_that_claims_another_driver_than_the_image_fails(prod):
    def other_driver(inputs):
        inputs["tags"][contract.DRIVER_VERSION_TAG] = "580.95.05"

    found = _mandatory(prod.replaced("aws:eks/nodeGroup:NodeGroup", "gpu-pool-l40s-ng", other_driver))
    assert [v.policy for v in found] == ["declared-facts-agree"]
    assert (
        "580.95.05" in found[0].message
        and "580.105.08" in found[0].message
        and "gpu-node-image-image" in found[0].message
    )


def _dra_with_gates(tmp_path: Path, **allocation) -> Path:
    config = unapproved(stack_config("dra"))
    config["gpu-platform:allocation"].update(allocation)
    return write_stack(tmp_path, config)


def test_an_alpha_dra_feature_gate_turned_on_unacknowledged_is_advisory(tmp_path):
    code, report = run(tmp_path, _dra_with_gates(tmp_path, featureGates={"TimeSlicingSettings": True}))
    assert code == 0
    assert [(v["policy"], v["enforcementLevel"]) for v in report["violations"]] == [
        ("dra-alpha-features-acknowledged", "advisory"),
        (LEDGER_RECORDED, "advisory"),
    ]
    assert (
        "TimeSlicingSettings" in report["violations"][0]["message"]
        and "gpu-dra-driver-ds" in report["violations"][0]["message"]
    )


def test_an_acknowledged_alpha_dra_feature_gate_is_not_reported(tmp_path):
    code, report = run(
        tmp_path,
        _dra_with_gates(tmp_path, featureGates={"TimeSlicingSettings": True}, acknowledgeAlpha=["TimeSlicingSettings"]),
    )
    assert code == 0
    assert [v["policy"] for v in report["violations"]] == [LEDGER_RECORDED]


def test_policy_config_makes_unacknowledged_alpha_dra_gates_mandatory(tmp_path):
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"dra-alpha-features-acknowledged": "mandatory"}))
    code, report = run(
        tmp_path, _dra_with_gates(tmp_path, featureGates={"DynamicMIG": True}), "--policy-config", str(levels)
    )
    assert code == 1
    assert [v["policy"] for v in report["violations"] if v["enforcementLevel"] == "mandatory"] == [
        "dra-alpha-features-acknowledged"
    ]
