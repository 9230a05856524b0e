"""The DCGM exporter starts on a read-only root at every version and carries the label the MIG
manager waits for: each expectation a literal from upstream, with its source."""

from __future__ import annotations

import pytest

from components.kubernetes.operands import dcgm_exporter
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.sharing import PoolSharing
from gpu_platform.catalog import matrix

RELEASES = matrix.load().releases


def spec(release: str, service_monitor=None):
    return dcgm_exporter.spec(
        OperandContext(
            images=dict(RELEASES[release].images),
            sharing=(),
            mig_pools=(),
            toolkit_baked=True,
            toolkit_version=RELEASES[release].toolkit_version,
            cdi=RELEASES[release].cdi,
            service_monitor=service_monitor,
        )
    )


def test_its_pods_carry_the_label_the_mig_manager_waits_for():
    # mig-parted v0.13.1 pkg/mig/reconfigure/reconfigure.go:392-395 (waitForPodDeletion("app=nvidia-dcgm-exporter")).
    assert spec("v25.10.1").app_label == "nvidia-dcgm-exporter"


@pytest.mark.parametrize("release", ["v25.3.0", "v25.3.1", "v25.3.3"])
def test_exporters_whose_entrypoint_runs_ldconfig_start_as_the_binary(release):
    # dcgm-exporter 4.1.1-4.0.4 .. 4.3.1-4.4.0 docker/dcgm-exporter-entrypoint.sh:2,4: `set -euo pipefail`
    # then a bare `ldconfig`, which cannot write /etc/ld.so.cache on a read-only root and ends the
    # container; the binary is /usr/bin/dcgm-exporter (docker/Dockerfile.ubuntu:70).
    exporter = spec(release).containers[0]
    assert exporter.read_only_root
    assert exporter.command == ("/usr/bin/dcgm-exporter",)


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_every_exporter_runs_its_binary_and_no_entrypoint_script(release):
    # /usr/bin/dcgm-exporter at every tag rendered (853be680 Dockerfile.ubuntu20.04:12 ..
    # 4.5.3-4.8.2 docker/Dockerfile:335); the scripts only setcap (fails on a read-only root) or exec it.
    exporter = spec(release).containers[0]
    assert exporter.command == ("/usr/bin/dcgm-exporter",)
    assert "NO_SETCAP" not in dict(exporter.env)


def test_the_service_monitor_keeps_the_exporters_pod_labels():
    # dcgm-exporter 4.4.2-4.7.0 internal/pkg/transformation/const.go:21-23: pod, namespace, container
    # labels on the metrics, which Prometheus would otherwise overwrite with the exporter pod's own.
    monitor = spec("v25.10.1", service_monitor={})
    endpoint = monitor.custom_resources[0]["spec"]["endpoints"][0]
    assert endpoint["honorLabels"] is True


def test_it_makes_no_api_call_so_it_gets_no_rights():
    # DCGM_EXPORTER_CONFIGMAP_DATA unset (dcgm-exporter 4.4.2-4.7.0 pkg/cmd/app.go:164-170): the metric
    # list is a file; pod labels and UIDs off: no client (internal/pkg/transformation/kubernetes.go:103-131).
    s = spec("v26.7.0")
    assert not s.cluster_rules and not s.namespace_rules


def _shared(release: str, replicas, image: str | None = None) -> OperandContext:
    images = dict(RELEASES[release].images, **({"dcgm-exporter": image} if image else {}))
    return OperandContext(
        images=images,
        sharing=(PoolSharing("l4", replicas, "none", None),),
        mig_pools=(),
        toolkit_baked=True,
        cdi=RELEASES[release].cdi,
        toolkit_version=RELEASES[release].toolkit_version,
    )


def _env(ctx: OperandContext) -> dict:
    return dict(dcgm_exporter.spec(ctx).containers[0].env)


# The exporter's KUBERNETES_VIRTUAL_GPUS (one series per pod sharing a GPU) exists from 4.1.1-4.0.3
# (pkg/cmd/app.go:264); up to 4.5.1-4.8.0 its path keeps only per-pod copies, dropping every GPU no pod
# holds (internal/pkg/transformation/kubernetes.go:83-127 at 4.1.1-4.0.4); from 4.5.3-4.8.2 GPU_UTIL
# and FB_USED per pod need the host PID namespace and pod UIDs (kubernetes.go:201-252, 921-954), which
# the exporter does not get. So it stays off on either side, and a time-sliced stack is told why.
@pytest.mark.parametrize(
    "release, image, why",
    [
        ("v24.9.2", None, "has no shared-GPU mode"),  # 3.3.9-3.6.1
        ("v25.3.0", None, "drops the series of every GPU no pod holds"),  # 4.1.1-4.0.4
        ("v26.3.1", None, "drops the series of every GPU no pod holds"),  # 4.5.1-4.8.0
        ("v26.3.2", None, "needs the host PID namespace and pod UIDs"),  # 4.5.3-4.8.2
        ("v26.7.0", None, "needs the host PID namespace and pod UIDs"),  # 4.6.0-4.8.3
        ("v25.3.0", "nvcr.io/nvidia/k8s/dcgm-exporter:4.1.1-4.0.3-ubuntu22.04", "drops the series"),
    ],
)
def test_a_time_sliced_stack_is_told_why_its_gpus_name_one_pod_each(release, image, why):
    ctx = _shared(release, 4, image)
    warning = dcgm_exporter.shared_gpu_warning(ctx)
    assert warning.startswith("gpu-platform:nodePools (l4): time-sliced GPUs are attributed to one pod each")
    assert why in warning
    assert "KUBERNETES_VIRTUAL_GPUS" not in _env(ctx)


@pytest.mark.parametrize("release", ["v24.9.2", "v25.3.0", "v26.7.0"])
def test_a_stack_without_time_slicing_gets_no_shared_gpu_warning(release):
    ctx = _shared(release, None)
    assert dcgm_exporter.shared_gpu_warning(ctx) is None
    assert "KUBERNETES_VIRTUAL_GPUS" not in _env(ctx)


def test_the_time_sliced_dev_stack_warns_where_pulumi_up_shows_it(dev):
    # dev: pool l4 time-sliced x4 on release v25.10.1 (dcgm-exporter 4.4.2-4.7.0).
    assert [w for w in dev.warnings if w.startswith("gpu-platform:nodePools (l4): time-sliced GPUs")]
