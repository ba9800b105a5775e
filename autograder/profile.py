"""profile: where a submission's time goes, for `benchmarks/batch.py --profile`. Off (every call a no-op) unless
the environment variable AUTOGRAD_LAB_PROFILE names a file when this module is imported; then each graded
submission appends one JSON line to that file: {"submission", "stages": {stage: seconds}, "probe": {...}}, the
probe's own timings (untrusted: the submission's process measured them) included. It never changes a report.

May import: stdlib.
"""
from __future__ import annotations

import json
import os
import threading
import time
from contextlib import contextmanager
from typing import Any, Iterator

FILE = os.environ.get("AUTOGRAD_LAB_PROFILE") or None
_local = threading.local()
_lock = threading.Lock()


def enabled() -> bool:
    """Is profiling on (AUTOGRAD_LAB_PROFILE set at import)?"""
    return FILE is not None


def begin() -> None:
    """Start the record of the submission this thread grades now."""
    if FILE:
        _local.stages, _local.probe = {}, {}


def add(stage: str, seconds: float) -> None:
    """Add `seconds` to `stage` of this thread's current record."""
    if FILE and hasattr(_local, "stages"):
        _local.stages[stage] = _local.stages.get(stage, 0.0) + seconds


def probe(timing: dict[str, Any]) -> None:
    """Keep the probe's own timings (seconds) of this thread's current submission."""
    if FILE and hasattr(_local, "probe"):
        _local.probe.update(timing)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """Time the block as `stage` (summed when a stage is entered more than once)."""
    if not FILE:
        yield
        return
    start = time.perf_counter()
    try:
        yield
    finally:
        add(name, time.perf_counter() - start)


def end(submission: str) -> None:
    """Append this thread's record to the profile file, and forget it."""
    if not FILE or not hasattr(_local, "stages"):
        return
    line = json.dumps({"submission": submission, "stages": _local.stages, "probe": _local.probe}) + "\n"
    del _local.stages, _local.probe
    with _lock, open(FILE, "a", encoding="utf-8") as f:
        f.write(line)
