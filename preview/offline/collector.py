"""The cyclic garbage collector held off while the program runs or the pack judges.

An engine run allocates hundreds of thousands of short-lived objects (Outputs, protobuf Structs,
asyncio tasks), so the collector's generation-2 passes kept walking every module the SDKs had
imported: about a third of a run's time (docs/benchmarks.md, Notes). Held off, the run's cycles
are collected by the first pass after it; a preview's peak memory stayed the same (168/175 MiB).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def held() -> Iterator[None]:
    """No collection inside; the collector's state is put back on the way out (nested use is fine)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
