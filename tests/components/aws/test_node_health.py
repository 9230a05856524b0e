"""GPU node health: node auto repair on every GPU node group unless a pool turns it off, and the EKS
node monitoring agent add-on (whose DCGM half tolerates the GPU taint) whenever a pool repairs; the
audit report lists both."""

from __future__ import annotations

import json

from preview.reports import audit
from tests.components.aws.conftest import node_group, pool_names

ADDON = "aws:eks/addon:Addon"


def test_every_shipped_gpu_pool_repairs_its_nodes(shipped):
    for pool in pool_names(shipped):
        assert node_group(shipped, pool).inputs["nodeRepairConfig"] == {"enabled": True}


def test_the_node_monitoring_agent_runs_on_the_tainted_gpu_nodes(shipped):
    (addon,) = shipped.of_type(ADDON)
    assert addon.inputs["addonName"] == "eks-node-monitoring-agent"
    assert shipped.one("aws:eks/cluster:Cluster", "gpu-cluster").urn in addon.dependencies
    tolerations = json.loads(addon.inputs["configurationValues"])["dcgmAgent"]["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations


def test_without_repair_no_pool_is_repaired_and_no_agent_is_installed(record_variant):
    def off(config):
        for pool in config["gpu-platform:nodePools"]:
            pool["nodeRepair"] = False

    rec = record_variant("no-repair", off, stack="prod")
    assert not rec.of_type(ADDON)
    for pool in pool_names(rec):
        assert node_group(rec, pool).inputs["nodeRepairConfig"] == {"enabled": False}


def test_the_audit_report_lists_the_agent_and_each_pools_repair(prod):
    text = audit.report(prod)
    section = text[text.index("### Node health"):]
    assert "add-on `eks-node-monitoring-agent`" in section
    assert "- NodeGroup `gpu-pool-h100-mig-ng`: node auto repair true" in section
    assert "- NodeGroup `gpu-pool-l40s-ng`: node auto repair true" in section


def test_the_agent_waits_for_the_gpu_node_groups(shipped):
    # The add-on is DEGRADED, and its create waits, while its DaemonSets have no node to run on.
    (addon,) = shipped.of_type(ADDON)
    for pool in pool_names(shipped):
        assert node_group(shipped, pool).urn in addon.dependencies
