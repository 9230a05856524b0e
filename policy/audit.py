"""Privileged-software audit: every workload that keeps a privilege says why, who owns it, who
approved it and exactly which host paths it mounts; every AWS resource that runs the privileged
node software (driver, fabric manager) carries the audit tags."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_platform import contract
from policy import facts, workloads
from policy.declare import resource_policy, types


@resource_policy(
    "privileged-workloads-audited", EnforcementLevel.MANDATORY,
    "Every Kubernetes workload with a privilege carries non-empty audit annotations, and its declared host paths are its real ones.",
    workloads.TARGETS,
)
def privileged_workloads_audited(args, report_violation) -> None:
    spec = workloads.pod_spec(args.resource_type, args.props)
    privileges = workloads.privileges(spec)
    if not privileges:
        return
    what = f"{facts.kind(args.resource_type)} {args.name!r} ({args.urn})"
    notes = workloads.pod_annotations(args.resource_type, args.props)
    missing = [key for key in contract.AUDIT_ANNOTATIONS if not notes.get(key, "").strip()]
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


@resource_policy(
    "privileged-software-tagged", EnforcementLevel.MANDATORY,
    "GPU node groups, launch templates and node images (which run the NVIDIA driver) carry the audit tags, "
    "and the version facts the other policies check on them.",
    types(*facts.GPU_NODE_TYPES),
)
def privileged_software_tagged(args, report_violation) -> None:
    if not facts.is_gpu_resource(args.resource_type, args.props):
        return
    found = facts.tags(args.props)
    what = f"{facts.kind(args.resource_type)} {args.name!r} ({args.urn})"
    missing = [key for key in contract.AUDIT_TAGS if not found.get(key, "").strip()]
    if missing:
        report_violation(
            f"{what} runs the privileged GPU node software (driver {found.get(contract.DRIVER_VERSION_TAG) or 'unknown'}), "
            f"but its audit tags {', '.join(missing)} are missing or empty; tag it with what privileged software it "
            f"installs, the owner and the approval record"
        )
    undeclared = [key for key in facts.DECLARED_TAGS[args.resource_type] if not found.get(key, "").strip()]
    if undeclared:
        report_violation(
            f"{what} declares no {', '.join(undeclared)}, so the version policies cannot check it; tag it with "
            f"the facts it runs on (the program does: a resource built another way must too)"
        )
