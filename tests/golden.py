"""Golden files for generated text (user data, manifests). `make golden` rewrites them from the
current code (UPDATE_GOLDEN=1); review the diff like any other change."""

from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent / "golden"


def assert_golden(relative: str, text: str) -> None:
    path = GOLDEN / relative
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"no golden file {path}; run `make golden` and review it"
    assert text == path.read_text(), f"{relative} differs from its golden file; if intended, run `make golden` and review the diff"
