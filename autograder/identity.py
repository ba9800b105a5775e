"""identity: whose submission is this? The student id a submission is graded as (it seeds that student's
parameters) is resolved here and nowhere else, by one of a few documented rules, with the notes a report
gives when the notebook's own STUDENT_ID says something else.

May import: stdlib.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

PLACEHOLDER_ID = "your-student-id"   # what a released notebook's STUDENT_ID cell holds

# How a submission's id is found:
#   "file"      its file name without .ipynb, or, for a file that kept the released notebook's name, the
#               nearest folder above it that is not named after the assignment (`mia/backward-vs-grad.ipynb`
#               and nbgrader's `submitted/mia/01-backward-vs-grad/backward-vs-grad.ipynb` are both "mia");
#   "notebook"  the notebook's own STUDENT_ID (read with ast, never run), else as "file" (for downloads a
#               learning platform renamed);
#   "upload"    a Gradescope upload: $AUTOGRADER_STUDENT, else the notebook's STUDENT_ID, else the file name;
#   "self"      a self-check: the notebook's STUDENT_ID, else the file name;
#   "given"     an id the caller names (`--student`, a batch's own resolution, an nbgrader folder:
#               see `nbgrader_student`).
Rule = Literal["file", "notebook", "upload", "self", "given"]


@dataclass(frozen=True)
class Identity:
    """The id a submission is graded as, the rule that gave it, what the notebook declares, and the notes
    (for the report) where the two disagree or the notebook still has the placeholder."""

    student: str
    rule: Rule
    declared: str | None
    notes: tuple[str, ...]


def from_path(path: Path, released: str, assignment: str) -> str:
    """The "file" rule (see `Rule`): `released` is the released notebook's file name."""
    if path.stem != Path(released).stem:
        return path.stem
    for parent in path.resolve().parents:
        if parent.name and parent.name != assignment:
            return parent.name
    return path.stem


def resolve(path: Path, released: str, assignment: str, declared: str | None, rule: Rule,
            given: str | None = None) -> Identity:
    """The identity of the submission at `path` under `rule`.

    Args:
        path: the notebook file. released, assignment: the released notebook's file name and the
            assignment id. declared: the notebook's STUDENT_ID (None if it has none or cannot be read).
        rule: see `Rule`. given: the id for rule "given".
    Returns:
        Identity; its notes say when STUDENT_ID is still the placeholder, or names another id than the
        one graded.
    """
    usable = declared if declared and declared != PLACEHOLDER_ID else None
    if rule == "given" and given is not None:
        student = given
    elif rule == "notebook":
        student = usable or from_path(path, released, assignment)
    elif rule == "upload":
        student = os.environ.get("AUTOGRADER_STUDENT") or declared or path.stem
    elif rule == "self":
        student = declared or path.stem
    else:
        student = from_path(path, released, assignment)
    return Identity(student, rule, declared, tuple(notes(declared, student)))


def notes(declared: str | None, student: str) -> list[str]:
    """What a report says about the id: STUDENT_ID still the placeholder, or another id than the one graded."""
    if declared == PLACEHOLDER_ID:
        return [f"STUDENT_ID is still {PLACEHOLDER_ID!r}: set it to the id your course gave you, so that your "
                f"parameters are your own" + (f" (graded as {student!r})" if student != declared else "")]
    if declared and declared != student:
        return [f"the notebook says STUDENT_ID = {declared!r}, but it was graded as {student!r} (with the "
                f"parameters of {student!r})"]
    return []


def is_id_note(note: str) -> bool:
    """Is `note` one of this module's notes (the batch summary shows only these)?"""
    return note.startswith(("STUDENT_ID is still", "the notebook says STUDENT_ID"))


def placeholder_warning() -> str:
    """What the notebook's parameters cell shows while STUDENT_ID is still the placeholder."""
    return (f"STUDENT_ID is still {PLACEHOLDER_ID!r}: set it to the id your course gave you and run this cell "
            f"again, before you work out any prediction.")


def nbgrader_student(folder: Path, assignment: str) -> str | None:
    """nbgrader's rule: a submission's folder is `<student>/<assignment>/` (in `submitted/`, and in
    `autograded/`, where autograde runs the kernel): that student; None for another folder."""
    return folder.parent.name if folder.name == assignment and folder.parent.name else None
