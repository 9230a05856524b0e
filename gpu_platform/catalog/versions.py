"""Version strings as NVIDIA and Kubernetes write them, made comparable.

Driver versions have two or three numeric parts ("570.26", "580.105.08"); CUDA toolkit versions are
"12.8" for a GA release and "12.8.1" for its Update 1; Kubernetes minors are "1.33". Comparison is
numeric part by part, so "570.133.20" > "570.26" (string order would say the opposite).
"""

from __future__ import annotations

import re

_NUMERIC = re.compile(r"^\d+(\.\d+)*$")


def parse(version: str) -> tuple[int, ...]:
    """`"580.105.08"` -> `(580, 105, 8)`; raises ValueError for anything but dotted numbers."""
    text = str(version).strip().lstrip("v")
    if not _NUMERIC.match(text):
        raise ValueError(f"not a dotted numeric version: {version!r}")
    return tuple(int(part) for part in text.split("."))


def is_version(version: str) -> bool:
    try:
        parse(version)
    except ValueError:
        return False
    return True


def at_least(version: str, minimum: str) -> bool:
    """True when `version` >= `minimum`, missing trailing parts counting as zero."""
    have, need = parse(version), parse(minimum)
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))


def major(version: str) -> int:
    return parse(version)[0]


def major_minor(version: str) -> tuple[int, int]:
    parts = (*parse(version), 0)
    return parts[0], parts[1]


def image_tag_version(tag: str) -> str:
    """The version inside an image tag: `v1.18.1-ubuntu20.04` -> `1.18.1`, `4.4.2-4.7.0-distroless`
    -> `4.4.2-4.7.0` (DCGM exporter tags carry two versions: DCGM, then the exporter)."""
    text = tag.lstrip("v")
    text = re.sub(r"-(ubi\d+|ubuntu\d+\.\d+|distroless)$", "", text)
    return text
