"""handin: a learner's hand-in of a course's notebook (`lab.submit()`, `autograder submit`): the saved file's bytes
to the course service, which keeps them with its own time, and the receipt in words.

May import: stdlib, autograder.grading.coursefile, autograder.student.service_client.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any


def _course_here(notebook: Path) -> Any:
    from autograder.grading import coursefile

    path = notebook.parent / coursefile.FILE
    if not path.exists():
        raise RuntimeError(f"no course.json beside {notebook}: hand in a course's notebook from its own folder")
    return coursefile.load(path)


def hand_in(notebook: str | Path, token: str | None = None) -> dict[str, Any]:
    """Hand in the saved `notebook` to its course (course.json beside it); returns the receipt. Raises RuntimeError
    (the message says why, and that the work stays in the notebook)."""
    from autograder.student.service_client import Client, ServiceError, find_token

    notebook = Path(notebook)
    if notebook.is_dir():
        raise RuntimeError(f"{notebook} is a folder: give the notebook file itself (its .ipynb)")
    course = _course_here(notebook)
    token = token or find_token(course.auth, course.service)
    if token is None:
        raise RuntimeError("no course token here: run `autograder login` in the assignment's folder first")
    try:
        data = notebook.read_bytes()
    except OSError as e:
        raise RuntimeError(f"cannot read {notebook}: {e}") from None
    try:
        return Client(course.service, token).request_bytes("POST", f"/assignments/{course.assignment}/handins", data)
    except ServiceError as e:
        raise RuntimeError(f"not handed in: {e.reason}" if not e.reason.startswith("not handed in") else e.reason) from None


def receipt_text(r: dict[str, Any]) -> str:
    """A hand-in's receipt in words, for the student."""
    late = f"; {r.get('why')}" if r.get("late_by") else ("; on time" if r.get("due") else "")
    due = (f"; due {r['due']}" + (" (your extension)" if r.get("extension") else "")) if r.get("due") else ""
    which = ("It is the hand-in that counts now." if r.get("counts") else
             "An earlier hand-in, made before the deadline, still counts.")
    if r.get("again"):
        return (f"{r['assignment']}: this is the same notebook as your last hand-in, of {r['received']} (sha256 "
                f"{r['digest'][:16]}…), so it is kept once{due}{late}. {which}")
    return (f"handed in {r['assignment']} as {r['student']} at {r['received']} (the course's clock): {r['size']:,} bytes, "
            f"sha256 {r['digest'][:16]}…{due}{late}. {which}")
