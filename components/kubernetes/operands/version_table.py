"""Choosing what an operand renders by its image's version: each operand keeps a small table of what
changed between image versions (oldest row first, each row citing its upstream source), and the
row for an image is the newest whose `since` the image's tag has reached."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from gpu_platform.catalog import image_refs, versions
from gpu_platform.config import ConfigError


class VersionRow(Protocol):
    since: str  # the first image version this row describes; it holds until the next row's


Row = TypeVar("Row", bound=VersionRow)


_LEADING_VERSION = re.compile(r"^v?(\d+(?:\.\d+)*)")


def image_version(image: str) -> str:
    """The version in an image reference's tag: `...:v1.17.8-ubuntu20.04` -> `1.17.8`,
    `...:v0.18.2-minimal` -> `0.18.2` (flavour suffixes after the numbers are ignored). A tag that
    carries two versions gives the first: DCGM exporter's `3.2.6-3.1.9-ubuntu20.04` -> `3.2.6`."""
    tag = image_refs.tag_of(image)
    if not tag:
        raise ValueError(f"image {image!r} has no tag; operand traits are chosen by the tag's version")
    found = _LEADING_VERSION.match(versions.image_tag_version(tag))
    if not found:
        raise ValueError(f"image {image!r}: tag is not a version; operand traits are chosen by it")
    return found.group(1)


def row_for(version: str, rows: Sequence[Row], what: str) -> Row:
    """The row of a version table (oldest first) that describes `version`. Older than the first row
    is an error: nothing here says what such an image expects."""
    chosen = [r for r in rows if versions.at_least(version, r.since)]
    if not chosen:
        # Every release's own images are covered (tests render all of them), so only an override
        # can be older than a table.
        raise ConfigError(
            f"gpu-platform:operator.overrides: {what}: version {version} is older than any this "
            f"platform renders ({rows[0].since} and later)"
        )
    return chosen[-1]


def for_version(image: str, rows: Sequence[Row]) -> Row:
    """The row of a version table that describes `image`, by its tag's version."""
    return row_for(image_version(image), rows, f"image {image!r}")
