"""commit: the record that a learner's predictions were written down before the answer was shown. The first
`lab.check("k")` that finds every prediction of exercise k filled in commits them: their values (as wire
Values), the time, and a hash of the cells that set them. The record lives in the check cell's output (so it
travels with the notebook that is handed in) and in a file beside the notebook (so that a kernel restart or
"Run all" shows the first commit again, not a new one). The grader reads the records from the check cells'
outputs. A record is a record, not a proof: its digest shows a hand edit that forgot to redo the digest,
nothing more.

May import: stdlib, autograder.wire, autograder.model (same_student).
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autograder import wire
from autograder.model import same_student

COMMIT_MIME = "application/vnd.autograd-lab.commit+json"   # the check cell's output that holds the record
STORE = ".autograd-lab-commits.json"                         # the file beside the notebook
SCHEMA = "autograd-lab/commit"


def source_hash(sources: list[str]) -> str:
    """sha256 (hex) of the cells that set an exercise's predictions, in order."""
    return hashlib.sha256("\0".join(sources).encode()).hexdigest()


def _digest(record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def make(assignment: str, student: str, exercise: str, values: dict[str, dict[str, Any]], sources: list[str],
         when: float | None = None, computed: dict[str, str] | None = None) -> dict[str, Any]:
    """A new commit record: `values` maps each prediction variable to its wire Value; `sources` are the cells
    that set them; `when` is the time (seconds since the epoch; default now); `computed` maps a prediction
    that its cell obtained by running code (autograder.judging.worked) to the message that says so, as the cell
    stood at the commit."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if when is None else when))
    record = {"schema": SCHEMA, "v": 1, "assignment": assignment, "student": student, "exercise": exercise,
              "values": values, "time": stamp, "source": source_hash(sources)}
    if computed:
        record["computed"] = computed
    return {**record, "digest": _digest(record)}


@dataclass(frozen=True)
class Commit:
    """A record as the grader reads it: the exercise, the committed values (wire Values, validated), the time
    (ISO 8601, UTC), the hash of the cells that set them, and whether its digest matches its content."""

    exercise: str
    values: dict[str, dict[str, Any]]
    time: str
    source: str
    intact: bool
    assignment: str = ""
    student: str = ""
    record: dict[str, Any] | None = None
    computed: dict[str, str] | None = None   # the record as read (kept to show it again and to store it)


MAX_RECORD_BYTES = 200_000   # a record of more is not one (a real one holds a few predictions)


def read(record: Any) -> Commit | None:
    """A record read from a notebook, or None when it is not one (another schema, a malformed value, more than
    MAX_RECORD_BYTES, anything JSON cannot write again such as a bare NaN). A record whose digest does not match
    its content is returned with `intact` False: reported, never trusted."""
    if not isinstance(record, dict) or record.get("schema") != SCHEMA or record.get("v") != 1:
        return None
    try:
        if len(json.dumps(record, allow_nan=False)) > MAX_RECORD_BYTES:
            return None
    except (ValueError, TypeError, RecursionError):
        return None
    values, exercise = record.get("values"), record.get("exercise")
    if not isinstance(values, dict) or not isinstance(exercise, str) or not isinstance(record.get("time"), str):
        return None
    try:
        for value in values.values():
            wire.check_value(value)
    except wire.WireError:
        return None
    return Commit(exercise, {str(k): v for k, v in values.items()}, record["time"][:40],
                  str(record.get("source", ""))[:64], record.get("digest") == _digest(record),
                  str(record.get("assignment", ""))[:200], str(record.get("student", ""))[:200], record,
                  {str(k): str(v)[:2000] for k, v in computed.items()} if isinstance(computed := record.get("computed"), dict)
                  else None)


def from_outputs(outputs: Any) -> Commit | None:
    """The commit record among a cell's outputs (the first one), or None."""
    for out in outputs if isinstance(outputs, list) else []:
        data = out.get("data") if isinstance(out, dict) else None
        if isinstance(data, dict) and COMMIT_MIME in data:
            found = read(data[COMMIT_MIME])
            if found is not None:
                return found
    return None


def in_notebook(nb: Any) -> list[Commit]:
    """Every commit record in a notebook's cell outputs, in cell order."""
    found = []
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        for out in cell.get("outputs", []) if isinstance(cell, dict) else []:
            record = from_outputs([out])
            if record is not None:
                found.append(record)
    return found


def choose(records: list[Commit], assignment: str, student: str) -> dict[str, Commit | str]:
    """exercise id -> the record that counts for it (the earliest intact one of this assignment and student:
    an edited or foreign record beside it changes nothing), or, when there is none, the reason no record
    found for it can be trusted (edited by hand, or of another notebook)."""
    out: dict[str, Commit | str] = {}
    for r in sorted(records, key=lambda r: (not r.intact, r.time)):
        if isinstance(out.get(r.exercise), Commit):
            continue   # the earliest intact record of this notebook counts; others cannot replace it
        if not r.intact:
            out[r.exercise] = "its commit record was edited by hand (its digest does not match its content)"
        elif r.assignment != assignment or not same_student(r.student, student):
            out.setdefault(r.exercise, f"its commit record belongs to another notebook ({r.assignment or '?'}, "
                                       f"student {r.student or '?'})")
        else:
            out[r.exercise] = r
    return out


def seed_from_notebooks(folder: str | Path, assignment: str, student: str, limit_bytes: int = 50_000_000) -> None:
    """Copy into the folder's Store the records found in the outputs of its notebooks for this assignment and
    student (so that a notebook handed around without its Store still shows its first commits). Notebooks
    over `limit_bytes` or unreadable are passed over."""
    store = Store(folder)
    for path in sorted(Path(folder).glob("*.ipynb")):
        try:
            if path.stat().st_size > limit_bytes:
                continue
            nb = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for r in choose(in_notebook(nb), assignment, student).values():
            if isinstance(r, Commit) and r.record is not None:
                store.put(r.record)


class Store:
    """The records of the notebooks in one folder, in the file STORE there: {"<assignment>/<student>/<exercise>":
    record}. Written atomically; a file that cannot be read counts as empty."""

    def __init__(self, folder: str | Path) -> None:
        self.path = Path(folder) / STORE

    def _all(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, assignment: str, student: str, exercise: str) -> dict[str, Any] | None:
        """The first record of this exercise, or None."""
        record = self._all().get(f"{assignment}/{student}/{exercise}")
        return record if read(record) is not None else None

    def put(self, record: dict[str, Any]) -> None:
        """Keep `record` unless one for its exercise is there already (the first commit stays)."""
        data = self._all()
        name = f"{record['assignment']}/{record['student']}/{record['exercise']}"
        if name in data and read(data[name]) is not None:
            return
        data[name] = record
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
            os.replace(tmp, self.path)
        except OSError:   # a read-only folder: the record still lives in the check cell's output
            tmp.unlink(missing_ok=True)
