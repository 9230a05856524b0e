"""gpu-platform:operator: the GPU Operator release whose operands the stack deploys, and per-operand
image tag overrides."""

from __future__ import annotations

import re
from collections.abc import Mapping

from pydantic import Field, field_validator

from gpu_platform.catalog import image_refs, matrix, operands
from gpu_platform.config.errors import ConfigProblem, listed, shown
from gpu_platform.config.section import Section


class Operator(Section):
    release: str = Field(
        description="The GPU Operator release whose operand images the stack deploys: a release of "
        "gpu_platform/catalog/matrix.yaml (e.g. v25.10.1)."
    )
    overrides: Mapping[str, str] = Field(
        default_factory=dict,
        description="Image tags by operand, replacing the release's (e.g. {device-plugin: v0.18.2}). A version tag; "
        "a digest may follow it (tag@sha256:...). The repository stays the release's.",
    )

    @field_validator("release")
    @classmethod
    def _known_release(cls, value: str) -> str:
        releases = matrix.load().releases
        if value not in releases:
            raise ConfigProblem(
                f"{shown(value)} is not a GPU Operator release of the version matrix (valid: {', '.join(releases)})"
            )
        return value

    @field_validator("overrides")
    @classmethod
    def _known_operands(cls, value: Mapping[str, str]) -> Mapping[str, str]:
        for operand, tag in value.items():
            if operand not in matrix.OPERAND_IMAGES:
                borrowed = operands.image_key(operand)
                if borrowed != operand:  # an operand that runs another's image is overridden through it
                    raise ConfigProblem(
                        f"runs the {borrowed} image, which an override of {borrowed} sets for both "
                        f"(valid: {listed(matrix.OPERAND_IMAGES)})",
                        path=(operand,),
                    )
                raise ConfigProblem(f"not an operand (valid: {listed(matrix.OPERAND_IMAGES)})", path=(operand,))
            # A version first: operands choose flags and paths by the image's version. A digest may
            # follow (tag@sha256:...), pinning the bytes the tag named when it was taken.
            given, at, digest = tag.partition("@") if isinstance(tag, str) else (tag, "", "")
            if not isinstance(given, str) or not re.fullmatch(r"v?\d+(\.\d+)+[A-Za-z0-9_.-]{0,100}", given):
                raise ConfigProblem(
                    f"{shown(tag)} is not an image tag (a version tag only, e.g. v0.18.2; the "
                    "repository "
                    "stays the release's); a digest may follow the tag: "
                    f"v0.18.2@{image_refs.DIGEST_EXAMPLE}",
                    path=(operand,),
                )
            problem = image_refs.digest_problem(digest) if at else None
            if problem:
                raise ConfigProblem(
                    f"{shown(tag)}: after the tag, the {problem}; `crane digest <repository>:<tag>` "
                    "prints the digest a tag names now",
                    path=(operand,),
                )
        return dict(sorted(value.items()))
