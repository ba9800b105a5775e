"""hugepages: moves the warm worker's large anonymous memory into transparent huge pages (2 MiB), where the
kernel offers them, so that forking a run copies a few hundred page-table entries instead of tens of thousands,
and a run's end frees as few. Runs inside the sandbox, in the worker only (never in a run).

How: for each private anonymous writable mapping of at least 2 MiB in /proc/self/maps (the heap, torch's and
Python's arenas), `madvise(MADV_COLLAPSE)` on its 2 MiB-aligned part: the kernel copies the pages that are
there into huge pages at once (Linux 6.1 and newer; it works in THP mode `madvise` without marking the mapping,
so later allocations, a run's own among them, keep the kernel's default). Nothing is done where THP is `never`
(the administrator's choice) or not built in; where MADV_COLLAPSE is unknown (older kernels) the kernel
refuses it with EINVAL and nothing has changed. Sources: Documentation/admin-guide/mm/transhuge.rst and
madvise(2) (MADV_COLLAPSE, Linux 6.1).

Measured on this machine (2026-12-01, issue 32): 118 of 143 MB of a process that has imported torch became huge
pages; fork + exit of it fell from 10-20 ms to 3.1 ms.

May import: stdlib.
"""
from __future__ import annotations

import ctypes
import errno
import mmap
import os
import time
from typing import Any, Collection

MADV_COLLAPSE = 25          # linux/mman.h (uapi asm-generic), Linux 6.1
HUGE = 2 << 20              # bytes in a PMD-sized huge page on x86_64 and arm64 (4 KiB base pages)
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"


def thp_mode(path: str = THP_ENABLED) -> str:
    """The kernel's THP mode ('always', 'madvise' or 'never'), or '' where the file is absent (no THP)."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return ""
    return text.split("[", 1)[1].split("]", 1)[0] if "[" in text else ""


def _regions() -> list[tuple[int, int]]:
    """(start, end) of the 2 MiB-aligned parts of private anonymous writable mappings of at least 2 MiB."""
    out = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            perms = fields[1]
            name = fields[5] if len(fields) > 5 else ""
            if not perms.startswith("rw") or perms[3] != "p" or (name and name != "[heap]"):
                continue
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            lo, hi = (lo + HUGE - 1) & ~(HUGE - 1), hi & ~(HUGE - 1)
            if hi - lo >= HUGE:
                out.append((lo, hi))
    return out


def _rollup() -> tuple[int, int]:
    """(AnonHugePages, Anonymous) bytes of this process, from /proc/self/smaps_rollup."""
    huge = anon = 0
    with open("/proc/self/smaps_rollup") as f:
        for line in f:
            if line.startswith("AnonHugePages:"):
                huge = int(line.split()[1]) * 1024
            elif line.startswith("Anonymous:"):
                anon = int(line.split()[1]) * 1024
    return huge, anon


def _madvise() -> Any:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    return libc.madvise


def supported(path: str = THP_ENABLED) -> str:
    """'' where this kernel can collapse anonymous memory into huge pages now, else why not, in words. Tried on a
    mapping of its own (4 MiB, unmapped again): a kernel without MADV_COLLAPSE refuses it with EINVAL.
    `path`: the THP mode's file (a test passes another)."""
    mode = thp_mode(path)
    if mode == "":
        return "this kernel has no transparent huge pages"
    if mode == "never":
        return "transparent huge pages are off here (THP never)"
    area = mmap.mmap(-1, 2 * HUGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    try:
        base = ctypes.addressof(ctypes.c_char.from_buffer(area))
        lo = (base + HUGE - 1) & ~(HUGE - 1)
        ctypes.memset(lo, 1, 1)   # one page there to collapse
        if _madvise()(lo, HUGE, MADV_COLLAPSE) == 0:
            return ""
        err = ctypes.get_errno()
        return ("this kernel has no MADV_COLLAPSE (Linux 6.1+)" if err == errno.EINVAL
                else f"the kernel gave no huge page ({os.strerror(err)})")
    finally:
        area.close()


class Collapser:
    """Collapses this process's large anonymous regions into huge pages a step at a time, so that a loop can do it
    between the things it must answer (one 2 MiB step takes about 5 ms here). Steps that fail (no free huge
    page now, a region the kernel will not collapse) are skipped; none raises.

    A process forked before a step shares the pages that step replaces: afterwards they are that process's alone
    (the collapsing process holds new copies), so its private memory grows by up to the step's 2 MiB without its
    doing anything. `step` returns the bytes of the steps that succeeded, so that a caller can tell how much of a
    child's memory that may be (the sandbox's worker credits it to each run alive meanwhile).

    Args:
        why_not: `supported()`'s answer, when the caller has it already (nothing is done unless it is '').
        done: steps an earlier Collapser of this process has done (`done` of it): not tried again.
    """

    def __init__(self, why_not: str | None = None, done: Collection[int] = ()) -> None:
        self.why_not = supported() if why_not is None else why_not
        self._steps: list[int] = []
        if not self.why_not:
            try:
                self._steps = [lo for a, b in _regions() for lo in range(b - HUGE, a - 1, -HUGE) if lo not in done]
            except OSError as e:
                self.why_not = f"cannot read /proc/self/maps ({e.strerror})"
        self.done = set(done)  # the steps that succeeded (start addresses), this one's and the earlier ones'
        self.held = (0, 0)     # (AnonHugePages, Anonymous) bytes, read once the last step is done
        self._madvise = _madvise() if self._steps else None

    @property
    def pending(self) -> bool:
        return bool(self._steps)

    def step(self, seconds: float = 0.0) -> int:
        """Collapse 2 MiB steps for about `seconds` (at least one step); returns the bytes collapsed."""
        deadline, before = time.monotonic() + seconds, len(self.done)
        while self._steps:
            lo = self._steps.pop()
            if self._madvise(lo, HUGE, MADV_COLLAPSE) == 0:
                self.done.add(lo)
            if not self._steps:
                try:
                    self.held = _rollup()
                except OSError:
                    pass
            if time.monotonic() >= deadline:
                break
        return (len(self.done) - before) * HUGE
