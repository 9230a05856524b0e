"""The audit report (`python -m preview --audit`): what the approval record says about every
privilege, and how it changes between two reports."""

from __future__ import annotations

import copy
import dataclasses
import re

import pytest
import yaml

from gpu_platform.interface import contract
from preview.__main__ import main
from preview.offline import engine
from preview.reports import audit, ledger
from tests.golden import assert_golden


def _section(report: str, heading: str) -> str:
    start = report.index(f"\n### {heading}\n")
    # Up to the next heading of either level (the add-on section that follows the workloads is a ##).
    end = min(i for i in (report.find("\n### ", start + 1), report.find("\n## ", start + 1), len(report)) if i >= 0)
    return report[start:end]


def _changes(report: str) -> str:
    return report[report.index("## Changes since the previous report") : report.index("## Kubernetes workloads")]


def test_prod_report_matches_its_golden_file(prod):
    assert_golden("audit/prod.md", audit.report(prod))


def test_dev_report_matches_its_golden_file(dev):
    assert_golden("audit/dev.md", audit.report(dev))


def test_prod_report_lists_every_recorded_host_path_of_every_daemonset_with_its_mode(prod):
    report = audit.report(prod)
    daemonsets = prod.of_type("kubernetes:apps/v1:DaemonSet")
    assert daemonsets
    for ds in daemonsets:
        meta, spec = ds.inputs["metadata"], ds.inputs["spec"]["template"]["spec"]
        volumes = {v["name"]: v["hostPath"]["path"] for v in spec.get("volumes", []) if "hostPath" in v}
        if not volumes:
            continue
        section = _section(report, f"DaemonSet {meta['namespace']}/{meta['name']}")
        for container in spec.get("initContainers", []) + spec["containers"]:
            for mount in container.get("volumeMounts", []):
                if mount["name"] in volumes:
                    security = container.get("securityContext") or {}
                    privileged = security.get("privileged") is True
                    sys_admin = "SYS_ADMIN" in ((security.get("capabilities") or {}).get("add") or [])
                    who = (
                        "a privileged container"
                        if privileged
                        else "a container with CAP_SYS_ADMIN"
                        if sys_admin
                        else None
                    )
                    mode = (
                        "read-write"
                        if mount.get("readOnly") is not True
                        else (
                            f"mounted read-only, which is no boundary for {who} (it can remount it read-write),"
                            if who
                            else "read-only"
                        )
                    )
                    assert f"`{volumes[mount['name']]}` {mode} at `{mount['mountPath']}`" in section


def test_prod_report_names_reason_owner_and_approval_of_each_privileged_workload(prod):
    report = audit.report(prod)
    for heading in re.findall(r"^### (DaemonSet \S+)$", report, flags=re.M):
        section = _section(report, heading)
        assert "- Owner: ml-platform" in section and "- Approval: SEC-1187" in section
        assert "(not stated)" not in section
        assert "agree with the mounts" in section


def test_unprivileged_workloads_are_counted_but_not_listed(prod):
    report = audit.report(prod)
    assert "| 1 | node-feature-discovery | 3 | 3 | 0 | 0 | 0 | 7 | 0 |" in report
    assert "### Deployment" not in report


def test_a_host_paths_annotation_that_disagrees_with_the_mounts_is_flagged(prod):
    def lie(r: engine.Registration) -> engine.Registration:
        if r.name != "gpu-mig-manager-ds":
            return r
        inputs = copy.deepcopy(r.inputs)
        for meta in (inputs["metadata"], inputs["spec"]["template"]["metadata"]):
            meta["annotations"][contract.AUDIT_HOST_PATHS] = "/:ro,/sys:ro,/var/run/cdi:rw,/etc:rw"
        return dataclasses.replace(r, inputs=inputs)

    doctored = dataclasses.replace(prod, resources=[lie(r) for r in prod.resources])
    section = _section(audit.report(doctored), "DaemonSet gpu-operator/nvidia-mig-manager")
    assert "**disagree with the mounts**" in section
    assert "declared only: `/etc:rw`" in section
    assert "mounted only: `/run/nvidia/validations:rw`" in section
    assert "`/sys` declared ro, mounted rw" in section


def test_the_ledger_reads_back_one_row_per_privilege(prod):
    rows = ledger.parse(audit.report(prod))
    assert ("DaemonSet gpu-operator/nvidia-mig-manager", "(pod)", "hostPID") in rows
    assert ("DaemonSet gpu-operator/nvidia-operator-validator", "toolkit-validation", "hostPath /dev/null ro") in rows
    # Privileged on prod's MIG pool (toolkit 1.18.1's jit-cdi: toolkit issue #1740), SYS_ADMIN with it.
    assert ("DaemonSet gpu-operator/nvidia-dcgm-exporter-mig", "nvidia-dcgm-exporter", "privileged") in rows
    # Its other pool's exporter keeps SYS_ADMIN only (DCGM's profiling metrics), as on a stack without MIG.
    assert ("DaemonSet gpu-operator/nvidia-dcgm-exporter", "nvidia-dcgm-exporter", "privileged") not in rows
    assert ("DaemonSet gpu-operator/nvidia-dcgm-exporter", "nvidia-dcgm-exporter", "capability SYS_ADMIN") in rows


def test_against_itself_nothing_changes(prod):
    assert "No privilege added or removed" in _changes(audit.report(prod, against=ledger.parse(audit.report(prod))))


def test_a_mig_pool_adds_the_mig_manager_and_runs_the_mig_readers_privileged(dev, prod):
    changes = _changes(audit.report(prod, against=ledger.parse(audit.report(dev))))
    added = changes[changes.index("### Added") : changes.index("### Removed")]
    assert "| DaemonSet gpu-operator/nvidia-mig-manager | nvidia-mig-manager | privileged |" in added
    assert "| DaemonSet gpu-operator/nvidia-mig-manager | (pod) | hostPID |" in added
    assert "| DaemonSet gpu-operator/nvidia-mig-manager | nvidia-mig-manager | hostPath /sys rw |" in added
    # dev and prod both run toolkit 1.18.1, whose jit-cdi hands MIG's capability devices to no
    # unprivileged container (toolkit issue #1740): the three operands that read MIG devices get a
    # privileged DaemonSet for the MIG pool; their DaemonSets for the other pools stay unprivileged.
    for workload, container in (
        ("nvidia-device-plugin", "nvidia-device-plugin"),
        ("nvidia-gpu-feature-discovery", "gpu-feature-discovery"),
        ("nvidia-dcgm-exporter", "nvidia-dcgm-exporter"),
    ):
        assert f"| DaemonSet gpu-operator/{workload}-mig | {container} | privileged |" in added
        assert f"| DaemonSet gpu-operator/{workload} | {container} | privileged |" not in added
    # No workload privilege removed but the exporter's SYS_ADMIN, which privileged holds; the bake's rows differ (another driver, the fabric manager, the toolkit),
    # and so do the sharing ConfigMaps and the device plugin's env (MIG strategy): each such row is
    # replaced by the same binding with its new hash, never dropped.
    removed = changes[changes.index("### Removed") :]
    rows = [
        line
        for line in removed.splitlines()
        if line.startswith("| ") and "---" not in line and "workload |" not in line
    ]
    # dev's own pool (l4) has its launch template and node group: those settings rows go with it.
    # The other stack's subnets (the cluster's, the system nodes', the build host's) go with it too.
    subnets = [line for line in rows if " | subnets [" in line]
    assert sorted(line.split(" | ")[0] for line in subnets) == [
        "| EKS cluster",
        "| image build host gpu-node-image-infrastructure",
        "| node group gpu-cluster-system",
        "| node group gpu-pool-l4-ng",
    ]
    workload_removed = [
        line
        for line in rows
        if line not in subnets
        and not line.startswith(
            (
                "| node image bake ",
                "| IAM ",
                "| Approval record ",
                "| EKS cluster access ",
                "| launch template gpu-pool-l4",
                "| node group gpu-pool-l4",
            )
        )
    ]
    # The other stack's cluster and approval record (dev's), replaced by prod's.
    assert sorted(line for line in rows if line.startswith(("| Approval record ", "| EKS cluster access "))) == [
        "| Approval record | (gpu-platform:audit) | approval SEC-1042, owner ml-platform |",
        "| EKS cluster access | (cluster) | cluster gpu-dev in us-west-2, created |",
    ]
    # The stack's name is in its customer-managed IAM policy's name and in the cluster ARN the EKS and
    # Pod Identity trust policies name: those rows are the other stack's, not a privilege dropped.
    assert sorted(line.split(" sha256:")[0] for line in rows if line.startswith("| IAM ")) == [
        "| IAM policy gpu-platform-dev-gpu-node-image-ssm-agent | (document) | policy",
        "| IAM role gpu-cluster-control-plane | (trust) | assumeRolePolicy",
        "| IAM role gpu-cluster-vpc-cni-role | (trust) | assumeRolePolicy",
        "| IAM role gpu-node-image-builder | (policies) | policy arn:aws:iam::(stack account):policy/gpu-platform-dev-gpu-node-image-ssm-agent |",
    ]
    # The MIG readers' DaemonSets for the other pools keep every privilege dev's have: only the sharing
    # ConfigMaps' content differs (another stack's pools), a row replaced by the same binding, new hash.
    assert sorted(line.split(" sha256:")[0] for line in workload_removed) == [
        "| DaemonSet gpu-operator/nvidia-device-plugin | (pod) | configMap nvidia-device-plugin-available-configs data",
        "| DaemonSet gpu-operator/nvidia-gpu-feature-discovery | (pod) | configMap nvidia-gpu-feature-discovery-available-configs data",
    ]
    assert all(line.split(" sha256:")[0] + " sha256:" in added for line in workload_removed)
    # They keep off the MIG pool's nodes, where their privileged twins run.
    for workload in ("nvidia-device-plugin", "nvidia-gpu-feature-discovery", "nvidia-dcgm-exporter"):
        assert (
            f'| DaemonSet gpu-operator/{workload} | (pod) | affinity {{"nodeAffinity":{{"requiredDuringSchedulingIgnored'
            'DuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"nvidia.com/mig.config",'
            '"operator":"DoesNotExist"}]}]}}} |'
        ) in added
    assert (
        '| DaemonSet gpu-operator/nvidia-device-plugin-mig | nvidia-device-plugin | env NVIDIA_MIG_MONITOR_DEVICES="all" |'
        in added
    )
    assert (
        '| nvidia-dcgm-exporter | securityContext {"privileged":true,"readOnlyRootFilesystem":true,"runAsUser":0} |'
        in added
    )


def test_a_baked_toolkit_removes_the_toolkits_privileges(prod, variant):
    # prod bakes the toolkit; the same stack with the toolkit DaemonSet is the older report.
    daemonset = variant(lambda cfg: cfg["gpu-platform:nodeImage"].update(toolkitBaked=False), stack="prod")
    changes = _changes(audit.report(prod, against=ledger.parse(audit.report(daemonset))))
    removed = changes[changes.index("### Removed") :]
    # The baked image adds nothing: with the toolkit DaemonSet the node refuses NVIDIA_VISIBLE_DEVICES
    # from unprivileged pods too, so the operands that read every GPU unprivileged already ask for the
    # device list by a read-only /dev/null mount there.
    added = changes[changes.index("### Added") : changes.index("### Removed")]
    # Only the bake grows: it installs the toolkit as root on the image (its version an input of the script);
    # the operands that run the CDI hook find it elsewhere (NVIDIA_CDI_HOOK_PATH in /usr/bin, not in the
    # DaemonSet's /usr/local/nvidia/toolkit), so that env row of theirs changes.
    added_rows = [
        line for line in added.splitlines() if line.startswith("| ") and "---" not in line and "workload |" not in line
    ]
    env_rows = [line for line in added_rows if not line.startswith("| node image bake gpu-node-image-driver |")]
    assert added_rows and env_rows == [
        '| DaemonSet gpu-operator/nvidia-device-plugin | nvidia-device-plugin | env NVIDIA_CDI_HOOK_PATH="/usr/bin/nvidia-cdi-hook" |',
        '| DaemonSet gpu-operator/nvidia-device-plugin-mig | nvidia-device-plugin | env NVIDIA_CDI_HOOK_PATH="/usr/bin/nvidia-cdi-hook" |',
        '| DaemonSet gpu-operator/nvidia-mig-manager | nvidia-mig-manager | env NVIDIA_CDI_HOOK_PATH="/usr/bin/nvidia-cdi-hook" |',
    ]
    assert "| node image bake gpu-node-image-driver | (build step) | input TOOLKIT_VERSION=1.18.1 |" in added
    assert "| hostPath /dev/null ro |" not in removed
    assert "| DaemonSet gpu-operator/nvidia-container-toolkit | nvidia-container-toolkit-ctr | privileged |" in removed
    assert (
        "| DaemonSet gpu-operator/nvidia-container-toolkit | nvidia-container-toolkit-ctr | hostPath /etc/containerd rw |"
        in removed
    )
    # The MIG manager keeps every privilege: only its env (the hook path) differs.
    assert [line for line in changes.splitlines() if "nvidia-mig-manager" in line] == [
        '| DaemonSet gpu-operator/nvidia-mig-manager | nvidia-mig-manager | env NVIDIA_CDI_HOOK_PATH="/usr/bin/nvidia-cdi-hook" |',
        '| DaemonSet gpu-operator/nvidia-mig-manager | nvidia-mig-manager | env NVIDIA_CDI_HOOK_PATH="/usr/local/nvidia/toolkit/nvidia-cdi-hook" |',
    ]


@pytest.mark.parametrize("old", ["# some older report\n", f"{ledger.BEGIN}\n| a | b | c |\n"])
def test_a_previous_report_without_a_ledger_is_refused_before_the_run(tmp_path, capsys, old):
    (tmp_path / "old.md").write_text(old)
    report = tmp_path / "new.md"
    assert main(["--stack", "dev", "--audit", str(report), "--audit-against", str(tmp_path / "old.md")]) == 2
    err = capsys.readouterr().err
    assert f"--audit-against {tmp_path / 'old.md'}: has no privilege ledger" in err
    assert "Traceback" not in err and not report.exists()


@pytest.mark.parametrize("edit", ["a row deleted", "the hash swapped"])
def test_a_previous_report_edited_after_it_was_written_is_refused(tmp_path, capsys, edit):
    # An approver reads the diff against the approved report: a report whose rows no longer hash to
    # the hash it states (a row taken out, or another report's hash pasted in) would hide a change.
    old = tmp_path / "old.md"
    assert main(["--stack", "dev", "--audit", str(old)]) == 0
    text = old.read_text()
    if edit == "a row deleted":
        text = text.replace(
            "| DaemonSet gpu-operator/nvidia-operator-validator | driver-validation | privileged |\n", ""
        )
    else:
        text = text.replace(ledger.stated_hash(text), "sha256:" + "e" * 64)
    assert text != old.read_text()
    old.write_text(text)
    report = tmp_path / "new.md"
    assert main(["--stack", "dev", "--audit", str(report), "--audit-against", str(old)]) == 2
    err = capsys.readouterr().err
    assert f"--audit-against {old}: its ledger rows hash to sha256:" in err and "edited after it was written" in err
    assert not report.exists()


@pytest.mark.parametrize("where", ["prepended", "appended"])
def test_a_previous_report_holding_two_ledgers_is_refused(tmp_path, capsys, where):
    # Another report's ledger block and hash line added to an approved one: the reader would take
    # the first, the eye the other.
    old, other = tmp_path / "old.md", tmp_path / "other.md"
    assert main(["--stack", "dev", "--audit", str(old)]) == 0
    assert main(["--stack", "prod", "--audit", str(other)]) == 0
    extra = other.read_text().split("## Privilege ledger", 1)[1]
    old.write_text(extra + old.read_text() if where == "prepended" else old.read_text() + extra)
    assert main(["--stack", "dev", "--audit", str(tmp_path / "new.md"), "--audit-against", str(old)]) == 2
    assert "holds more than one privilege ledger or ledger hash" in capsys.readouterr().err


def test_an_unedited_previous_report_is_accepted(tmp_path):
    old = tmp_path / "old.md"
    assert main(["--stack", "prod", "--audit", str(old)]) == 0
    assert main(["--stack", "prod", "--audit", str(tmp_path / "new.md"), "--audit-against", str(old)]) == 0


def _approved_in_stack_file(stack: str) -> str:
    return yaml.safe_load(engine.stack_file(stack).read_text())["config"]["gpu-platform:audit"]["approvedLedger"]


def test_the_approved_report_as_baseline_is_named_as_such(tmp_path):
    old, new = tmp_path / "old.md", tmp_path / "new.md"
    assert main(["--stack", "dev", "--audit", str(old)]) == 0
    assert main(["--stack", "dev", "--audit", str(new), "--audit-against", str(old)]) == 0
    changes = _changes(new.read_text())
    assert f"ledger hashes to `{_approved_in_stack_file('dev')}`, the approved hash" in changes
    assert "NOT the approved" not in changes


@pytest.mark.parametrize("hash_line", ["recomputed", "removed"])
def test_a_baseline_forged_consistently_is_named_not_the_approved_one(tmp_path, capsys, hash_line):
    # A row taken out of the approved report and its hash recomputed (or its hash line dropped)
    # passes the check that rows hash to what the report states; the diff would then call the
    # removed privilege "added since the approval". The stack's own approved hash tells them apart.
    old = tmp_path / "old.md"
    assert main(["--stack", "dev", "--audit", str(old)]) == 0
    text = old.read_text()
    row = "| DaemonSet gpu-operator/nvidia-operator-validator | driver-validation | privileged |\n"
    assert row in text
    forged = text.replace(row, "")
    rows = ledger.parse(forged)
    stated = ledger.stated_hash(text)
    if hash_line == "recomputed":
        import hashlib

        body = "".join(f"{a}\t{b}\t{c}\n" for a, b, c in sorted(rows, key=lambda r: "\t".join(r).encode()))
        recomputed = "sha256:" + hashlib.sha256(("gpu-platform privilege ledger v1\n" + body).encode()).hexdigest()
        forged = forged.replace(stated, recomputed)
    else:
        recomputed = None
        forged = "\n".join(line for line in forged.splitlines() if not line.startswith("Hash: `")) + "\n"
    old.write_text(forged)
    new = tmp_path / "new.md"
    capsys.readouterr()
    assert main(["--stack", "dev", "--audit", str(new), "--audit-against", str(old)]) == 0
    changes = _changes(new.read_text())
    assert f"**NOT the approved `{_approved_in_stack_file('dev')}`**" in changes
    # The terminal says it too, with the count of rows that differ (the one row taken out).
    (line,) = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Audit baseline ")]
    assert f"NOT the approved {_approved_in_stack_file('dev')}; 1 rows added, 0 removed since" in line, line
    if recomputed:
        assert f"ledger hashes to `{recomputed}`" in changes
    assert row.strip() in changes[changes.index("### Added") : changes.index("### Removed")]


def test_a_stack_without_an_approved_hash_says_nothing_vouches_for_the_baseline(tmp_path, variant):
    unapproved = variant(lambda cfg: cfg["gpu-platform:audit"].pop("approvedLedger"))
    dev = engine.run(engine.stack_file("dev"))
    report = audit.report(unapproved, against=ledger.parse(audit.report(dev)))
    assert "the stack records no approved hash" in _changes(report)


def test_the_report_is_byte_identical_across_two_runs():
    path = engine.stack_file("prod")
    assert audit.report(engine.run(path)) == audit.report(engine.run(path))


def test_the_cli_writes_the_report_and_the_diff(tmp_path):
    old, new = tmp_path / "dev.md", tmp_path / "audit" / "prod.md"
    assert main(["--stack", "dev", "--audit", str(old)]) == 0
    assert old.read_text().startswith("# Privileged software audit: stack dev\n")
    assert main(["--stack", "prod", "--audit", str(new), "--audit-against", str(old)]) == 0
    assert "nvidia-mig-manager | (pod) | hostPID |" in _changes(new.read_text())


def test_audit_against_a_missing_file_exits_2(tmp_path, capsys):
    report = tmp_path / "new.md"
    assert main(["--stack", "dev", "--audit", str(report), "--audit-against", str(tmp_path / "missing.md")]) == 2
    assert "--audit-against" in capsys.readouterr().err
    assert not report.exists()


def test_audit_against_needs_audit(tmp_path):
    with pytest.raises(SystemExit) as exited:
        main(["--stack", "dev", "--audit-against", str(tmp_path / "old.md")])
    assert exited.value.code == 2


def test_the_report_names_who_may_administer_the_cluster(variant):
    # Cluster admin is a privilege too: every access entry is listed with its policy and scope.
    admins = ["arn:aws:iam::123456789012:role/platform-admins", "arn:aws:iam::123456789012:user/alice"]

    def change(config):
        config["gpu-platform:cluster"]["admins"] = admins

    text = audit.report(variant(change))
    section = text[text.index("### Cluster access") : text.index("### Instance metadata")]
    policy = "arn:aws:eks::aws:cluster-access-policy/AmazonEKSClusterAdminPolicy"
    assert [line for line in section.splitlines() if line.startswith("- ")] == [
        f"- `{arn}`: `{policy}`, scope cluster" for arn in sorted(admins)
    ]


def test_a_read_only_host_mount_of_a_privileged_container_is_not_presented_as_a_boundary(prod):
    # The validator's driver-validation container is privileged and mounts the host's / read-only.
    section = _section(audit.report(prod), "DaemonSet gpu-operator/nvidia-operator-validator")
    assert "`/sys` read-only at `/sys`" not in section
    assert (
        "`/` mounted read-only, which is no boundary for a privileged container (it can remount it read-write), "
        "at `/host`"
    ) in section
    summary = audit.report(prod).split("## Summary per operand")[1].split("\n\n")[1]
    # validator: /run/nvidia/validations, /dev/char rw and / (privileged) writable; /dev/null read-only.
    assert "| 2 | validator | 1 | 4 | 1 | 0 | 3 | 1 | 0 |" in summary


def test_a_read_only_host_mount_of_a_container_with_sys_admin_is_not_presented_as_a_boundary(variant):
    # GFD's main container is not privileged but adds SYS_ADMIN on a MIG pool whose toolkit hands MIG's
    # devices to SYS_ADMIN (1.17.8, legacy mode: release v25.3.4), which lets it remount the host's /sys
    # (mounted read-only) read-write: the runtime's default seccomp profile allows mount to a container
    # with CAP_SYS_ADMIN. On prod (toolkit 1.18.1) it is privileged, which says the same.
    rec = variant(lambda c: c["gpu-platform:operator"].update({"release": "v25.3.4"}), stack="prod")
    section = _section(audit.report(rec), "DaemonSet gpu-operator/nvidia-gpu-feature-discovery-mig")
    assert (
        "`/sys` mounted read-only, which is no boundary for a container with CAP_SYS_ADMIN (it can remount it "
        "read-write), at `/sys`"
    ) in section
    assert "`/sys` read-only at `/sys`" not in section
