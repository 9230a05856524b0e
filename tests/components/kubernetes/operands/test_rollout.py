"""How long `pulumi up` waits for each operand's DaemonSet: Pulumi's 10-minute default plus 3 minutes
for every node the DaemonSet may cover (an update replaces one node's pod at a time)."""

from __future__ import annotations

import pytest

from components.kubernetes.operands import rollout


def _timeouts(recording) -> dict[str, tuple[str, str]]:
    return {r.name: r.custom_timeouts[:2] for r in recording.of_type("kubernetes:apps/v1:DaemonSet")}


@pytest.mark.parametrize("nodes, expected", [(0, "10m"), (1, "13m"), (18, "64m")])
def test_the_wait_grows_by_three_minutes_a_node_from_pulumis_default(nodes, expected):
    assert rollout.timeout(nodes) == expected


def test_dev_daemonsets_wait_for_the_one_pool_of_at_most_four_nodes(dev):
    # l4: maxSize 4 -> 10 + 3*4 = 22 minutes; NFD's worker also covers the 4 system nodes -> 34.
    found = _timeouts(dev)
    assert found["gpu-node-feature-discovery-ds"] == ("34m", "34m")
    assert {found[name] for name in found if name != "gpu-node-feature-discovery-ds"} == {("22m", "22m")}


def test_prod_daemonsets_wait_for_the_pools_they_run_on(prod):
    # h100-mig: maxSize 8, l40s: maxSize 10; the MIG manager runs on the MIG pool only.
    found = _timeouts(prod)
    assert found["gpu-mig-manager-ds"] == ("34m", "34m")  # 10 + 3*8
    assert found["gpu-device-plugin-ds"] == ("64m", "64m")  # 10 + 3*18
    assert found["gpu-node-feature-discovery-ds"] == ("76m", "76m")  # 10 + 3*(18+4)
