"""Reading checkov's JSON report into findings named as a reviewer names objects."""

import pytest

from tools.security import findings

DAEMONSET = """\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: nvidia-device-plugin, namespace: gpu-operator}
"""


def report(failed, resource_count=1, parsing_errors=0):
    return {
        "check_type": "kubernetes",
        "results": {"failed_checks": failed, "parsing_errors": []},
        "summary": {
            "passed": 1,
            "failed": len(failed),
            "parsing_errors": parsing_errors,
            "resource_count": resource_count,
        },
    }


def failed(check, resource, path):
    return {
        "check_id": check,
        "check_name": "a check",
        "resource": resource,
        "file_path": "/" + path.name,
        "file_abs_path": str(path),
    }


def test_a_graph_checks_pod_is_named_after_the_workload_in_its_file(tmp_path):
    manifest = tmp_path / "03-daemonset.yaml"
    manifest.write_text(DAEMONSET)
    pod = "Pod.gpu-operator.nvidia-device-plugin.app-nvidia-device-plugin-daemonset"
    (found,) = findings.read(report([failed("CKV2_K8S_6", pod, manifest)]), "prod", tmp_path)
    assert (found.check, found.resource, found.stack) == (
        "CKV2_K8S_6",
        "DaemonSet/gpu-operator/nvidia-device-plugin",
        "prod",
    )


def test_a_cluster_scoped_object_is_kind_and_name(tmp_path):
    manifest = tmp_path / "02-clusterrole.yaml"
    manifest.write_text("kind: ClusterRole\nmetadata: {name: nvidia-validator}\n")
    (found,) = findings.read(
        report([failed("CKV_K8S_49", "ClusterRole.default.nvidia-validator", manifest)]), "dev", tmp_path
    )
    assert found.resource == "ClusterRole/nvidia-validator"


def test_the_same_check_on_the_same_object_is_one_finding(tmp_path):
    manifest = tmp_path / "03-daemonset.yaml"
    manifest.write_text(DAEMONSET)
    twice = [failed("CKV_K8S_8", "DaemonSet.gpu-operator.nvidia-device-plugin", manifest)] * 2
    assert len(findings.read(report(twice), "prod", tmp_path)) == 1


def test_a_manifest_checkov_could_not_parse_stops_the_scan(tmp_path):
    with pytest.raises(findings.ReportError, match="could not parse 1 manifest"):
        findings.read(report([], parsing_errors=1), "prod", tmp_path)


def test_a_scan_that_saw_no_resource_stops_the_scan(tmp_path):
    with pytest.raises(findings.ReportError, match="scanned no resource"):
        findings.read(report([], resource_count=0), "prod", tmp_path)


def test_output_that_is_not_a_report_stops_the_scan(tmp_path):
    with pytest.raises(findings.ReportError, match="not a checkov JSON report"):
        findings.read(["oops"], "prod", tmp_path)
