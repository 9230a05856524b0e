"""The workload readers the policies use (gpu_platform/interface/workloads.py, shared with the program's audit
annotations and the preview's audit report) and what a workload policy targets."""

from __future__ import annotations

from gpu_platform.interface.workloads import (  # noqa: F401 (re-exported for the policies)
    _POD_SPEC_PATH,
    container_privileges,
    containers,
    declared_host_paths,
    host_path_modes,
    images,
    kind,
    operand,
    own_annotations,
    pod_annotations,
    pod_spec,
    privileges,
    selector,
    tolerations,
)
from policy.declare import Targets

# What a workload policy reads: every kind that runs pods, at any API version.
TARGETS = Targets(
    "Kubernetes workloads (" + ", ".join(f"`{k}`" for k in _POD_SPEC_PATH) + ")", lambda t: kind(t) is not None
)
