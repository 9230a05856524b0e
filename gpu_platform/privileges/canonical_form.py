"""The ledger's small forms, one definition each for gpu_platform/privileges/ledger.py and the modules that add
rows to it (workload_binding.py, grants.py, bake_document.py): how a subject is named, how a value is
written canonically, how it is hashed, and how a Pulumi-autonamed name is made the same offline and
in the real preview."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from gpu_platform.interface.props import text

# Pulumi's autonaming appends a dash and 7 random hex characters to a resource's logical name (the
# offline mocks imitate it, preview/offline/outputs.py _autonamed; NOT VERIFIED here against
# pulumi-terraform-bridge's AutoName source): stripped, so that an approval recorded offline matches the
# real preview, whose suffixes (and account) differ.
AUTONAME_SUFFIX = re.compile(r"-[0-9a-f]{7}$")


def subject(kind: str, namespace: str, name: str) -> str:
    """How the ledger names an object: `KIND NS/NAME`, or `KIND NAME` when it has no namespace."""
    return f"{kind} {namespace}/{name}" if namespace else f"{kind} {name}"


def without_autoname(value: Any) -> str:
    """A name, or the name an ARN ends in, without Pulumi's autoname suffix."""
    return AUTONAME_SUFFIX.sub("", text(value).rsplit("/", 1)[-1])


def number(value: Any) -> str:
    # Numbers arrive as floats from the engine (see /work/shared/reference/pulumi-notes.md).
    return str(int(value)) if isinstance(value, float) and value.is_integer() else text(value)


def plain(value: Any, sets: bool = False) -> Any:
    """The value as plain JSON data: integral floats as ints, mappings as dicts, sequences as lists
    (sorted by their canonical text when `sets`)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {str(k): plain(v, sets) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        items = [plain(v, sets) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True)) if sets else items
    return value


def canonical(value: Any, sets: bool = False) -> str:
    """Canonical JSON: sorted keys, no spaces, ASCII."""
    return json.dumps(plain(value, sets), sort_keys=True, separators=(",", ":"))


def sha256(data: str | bytes) -> str:
    return "sha256:" + hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()
