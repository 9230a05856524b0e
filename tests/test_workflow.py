"""The PR gate (.github/workflows/pr.yml), on what a workflow linter cannot see: the credential-free
job runs the tests and the linters, previews every stack file that exists in stacks/ with every
report, fails on a violation only after all stacks ran, and uploads the reports; the real preview
runs per stack, only where credentials are configured, in a protected environment, with the policy
pack of the default branch; every action is pinned to a commit. The step scripts run here for real,
against a stand-in for `python -m preview`."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT, SHIPPED_STACKS

WORKFLOW = ROOT / ".github" / "workflows" / "pr.yml"
STACK_NAMES = sorted(p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in SHIPPED_STACKS)
REPORT_FLAGS = ("--json", "--manifests", "--audit", "--graph")
BASH = shutil.which("bash")


@pytest.fixture(scope="module")
def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text())


def steps(job: dict) -> list[dict]:
    return job["steps"]


def step_named(job: dict, name: str) -> dict:
    [step] = [s for s in steps(job) if s.get("name") == name]
    return step


def action(step: dict) -> str:
    return step.get("uses", "").split("@")[0]


def offline_job(workflow: dict) -> dict:
    return workflow["jobs"]["offline"]


def run_step(script: str, tmp_path: Path, stacks: list[str], failing: str = "") -> tuple[int, list[list[str]], Path]:
    """Run a step's script in a work tree holding `stacks`, with a stand-in preview that records its
    arguments, writes the reports it is asked for and exits 1 for the `failing` stack."""
    (tmp_path / "stacks").mkdir()
    for stack in stacks:
        (tmp_path / "stacks" / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    fake = tmp_path / ".venv" / "bin" / "python"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'printf "%s\\n" "$*" >> "$CALLS"\n'
        "while [ $# -gt 0 ]; do\n"
        '  case "$1" in --stack) stack=$2;; --json|--audit|--graph) mkdir -p "$(dirname "$2")"; echo report > "$2";; esac\n'
        "  shift\n"
        "done\n"
        '[ "$stack" != "$FAILING" ]\n'
    )
    fake.chmod(0o755)
    env = {
        **os.environ,
        "CALLS": str(tmp_path / "calls"),
        "FAILING": failing,
        "GITHUB_OUTPUT": str(tmp_path / "github_output"),
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"),
    }
    # GitHub runs `run:` steps with `bash -e {0}` (shell defaulted on Linux runners).
    done = subprocess.run([BASH, "-e", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    calls = (
        [line.split() for line in (tmp_path / "calls").read_text().splitlines()]
        if (tmp_path / "calls").exists()
        else []
    )
    return done.returncode, calls, tmp_path


def test_the_offline_job_needs_no_cloud_credentials(workflow):
    job = offline_job(workflow)
    text = yaml.safe_dump(job)
    assert "secrets." not in text
    assert "id-token" not in yaml.safe_dump(job.get("permissions", {}))
    assert workflow["permissions"] == {"contents": "read"}
    assert not [s for s in steps(job) if action(s) in ("aws-actions/configure-aws-credentials", "pulumi/actions")]


def test_the_offline_job_runs_the_tests_the_linters_and_the_scan_on_python_3_11(workflow):
    job = offline_job(workflow)
    runs = [s.get("run", "").strip() for s in steps(job)]
    assert "make test" in runs
    assert "make lint" in runs
    assert "make scan" in runs
    [python] = [s for s in steps(job) if action(s) == "actions/setup-python"]
    assert str(python["with"]["python-version"]) == "3.11"


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_the_offline_preview_covers_every_stack_file_in_stacks(workflow, tmp_path):
    script = step_named(offline_job(workflow), "Offline preview of every stack")["run"]
    status, calls, _ = run_step(script, tmp_path, STACK_NAMES)
    assert status == 0
    previewed = sorted(call[call.index("--stack") + 1] for call in calls)
    assert previewed == STACK_NAMES
    for call in calls:
        stack = call[call.index("--stack") + 1]
        assert call[:3] == ["-m", "preview", "--stack"]
        for flag in REPORT_FLAGS:
            assert call[call.index(flag) + 1].startswith(f"out/{stack}/"), (flag, call)
        # Judged with the gate's levels (a stack without an approved privilege ledger fails).
        assert call[call.index("--policy-config") + 1] == "policy/gate-config.json"


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_a_new_stack_file_is_previewed_without_editing_the_workflow(workflow, tmp_path):
    script = step_named(offline_job(workflow), "Offline preview of every stack")["run"]
    _, calls, _ = run_step(script, tmp_path, [*STACK_NAMES, "staging"])
    assert "staging" in [call[call.index("--stack") + 1] for call in calls]


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_a_violating_stack_fails_the_job_after_every_stack_is_previewed(workflow, tmp_path):
    script = step_named(offline_job(workflow), "Offline preview of every stack")["run"]
    first = STACK_NAMES[0]
    status, calls, tree = run_step(script, tmp_path, STACK_NAMES, failing=first)
    assert status != 0
    assert len(calls) == len(STACK_NAMES)
    assert (tree / "out" / STACK_NAMES[-1] / "audit.md").exists()


def test_the_reports_are_uploaded_even_when_a_stack_fails(workflow):
    job = offline_job(workflow)
    [upload] = [s for s in steps(job) if action(s) == "actions/upload-artifact"]
    assert upload["with"]["path"].rstrip("/") == "out"
    assert "!cancelled()" in upload["if"] and "steps.preview.outcome" in upload["if"]
    assert steps(job).index(upload) > steps(job).index(step_named(job, "Offline preview of every stack"))


@pytest.mark.skipif(BASH is None, reason="needs bash")
def test_the_real_preview_runs_once_per_stack_file(workflow, tmp_path):
    job = offline_job(workflow)
    status, _, tree = run_step(step_named(job, "List the stacks")["run"], tmp_path, [*STACK_NAMES, "staging"])
    assert status == 0
    output = dict(line.split("=", 1) for line in (tree / "github_output").read_text().splitlines())
    assert json.loads(output["names"]) == sorted([*STACK_NAMES, "staging"])
    assert job["outputs"]["stacks"] == "${{ steps.stacks.outputs.names }}"
    real = workflow["jobs"]["pulumi-preview"]
    assert real["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.offline.outputs.stacks) }}"


def test_the_real_preview_runs_the_policy_pack_only_with_credentials_configured(workflow):
    real = workflow["jobs"]["pulumi-preview"]
    assert "vars.AWS_ROLE_ARN != ''" in real["if"]
    assert real["permissions"]["id-token"] == "write"
    [aws] = [s for s in steps(real) if action(s) == "aws-actions/configure-aws-credentials"]
    assert aws["with"]["role-to-assume"] == "${{ vars.AWS_ROLE_ARN }}"
    [pulumi] = [s for s in steps(real) if action(s) == "pulumi/actions"]
    assert pulumi["with"]["command"] == "preview"
    assert pulumi["with"]["stack-name"] == "${{ matrix.stack }}"
    # The engine is the release of the pinned SDK, not the newest 3.x of the day.
    sdk = next(
        line.split("==")[1].strip()
        for line in (ROOT / "requirements.txt").read_text().splitlines()
        if line.startswith("pulumi==")
    )
    assert str(pulumi["with"]["pulumi-version"]) == sdk
    assert pulumi["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    assert steps(real).index(aws) < steps(real).index(pulumi)


def test_the_real_preview_waits_for_the_protected_environment(workflow):
    # The environment's required reviewers approve each run before the job gets its secrets or an
    # OIDC token (docs/ci-and-supply-chain.md, "Repository settings the gate relies on", says which protection rules to set).
    assert workflow["jobs"]["pulumi-preview"]["environment"] == "pulumi-preview"
    assert "environment" not in offline_job(workflow)


def test_the_real_preview_runs_the_default_branchs_policy_pack_with_its_own_locked_virtualenv(workflow):
    real = workflow["jobs"]["pulumi-preview"]
    [gate] = [s for s in steps(real) if action(s) == "actions/checkout" and s.get("with", {}).get("path") == "gate"]
    assert gate["with"]["ref"] == "${{ github.event.repository.default_branch }}"
    # The pack and everything it imports (tests/policy/test_pack.py: policy/ and gpu_platform/ only).
    assert set(gate["with"]["sparse-checkout"].split()) == {"policy", "gpu_platform"}
    assert gate["with"]["persist-credentials"] is False
    [pulumi] = [s for s in steps(real) if action(s) == "pulumi/actions"]
    assert pulumi["with"]["policyPacks"] == "gate/policy"
    # Its levels from the default branch too, one config for the one pack.
    assert pulumi["with"]["policyPackConfigs"] == "gate/policy/gate-config.json"
    [venv] = [s for s in steps(real) if "gate/.venv" in s.get("run", "")]
    assert "--require-hashes -r gate/policy/requirements.lock.txt" in venv["run"]
    # policy/PulumiPolicy.yaml names the virtualenv the CLI runs the pack from: gate/.venv for gate/policy.
    assert (
        yaml.safe_load((ROOT / "policy" / "PulumiPolicy.yaml").read_text())["runtime"]["options"]["virtualenv"]
        == "../.venv"
    )
    # The gate is in place before the PR's own code runs (its Makefile, then its program).
    order = steps(real).index
    [make] = [s for s in steps(real) if s.get("run", "").strip() == "make venv"]
    assert order(gate) < order(venv) < order(make) < order(pulumi)


def test_the_gates_pack_reads_the_data_beside_it_not_the_prs(tmp_path):
    # A copy of the pack and its data in gate/, whose matrix lacks v25.10.1: the pack started there
    # (as the CLI starts it, from gate/policy) must judge by that matrix, not by this tree's.
    from pulumi.runtime.proto import analyzer_pb2

    from preview.offline import analyze, policy_config
    from tests.policy.resources import namespace
    from tests.policy.verdict import struct

    gate = tmp_path / "gate"
    for part in ("policy", "gpu_platform"):
        shutil.copytree(ROOT / part, gate / part, ignore=shutil.ignore_patterns("__pycache__"))
    matrix_file = gate / "gpu_platform" / "catalog" / "matrix.yaml"
    data = yaml.safe_load(matrix_file.read_text())
    del data["releases"]["v25.10.1"]
    matrix_file.write_text(yaml.safe_dump(data, sort_keys=False))
    ns = namespace("v25.10.1")
    with analyze.PackProcess(pack_dir=gate / "policy") as pack:
        pack.Configure(policy_config.configure_request(analyze.info(pack), {}))
        found = pack.Analyze(
            analyzer_pb2.AnalyzeRequest(type=ns.type, urn=ns.urn, name=ns.name, properties=struct(ns.props))
        )
    messages = [d.message for d in found.diagnostics]
    assert any("declares GPU Operator release 'v25.10.1', which is not in the version matrix" in m for m in messages), (
        messages
    )


# `uses: owner/repo[/path]@<40 hex> # vX.Y.Z`: the commit, and the release it is, for people.
PINNED = re.compile(r"uses: ([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # (v\d+\.\d+\.\d+)")


def unpinned_uses(text: str) -> list[str]:
    """Every `uses:` line of a workflow that is not pinned to a full commit SHA with its tag beside it."""
    return [
        line.strip()
        for line in text.splitlines()
        if re.match(r"\s*(- )?uses:", line) and not PINNED.fullmatch(line.strip().removeprefix("- "))
    ]


def test_every_action_is_pinned_to_a_full_commit_sha_with_its_release_tag_in_a_comment(workflow):
    text = WORKFLOW.read_text()
    assert unpinned_uses(text) == []
    used = [s["uses"] for job in workflow["jobs"].values() for s in steps(job) if "uses" in s]
    assert len(used) == len(PINNED.findall(text)) > 0
    # One commit per action: two pins of one action would be two versions of it.
    commits = {}
    for name, sha, tag in PINNED.findall(text):
        assert commits.setdefault(name, (sha, tag)) == (sha, tag), name


@pytest.mark.parametrize(
    "line",
    [
        "      - uses: actions/checkout@v4",
        "      - uses: actions/checkout@v4.4.0",
        "      - uses: actions/checkout@11d5960",  # a short SHA: ambiguous as the repository grows
        "      - uses: actions/checkout@11d5960a326750d5838078e36cf38b85af677262",  # no tag for people
        "        uses: actions/checkout@main # v4.4.0",
    ],
)
def test_a_tag_a_branch_or_a_short_sha_is_not_a_pin(line):
    assert unpinned_uses(line) == [line.strip()]
