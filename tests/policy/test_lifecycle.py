"""The EKS version lifecycle policies, through the real analyzer: creating a cluster on a minor past
the end of extended support is mandatory; a created or adopted cluster in extended support gets an
advisory with the end date and the days left; an adopted one past the end is told the upgrade can
come at any time. The day is SOURCE_DATE_EPOCH (tests/conftest.py pins 2026-06-01)."""

from __future__ import annotations

import json

import pytest

from policy.lifecycle import eks_version_in_support, eks_version_support_window
from preview.__main__ import main
from tests import fixture_stacks
from tests.conftest import stack_config, unapproved, write_stack
from tests.policy.resources import cluster, namespace
from tests.policy.verdict import violations

# What this module's policies are served as, in declaration order (tests/policy/test_pack.py
# gathers these lists: a policy dropped, renamed or with its kind or level changed fails there).
SERVES = [
    ("eks-version-in-support", "resource", "mandatory"),
    ("eks-version-support-window", "stack", "advisory"),
]


PAST_EXTENDED_SUPPORT = fixture_stacks.row("violating", "eks-version-past-extended-support").path

JUNE_2026 = "1780272000"  # 2026-06-01 00:00 UTC
NOVEMBER_2026 = "1795996800"  # 2026-11-30 00:00 UTC


@pytest.fixture
def as_of(monkeypatch):
    return lambda epoch: monkeypatch.setenv("SOURCE_DATE_EPOCH", epoch)


def test_creating_a_cluster_past_the_end_of_extended_support_is_refused_naming_the_date():
    found = violations(eks_version_in_support, [cluster("1.28"), namespace(kubernetes="1.28")])
    assert len(found) == 1
    message, urn = found[0]
    assert urn == cluster().urn
    assert (
        "Kubernetes 1.28, whose EKS extended support ended on 2025-11-26 (as of 2026-06-01, from SOURCE_DATE_EPOCH)"
        in message
    )
    assert "create it on a minor in standard support (1.33, 1.34, 1.35)" in message
    # An existing cluster moves one minor at a time (EKS refuses a bigger step).
    assert "if it exists, upgrade one minor at a time (EKS takes no bigger step: 1.28 -> 1.29 first)" in message


@pytest.mark.parametrize("minor", ["1.32", "1.33", "1.35", "1.36"])
def test_creating_a_cluster_in_standard_or_extended_support_or_undated_is_allowed(minor):
    assert violations(eks_version_in_support, [cluster(minor)]) == []


def test_a_created_cluster_in_extended_support_gets_the_end_date_and_the_days_left():
    found = violations(eks_version_support_window, [cluster("1.32"), namespace(kubernetes="1.32")])
    assert len(found) == 1
    message, _ = found[0]
    # 1.32: standard support ended 2026-03-23, extended support ends 2027-03-23; 2026-06-01 is 295 days before.
    assert message.startswith("cluster 'gpu-test' runs Kubernetes 1.32, in EKS extended support since 2026-03-23")
    assert "it ends on 2027-03-23, 295 days left (as of 2026-06-01, from SOURCE_DATE_EPOCH)" in message
    assert (
        "upgrade one minor at a time (EKS takes no bigger step: 1.32 -> 1.33 first) to a minor in standard support (1.33, 1.34, 1.35)"
        in message
    )


def test_a_cluster_in_standard_support_gets_no_advisory():
    assert violations(eks_version_support_window, [cluster("1.35"), namespace(kubernetes="1.35")]) == []


def test_an_adopted_cluster_gets_the_same_advisory_from_its_namespace():
    found = violations(eks_version_support_window, [namespace(kubernetes="1.32")])
    assert len(found) == 1 and found[0][0].startswith(
        "the adopted cluster runs Kubernetes 1.32, in EKS extended support"
    )


def test_an_adopted_cluster_past_the_end_is_told_the_upgrade_can_come_at_any_time():
    found = violations(eks_version_support_window, [namespace(kubernetes="1.28")])
    assert len(found) == 1
    assert "extended support ended on 2025-11-26" in found[0][0] and "at any time" in found[0][0]
    # A created one is refused by the mandatory policy instead, once.
    assert violations(eks_version_support_window, [cluster("1.28"), namespace(kubernetes="1.28")]) == []


def test_another_day_gives_other_verdicts(as_of):
    as_of(NOVEMBER_2026)  # 1.33 has left standard support, 1.32 has 113 days left, 1.31 has just ended
    assert "2027-07-29, 241 days left" in violations(eks_version_support_window, [cluster("1.33")])[0][0]
    assert "2027-03-23, 113 days left" in violations(eks_version_support_window, [cluster("1.32")])[0][0]
    assert "ended on 2026-11-26" in violations(eks_version_in_support, [cluster("1.31")])[0][0]
    as_of("1730419200")  # 2024-11-01: 1.28 still in standard support
    assert violations(eks_version_in_support, [cluster("1.28")]) == []
    assert violations(eks_version_support_window, [cluster("1.28")]) == []


def test_a_malformed_source_date_epoch_in_the_packs_environment_is_a_mandatory_violation(as_of):
    # Under the Pulumi CLI the pack reads the CLI's environment: a bad value must stop the update, not
    # be judged as some other day.
    as_of("last tuesday")
    found = violations(eks_version_in_support, [cluster("1.35")])
    assert len(found) == 1 and "SOURCE_DATE_EPOCH='last tuesday' is not a whole number of seconds" in found[0][0]


# --- through the preview: 1.28 (error), 1.32 (advisory), 1.35 (nothing), as of a fixed day and another


def _stack(tmp_path, minor: str, **cluster_keys):
    # Another minor changes the ledger (the add-ons' versions are the EKS default for it): unapproved.
    config = unapproved(stack_config("dev"))
    config["gpu-platform:cluster"].update({"kubernetesVersion": minor, **cluster_keys})
    return write_stack(tmp_path, config, name=f"k{minor.replace('.', '')}")


def _verdicts(tmp_path, path, *flags) -> tuple[int, list[dict]]:
    report = tmp_path / f"{path.stem}.json"
    code = main(["--config", str(path), "--json", str(report), *flags])
    document = json.loads(report.read_text())
    return code, [v for v in document["violations"] if v["policy"].startswith("eks-version")]


def test_the_preview_as_of_the_suites_day(tmp_path, capsys):
    code, found = _verdicts(tmp_path, PAST_EXTENDED_SUPPORT)
    assert code == 1 and [(v["policy"], v["enforcementLevel"]) for v in found] == [
        ("eks-version-in-support", "mandatory")
    ]
    code, found = _verdicts(tmp_path, _stack(tmp_path, "1.32"))
    assert code == 0 and [(v["policy"], v["enforcementLevel"]) for v in found] == [
        ("eks-version-support-window", "advisory")
    ]
    assert "2027-03-23, 295 days left" in found[0]["message"]
    code, found = _verdicts(tmp_path, _stack(tmp_path, "1.35"))
    assert code == 0 and found == []
    assert "EKS support dates as of 2026-06-01, from SOURCE_DATE_EPOCH" in capsys.readouterr().out


def test_as_of_another_day_gives_the_other_verdicts_and_says_which_day(tmp_path, capsys, as_of):
    as_of(JUNE_2026)  # --as-of sets SOURCE_DATE_EPOCH in this process; the fixture restores it afterwards
    # 2025-06-01: 1.28 in extended support (advisory, no error); 1.32 in standard support.
    code, found = _verdicts(tmp_path, PAST_EXTENDED_SUPPORT, "--as-of", "2025-06-01")
    assert code == 0 and [(v["policy"], v["enforcementLevel"]) for v in found] == [
        ("eks-version-support-window", "advisory")
    ]
    assert "it ends on 2025-11-26, 178 days left (as of 2025-06-01" in found[0]["message"]
    code, found = _verdicts(tmp_path, _stack(tmp_path, "1.32"), "--as-of", "2025-06-01")
    assert code == 0 and found == []
    # 2028-04-01: 1.35 past the end of its extended support (2028-03-27).
    code, found = _verdicts(tmp_path, _stack(tmp_path, "1.35"), "--as-of", "2028-04-01")
    assert code == 1 and [v["policy"] for v in found] == ["eks-version-in-support"]
    report = json.loads((tmp_path / "Pulumi.k135.json").read_text())
    assert report["asOf"] == "2028-04-01"
    assert "EKS support dates as of 2028-04-01, from SOURCE_DATE_EPOCH" in capsys.readouterr().out


def test_an_adopted_cluster_in_extended_support_previews_with_the_advisory(tmp_path):
    # preview/offline/fixtures/aws.yaml: gpu-shared runs 1.32.
    path = _stack(tmp_path, "1.32", name="gpu-shared", create=False)
    code, found = _verdicts(tmp_path, path)
    assert code == 0 and len(found) == 1 and found[0]["message"].startswith("the adopted cluster runs Kubernetes 1.32")


@pytest.mark.parametrize(
    "flags, says",
    [
        (["--as-of", "2026-13-01"], "'2026-13-01' is not a date as YYYY-MM-DD"),
        (["--as-of", "1969-12-31"], "is before 1970"),
    ],
)
def test_a_bad_as_of_is_a_usage_error(flags, says, capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--stack", "dev", *flags])
    assert exit_.value.code == 2 and says in capsys.readouterr().err


def test_a_malformed_source_date_epoch_is_invalid_input_before_anything_runs(as_of, capsys, tmp_path):
    as_of("2026-06-01")
    report = tmp_path / "r.json"
    assert main(["--stack", "dev", "--json", str(report)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and not report.exists()
    assert "SOURCE_DATE_EPOCH='2026-06-01' is not a whole number of seconds" in captured.err


def test_an_as_of_before_any_eks_release_is_invalid_input_naming_the_flag(as_of, capsys):
    as_of(JUNE_2026)
    assert main(["--stack", "dev", "--as-of", "2001-01-01"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --as-of 2001-01-01: before the first EKS release in the calendar (2022-11-15)")


def test_a_day_when_no_minor_of_the_calendar_is_in_standard_support_asks_for_the_calendar_to_grow(as_of):
    as_of("1838246400")  # 2028-04-02: 1.35's support has ended, 1.36 has no dates yet
    ((message, _),) = violations(eks_version_in_support, [cluster("1.35")])
    assert (
        "create it on a newer minor (none in the calendar is in standard support on that day: add the newer "
        "ones to gpu_platform/catalog/eks_versions.yaml)" in message
    )


def test_only_the_operands_namespace_with_its_kubernetes_version_speaks_for_an_adopted_cluster():
    other = namespace(kubernetes="1.32")
    del other.props["metadata"]["annotations"]["gpu-platform.io/operator-release"]
    assert violations(eks_version_support_window, [other]) == []
    unversioned = namespace(kubernetes="")
    assert violations(eks_version_support_window, [unversioned]) == []
