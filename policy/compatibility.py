"""Version-matrix policies: combinations of known versions that do not work together."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from gpu_platform import matrix, versions
from policy.facts import gather


def _release_supports_kubernetes(args: StackValidationArgs, report_violation) -> None:
    facts = gather(args.resources)
    if facts.release is None or facts.kubernetes is None:
        return
    table = matrix.load()
    release = table.releases.get(facts.release.value)
    minor = facts.kubernetes.value
    if release is None:
        report_violation(f"GPU Operator release {facts.release.value!r} is not in the version matrix", facts.release.urn)
        return
    if not versions.is_version(minor) or release.supports_kubernetes(minor):
        return
    fitting = [r.name for r in table.releases.values() if r.supports_kubernetes(minor)]
    fix = f"use a release that supports {minor} ({', '.join(fitting[-3:])})" if fitting else f"no release in the matrix supports {minor}"
    report_violation(
        f"GPU Operator {release.name} (declared by {facts.release.urn}) supports Kubernetes "
        f"{release.kubernetes_range}, but the cluster ({facts.kubernetes.urn}) runs {minor}; {fix}, "
        f"or run a Kubernetes version in {release.kubernetes_range}",
        facts.release.urn,
    )


release_supports_kubernetes = StackValidationPolicy(
    name="release-supports-kubernetes",
    description="The GPU Operator release whose versions the operands follow supports the cluster's Kubernetes minor.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_release_supports_kubernetes,
)
