"""Privileged-software audit: every workload that keeps a privilege says why, who owns it, who
approved it and exactly which host paths it mounts; every AWS resource that runs the privileged
node software (driver, fabric manager) carries the audit tags."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from gpu_platform import contract
from policy import workloads
from policy.facts import is_gpu_resource


def _privileged_workload_audited(args: ResourceValidationArgs, report_violation) -> None:
    if workloads.kind(args.resource_type) is None:
        return
    spec = workloads.pod_spec(args.resource_type, args.props)
    privileges = workloads.privileges(spec)
    if not privileges:
        return
    what = f"{args.resource_type.rsplit(':', 1)[-1]} {args.name!r} ({args.urn})"
    notes = workloads.pod_annotations(args.resource_type, args.props)
    missing = [key for key in contract.AUDIT_ANNOTATIONS if not str(notes.get(key) or "").strip()]
    if missing:
        report_violation(
            f"{what} keeps privileges ({'; '.join(privileges)}) but its audit annotations "
            f"{', '.join(missing)} are missing or empty; annotate the workload with the reason, the "
            f"host paths it mounts (path:rw|ro), the owner and the approval record"
        )
        return
    real = workloads.host_path_modes(spec)
    declared = workloads.declared_host_paths(notes[contract.AUDIT_HOST_PATHS])
    if declared != real:
        actual = ",".join(f"{p}:{m}" for p, m in real.items()) or "(none)"
        report_violation(
            f"{what} declares {contract.AUDIT_HOST_PATHS}={notes[contract.AUDIT_HOST_PATHS]!r}, but its "
            f"hostPath volumes and mounts give {actual!r}; set the annotation to {actual!r} (or change the "
            f"mounts to match what was approved)"
        )


def _privileged_software_tagged(args: ResourceValidationArgs, report_violation) -> None:
    if not is_gpu_resource(args.resource_type, args.props):
        return
    found = args.props.get("tags") if isinstance(args.props.get("tags"), dict) else {}
    missing = [key for key in contract.AUDIT_TAGS if not str(found.get(key) or "").strip()]
    if missing:
        report_violation(
            f"{args.resource_type.rsplit(':', 1)[-1]} {args.name!r} ({args.urn}) runs the privileged GPU "
            f"node software (driver {found.get(contract.DRIVER_VERSION_TAG, 'unknown')}), but its audit tags "
            f"{', '.join(missing)} are missing or empty; tag it with what privileged software it installs, "
            f"the owner and the approval record"
        )


privileged_workloads_audited = ResourceValidationPolicy(
    name="privileged-workloads-audited",
    description="Every Kubernetes workload with a privilege carries non-empty audit annotations, and its declared host paths are its real ones.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_privileged_workload_audited,
)

privileged_software_tagged = ResourceValidationPolicy(
    name="privileged-software-tagged",
    description="GPU node groups, launch templates and node images (which run the NVIDIA driver) carry the audit tags.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_privileged_software_tagged,
)
