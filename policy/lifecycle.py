"""The EKS version lifecycle (gpu_platform/catalog/eks_versions.yaml, as of gpu_platform/catalog/eks_lifecycle.py's
"today"): no cluster is created on a minor past the end of extended support, which EKS refuses; a
cluster on a minor in extended support, created or adopted, is told the end date and the days left,
long before EKS upgrades its control plane itself; and an adopted cluster already past the end is
told that the upgrade can come at any time."""

from __future__ import annotations

import datetime as dt

from pulumi_policy import EnforcementLevel

from gpu_platform.catalog import eks_lifecycle as lifecycle
from gpu_platform.interface import contract
from gpu_platform.interface.props import text
from policy import facts
from policy.declare import resource_policy, stack_policy, types


def _as_of(report_violation) -> tuple[dt.date, str] | None:
    try:
        return lifecycle.today()
    except lifecycle.AsOfError as exc:
        report_violation(f"cannot tell which day support is judged on: {exc}")
        return None


def _when(day: dt.date, source: str) -> str:
    return f"as of {day.isoformat()}, from {source}"


def _supported(day: dt.date) -> str:
    minors = lifecycle.in_standard_support(day)
    return (
        f"a minor in standard support ({', '.join(minors)})"
        if minors
        else "a newer minor (none in the calendar is in standard support on that day: add the newer ones to gpu_platform/catalog/eks_versions.yaml)"
    )


def _upgrade(minor: str, day: dt.date) -> str:
    """EKS upgrades a control plane one minor at a time (EKS User Guide, update-cluster.adoc)."""
    following = f"1.{int(minor.split('.')[1]) + 1}"
    return f"upgrade one minor at a time (EKS takes no bigger step: {minor} -> {following} first) to {_supported(day)}"


@resource_policy(
    "eks-version-in-support",
    EnforcementLevel.MANDATORY,
    "A cluster is created only on a Kubernetes minor EKS still supports (standard or extended support).",
    types(facts.EKS_CLUSTER),
    fix="gpu-platform:cluster.kubernetesVersion",
)
def eks_version_in_support(args, report_violation) -> None:
    minor = text(args.props.get("version"))
    if not minor:
        return  # no version given: EKS picks its default, which it supports
    as_of = _as_of(report_violation)
    if as_of is None:
        return
    day, source = as_of
    standing = lifecycle.standing(minor, day)
    if standing.phase == lifecycle.ENDED:
        report_violation(
            f"cluster {text(args.props.get('name')) or args.name!r} is declared on Kubernetes {minor}, whose EKS extended "
            f"support ended on {standing.calendar.end_of_extended.isoformat()} ({_when(day, source)}): EKS creates no "
            f"cluster on it and upgrades existing ones itself; create it on {_supported(day)}, or, if it exists, "
            f"{_upgrade(minor, day)}"
        )


def _cluster_minor(resources) -> tuple[str, str, bool] | None:
    """(minor, how the cluster is named, created by this stack) of the stack's cluster: the EKS
    cluster it creates, else the one its operator namespace declares (an adopted cluster)."""
    for r in resources:
        if r.resource_type == facts.EKS_CLUSTER and text(r.props.get("version")):
            return text(r.props.get("version")), f"cluster {text(r.props.get('name')) or r.name!r}", True
    for r in resources:
        if r.resource_type == facts.NAMESPACE:
            notes = facts.annotations(r.props)
            if contract.OPERATOR_RELEASE_KEY in notes and notes.get(contract.KUBERNETES_VERSION_TAG):
                return notes[contract.KUBERNETES_VERSION_TAG], "the adopted cluster", False
    return None


@stack_policy(
    "eks-version-support-window",
    EnforcementLevel.ADVISORY,
    "The cluster's Kubernetes minor, created or adopted, is in EKS standard support; extended support (six times the "
    "control-plane price) and its end date are announced with the days left.",
    fix="gpu-platform:cluster.kubernetesVersion",
)
def eks_version_support_window(args, report_violation) -> None:
    found = _cluster_minor(args.resources)
    if found is None:
        return
    minor, cluster, created = found
    as_of = _as_of(report_violation)
    if as_of is None:
        return
    day, source = as_of
    standing = lifecycle.standing(minor, day)
    row = standing.calendar
    if standing.phase == lifecycle.EXTENDED:
        report_violation(
            f"{cluster} runs Kubernetes {minor}, in EKS extended support since {row.end_of_standard.isoformat()} (six times "
            f"the standard control-plane price per cluster hour); it ends on {row.end_of_extended.isoformat()}, "
            f"{standing.days_left(day)} days left ({_when(day, source)}), and then EKS upgrades the control plane itself; "
            f"{_upgrade(minor, day)}"
        )
    elif standing.phase == lifecycle.ENDED and not created:  # a created one is refused by eks-version-in-support
        report_violation(
            f"{cluster} runs Kubernetes {minor}, whose EKS extended support ended on {row.end_of_extended.isoformat()} "
            f"({_when(day, source)}): EKS upgrades its control plane to the oldest supported minor at any time, without "
            f"notice, and leaves the node groups behind (it may have done so already: the stack declares {minor}); "
            f"{_upgrade(minor, day)}"
        )
