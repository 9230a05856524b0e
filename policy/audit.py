"""Privileged-software audit: every workload that keeps a privilege says why, who owns it, who
approved it and exactly which host paths it mounts; every AWS resource that runs the privileged
node software (driver, fabric manager) carries the audit tags."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

import re

from gpu_platform import contract, matrix, versions
from policy import facts, workloads
from policy.declare import resource_policy, types


@resource_policy(
    "privileged-workloads-audited", EnforcementLevel.MANDATORY,
    "Every Kubernetes workload with a privilege carries non-empty audit annotations, and its declared host paths are its real ones.",
    workloads.TARGETS,
    fix="no stack key: the program built the workload (components/kubernetes/operands); report it",
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


def _fact_problems(gpu: facts.GpuResource) -> list[str]:
    """What is wrong with the facts a GPU resource declares: not well-formed, unknown to the matrix,
    or untrue of what it launches. Reported here once, so the version policies can skip such a
    resource without passing it."""
    table = matrix.load()
    tags = gpu.tags
    problems = []
    driver = tags.get(contract.DRIVER_VERSION_TAG, "")
    if driver and not versions.is_version(driver):
        problems.append(f"{contract.DRIVER_VERSION_TAG} {driver!r} is not an NVIDIA driver version (e.g. 580.105.08)")
    release = tags.get(contract.OPERATOR_RELEASE_KEY, "")
    if release and release not in table.releases:
        problems.append(f"{contract.OPERATOR_RELEASE_KEY} {release!r} is not a GPU Operator release of the matrix "
                        f"(newest: {', '.join(list(table.releases)[-3:])})")
    minor = tags.get(contract.KUBERNETES_VERSION_TAG, "")
    if minor and not re.fullmatch(r"1\.\d{1,2}", minor):
        problems.append(f"{contract.KUBERNETES_VERSION_TAG} {minor!r} is not a Kubernetes minor version (e.g. 1.33)")
    unknown_cuda = [c for c in gpu.cuda_versions if c not in table.cuda.toolkits]
    if unknown_cuda:
        problems.append(f"{contract.CUDA_VERSIONS_KEY} {', '.join(unknown_cuda)} not a CUDA toolkit version of the matrix")
    for key, valid in ((contract.IMAGE_SOURCE_TAG, contract.IMAGE_SOURCES), (contract.TOOLKIT_BAKED_TAG, ("true", "false"))):
        if tags.get(key, "") and tags[key] not in valid:
            problems.append(f"{key} {tags[key]!r} is not one of {', '.join(valid)}")
    declared = gpu.gpu_model
    unknown_models = [m for m in gpu.gpu_models if m not in table.gpus]
    if unknown_models:
        key = contract.GPU_MODELS_TAG if gpu.type == facts.IMAGE else contract.GPU_MODEL_TAG
        problems.append(f"{key} {', '.join(map(repr, unknown_models))} not a GPU of the matrix (valid: {', '.join(table.gpus)})")
    for instance_type, real in gpu.gpus().items() if gpu.instance_types else ():
        if real is None:
            problems.append(f"instance type {instance_type} is of no GPU family the matrix covers, so no policy can check its "
                            f"GPU (families: {', '.join(f for g in table.gpus.values() for f in g.families)})")
        elif declared and declared != real.key:
            problems.append(f"it declares {contract.GPU_MODEL_TAG} {declared!r}, but its instance type {instance_type} "
                            f"carries {real.key}")
    return problems


@resource_policy(
    "privileged-software-tagged", EnforcementLevel.MANDATORY,
    "GPU node groups, launch templates and node images (which run the NVIDIA driver) carry the audit tags, "
    "and true, well-formed version facts the matrix knows, which the other policies check on them.",
    types(*facts.GPU_NODE_TYPES),
    fix="gpu-platform:audit.owner and gpu-platform:audit.approval; anything else the program tags (components/aws); report it",
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
    problems = _fact_problems(facts.of(args))
    if problems:
        report_violation(f"{what}: {'; '.join(problems)}; the version policies cannot check what it runs until its tags are right")
