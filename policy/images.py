"""Operand images and the release: every operand runs the image its GPU Operator release was tested
with, or a patch bump of it (same repository, same major.minor) declared in `operator.overrides`."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, StackValidationArgs, StackValidationPolicy

from gpu_platform import matrix, versions
from policy import workloads
from policy.facts import gather

# The wait-for-marker init containers of every operand run the validator image.
_SHARED_OPERAND = "validator"


def split(ref: str) -> tuple[str, str]:
    """`nvcr.io/nvidia/k8s-device-plugin:v0.18.1` -> (repository, tag); a registry port is not a tag."""
    repo, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag:
        return ref, ""
    return repo, tag


def _tag_versions(tag: str) -> list[tuple[int, ...]]:
    """The versions in a tag: `v0.18.1-ubi8` -> [(0, 18, 1)]; DCGM exporter's `4.4.2-4.7.0-distroless`
    -> [(4, 4, 2), (4, 7, 0)]; [] when a part is no version."""
    parts = versions.image_tag_version(tag).split("-")
    return [versions.parse(p) for p in parts] if all(versions.is_version(p) for p in parts) else []


def is_patch_bump(release_tag: str, tag: str) -> bool:
    """Same major.minor for every version in the tag, and no older than the release's."""
    old, new = _tag_versions(release_tag), _tag_versions(tag)
    if not old or len(old) != len(new):
        return False
    return all(o[:2] == n[:2] for o, n in zip(old, new)) and new >= old


def _releases_shipping(operand: str, tag: str) -> list[str]:
    new = _tag_versions(tag)
    return [
        r.name for r in matrix.load().releases.values()
        if new and [v[:2] for v in _tag_versions(split(r.image(operand))[1])] == [v[:2] for v in new]
    ]


def _overrides_are_patch_bumps(release, facts, report_violation) -> None:
    for operand, declared in sorted(facts.overrides.items()):
        if operand not in release.images:
            continue
        release_tag = split(release.image(operand))[1]
        if is_patch_bump(release_tag, declared.value):
            continue
        others = _releases_shipping(operand, declared.value)
        move = f", or move to a release that ships that line ({', '.join(others[-3:])})" if others else ""
        report_violation(
            f"operator.overrides.{operand} (declared by {declared.urn}) sets tag {declared.value}, but GPU "
            f"Operator {release.name} ships {operand} {release_tag} and an override may only be a patch "
            f"bump of it (same major.minor, not older); use a {release_tag.rsplit('.', 1)[0]}.x tag{move}",
            declared.urn,
        )


def _operand_images_match_release(args: StackValidationArgs, report_violation) -> None:
    facts = gather(args.resources)
    release = matrix.load().releases.get(facts.release.value) if facts.release else None
    if release is None:
        return
    _overrides_are_patch_bumps(release, facts, report_violation)
    expected = release.images_with({op: d.value for op, d in facts.overrides.items()})
    for r in args.resources:
        operand = workloads.operand(r.props)
        if operand is None or workloads.kind(r.resource_type) is None:
            continue
        own = expected.get(operand)
        allowed = {own, expected[_SHARED_OPERAND]} if own else set(expected.values())
        for container, image in workloads.images(workloads.pod_spec(r.resource_type, r.props)):
            if image in allowed:
                continue
            want = own or expected[_SHARED_OPERAND]
            repo, tag = split(image)
            if repo == split(want)[0]:
                how = (
                    f"set operator.overrides.{operand}: {tag} if it is a patch bump of {split(want)[1]}"
                    if operand not in facts.overrides else f"the override says {facts.overrides[operand].value}"
                )
                detail = f"tag {tag} is not the release's {split(want)[1]} ({how})"
            else:
                detail = f"{repo} is not the release's repository {split(want)[0]}"
            report_violation(
                f"{r.resource_type.rsplit(':', 1)[-1]} {r.name!r} ({r.urn}), container {container!r}, runs "
                f"{image}, but GPU Operator {release.name} (declared by {facts.release.urn}) runs {operand} "
                f"as {want}: {detail}; use {want}",
                r.urn,
            )


operand_images_match_release = StackValidationPolicy(
    name="operand-images-match-release",
    description="Every operand image is its GPU Operator release's, or a same-repository patch bump declared in operator.overrides.",
    enforcement_level=EnforcementLevel.MANDATORY,
    validate=_operand_images_match_release,
)
