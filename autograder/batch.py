"""batch: many submissions -> one report each, written atomically, and a gradebook. Finds the notebooks
in files and folders, names each submission uniquely, decides its student id, and grades them in
parallel. Imports stdlib and autograder's grade, report and render.gradebook.
"""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autograder.compare import short
from autograder.grade import grade_notebook
from autograder.render.gradebook import to_csv
from autograder.report import Report


@dataclass(frozen=True)
class Submission:
    """One notebook to grade: its `path`, a unique `name` (path relative to the folder given, or the
    file name) and the `student` id whose parameters it is graded with."""

    path: str
    name: str
    student: str


@dataclass(frozen=True)
class BatchResult:
    """What a batch wrote: the reports (in submission order), the gradebook path, reports found in
    the output folder from earlier runs (not in this gradebook), and the wall time in seconds."""

    reports: tuple[Report, ...]
    gradebook: str
    stale: tuple[str, ...]
    seconds: float


def student_for(path: Path, key: dict[str, Any]) -> str:
    """The student id of a submission file: its name without .ipynb, or, when a student kept the
    released notebook's name, the nearest folder above it that is not named after the assignment
    (so `mia/backward-vs-grad.ipynb` and `submitted/mia/01-backward-vs-grad/backward-vs-grad.ipynb`
    are both "mia")."""
    if path.stem != Path(key["notebook"]).stem:
        return path.stem
    for parent in path.resolve().parents:
        if parent.name and parent.name != key["assignment"]:
            return parent.name
    return path.stem


def find_submissions(paths: list[str], key: dict[str, Any]) -> list[Submission]:
    """Files as given, and every *.ipynb under each folder (checkpoints skipped), each once.
    Raises FileNotFoundError for a path that does not exist."""
    found: list[tuple[Path, str]] = []
    for p in map(Path, paths):
        if p.is_dir():
            found += [(q, q.relative_to(p).as_posix()) for q in sorted(p.rglob("*.ipynb"))
                      if ".ipynb_checkpoints" not in q.parts]
        elif p.exists():
            found.append((p, p.name))
        else:
            raise FileNotFoundError(f"no such file or folder: {p}")
    same_name = {n for n in (name for path, name in found if "/" not in name)
                 if sum(1 for _, other in found if other == n) > 1}
    found = [(path, f"{path.resolve().parent.name}/{name}" if name in same_name else name) for path, name in found]
    subs: list[Submission] = []
    seen: set[Path] = set()
    names: set[str] = set()
    files: set[str] = set()
    for path, name in found:
        if path.resolve() in seen:
            continue
        seen.add(path.resolve())
        unique, n = name, 2
        while unique in names or report_file(unique) in files:
            unique, n = f"{name} ({n})", n + 1
        names.add(unique)
        files.add(report_file(unique))
        subs.append(Submission(str(path), unique, student_for(path, key)))
    return subs


def report_file(name: str) -> str:
    """The report file name of a submission name: "mia/backward-vs-grad.ipynb" -> "mia__backward-vs-grad.json"."""
    stem = name[:-6] if name.endswith(".ipynb") else name
    return stem.replace("/", "__") + ".json"


def grade_batch(subs: list[Submission], key: dict[str, Any], out: str | Path, jobs: int = 1,
                progress: bool = True, hidden: list[str] | None = None) -> BatchResult:
    """Grade `subs` with `jobs` at once; write `out/reports/<name>.json` (atomically) and
    `out/gradebook.csv`. Each run cannot see `hidden` (e.g. the key's folder), the output folder
    or the submissions' folders. A submission's own faults are in its report; this never raises
    for them."""
    out = Path(out)
    reports_dir = out / "reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in reports_dir.glob("*.json")}
    start = time.monotonic()
    secret = [*(hidden or []), str(out), *sorted({str(Path(s.path).resolve().parent) for s in subs})]

    def one(sub: Submission) -> Report:
        report = grade_notebook(sub.path, key, sub.student, hidden=secret)
        report = replace(report, submission=sub.name)
        report.write(reports_dir / report_file(sub.name))
        if progress:
            done = "" if report.score is None else f" {report.score:g}/{report.max_score:g}"
            why = f" ({short(report.reason, 120)})" if report.status == "not_gradable" else ""
            print(f"graded {sub.name} ({report.student}): {report.status}{done}{why}", file=sys.stderr, flush=True)
        return report

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        reports = tuple(pool.map(one, subs))
    gradebook = out / "gradebook.csv"
    gradebook.write_text(to_csv(list(reports)), encoding="utf-8")
    written = {report_file(s.name) for s in subs}
    return BatchResult(reports, str(gradebook), tuple(sorted(before - written)), time.monotonic() - start)
