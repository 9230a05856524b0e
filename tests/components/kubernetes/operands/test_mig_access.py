"""The containers that read MIG devices get MIG's capability devices on the nodes they run on.

Upstream facts the expectations restate: from nvidia-container-toolkit 1.18.0 the runtime's default mode
`auto` resolves to jit-cdi (internal/info/auto.go:89 at v1.18.1 and v1.20.0), which injects no
/dev/nvidia-caps/nvidia-cap1 or -cap2 for NVIDIA_MIG_MONITOR_DEVICES (toolkit issue #1740, fixed in
1.20.1); up to 1.17 `auto` is legacy, whose hook hands them to a CAP_SYS_ADMIN container that asks
(internal/info/auto.go:49-55 at v1.17.8; cmd/nvidia-container-runtime-hook/container_config.go:319-324 at
v1.14.3). A privileged container gets every host device from containerd (v2.2.4
internal/cri/server/container_create.go:834-844). The GPU Operator v25.10.1 runs the plugin, GFD and the
exporter privileged (assets/state-device-plugin/0500_daemonset.yaml:70-71,
assets/gpu-feature-discovery/0500_daemonset.yaml:88-89, assets/state-dcgm-exporter/0800_daemonset.yaml:59-60).
"""

from __future__ import annotations

import pytest

from components.kubernetes.operands import dcgm_exporter, device_plugin, gpu_feature_discovery, mig_access
from components.kubernetes.operands.context import MigPool, OperandContext
from components.kubernetes.operands.sharing import PoolSharing
from gpu_platform.catalog import matrix
from gpu_platform.interface import contract
from tests.components.kubernetes.conftest import daemonset_of, pod_spec

RELEASES = matrix.load().releases
H100 = matrix.load().gpus["H100-80GB"].mig.configs()["all-balanced"]
# Operand -> the container that reads the GPUs through NVML (the config-manager sidecars read none).
READERS = {
    "device-plugin": "nvidia-device-plugin",
    "gpu-feature-discovery": "gpu-feature-discovery",
    "dcgm-exporter": "nvidia-dcgm-exporter",
}
SPECS = {
    "device-plugin": device_plugin.spec,
    "gpu-feature-discovery": gpu_feature_discovery.spec,
    "dcgm-exporter": dcgm_exporter.spec,
}


def security(rec, operand: str) -> dict[str, dict]:
    """`operand`: a component's name, `-mig` for its MIG pools' DaemonSet."""
    spec = pod_spec(daemonset_of(rec, operand))
    return {c["name"]: c["securityContext"] for c in [*spec.get("initContainers", []), *spec["containers"]]}


def mig_context(release: str, toolkit: str) -> OperandContext:
    return OperandContext(
        images=dict(RELEASES[release].images),
        toolkit_baked=True,
        toolkit_version=toolkit,
        cdi=RELEASES[release].cdi,
        sharing=(PoolSharing("h100-mig", None, "mixed", "all-balanced"),),
        mig_pools=(MigPool("h100-mig", "H100-80GB", "all-balanced", H100),),
    )


def reader(operand: str, ctx: OperandContext):
    """The NVML reader of the operand's MIG pools' DaemonSet."""
    (mig,) = SPECS[operand](ctx).variants
    (found,) = [c for c in mig.containers if c.name == READERS[operand]]
    return found


@pytest.mark.parametrize("operand", READERS)
def test_on_prod_the_mig_readers_run_privileged_as_the_operator_runs_them(prod, operand):
    # prod: an H100 MIG pool, toolkit 1.18.1 baked (release v25.10.1): jit-cdi, no capability devices.
    context = security(prod, f"{operand}-mig")
    assert context[READERS[operand]] == {"privileged": True, "runAsUser": 0, "readOnlyRootFilesystem": True}


@pytest.mark.parametrize("operand", ["device-plugin", "gpu-feature-discovery"])
def test_on_prod_the_config_manager_sidecars_stay_unprivileged(prod, operand):
    # config-manager only relinks a file and signals the reader: it touches no GPU.
    for name in ("config-manager-init", "config-manager"):
        assert "privileged" not in security(prod, f"{operand}-mig")[name]
        assert security(prod, f"{operand}-mig")[name]["capabilities"] == {"drop": ["ALL"]}


@pytest.mark.parametrize("operand", READERS)
def test_on_prod_the_audit_reason_names_the_toolkit_mode_the_issue_and_the_device_nodes(prod, operand):
    reason = daemonset_of(prod, f"{operand}-mig").inputs["metadata"]["annotations"][contract.AUDIT_REASON]
    for words in ("privileged", "1.18.1", "jit-cdi", "issue #1740", "/dev/nvidia-caps/nvidia-cap1", "-cap2"):
        assert words in reason, (operand, words)


@pytest.mark.parametrize("operand", READERS)
def test_a_stack_without_mig_keeps_them_unprivileged(dev, operand):
    # dev: the same release and toolkit, a time-sliced L4 pool only: no MIG device to read.
    context = security(dev, operand)[READERS[operand]]
    assert "privileged" not in context
    # DCGM's profiling metrics need SYS_ADMIN whatever the GPUs (dcgm-exporter README); the others need nothing.
    assert context["capabilities"] == (
        {"drop": ["ALL"], "add": ["SYS_ADMIN"]} if operand == "dcgm-exporter" else {"drop": ["ALL"]}
    )


@pytest.mark.parametrize("operand", READERS)
def test_a_legacy_mode_toolkit_keeps_them_unprivileged_with_sys_admin(operand):
    # Toolkit 1.17.8 (release v25.3.4): `auto` is legacy, whose hook hands the devices to SYS_ADMIN.
    found = reader(operand, mig_context("v25.3.4", "1.17.8"))
    assert (found.privileged, found.capabilities) == (False, ("SYS_ADMIN",))
    assert ("NVIDIA_MIG_MONITOR_DEVICES", "all") in found.env


@pytest.mark.parametrize("operand", READERS)
def test_a_toolkit_row_that_hands_the_devices_over_drops_the_privilege(monkeypatch, operand):
    # A later toolkit's row (as 1.20.1's will be, once read at its tag) claiming the fix.
    monkeypatch.setattr(mig_access, "TOOLKITS", (*mig_access.TOOLKITS, mig_access.Toolkit("1.18.1", True, "planted")))
    found = reader(operand, mig_context("v25.10.1", "1.18.1"))
    assert (found.privileged, found.capabilities) == (False, ("SYS_ADMIN",))
    assert ("NVIDIA_MIG_MONITOR_DEVICES", "all") in found.env


@pytest.mark.parametrize("toolkit", ["1.18.0", "1.19.1", "1.20.0"])
def test_every_jit_cdi_toolkit_up_to_1_20_0_runs_the_plugin_privileged(toolkit):
    # 1.19.1 is AWS's in its nvidia AMIs (matrix.yaml eksNvidiaAmis), 1.20.0 the newest release's.
    assert reader("device-plugin", mig_context("v26.7.0", toolkit)).privileged


@pytest.mark.parametrize("operand", READERS)
def test_on_prod_the_other_pools_run_them_as_on_a_stack_without_mig(prod, dev, operand):
    # prod's l40s pool reads no MIG device: its DaemonSet holds what dev's does, and no MIG node is its.
    assert security(prod, operand)[READERS[operand]] == security(dev, operand)[READERS[operand]]
    affinity = pod_spec(daemonset_of(prod, operand))["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": "nvidia.com/mig.config", "operator": "DoesNotExist"}]}
    ]
    assert "affinity" not in pod_spec(daemonset_of(dev, operand))  # no MIG pool, one DaemonSet for all


@pytest.mark.parametrize("operand", READERS)
def test_on_prod_the_mig_pools_daemonset_runs_only_where_the_mig_config_label_is(prod, operand):
    # The device plugin, which serves the GPUs, also waits for the MIG manager's first run on the node
    # (mig-parted v0.13.1 reconfigure.go:137-141, 522-555 set nvidia.com/mig.config.state).
    mig = [{"key": "nvidia.com/mig.config", "operator": "Exists"}]
    if operand == "device-plugin":
        mig.append({"key": "nvidia.com/mig.config.state", "operator": "In", "values": ["success", "failed"]})
    affinity = pod_spec(daemonset_of(prod, f"{operand}-mig"))["affinity"]["nodeAffinity"]
    assert affinity["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] == [
        {"matchExpressions": mig}
    ]
