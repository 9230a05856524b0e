"""DCGM exporter: GPU metrics on :9400 behind a Service, the metrics list as a config map, and a
ServiceMonitor when the stack says the cluster has the Prometheus operator (`monitoring`).

Env and host paths: the GPU Operator's v25.10.1 DaemonSet (gpu-operator-facts.yaml,
per_component.dcgm-exporter.v25.10.1): DCGM_EXPORTER_LISTEN, DCGM_EXPORTER_KUBERNETES,
DCGM_EXPORTER_COLLECTORS, NODE_NAME; the kubelet's pod-resources socket directory, read-only (to map
GPUs to pods). /run/nvidia is left out: the driver is on the host, not in a driver container.

Across the exporters the matrix ships (3.1.9 .. 4.8.3) the env names, the :9400 listener, `/health`
and the three-column metrics CSV with `#` comments are the same (dcgm-exporter
pkg/dcgmexporter/{server,parser}.go at 3.2.5-3.1.7 and 3.3.9-3.6.1,
internal/pkg/{server/server.go,counters/counter_config.go} at 4.1.1-4.0.4 .. 4.5.3-4.8.2). What
changes is the entrypoint script, which we do not run (the binary is the command, see `IMAGES`,
chosen by the exporter version in the tag: the second of the two, `4.4.2-4.7.0-distroless` -> 4.7.0).
The `-distroless` images (operator 25.10.0 on) have no general shell, so nothing here runs one in
the exporter's image: the probes are HTTP, and the wait for the readiness marker is an init
container of the validator's image (spec.with_wait), as the operator's own toolkit-validation init
container is at every release.

In allocation mode dra (the GPU Operator v26.7.0's DRA variant, manifests/state-dcgm-exporter/, which
its GPUCluster path renders: internal/state/dcgm_exporter.go:48-71, dcgm_exporter_test.go:68-112) the
device plugin is not there, so the exporter takes every GPU of its node through a ResourceClaim: a
ResourceClaimTemplate asking for all devices of class gpu.nvidia.com with admin access
(0400_resourceclaimtemplate.yaml:1-20), the pod's resourceClaims naming it and the container listing
the claim in resources.claims (0700_daemonset.yaml:68-70, 148-149). The DRA driver prepares the claim
as CDI devices that bring the GPUs and the host driver's libraries and hooks into the container
(kubernetes-sigs/dra-driver-nvidia-gpu v0.4.1 cmd/gpu-kubelet-plugin/cdi.go:126, 160, 187: the
toolkit's common edits and per-device specs), so, as upstream (0700_daemonset.yaml:41-71, 83-122), no
runtime class and no NVIDIA_VISIBLE_DEVICES of ours. Admin access is what lets it see GPUs other
pods' claims hold, and takes none from them. The kubelet reports DRA-allocated devices by pool and
device name, not UUID, so pod attribution needs KUBERNETES_ENABLE_DRA (0700_daemonset.yaml:102-106),
which starts an informer on ResourceSlices (dcgm-exporter 4.5.3-4.8.2 pkg/cmd/app.go:329-334,
internal/pkg/transformation/dra.go:34-43; the flag exists from 4.3.1-4.4.0) beside the pod informer
that any in-cluster exporter runs (internal/pkg/transformation/kubernetes.go:122-140, 281-284): hence
the two read-only ClusterRole rules below, the only API rights it gets.
"""

from __future__ import annotations

from dataclasses import dataclass

from components.kubernetes.operands import mig_access
from components.kubernetes.operands.component import Operand
from components.kubernetes.operands.context import OperandContext
from components.kubernetes.operands.spec import ClaimTemplate, Container, HostPath, OperandSpec, Service
from components.kubernetes.operands.version_table import row_for
from gpu_platform.catalog import image_refs, versions

PORT = 9400

# The DRA variant's claim (GPU Operator v26.7.0 manifests/state-dcgm-exporter/): the pod's claim and
# the request are both admin-gpus (0700_daemonset.yaml:69, 0400_resourceclaimtemplate.yaml:10), the
# template nvidia-dcgm-exporter-admin (:4), all devices of the DRA driver's gpu.nvidia.com class
# (:13-15), which the DRA driver operand creates (dra_driver.DEVICE_CLASSES, tests check they agree).
GPU_CLASS = "gpu.nvidia.com"
ADMIN_CLAIM = ClaimTemplate(
    claim="admin-gpus",
    suffix="admin",
    request="admin-gpus",
    device_class=GPU_CLASS,
    allocation_mode="All",
    admin_access=True,
)
# What the exporter's informers read in mode dra, list and watch only (an informer's calls; nothing
# gets a single object): its node's pods (field selector spec.nodeName, which RBAC cannot narrow)
# and the ResourceSlices that map a DRA device to its GPU. Upstream's DRA variant grants get too,
# plus a Role on resourceclaims and configmaps (0200_role.yaml:7-21, 0210_clusterrole.yaml:8-23):
# the exporter reads no ResourceClaim, and a ConfigMap only with DCGM_EXPORTER_CONFIGMAP_DATA, unset
# here (the metrics list is a mounted file).
DRA_CLUSTER_RULES = (
    {"apiGroups": [""], "resources": ["pods"], "verbs": ["list", "watch"]},
    {"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"], "verbs": ["list", "watch"]},
)
_METRICS_DIR = "/etc/dcgm-exporter/gpu-platform"

# Counters worth alerting on; the profiling (DCP) fields are what need SYS_ADMIN.
METRICS = """\
# DCGM field, Prometheus type, help
DCGM_FI_DEV_SM_CLOCK, gauge, SM clock frequency (in MHz).
DCGM_FI_DEV_MEM_CLOCK, gauge, Memory clock frequency (in MHz).
DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).
DCGM_FI_DEV_POWER_USAGE, gauge, Power draw (in W).
DCGM_FI_DEV_GPU_UTIL, gauge, GPU utilization (in %).
DCGM_FI_DEV_MEM_COPY_UTIL, gauge, Memory utilization (in %).
DCGM_FI_DEV_FB_FREE, gauge, Framebuffer memory free (in MiB).
DCGM_FI_DEV_FB_USED, gauge, Framebuffer memory used (in MiB).
DCGM_FI_DEV_XID_ERRORS, gauge, Value of the last XID error encountered.
DCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.
DCGM_FI_PROF_GR_ENGINE_ACTIVE, gauge, Ratio of time the graphics engine is active.
DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, gauge, Ratio of cycles the tensor (HMMA) pipe is active.
DCGM_FI_PROF_DRAM_ACTIVE, gauge, Ratio of cycles the device memory interface is active.
"""


@dataclass(frozen=True)
class ExporterImage:
    since: str  # first exporter version this row describes
    # The exporter binary, run as the container's command. The images' entrypoint scripts add
    # nothing we want and break on our read-only root: up to 4.6.0 they setcap the binary (fails,
    # warns), and the 4.0.4-4.4.0 ones run a bare `ldconfig` first under `set -e`, which cannot write
    # /etc/ld.so.cache and ends the container before the exporter starts (4.1.1-4.0.4 ..
    # 4.3.1-4.4.0 docker/dcgm-exporter-entrypoint.sh:2,4). The image's linker cache was built at
    # image build time (Dockerfile.ubuntu RUN ... ldconfig) and the NVIDIA runtime's hook refreshes
    # it, which is what the exporter's start-up check reads.
    binary: str
    source: str


IMAGES: tuple[ExporterImage, ...] = (
    ExporterImage(
        "3.0.0",
        "/usr/bin/dcgm-exporter",
        "NVIDIA/dcgm-exporter docker/Dockerfile* COPY of dcgm-exporter to /usr/bin/ at 3.2.6-3.1.9 "
        "(853be680 Dockerfile.ubuntu20.04:12) .. 4.5.3-4.8.2 (docker/Dockerfile:335) and 4.6.0-4.8.3 "
        "(7ad58324 docker/Dockerfile, distroless stage)",
    ),
)


@dataclass(frozen=True)
class SharedGpuMode:
    """What the exporter's shared-GPU mode (KUBERNETES_VIRTUAL_GPUS=true: one series per pod sharing a
    GPU, where the default maps device -> pod last writer wins, so a time-sliced GPU names one pod)
    would do to this stack's metrics. None of the rows is safe with the rights this exporter gets (no
    host PID namespace, no API token), so it stays off and a time-sliced stack is told why. The
    DaemonSet is the whole cluster's: the env would reach non-shared and MIG pools too."""

    since: str  # first exporter version this row describes
    why_off: str  # what the mode would break here, for the stack's warning
    source: str


SHARED_GPU_MODES: tuple[SharedGpuMode, ...] = (
    SharedGpuMode(
        "3.0.0",
        "this exporter has no shared-GPU mode (KUBERNETES_VIRTUAL_GPUS comes with 4.0.3)",
        "NVIDIA/dcgm-exporter 3.3.9-3.6.1: no KUBERNETES_VIRTUAL_GPUS (git grep); 4.1.1-4.0.3 pkg/cmd/app.go:90, 264",
    ),
    # The shared path keeps only the per-pod copies of each counter: a GPU no pod holds loses its
    # series (temperature, XID errors) on every pool; up to 4.5.0 even a node with no GPU pod at all.
    SharedGpuMode(
        "4.0.3",
        "its shared-GPU mode drops the series of every GPU no pod holds (XID errors, temperature "
        "included), on every pool, as the exporter's settings are the whole cluster's",
        "NVIDIA/dcgm-exporter 4.1.1-4.0.4 internal/pkg/transformation/kubernetes.go:83-127 "
        "(metrics[counter] = newmetrics); 4.4.1-4.5.2 kubernetes.go:195-246, 4.5.1-4.8.0 246-296 (the "
        "originals kept only when no GPU of the node has a pod)",
    ),
    # Idle GPUs keep their series, but GPU_UTIL and FB_USED per pod come from NVML's process lists mapped
    # to pods by /proc/<pid>/cgroup and the pod's UID from the API: without the host PID namespace and a
    # pod informer every pod reads 0, on non-shared GPUs too.
    SharedGpuMode(
        "4.8.2",
        "its shared-GPU mode reports DCGM_FI_DEV_GPU_UTIL and DCGM_FI_DEV_FB_USED per pod from "
        "process accounting, which needs the host PID namespace and pod UIDs from the API (neither is "
        "granted to the exporter), so every pod, on shared and non-shared GPUs alike, would read 0",
        "NVIDIA/dcgm-exporter 4.5.3-4.8.2 internal/pkg/transformation/kubernetes.go:201-252, 338-406, "
        "921-954; process_metrics.go:30-32; pidmapper.go:40-56, 82-110; 7ad58324 (4.6.0-4.8.3) "
        "kubernetes.go createPerProcessMetrics, NewPodMapper (no informer without pod labels/UID/DRA)",
    ),
)


def shared_gpu_warning(ctx: OperandContext) -> str | None:
    """Why per-pod metrics on this stack's time-sliced GPUs name one pod per GPU, or None when no pool
    time-slices (mode dra refuses time-slicing at config time)."""
    pools = [s.config_name for s in ctx.sharing if s.replicas]
    if not pools or ctx.dra:
        return None
    image = ctx.images["dcgm-exporter"]
    mode = row_for(exporter_version(image), SHARED_GPU_MODES, f"dcgm-exporter image {image!r}")
    return (
        f"gpu-platform:nodePools ({', '.join(pools)}): time-sliced GPUs are attributed to one pod each in the "
        f"DCGM exporter's per-pod metrics (the pod the kubelet lists last); KUBERNETES_VIRTUAL_GPUS stays off "
        f"because at {image_refs.tag_of(image)} {mode.why_off}. Use the device-level series (by gpu, UUID) "
        "for time-sliced pools"
    )


def exporter_version(image: str) -> str:
    """`nvcr.io/nvidia/k8s/dcgm-exporter:4.4.2-4.7.0-distroless` -> `4.7.0` (the tag is DCGM, then
    the exporter)."""
    tag = image_refs.tag_of(image)
    version = versions.image_tag_version(tag).split("-")[-1]
    if not versions.is_version(version):
        raise ValueError(
            f"operator.overrides.dcgm-exporter: {tag!r} carries no exporter version (valid: a tag such as 4.4.2-4.7.0-distroless)"
        )
    return version


def image_traits(image: str) -> ExporterImage:
    return row_for(exporter_version(image), IMAGES, f"dcgm-exporter image {image!r}")


def spec(ctx: OperandContext) -> OperandSpec:
    """One DaemonSet for pools without MIG and, on a stack with MIG pools, one for those (mig_access).
    In mode dra one: its GPUs come from the DRA driver's CDI specs, not the toolkit's runtime mode."""
    return _spec(ctx, False) if ctx.dra else mig_access.by_pool(ctx, lambda mig: _spec(ctx, mig))


def _spec(ctx: OperandContext, mig: bool) -> OperandSpec:
    """The exporter for MIG pools (`mig`) or the others."""
    traits = image_traits(ctx.images["dcgm-exporter"])
    health = {"httpGet": {"path": "/health", "port": PORT}, "initialDelaySeconds": 45, "periodSeconds": 10}
    privileged = mig and mig_access.privileged(ctx)
    exporter = Container(
        name="nvidia-dcgm-exporter",
        image=ctx.images["dcgm-exporter"],
        command=(traits.binary,),
        env=(
            ("DCGM_EXPORTER_LISTEN", f":{PORT}"),
            ("DCGM_EXPORTER_KUBERNETES", "true"),
            ("DCGM_EXPORTER_COLLECTORS", f"{_METRICS_DIR}/metrics.csv"),
            *((("KUBERNETES_ENABLE_DRA", "true"),) if ctx.dra else (("NVIDIA_VISIBLE_DEVICES", "all"),)),
            # DCGM reads MIG instances through NVML as the plugin does: the same request for MIG's
            # capability devices (mig_access), which a toolkit that honours it serves to SYS_ADMIN.
            *((("NVIDIA_MIG_MONITOR_DEVICES", "all"),) if mig else ()),
        ),
        field_env=(("NODE_NAME", "spec.nodeName"),),
        host_paths=("pod-gpu-resources",),
        mounts=(("metrics", _METRICS_DIR, True), ("tmp", "/tmp", False)),
        privileged=privileged,
        capabilities=() if privileged else ("SYS_ADMIN",),
        run_as_root=True,
        requests=("100m", "128Mi"),
        memory_limit="512Mi",
        ports=(("metrics", PORT),),
        readiness=health,
        liveness=health,
        claims=(ADMIN_CLAIM.claim,) if ctx.dra else (),
    )
    monitors = (
        (
            {
                "apiVersion": "monitoring.coreos.com/v1",
                "kind": "ServiceMonitor",
                "suffix": "servicemonitor",
                "labels": ctx.service_monitor,
                "spec": {
                    "selector": {"matchLabels": {"app.kubernetes.io/name": "dcgm-exporter"}},
                    "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "15s", "honorLabels": True}],
                },
            },
        )
        if ctx.service_monitor is not None
        else ()
    )
    return OperandSpec(
        operand="dcgm-exporter",
        reason=(
            (
                mig_access.reason(
                    ctx, "to read MIG devices' metrics (and SYS_ADMIN with it, which DCGM's profiling metrics need)"
                )
                if privileged
                else "SYS_ADMIN: DCGM's profiling (DCP) metrics in the metrics list need it (dcgm-exporter README)"
            )
            + "; reads the kubelet pod-resources socket (read-only) to attribute GPUs to pods"
            + (
                "; every GPU of its node through an admin-access ResourceClaim (no device plugin in DRA mode)"
                if ctx.dra
                else ""
            )
        ),
        containers=(exporter,),
        host_paths=(
            HostPath(
                "pod-gpu-resources",
                "/var/lib/kubelet/pod-resources",
                "/var/lib/kubelet/pod-resources",
                True,
                "Directory",
            ),
        ),
        empty_dirs=("tmp",),
        config_maps={"metrics": {"metrics.csv": METRICS}},
        services=(Service("metrics", PORT),),
        custom_resources=monitors,
        claim_templates=(ADMIN_CLAIM,) if ctx.dra else (),
        cluster_rules=DRA_CLUSTER_RULES if ctx.dra else (),
        runtime_class=None if ctx.dra else "nvidia",
        # The MIG manager waits for pods with this label to leave a node before repartitioning
        # (mig-parted v0.13.1 pkg/mig/reconfigure/reconfigure.go:392-395).
        app_label="nvidia-dcgm-exporter",
    )


class DcgmExporter(Operand):
    """`gpu-platform:operands:DcgmExporter`."""
