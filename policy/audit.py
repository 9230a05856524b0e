"""Privileged-software audit: every workload that keeps a privilege says why, who owns it, who
approved it and exactly which host paths it mounts; every AWS resource that runs the privileged
node software (driver, fabric manager) carries the audit tags; and the approval covers the
privileges the stack grants now, not the ones it granted when it was given (the privilege ledger's
hash, gpu_platform/privileges/ledger.py)."""

from __future__ import annotations

import re

from pulumi_policy import EnforcementLevel
from pulumi_policy.proxy import UnknownValueError

from gpu_platform.catalog import addon_privileges, matrix, versions
from gpu_platform.interface import contract, resource_types
from gpu_platform.interface.props import mapping, strings, text
from gpu_platform.privileges import cluster_admins, ledger
from policy import facts, workloads
from policy.declare import resource_policy, stack_policy, types


@resource_policy(
    "privileged-workloads-audited",
    EnforcementLevel.MANDATORY,
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
        problems.append(
            f"{contract.OPERATOR_RELEASE_KEY} {release!r} is not a GPU Operator release of the matrix "
            f"(newest: {', '.join(list(table.releases)[-3:])})"
        )
    minor = tags.get(contract.KUBERNETES_VERSION_TAG, "")
    if minor and not re.fullmatch(r"1\.\d{1,2}", minor):
        problems.append(f"{contract.KUBERNETES_VERSION_TAG} {minor!r} is not a Kubernetes minor version (e.g. 1.33)")
    unknown_cuda = [c for c in gpu.cuda_versions if c not in table.cuda.toolkits]
    if unknown_cuda:
        problems.append(
            f"{contract.CUDA_VERSIONS_KEY} {', '.join(unknown_cuda)} not a CUDA toolkit version of the matrix"
        )
    for key, valid in (
        (contract.IMAGE_SOURCE_TAG, contract.IMAGE_SOURCES),
        (contract.TOOLKIT_BAKED_TAG, ("true", "false")),
    ):
        if tags.get(key, "") and tags[key] not in valid:
            problems.append(f"{key} {tags[key]!r} is not one of {', '.join(valid)}")
    declared = gpu.gpu_model
    unknown_models = [m for m in gpu.gpu_models if m not in table.gpus]
    if unknown_models:
        key = contract.GPU_MODELS_TAG if gpu.type == facts.IMAGE else contract.GPU_MODEL_TAG
        problems.append(
            f"{key} {', '.join(map(repr, unknown_models))} not a GPU of the matrix (valid: {', '.join(table.gpus)})"
        )
    for instance_type, real in gpu.gpus().items() if gpu.instance_types else ():
        if real is None:
            problems.append(
                f"instance type {instance_type} is of no GPU family the matrix covers, so no policy can check its "
                f"GPU (families: {', '.join(f for g in table.gpus.values() for f in g.families)})"
            )
        elif declared and declared != real.key:
            problems.append(
                f"it declares {contract.GPU_MODEL_TAG} {declared!r}, but its instance type {instance_type} "
                f"carries {real.key}"
            )
    return problems


@resource_policy(
    "privileged-software-tagged",
    EnforcementLevel.MANDATORY,
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
        report_violation(
            f"{what}: {'; '.join(problems)}; the version policies cannot check what it runs until its tags are right"
        )


@resource_policy(
    "addon-left-to-eks-pins-no-version",
    EnforcementLevel.MANDATORY,
    "An EKS add-on tagged as left to EKS's default version pins none: the privilege ledger does not read the "
    "version of such an add-on (a deployed one reads back the version EKS chose), so a pin behind the tag "
    "would change what runs on every node unseen.",
    types(resource_types.EKS_ADDON),
    fix=(
        f"no stack key: the program's add-on (components/aws/vpc_cni.py) either keeps the {addon_privileges.VERSION_TAG} "
        "tag and pins no addonVersion, or pins one without the tag (the ledger then binds it)"
    ),
)
def addon_left_to_eks_pins_no_version(args, report_violation) -> None:
    # Analyze sees the resource's inputs (what the program sets), never the version EKS filled in.
    if strings(args.props.get("tags")).get(addon_privileges.VERSION_TAG) != addon_privileges.UNPINNED:
        return
    version = text(args.props.get("addonVersion"))
    if version:
        report_violation(
            f"EKS add-on {text(args.props.get('addonName')) or args.name!r} ({args.urn}) is tagged "
            f"{addon_privileges.VERSION_TAG}={addon_privileges.UNPINNED} (left to EKS, its version not in the privilege "
            f"ledger) but pins addonVersion {version}"
        )


def _stack_name(resources) -> str:
    """The stack, from a URN (`urn:pulumi:<stack>::<project>::...`): the pack is told nothing else."""
    for r in resources:
        parts = r.urn.split("::", 1)[0].split(":")
        if len(parts) == 3 and parts[:2] == ["urn", "pulumi"]:
            return parts[2]
    return "STACK"


def _approved(resources) -> dict[str, list[str]]:
    """Approved ledger hash -> the namespaces (described) that carry it."""
    found: dict[str, list[str]] = {}
    for r in resources:
        if r.resource_type == facts.NAMESPACE:
            value = facts.annotations(r.props).get(contract.APPROVED_LEDGER_KEY)
            if value is not None:
                found.setdefault(value, []).append(f"Namespace {r.name!r} ({r.urn})")
    return found


def _current(resources, report_violation) -> tuple[str, int] | None:
    """The ledger's hash and size; None, with a violation, when a value it reads is unknown. Left to
    the analyzer, an unknown value would make this policy "can't run during preview", an advisory
    (pulumi-policy 1.21.0 policy.py:1098-1108), and a privilege the program hides behind a value known
    only at the update (a generated name, an output) would pass the gate unapproved."""
    resources = list(resources)
    references = _references(resources)
    try:
        rows = ledger.rows(((r.resource_type, r.name, r.props) for r in resources), references)
    except UnknownValueError as unknown:
        where = next(
            (f"{r.resource_type} {r.name!r} ({r.urn})" for r in resources if _unknown_in(r, references)), "a resource"
        )
        report_violation(
            f"the privilege ledger cannot be computed in this preview: {unknown.message} (in {where}), so no approval can "
            f"be checked against it; write that value in the program (a name it chooses, not one generated at the "
            f"update), or create the resource in an update of its own and approve the ledger after it"
        )
        return None
    return ledger.digest(rows), len(rows)


def _references(resources) -> dict:
    """(type, name) -> ledger.references of what it depends on (pulumi-policy PolicyResource.dependencies
    and .property_dependencies, as AnalyzeStack hands them). The CLI sends property dependencies for
    every resource that has any; a caller that sends none at all gets the dependency-list reading."""
    sent = any(r.property_dependencies for r in resources)
    return {
        (r.resource_type, r.name): ledger.references(
            r.resource_type,
            ((d.resource_type, d.name) for d in r.dependencies),
            {key: [(d.resource_type, d.name) for d in deps] for key, deps in r.property_dependencies.items()}
            if sent
            else None,
        )
        for r in resources
        if r.dependencies or r.property_dependencies
    }


def _unknown_in(r, references) -> bool:
    try:
        ledger.rows([(r.resource_type, r.name, r.props)], references)
    except UnknownValueError:
        return True
    return False


# A stack policy: the ledger is all of the stack's resources at once. The engine runs stack policies
# after the steps, so the gate is `pulumi preview` (the PR's real-preview job), where a violation
# fails before anything is deployed; under `pulumi up --skip-preview` it fails only afterwards.
@stack_policy(
    "privilege-ledger-approved",
    EnforcementLevel.MANDATORY,
    "The privilege ledger (every privilege and isolation weakening of every workload with the images and command lines "
    "that hold them, where those workloads run and the ConfigMaps they read, "
    "every EKS add-on's version, configuration and Pod Identity associations and the DaemonSets written down for it, "
    "what the node image bake runs as root and downloads, who may administer the cluster, every RBAC rule and binding, "
    "every IAM role's trust policy, attached and inline policies, customer-managed IAM and KMS key policies, every "
    "admission policy and its binding, admission webhook and IAM OIDC provider) hashes to the value the "
    "approval recorded.",
    fix="gpu-platform:audit.approvedLedger, after the changed privileges are approved (python -m preview --stack "
    "NAME prints the current hash; --audit NEW --audit-against APPROVED.md shows what changed)",
)
def privilege_ledger_approved(args, report_violation) -> None:
    approved = _approved(args.resources)
    if not approved:
        return  # privilege-ledger-recorded says what to record
    found = _current(args.resources, report_violation)
    if found is None:
        return
    current, count = found
    where = "; ".join(f"{value} on {', '.join(who)}" for value, who in sorted(approved.items()))
    if len(approved) > 1:
        report_violation(
            f"the approved privilege ledger hash is stated differently by the namespaces ({where}); one "
            f"approval covers one ledger: the program writes gpu-platform:audit.approvedLedger on one namespace"
        )
        return
    ((value, _),) = approved.items()
    if value == current:
        return
    stack = _stack_name(args.resources)
    # The pack knows the approved hash, never the approved rows: it says which hashes differ and where
    # the difference is shown, not what the difference is.
    report_violation(
        f"the privileges changed since the approval: the stack's privilege ledger ({count} rows) hashes to {current}, "
        f"but the approval covers {value} (gpu-platform:audit.approvedLedger, on {', '.join(approved[value])}); "
        f"this stack grants something the approval did not see, or no longer grants something it did. What changed: "
        f"`python -m preview --stack {stack} --audit new.md --audit-against APPROVED.md` (`--config FILE` for a "
        f"stack file outside stacks/), where APPROVED.md is the "
        f"audit report whose ledger hash is {value} (the approval record keeps it); once the change is approved, "
        f"record {current} as gpu-platform:audit.approvedLedger"
    )


@stack_policy(
    "privilege-ledger-recorded",
    EnforcementLevel.ADVISORY,
    "A stack that grants privileges records the privilege ledger hash its approval covered, so that a later change "
    "of privileges cannot inherit the approval.",
    fix="gpu-platform:audit.approvedLedger: the hash python -m preview --stack NAME prints, once approved",
)
def privilege_ledger_recorded(args, report_violation) -> None:
    if _approved(args.resources):
        return
    found = _current(args.resources, report_violation)
    if found is None:
        return
    current, count = found
    if count == 0:
        return
    report_violation(
        f"the stack grants privileges (its privilege ledger has {count} rows, hash {current}) but records no approved ledger hash, so its "
        f"approval (gpu-platform:audit.approval) is not bound to them and any privilege added later inherits it; "
        f"once the audit report with this hash is approved, record gpu-platform:audit.approvedLedger: {current}"
    )


# A stack policy: the admin list is on the namespace, the associations are other resources. The
# ledger's admin rows come from the annotation (it must name the admins whose entry the stack leaves
# alone), so an association for anyone else would be an admin the approval may not have seen as one.
@stack_policy(
    "cluster-access-declared",
    EnforcementLevel.MANDATORY,
    "Every EKS access policy association of the stack is for a principal the operands' namespace names as a cluster "
    "admin (gpu-platform.io/cluster-admins, from gpu-platform:cluster.admins), so the privilege ledger names everyone "
    "the stack gives cluster access.",
    fix="gpu-platform:cluster.admins: list the principal there (the program makes associations only for those); an "
    "association built another way is a bug to report",
)
def cluster_access_declared(args, report_violation) -> None:
    named: dict[str, list[str]] = {}
    for r in args.resources:
        if r.resource_type == facts.NAMESPACE:
            for arn in cluster_admins.declared(r.props) or ():
                named.setdefault(cluster_admins.principal(arn), []).append(arn)
    listed = " ".join(sorted({arn for arns in named.values() for arn in arns})) or "(none)"
    for r in args.resources:
        if r.resource_type != cluster_admins.ASSOCIATION_TYPE:
            continue
        arn = text(r.props.get("principalArn"))
        if cluster_admins.principal(arn) in named:
            continue
        scope = cluster_admins.grant(text(r.props.get("policyArn")), mapping(r.props.get("accessScope")))
        report_violation(
            f"EKS access policy association {r.name!r} ({r.urn}) gives {arn or '(no principal)'} {scope}, but "
            f"{contract.CLUSTER_ADMINS_KEY} on the namespace names only {listed}: the privilege ledger would not show "
            f"this principal as the stack's cluster admin; add it to gpu-platform:cluster.admins"
        )
