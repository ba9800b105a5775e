"""What tests/test_agreement_*.py check (two files, so that the two test processes share the kernels' time).

Graded as seen: for every example submission of every assignment, the statuses each `lab.check` cell shows
when the notebook runs top to bottom in a real Jupyter kernel (nbclient) are the statuses the batch grader
gives the same saved notebook, check by check (both with the public key, so both draw the same points).
Each notebook runs in a folder of its own beside a copy of its public key, as a student runs it; the commit
records it carries (autograder.judging.commit) are read there by its Lab, as the grader reads them. One difference
is by design: before an exercise's predictions are all filled in, the self-check does not judge the ones
written ("... is written down"), while the grader grades them as their cells stand."""
from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder.grading.grade import grade_notebook
from autograder.grading.identity import Source
from autograder.keyfile import load_key
from autograder.student.lab import REPORT_MIME

from conftest import ROOT

EXAMPLES = sorted(p for p in (ROOT / "examples" / "submissions").glob("*/*.ipynb")
                  if json.loads(p.with_suffix(".expected.json").read_text())["status"] == "graded")
KERNELS_AT_ONCE = 3
STARTS = 3   # a kernel that dies or stays silent before it answers kernel_info is started again, up to this often
NOT_STARTED = ("Kernel died before replying to kernel_info", "Kernel didn't respond in")   # jupyter_client's words
_SHOWN: dict[str, dict[Path, dict[str, str]]] = {}


async def _run(path: Path, limit: asyncio.Semaphore) -> dict[str, str]:
    """check id -> status, as the notebook's lab.check cells show them, run top to bottom in a kernel
    ("written down" for a prediction not judged before its exercise's predictions are all filled in)."""
    async with limit:
        for attempt in range(STARTS):
            with tempfile.TemporaryDirectory() as folder:
                shutil.copy(ROOT / "assignments" / path.parent.name / "public_key.json", folder)
                shutil.copy(path, folder)
                nb = nbformat.read(path, as_version=4)
                try:
                    await NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3",
                                         allow_errors=True, resources={"metadata": {"path": folder}}).async_execute()
                    break
                except RuntimeError as e:   # a kernel that never started (a busy machine): start another
                    if not str(e).startswith(NOT_STARTED) or attempt == STARTS - 1:
                        raise
    shown = {}
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            report = out.get("data", {}).get(REPORT_MIME)
            if report:
                shown.update({o["check_id"]: "written down" if " is written down; " in o["message"] else o["status"]
                              for o in report["outcomes"]})
    return shown


def shown_in_a_kernel(path: Path) -> dict[str, str]:
    """What the kernel showed for `path`; the examples of one assignment run in kernels a few at a time."""
    assignment = path.parent.name
    if assignment not in _SHOWN:
        paths = [p for p in EXAMPLES if p.parent.name == assignment]

        async def all_of_them():
            limit = asyncio.Semaphore(KERNELS_AT_ONCE)
            return await asyncio.gather(*(_run(p, limit) for p in paths))
        _SHOWN[assignment] = dict(zip(paths, asyncio.run(all_of_them()), strict=True))
    return _SHOWN[assignment][path]


def check_agreement(path: Path, worker) -> None:
    key = load_key(ROOT / "assignments" / path.parent.name / "public_key.json")
    report = grade_notebook(path, key, worker=worker, source=Source(path, None, "file"))
    assert report.status == "graded", report.reason
    graded = {o.check_id: o.status for o in report.outcomes}
    shown = shown_in_a_kernel(path)
    differ = {c: (shown.get(c), s) for c, s in graded.items() if shown.get(c) != s
              and not (shown.get(c) == "written down" and s in ("passed", "failed"))}
    assert not differ, differ
