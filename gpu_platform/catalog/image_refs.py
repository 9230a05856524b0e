"""Container image references as registries read them: `repository[:tag][@sha256:<64 hex>]`.

A tag is a name its publisher may move to other content by pushing again; a digest names one image
manifest by its hash, forever. The version matrix and `operator.overrides` may pin an operand's
image by both, `v0.18.1@sha256:...`: the tag says which version it is (operands choose flags and
paths by it, the policies compare it with the release), the digest which bytes run.

Grammar: `reference := name [":" tag] ["@" digest]`, `tag := /[\\w][\\w.-]{0,127}/`
(distribution/reference v0.6.0, reference.go lines 6-20); a `sha256` digest's encoded part "MUST
match /[a-f0-9]{64}/" (opencontainers/image-spec v1.1.1, descriptor.md line 153). Only sha256 is
accepted here (the spec registers sha512 too, descriptor.md line 161): one form to review and compare.

Plain data: the policy pack reads this module too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

DIGEST_ALGORITHM = "sha256"
_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
DIGEST_EXAMPLE = "sha256:<64 lowercase hex digits>"


@dataclass(frozen=True)
class ImageRef:
    repository: str  # with its registry: nvcr.io/nvidia/k8s-device-plugin
    tag: str  # "" when the reference has none
    digest: str  # "sha256:<hex>", "" when the reference has none

    def __str__(self) -> str:
        return self.repository + (":" + self.tag if self.tag else "") + ("@" + self.digest if self.digest else "")

    @property
    def pinned(self) -> bool:
        """Whether the reference names one manifest (a digest), not only a movable tag."""
        return bool(self.digest)

    @property
    def version(self) -> str:
        """What an override sets: the tag, with the digest when there is one (`v0.18.1@sha256:...`)."""
        return self.tag + ("@" + self.digest if self.digest else "")

    def with_version(self, version: str) -> ImageRef:
        """The same repository at another `tag[@digest]` (an `operator.overrides` value): the
        release's digest belongs to the release's tag, so it never carries over to another."""
        tag, _, digest = version.partition("@")
        return replace(self, tag=tag, digest=digest)


def parse(ref: str) -> ImageRef:
    """Splits any reference, well-formed or not (a policy reads whatever a manifest holds): a registry
    port (`host:5000/x`) is not a tag, and everything after the first `@` is the digest."""
    name, _, digest = str(ref).partition("@")
    repository, sep, tag = name.rpartition(":")
    if not sep or "/" in tag:
        repository, tag = name, ""
    return ImageRef(repository, tag, digest)


def tag_of(ref: str) -> str:
    return parse(ref).tag


def digest_problem(digest: str) -> str | None:
    """What is wrong with a digest as written after `@`, or None."""
    if _DIGEST.fullmatch(digest):
        return None
    algorithm, sep, encoded = digest.partition(":")
    if sep and algorithm != DIGEST_ALGORITHM:
        return f"digest {digest!r} is not a sha256 digest (only sha256 is accepted: {DIGEST_EXAMPLE})"
    return f"digest {digest!r} is malformed: a digest is {DIGEST_EXAMPLE}" + (
        f" (this one has {len(encoded)} characters after 'sha256:')" if sep and encoded and len(encoded) != 64 else ""
    )


def version_problem(version: str) -> str | None:
    """What is wrong with a `tag` or `tag@sha256:<hex>` value, or None; the tag must be there."""
    tag, at, digest = version.partition("@")
    if not _TAG.fullmatch(tag):
        return (
            f"{tag!r} is not an image tag"
            if tag
            else "a digest needs the tag it was taken from before it (tag@sha256:...)"
        )
    return digest_problem(digest) if at else None


def problem(ref: str) -> str | None:
    """What is wrong with a full reference (`repository:tag[@sha256:<hex>]`), or None; the matrix
    pins every image by tag, so a reference without one is a problem too."""
    found = parse(ref)
    if not found.repository or found.repository != found.repository.strip() or not found.tag:
        return f"{ref!r} is not repository:tag[@{DIGEST_EXAMPLE}]"
    return version_problem(found.tag + ("@" + found.digest if "@" in ref else ""))
