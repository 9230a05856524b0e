"""GPU node health: node auto repair on every GPU node group unless a pool turns it off, and the EKS
node monitoring agent add-on (whose DCGM half tolerates the GPU taint) whenever a pool repairs; the
audit report lists both."""

from __future__ import annotations

import json

import pytest

from preview.reports import audit
from tests.components.aws.conftest import node_group, pool_names

ADDON = "aws:eks/addon:Addon"


def test_every_shipped_gpu_pool_repairs_its_nodes(shipped):
    for pool in pool_names(shipped):
        assert node_group(shipped, pool).inputs["nodeRepairConfig"] == {"enabled": True}


def test_the_node_monitoring_agent_runs_on_the_tainted_gpu_nodes(shipped):
    (addon,) = [a for a in shipped.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    assert shipped.one("aws:eks/cluster:Cluster", "gpu-cluster").urn in addon.dependencies
    tolerations = json.loads(addon.inputs["configurationValues"])["dcgmAgent"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations


def test_without_repair_no_pool_is_repaired_and_no_agent_is_installed(record_variant):
    def off(config):
        for pool in config["gpu-platform:nodePools"]:
            pool["nodeRepair"] = False

    rec = record_variant("no-repair", off, stack="prod")
    assert not [a for a in rec.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    for pool in pool_names(rec):
        assert node_group(rec, pool).inputs["nodeRepairConfig"] == {"enabled": False}


def test_the_audit_report_lists_the_agent_and_each_pools_repair(prod):
    text = audit.report(prod)
    section = text[text.index("### EKS add-ons and node health") :]
    assert "add-on `eks-node-monitoring-agent`" in section
    assert "- NodeGroup `gpu-pool-h100-mig-ng`: node auto repair true" in section
    assert "- NodeGroup `gpu-pool-l40s-ng`: node auto repair true" in section


def test_the_agent_waits_for_the_gpu_node_groups(shipped):
    # The add-on is DEGRADED, and its create waits, while its DaemonSets have no node to run on.
    (addon,) = [a for a in shipped.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    for pool in pool_names(shipped):
        assert node_group(shipped, pool).urn in addon.dependencies


def test_the_agent_is_pinned_to_the_version_read_at_its_source(shipped):
    # aws/eks-node-monitoring-agent v1.7.0 charts/eks-node-monitoring-agent/values.yaml line 32: the
    # image of chart 1.7.0 is v1.7.0-eksbuild.1, EKS's version naming.
    (addon,) = [a for a in shipped.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    assert addon.inputs["addonVersion"] == "v1.7.0-eksbuild.1"


def test_the_configuration_is_one_the_add_on_schema_accepts(shipped):
    import jsonschema

    from components.aws.node_health import SCHEMA

    schema = json.loads(SCHEMA.read_text())
    (addon,) = [a for a in shipped.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    jsonschema.validate(json.loads(addon.inputs["configurationValues"]), schema)
    # The schema refuses what the add-on would refuse: a misspelt section, a toleration that is not a list.
    for wrong in ({"dcgmAgents": {}}, {"dcgmAgent": {"tolerations": {"key": "nvidia.com/gpu"}}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(wrong, schema)


def test_the_add_on_carries_the_stacks_owner_and_approval(shipped):
    (addon,) = [a for a in shipped.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    audit_config = shipped.config["gpu-platform:audit"]
    tags = addon.inputs["tags"]
    assert tags["audit.gpu-platform.io/owner"] == audit_config["owner"]
    assert tags["audit.gpu-platform.io/approval"] == audit_config["approval"]
    assert "eks-node-monitoring-agent v1.7.0-eksbuild.1" in tags["audit.gpu-platform.io/privileged-software"]


# What the add-on's DaemonSets run with, from the chart at v1.7.0 (templates/daemonset.yaml lines
# 41-42, 75-79, 86-88 with values.yaml lines 88-92; templates/dcgm-daemonset.yaml lines 75-76).
ADDON_PRIVILEGES = {
    ("eks-node-monitoring-agent", "(pod)", "hostNetwork"),
    ("eks-node-monitoring-agent", "(pod)", "hostPID"),
    ("eks-node-monitoring-agent", "eks-node-monitoring-agent", "privileged"),
    ("eks-node-monitoring-agent", "eks-node-monitoring-agent", "capability NET_ADMIN"),
    ("eks-node-monitoring-agent", "eks-node-monitoring-agent", "hostPath / rw"),
    ("dcgm-server", "eks-node-monitoring-agent-dcgm", "privileged"),
}


def _ledger_addon_rows(text: str) -> set[tuple[str, str, str]]:
    from preview.reports import ledger

    rows = ledger.parse(text) or set()
    return {(w.split("/", 1)[1].split(" ", 1)[0], c, p) for w, c, p in rows if "(EKS add-on " in w}


def test_the_audit_ledger_holds_the_add_ons_privileged_daemon_sets(prod):
    assert _ledger_addon_rows(audit.report(prod)) == ADDON_PRIVILEGES


def test_without_the_add_on_its_daemon_sets_leave_the_ledger(record_variant):
    rec = record_variant(
        "no-repair", lambda config: [p.update(nodeRepair=False) for p in config["gpu-platform:nodePools"]], stack="prod"
    )
    assert _ledger_addon_rows(audit.report(rec)) == set()
