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
        assert node_group(shipped, pool).inputs["nodeRepairConfig"]["enabled"] is True


def test_the_dcgm_server_stays_off_mig_nodes(shipped):
    # mig-parted v0.13.1 waits for no kube-system pod (reconfigure.go:591-602) and nv-hostengine holds
    # every GPU (dcgm-daemonset.yaml:57-59 at v1.7.0): a node with nvidia.com/mig.config gets none.
    (addon,) = [a for a in shipped.of_type(ADDON) if a.inputs["addonName"] == "eks-node-monitoring-agent"]
    affinity = json.loads(addon.inputs["configurationValues"])["dcgmAgent"]["affinity"]
    (term,) = affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"key": "nvidia.com/mig.config", "operator": "DoesNotExist"} in term["matchExpressions"]
    assert {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]} in term["matchExpressions"]


def test_a_mig_pool_takes_no_repair_action_for_the_dcgm_server_it_does_not_run(prod):
    # Without nv-hostengine the agent reports AcceleratedHardwareReady/DCGMError for good (v1.7.0
    # dcgm_client.go:118-141, node_exporter.go:111-141); EKS's override fields: NodeRepairConfigOverrides.
    overrides = node_group(prod, "h100-mig").inputs["nodeRepairConfig"]["nodeRepairConfigOverrides"]
    assert overrides == [
        {
            "nodeMonitoringCondition": "AcceleratedHardwareReady",
            "nodeUnhealthyReason": "DCGMError",
            "minRepairWaitTimeMins": 10,
            "repairAction": "NoAction",
        }
    ]
    assert "nodeRepairConfigOverrides" not in node_group(prod, "l40s").inputs["nodeRepairConfig"]


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
