"""Operand images and the release: every operand runs the image its GPU Operator release was tested
with, or a patch bump of it (same repository, same major.minor) declared in `operator.overrides`.
A digest (`tag@sha256:...`) pins the bytes but never the version: an image matches on repository and
tag, and a digest the release or the override pins must be the one it runs; a digest on the right
tag where none is pinned matches, and no digest makes another tag right.
Each operand workload declares the release and the overrides it follows, so it is checked before it
is created; the namespace, which declares the overrides first, is checked for the bumps.

The advisory `privileged-images-pinned-by-digest` names, once per stack, every image that runs with a
privilege by tag only: whoever can push that tag decides what runs with the privilege."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel

from gpu_platform.catalog import image_refs, matrix, operands, versions
from gpu_platform.interface import contract
from policy import facts, workloads
from policy.declare import Targets, resource_policy, stack_policy

# The wait-for-marker init containers of every operand run the validator image.
_SHARED_OPERAND = "validator"


def split(ref: str) -> tuple[str, str]:
    """`nvcr.io/nvidia/k8s-device-plugin:v0.18.1[@sha256:...]` -> (repository, tag); a registry port
    is not a tag, a digest is not part of the tag."""
    found = image_refs.parse(ref)
    return found.repository, found.tag


def matches(image: str, want: str) -> bool:
    """Whether a container's image is the wanted one: same repository and tag, and the wanted digest
    if it pins one."""
    have, wanted = image_refs.parse(image), image_refs.parse(want)
    return (have.repository, have.tag) == (wanted.repository, wanted.tag) and (
        not wanted.digest or have.digest == wanted.digest
    )


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
    return all(o[:2] == n[:2] for o, n in zip(old, new, strict=True)) and new >= old


def _releases_shipping(operand: str, tag: str) -> list[str]:
    new = _tag_versions(tag)
    return [
        r.name
        for r in matrix.load().releases.values()
        # Operands some releases do not carry (the DRA driver and validator from v26.7.0) are in only those.
        if new
        and operand in r.images
        and [v[:2] for v in _tag_versions(split(r.image(operand))[1])] == [v[:2] for v in new]
    ]


def _check_overrides(args, release, overrides: dict[str, str], report_violation) -> None:
    for operand, version in sorted(overrides.items()):
        if operand not in release.images:
            continue
        tag = version.partition("@")[0]
        release_tag = split(release.image(operand))[1]
        if is_patch_bump(release_tag, tag):
            continue
        others = _releases_shipping(operand, tag)
        move = f", or move to a release that ships that line ({', '.join(others[-3:])})" if others else ""
        report_violation(
            f"operator.overrides.{operand} (declared by namespace {args.name!r}, {args.urn}) sets tag {tag}, but "
            f"GPU Operator {release.name} ships {operand} {release_tag} and an override may only be a patch "
            f"bump of it (same major.minor, not older); use a {release_tag.rsplit('.', 1)[0]}.x tag{move}"
        )


def _check_workload(args, release, overrides: dict[str, str], report_violation) -> None:
    operand = workloads.operand(args.props)
    expected = release.images_with(overrides)
    # An operand may run another's image (the DRA validator the validator's: the registry's image column).
    key = operands.image_key(operand)
    own = expected.get(key)
    allowed = {own, expected[_SHARED_OPERAND]} if own else set(expected.values())
    for container, image in workloads.images(workloads.pod_spec(args.resource_type, args.props)):
        if any(matches(image, want) for want in allowed):
            continue
        # The closest wanted image: the one of the same repository and tag (only its digest differs).
        want = next((w for w in sorted(allowed) if split(w) == split(image)), own or expected[_SHARED_OPERAND])
        repo, tag = split(image)
        if split(want) == (repo, tag):
            pinned = image_refs.parse(want).digest
            owner = next(op for op, ref in expected.items() if ref == want)
            source = f"operator.overrides.{owner}" if owner in overrides else f"the version matrix ({release.name})"
            detail = (
                f"the digest {image_refs.parse(image).digest or '(none)'} is not {pinned}, which {source} "
                f"pins for that tag"
            )
        elif repo == split(want)[0]:
            how = (
                f"set operator.overrides.{key}: {tag} if it is a patch bump of {split(want)[1]}"
                if key not in overrides
                else f"the override says {overrides[key]}"
            )
            detail = f"tag {tag} is not the release's {split(want)[1]} ({how})"
        else:
            detail = f"{repo} is not the release's repository {split(want)[0]}"
        report_violation(
            f"{facts.kind(args.resource_type)} {args.name!r} ({args.urn}), container {container!r}, runs "
            f"{image}, but GPU Operator {release.name} runs {operand} as {want}: {detail}; use {want}"
        )


def _reads(type_: str) -> bool:
    return type_ == facts.NAMESPACE or workloads.kind(type_) is not None


@resource_policy(
    "operand-images-match-release",
    EnforcementLevel.MANDATORY,
    "Every operand image is its GPU Operator release's, or a same-repository patch bump declared in operator.overrides.",
    Targets("`Namespace`, " + workloads.TARGETS.label, _reads),
    fix="gpu-platform:operator.overrides or gpu-platform:operator.release",
)
def operand_images_match_release(args, report_violation) -> None:
    is_namespace = args.resource_type == facts.NAMESPACE
    if not is_namespace and workloads.operand(args.props) is None:
        return
    notes = facts.annotations(args.props)
    declared = notes.get(contract.OPERATOR_RELEASE_KEY, "")
    if not declared:
        if not is_namespace:
            report_violation(
                f"{facts.kind(args.resource_type)} {args.name!r} ({args.urn}) runs GPU operand "
                f"{workloads.operand(args.props)!r} but declares no {contract.OPERATOR_RELEASE_KEY} annotation, "
                f"so its images cannot be checked; annotate it with the GPU Operator release it follows"
            )
        return
    release = matrix.load().releases.get(declared)
    if release is None:
        report_violation(
            f"{facts.kind(args.resource_type)} {args.name!r} ({args.urn}) declares GPU Operator "
            f"release {declared!r}, which is not in the version matrix"
        )
        return
    overrides = contract.parse_overrides(notes.get(contract.OVERRIDES_KEY, ""))
    if is_namespace:
        _check_overrides(args, release, overrides, report_violation)
    else:
        _check_workload(args, release, overrides, report_violation)


def _operand_of(image: str, expected: dict[str, str], own: str | None) -> str | None:
    """The operand whose image key pins this image in the workload's release: the workload's own
    when its repository is that one (GFD shares the device plugin's repository), else the first that
    has it (the validator's, in every operand's wait containers); None: no operand's image."""
    repository = split(image)[0]
    own = operands.image_key(own) if own else own
    if own in expected and split(expected[own])[0] == repository:
        return own
    return next((op for op, ref in sorted(expected.items()) if split(ref)[0] == repository), None)


@stack_policy(
    "privileged-images-pinned-by-digest",
    EnforcementLevel.ADVISORY,
    "Every image that runs with a privilege (privileged, an added capability, a host path or a host namespace) "
    "is pinned by digest (tag@sha256:...), so a tag pushed again cannot change what runs with it.",
    fix="gpu-platform:operator.overrides (<operand>: <tag>@sha256:<digest>), or the release's row in gpu_platform/catalog/matrix.yaml",
)
def privileged_images_pinned_by_digest(args, report_violation) -> None:
    # One violation for the stack, one entry per image: an image is pinned once (one override), however
    # many workloads run it, and a summary of eleven near-identical lines would bury everything else.
    users: dict[str, list[str]] = {}
    keys: dict[str, set[str]] = {}
    for r in args.resources:
        if workloads.kind(r.resource_type) is None:
            continue
        notes = facts.annotations(r.props)
        release = matrix.load().releases.get(notes.get(contract.OPERATOR_RELEASE_KEY, ""))
        expected = (
            release.images_with(contract.parse_overrides(notes.get(contract.OVERRIDES_KEY, ""))) if release else {}
        )
        for _, image, _ in workloads.container_privileges(workloads.pod_spec(r.resource_type, r.props)):
            if image_refs.parse(image).pinned:
                continue
            where = f"{facts.kind(r.resource_type)} {r.name}"
            if where not in users.setdefault(image, []):
                users[image].append(where)
            key = _operand_of(image, expected, workloads.operand(r.props))
            keys.setdefault(image, set()).update([key] if key else [])
    if not users:
        return

    def entry(image: str) -> str:
        tag = split(image)[1] or "<tag>"
        how = (
            f"operator.overrides.{' and .'.join(sorted(keys[image]))}: {tag}@sha256:<digest>"
            if keys[image]
            else "not an operator operand: where the program sets its image, e.g. the EFA device plugin's "
            "efa_device_plugin.tag in gpu_platform/catalog/aws_limits.yaml"
        )
        who = ", ".join(sorted(users[image])) if len(users[image]) <= 2 else f"{len(users[image])} workloads"
        return f"{image} ({who}; pin: {how})"

    report_violation(
        f"{len(users)} image(s) run with privileges by tag only, so whoever can push the tag decides what runs with "
        f"them: {'; '.join(entry(i) for i in sorted(users))}. `crane digest <image>` prints the digest a tag names "
        f"now; check it against the publisher's release"
    )
