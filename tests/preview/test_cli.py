"""The offline preview's command line: exit codes, the JSON report, manifests, determinism."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from preview.__main__ import main
from tests import fixture_stacks
from tests.conftest import ROOT

RELEASE_TOO_OLD = fixture_stacks.row("violating", "release-too-old-for-kubernetes").path


def test_dev_stack_previews_and_passes(capsys):
    assert main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Stack dev (stacks/Pulumi.dev.yaml)")
    assert "Verdict: PASS" in out
    # The summary speaks of pools and operands; the resource tree is behind --tree.
    assert "  l4           g6.2xlarge -> L4 x1, 0/1/4 nodes (min/desired/max), ON_DEMAND, time-sliced x4" in out
    assert "left out: mig-manager (no pool uses MIG)" in out
    assert "aws:eks/nodeGroup:NodeGroup gpu-pool-l4-ng" not in out


def test_tree_prints_every_resource_under_its_parent(capsys):
    assert main(["--stack", "dev", "--tree"]) == 0
    out = capsys.readouterr().out
    assert "aws:eks/nodeGroup:NodeGroup gpu-pool-l4-ng" in out
    assert "Verdict: PASS" in out


def test_default_stack_is_dev(capsys):
    assert main([]) == 0
    assert capsys.readouterr().out.startswith("Stack dev ")


def test_mandatory_violation_exits_1_and_is_in_the_json(tmp_path, capsys):
    report = tmp_path / "report.json"
    assert main(["--config", str(RELEASE_TOO_OLD), "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert "Verdict: FAIL" in out
    # Under each violation, what to change: the policy's remediation steps (which the local CLI does not
    # print; Pulumi Cloud shows them for a published pack).
    assert "      change: gpu-platform:operator.release or gpu-platform:cluster.kubernetesVersion\n" in out
    # Less the advisories every stack has while the matrix pins no image digest (tests/policy/test_images.py)
    # and the fixture records no approved privilege ledger (tests/preview/test_ledger_cli.py).
    violations = [
        v
        for v in json.loads(report.read_text())["violations"]
        if v["policy"] not in ("privileged-images-pinned-by-digest", "privilege-ledger-recorded")
    ]
    assert {v["fix"] for v in violations} == {"gpu-platform:operator.release or gpu-platform:cluster.kubernetesVersion"}
    # On the namespace (before any operand) and on the node image (before the bake).
    assert [(v["policy"], v["urn"].rsplit("::", 1)[-1]) for v in violations] == [
        ("release-supports-kubernetes", "gpu-node-image-image"),
        ("release-supports-kubernetes", "gpu-namespace"),
    ]
    assert all(
        v["enforcementLevel"] == "mandatory" and "v24.3.0" in v["message"] and "1.33" in v["message"]
        for v in violations
    )


def test_policy_config_can_make_a_policy_advisory(tmp_path):
    levels = tmp_path / "policy-config.json"
    levels.write_text(json.dumps({"release-supports-kubernetes": "advisory"}))
    assert main(["--config", str(RELEASE_TOO_OLD), "--policy-config", str(levels)]) == 0


def test_a_pass_with_a_disabled_policy_says_which_policy_was_not_judged(tmp_path, capsys):
    levels = tmp_path / "policy-config.json"
    levels.write_text(json.dumps({"release-supports-kubernetes": "disabled", "cluster-endpoint-private": "advisory"}))
    assert main(["--config", str(RELEASE_TOO_OLD), "--policy-config", str(levels)]) == 0
    out = capsys.readouterr().out
    assert "Not judged (disabled by --policy-config): release-supports-kubernetes\nVerdict: PASS" in out


def test_unknown_stack_exits_2_listing_the_stacks(capsys):
    assert main(["--stack", "staging"]) == 2
    assert "stacks: dev, dra, prod" in capsys.readouterr().err


def test_malformed_yaml_exits_2_without_traceback(tmp_path, capsys):
    bad = tmp_path / "Pulumi.broken.yaml"
    bad.write_text("config:\n  aws:region: [unclosed\n")
    assert main(["--config", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_json_report_has_the_documented_shape(tmp_path):
    report = tmp_path / "dev.json"
    assert main(["--stack", "dev", "--json", str(report)]) == 0
    document = json.loads(report.read_text())
    assert set(document) == {
        "stack",
        "asOf",
        "resources",
        "violations",
        "warnings",
        "firstPreview",
        "lifecycleStuck",
        "privilegeLedger",
    }
    assert document["asOf"] == "2026-06-01"  # tests/conftest.py sets SOURCE_DATE_EPOCH
    # dev's one warning: its time-sliced pool's per-pod metrics (components/platform.py).
    assert [w.split(":", 2)[:2] for w in document["warnings"]] == [["gpu-platform", "nodePools (l4)"]]
    assert set(document["firstPreview"]) == {"violations"}
    assert document["stack"] == "dev"
    for resource in document["resources"]:
        assert set(resource) == {
            "urn",
            "type",
            "name",
            "parent",
            "dependencies",
            "propertyDependencies",
            "ignoreChanges",
            "replaceOnChanges",
            "inputs",
        }
    types = {r["type"] for r in document["resources"]}
    assert {"aws:eks/cluster:Cluster", "aws:imagebuilder/image:Image", "kubernetes:apps/v1:DaemonSet"} <= types


def test_secrets_are_redacted_in_the_json(tmp_path):
    report = tmp_path / "dev.json"
    main(["--stack", "dev", "--json", str(report)])
    provider = next(
        r for r in json.loads(report.read_text())["resources"] if r["type"] == "pulumi:providers:kubernetes"
    )
    # The program marks the kubeconfig secret; the report must not print it.
    assert provider["inputs"]["kubeconfig"] == "[secret]"


def test_manifests_are_one_kubernetes_object_a_file(tmp_path):
    out = tmp_path / "manifests"
    assert main(["--stack", "dev", "--manifests", str(out)]) == 0
    files = sorted(out.glob("*.yaml"))
    kinds = [yaml.safe_load(f.read_text())["kind"] for f in files]
    assert "DaemonSet" in kinds and "Namespace" in kinds
    for f in files:
        document = yaml.safe_load(f.read_text())
        assert document["apiVersion"] and document["metadata"]["name"]


@pytest.mark.subprocess
def test_same_stack_gives_byte_identical_output(tmp_path):
    """Two separate processes, so nothing cached in one run can hide nondeterminism."""
    runs = []
    for n in range(2):
        report, manifests = tmp_path / f"r{n}.json", tmp_path / f"m{n}"
        audit, graph = tmp_path / f"a{n}.md", tmp_path / f"g{n}.dot"
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "preview",
                "--stack",
                "prod",
                "--json",
                str(report),
                "--manifests",
                str(manifests),
                "--audit",
                str(audit),
                "--graph",
                str(graph),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            # Different hash seeds: set and dict order must never leak into the output.
            env={**os.environ, "PYTHONHASHSEED": str(n + 1)},
        )
        runs.append(
            (
                result.stdout,
                report.read_bytes(),
                audit.read_bytes(),
                graph.read_bytes(),
                {p.name: p.read_bytes() for p in manifests.iterdir()},
            )
        )
    assert runs[0] == runs[1]


@pytest.mark.parametrize(
    "content, message",
    [
        ("[1, 2]", "must be a JSON object of policy -> level"),
        ("{not json", "not JSON"),
        (
            '{"release-supports-kubernetse": "advisory"}',
            "'release-supports-kubernetse' is not a policy of the pack (valid: ",
        ),
        (
            '{"release-supports-kubernetes": "loud"}',
            "release-supports-kubernetes: 'loud' is not an enforcement level (valid: advisory, mandatory",
        ),
    ],
)
def test_a_bad_policy_config_exits_2_naming_the_file(tmp_path, capsys, content, message):
    levels = tmp_path / "levels.json"
    levels.write_text(content)
    assert main(["--stack", "dev", "--policy-config", str(levels)]) == 2
    err = capsys.readouterr().err
    assert str(levels) in err and message in err


@pytest.mark.parametrize(
    "flag, target, message",
    [
        ("--json", "dir", "is a directory"),
        ("--audit", "dir", "is a directory"),
        ("--graph", "dir", "is a directory"),
        ("--graph", "file/rollout.md", "file is a file, not a directory"),
        ("--json", "/dev/full", "is not a regular file"),
        ("--audit", "/proc/audit.md", "--audit /proc/audit.md: "),  # refused up front, or when written (as root)
        ("--graph", "rollout.txt", "unknown format (valid endings: .md, .mmd, .dot, .gv)"),
        ("--manifests", "file", "is a file; give a directory"),
    ],
)
def test_an_unwritable_output_exits_2_before_anything_is_written(tmp_path, capsys, flag, target, message):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("")
    report = tmp_path / "report.json"
    assert (
        main(
            [
                "--stack",
                "dev",
                "--json" if flag != "--json" else "--audit",
                str(report if flag != "--json" else tmp_path / "a.md"),
                flag,
                str(tmp_path / target),
            ]
        )
        == 2
    )
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    assert not report.exists() and not (tmp_path / "a.md").exists()


def test_an_output_that_is_also_an_input_is_refused(tmp_path, capsys):
    levels = tmp_path / "levels.json"
    levels.write_text('{"all": "advisory"}')
    assert main(["--stack", "dev", "--policy-config", str(levels), "--json", str(levels)]) == 2
    assert "is also the input of --policy-config" in capsys.readouterr().err
    assert levels.read_text() == '{"all": "advisory"}'


def test_a_write_that_fails_midway_leaves_no_report(tmp_path, capsys, monkeypatch):
    # The second output fails while being written: the first must not be left behind either.
    from preview import writing

    real = writing._temporary

    def failing(directory, text):
        if directory.name == "audit":
            raise OSError(28, "No space left on device")
        return real(directory, text)

    monkeypatch.setattr(writing, "_temporary", failing)
    report, audit = tmp_path / "report.json", tmp_path / "audit" / "a.md"
    assert main(["--stack", "dev", "--json", str(report), "--audit", str(audit)]) == 2
    err = capsys.readouterr().err
    assert "--audit" in err and "No space left on device" in err and "no report was written" in err
    assert not report.exists() and list(tmp_path.rglob("*.tmp")) == []


@pytest.mark.parametrize(
    "flag, make, message",
    [
        ("--audit-against", lambda p: p.write_bytes(b"\xc4\x00\xff"), "is not a UTF-8 text file"),
        ("--against", lambda p: p.write_bytes(b"\xc4\x00\xff"), "is not a UTF-8 text file"),
        ("--policy-config", lambda p: p.mkdir(), "is a directory"),
        ("--policy-config", lambda p: p.write_text("{" * 300 + "}" * 300), "not JSON"),
        (
            "--policy-config",
            lambda p: p.write_text('{"all": ' + '{"x": ' * 40 + "1" + "}" * 40 + "}"),
            "nested deeper than 32",
        ),
        # Python's own int() limit said as a fact of the file, not as a hint to call sys.set_int_max_str_digits().
        (
            "--against",
            lambda p: p.write_text('{"resources": ' + "9" * 5000 + "}"),
            "not JSON (a number of more than 4300 digits)",
        ),
        (
            "--policy-config",
            lambda p: p.write_text('{"all": ' + "9" * 5000 + "}"),
            "not JSON (a number of more than 4300 digits)",
        ),
        # A wrong file refused by its size before it is parsed (a 24 MB JSON took 10 s and 470 MB to refuse).
        ("--against", lambda p: p.write_text("[" + "1," * (8 * 1024 * 1024) + "1]"), "larger than 16 MB"),
        ("--policy-config", lambda p: p.write_text(" " * (1024 * 1024 + 1)), "larger than 1 MB"),
    ],
)
def test_an_unreadable_input_file_exits_2_naming_the_flag(tmp_path, capsys, flag, make, message):
    target = tmp_path / "input"
    make(target)
    extra = ["--audit", str(tmp_path / "a.md")] if flag == "--audit-against" else []
    assert main(["--stack", "dev", flag, str(target), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {flag} {target}") and message in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--json", "-"], "argument --json: '-' (stdin or stdout) is not supported"),
        (["--jso", "report.json"], "unrecognized arguments: --jso"),  # no abbreviations: a typo is not a flag
    ],
)
def test_flags_are_spelt_out_and_dash_is_not_a_path(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(["--stack", "dev", *argv])
    assert stop.value.code == 2 and message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_manifests_of_an_earlier_run_do_not_linger(tmp_path):
    out = tmp_path / "manifests"
    main(["--stack", "prod", "--manifests", str(out)])
    keep = out / "notes.txt"
    keep.write_text("mine")
    main(["--stack", "dev", "--manifests", str(out)])
    names = {p.name for p in out.iterdir()}
    assert not any("mig-manager" in n for n in names)  # prod only
    assert "notes.txt" in names


@pytest.mark.subprocess
def test_the_pack_started_as_the_cli_starts_it_gives_the_same_report(tmp_path):
    ours, theirs = tmp_path / "in-process.json", tmp_path / "grpc.json"
    stack = str(fixture_stacks.row("violating", "release-too-old-for-kubernetes").path)
    assert main(["--config", stack, "--json", str(ours)]) == 1
    assert main(["--config", stack, "--json", str(theirs), "--analyzer", "grpc"]) == 1
    assert ours.read_text() == theirs.read_text()


def test_a_pack_that_cannot_start_is_an_internal_error_exit_3(monkeypatch, capsys):
    from preview.offline import analyze

    def broken(*_args, **_kwargs):
        raise analyze.PackError("the policy pack did not start (python -m pulumi.policy ...): ModuleNotFoundError")

    monkeypatch.setattr(analyze, "PackProcess", broken)
    assert main(["--stack", "dev", "--analyzer", "grpc"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("internal error: the policy pack did not start") and "Traceback" not in err


def test_the_summary_shows_both_views_of_the_stack(capsys):
    assert main(["--stack", "dev"]) == 0
    out = capsys.readouterr().out
    # The one advisory: no image is pinned by digest (privileged-images-pinned-by-digest).
    assert "Policy violations (every value known, as pulumi up checks the stack): 0 mandatory, 1 advisory" in out
    assert "First pulumi preview of a new stack (ids and computed outputs unknown): the same verdicts" in out


def test_a_bug_is_an_internal_error_exit_3_never_1(monkeypatch, capsys):
    from preview.reports import report

    def broken(*_args, **_kwargs):
        raise AttributeError("planted bug")

    monkeypatch.setattr(report, "summary", broken)
    assert main(["--stack", "dev"]) == 3
    err = capsys.readouterr().err
    # One line saying so, no traceback unless asked for.
    assert (
        err
        == "internal error: AttributeError: planted bug (a bug in gpu-platform, please report it; --debug prints the traceback)\n"
    )
    assert main(["--stack", "dev", "--debug"]) == 3
    assert "Traceback" in capsys.readouterr().err


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


@pytest.mark.subprocess
def test_a_terminated_grpc_preview_stops_its_policy_pack():
    import signal
    import time

    preview = subprocess.Popen(
        [sys.executable, "-m", "preview", "--stack", "prod", "--analyzer", "grpc"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline, pack = time.monotonic() + 30, []
    while not pack and time.monotonic() < deadline and preview.poll() is None:
        pack = _children(preview.pid)
        time.sleep(0.05)
    assert pack, "the pack subprocess never started"
    preview.send_signal(signal.SIGTERM)
    assert preview.wait(timeout=30) == 128 + signal.SIGTERM
    assert "Traceback" not in preview.stderr.read().decode()
    time.sleep(0.2)
    assert not any(os.path.exists(f"/proc/{p}") and Path(f"/proc/{p}/stat").read_text().split()[2] != "Z" for p in pack)


def test_the_prod_summary_fits_on_one_screen(capsys):
    # One screen: 58 rows of a 120-column terminal (50, and since issue 28 a row per pool saying what
    # workloads can request, one for the node-lifecycle verdict, a row per pool, two for the MIG pool, for
    # what the cluster autoscaler sees of it at zero nodes, and one for the MIG pools' own operand
    # DaemonSets; the operands' heading went from two rows to one, a row for a next operand), long
    # lines counted as the rows they wrap to. Less
    # the digest advisory (one violation naming every privileged image, about 12 rows), which every
    # stack shows until the matrix or the stack pins the images by digest: it is meant to be noticed.
    assert main(["--stack", "prod"]) == 0
    lines = capsys.readouterr().out.splitlines()
    advisory = next(
        i for i, line in enumerate(lines) if line.startswith("  [advisory] privileged-images-pinned-by-digest: ")
    )
    del lines[advisory : advisory + 2]  # the violation and its `change:` line
    rows = sum(max(1, -(-len(line) // 120)) for line in lines)
    assert rows <= 58


def test_a_second_run_replaces_the_reports_of_the_first(tmp_path, capsys):
    # The everyday loop: edit the stack, run the same command again.
    outputs = [
        "--json",
        str(tmp_path / "dev.json"),
        "--audit",
        str(tmp_path / "audit.md"),
        "--graph",
        str(tmp_path / "rollout.md"),
        "--manifests",
        str(tmp_path / "manifests"),
    ]
    assert main(["--stack", "dev", *outputs]) == 0
    first = {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    (tmp_path / "dev.json").write_text("stale")
    assert main(["--stack", "dev", *outputs]) == 0, capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == first


@pytest.fixture
def toolkit_check_needs_a_free_gpu(tmp_path, monkeypatch):
    """The lifecycle rules with the toolkit check needing a free GPU: on a full node it never passes,
    so every operand behind toolkit-ready waits forever (a planted deadlock)."""
    from preview.lifecycle import rules

    text = rules._FILE.read_text()
    planted = text.replace(
        "    writes: toolkit-ready\n    needs: [runtime]\n",
        "    writes: toolkit-ready\n    needs: [runtime, free-gpu]\n",
    )
    assert planted != text
    (tmp_path / "rules.yaml").write_text(planted)
    monkeypatch.setattr(rules, "_FILE", tmp_path / "rules.yaml")
    rules.load.cache_clear()
    yield
    rules.load.cache_clear()


def test_a_node_lifecycle_scenario_that_ends_stuck_fails_the_preview(toolkit_check_needs_a_free_gpu, tmp_path, capsys):
    # No policy of the pack sees the model, so the verdict and exit code must carry it (the PR gate
    # fails on exit 1 only).
    report = tmp_path / "report.json"
    assert main(["--stack", "dev", "--json", str(report)]) == 1
    out = capsys.readouterr().out
    assert (
        "STUCK l4 / first up: nvidia-device-plugin: Init (wait-for-toolkit-ready waits for marker toolkit-ready)" in out
    )
    assert out.rstrip().endswith("scenarios end stuck)")
    assert out.splitlines()[-1].startswith("Verdict: FAIL (node lifecycle: ")
    stuck = json.loads(report.read_text())["lifecycleStuck"]
    assert {"pool": "l4", "scenario": "first up"} in [{k: s[k] for k in ("pool", "scenario")} for s in stuck]


def test_a_live_stacks_report_lists_nothing_stuck(tmp_path):
    report = tmp_path / "report.json"
    assert main(["--stack", "dev", "--json", str(report)]) == 0
    assert json.loads(report.read_text())["lifecycleStuck"] == []
