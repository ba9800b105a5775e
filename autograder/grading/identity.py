"""identity: whose submission is this? The student id a submission is graded as (it seeds that student's
parameters) is resolved here and nowhere else, by the documented rules below, from three witnesses: the
file's name, its student folder and the notebook's own STUDENT_ID. An id is recorded with a score only when
a rule resolves it; where the witnesses disagree in a way no rule resolves, the submission is not
gradable and the reason says what to do.

May import: stdlib, autograder.report (ID_NOTES: how its notes begin), autograder.grading.intake (notebook_stem),
autograder.model (same_student: ids that differ only in case are one student).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from autograder.grading.intake import notebook_stem
from autograder.model import same_student
from autograder.report import ID_NOTES

PLACEHOLDER_ID = "your-student-id"   # what a released notebook's STUDENT_ID cell holds

# How a submission's id is found (docs/staff.md, "Whose submission is this?"):
#   (in every rule, ids that differ only in case are one student, with one set of parameters: model.student_key)
#   "file"      batch grading (default). Its student folder (the first folder below the folder given to `grade`
#               that is not named after the assignment: nbgrader's
#               submitted/<student>/<assignment>/ too), and the file's name without .ipynb (a copy's
#               decoration taken off where the folder or STUDENT_ID says so: "mia (1)" in mia's folder), unless it is the released notebook's name or a copy
#               of it that a browser, Jupyter, a cloud drive or a learning platform named ("backward-vs-grad
#               (1)", "backward-vs-grad-Copy1", "Copy of backward-vs-grad", "backward-vs-grad - Copy",
#               "backward-vs-grad copy 2", "smith_123_backward-vs-grad", "backward-vs-grad-mia"); with
#               neither, the notebook's STUDENT_ID. The folder is the course's evidence: a file name that names
#               another student than its folder does is not gradable (a name never speaks for another
#               student), and so is a STUDENT_ID (not the placeholder) that names someone else than the file
#               or the folder.
#   "notebook"  `grade --ids notebook`: the notebook's STUDENT_ID, else as "file" (for downloads a learning
#               platform renamed); a file name that says otherwise is noted, not refused; a student folder that
#               says otherwise is not gradable (the folder is the course's, STUDENT_ID the student's claim).
#   "upload"    a Gradescope upload: $AUTOGRADER_STUDENT; else the uploader's student id (SID) in Gradescope's
#               submission_metadata.json, the course's record (a STUDENT_ID that names someone else: not
#               gradable); without one, STUDENT_ID, else the file's name (a released name or a copy of it: not
#               gradable, with the reason).
#   "self"      a self-check (`autograder check`): STUDENT_ID, else the file's name.
#   "folder"    an nbgrader course: the student folder (submitted/<student>/<assignment>/), whatever the
#               file is called; a STUDENT_ID that names someone else: not gradable.
#   "given"     an id the caller names (`check --student`).
Rule = Literal["file", "folder", "notebook", "upload", "self", "given"]

# Names that browsers, Jupyter, cloud drives and operating systems give a copy of a file (case-insensitive).
_COPY = [re.compile(p, re.I) for p in (
    r"^copy of (.+)$",                  # Google Drive, Colab
    r"^(.+?)\s*\(\d+\)$",               # browsers: "name (1)"
    r"^(.+?)-copy\d*$",                 # Jupyter: "name-Copy1"
    r"^(.+?)\s+-\s+copy$",              # Windows: "name - Copy"
    r"^(.+?)\s+copy(?:\s+\d+)?$",       # macOS: "name copy", "name copy 2"
    r"^(.+?)-\d+$",                     # Canvas: a re-upload "name-1"
)]


_SCRATCH = re.compile(r"^untitled(?:[-_ ]?\d+)?$", re.I)   # Jupyter's, JupyterLab's and VS Code's new notebooks


def undecorated(stem: str) -> str:
    """`stem` without the decorations copies get ("backward-vs-grad (1)" -> "backward-vs-grad")."""
    while True:
        for pattern in _COPY:
            m = pattern.match(stem.strip())
            if m:
                stem = m.group(1)
                break
        else:
            return stem.strip()


def _around(stem: str, released: str) -> str | None:
    """What stands around the released name in `stem` (a copy's decorations taken off first): "" for the released
    name itself, "smith_12345" of "smith_12345_backward-vs-grad", "mia" of "backward-vs-grad-mia"; None when
    `stem` is another name."""
    core, base = undecorated(stem), Path(released).stem
    low, lbase = core.lower(), base.lower()
    if low == lbase:
        return ""
    for sep in "-_ .":
        if low.startswith(lbase + sep):
            return core[len(base) + 1:].strip("-_ .")
        if low.endswith(sep + lbase):
            return core[: -len(base) - 1].strip("-_ .")
    return None


def decoration(stem: str, released: str) -> str:
    """What a platform or a learner added to the released name ("smith_12345" of "smith_12345_backward-vs-grad",
    "mia" of "backward-vs-grad-mia"); "" for the released name itself or a copy of it, or another name."""
    return _around(stem, released) or ""


def _names_in(text: str, student: str) -> bool:
    """Does `text` (a file name's decoration) hold `student`, letters and digits compared without case or separators
    (Canvas writes "smithjohn_12345_67890_<name>": "john" and "smith" are both in it)?"""
    plain = lambda t: re.sub(r"[^0-9a-z]", "", t.lower())
    return bool(plain(student)) and plain(student) in plain(text)


def is_released_name(stem: str, released: str) -> bool:
    """Is `stem` the released notebook's stem, a copy of it, or it with a platform's prefix or a suffix
    ("smith_12345_backward-vs-grad", "backward-vs-grad-mia")? Then the file's name is not a student id."""
    return _around(stem, released) is not None


@dataclass(frozen=True)
class Source:
    """Where a submission came from: its file, its student folder (None when it has none: see `Rule`), and
    the rule its id is found by (`given`: the id for rule "given"; `uploader`: for rule "upload", who the
    platform says uploaded it)."""

    path: Path
    folder: str | None
    rule: Rule = "file"
    given: str | None = None
    uploader: tuple[str, ...] = ()   # rule "upload": the ids the platform's own record gives the uploader (SIDs)


# nbgrader's course folders that hold the students' folders (course/submitted/<student>/<assignment>/, and
# autograded/ and feedback/ alike): never a student's.
NBGRADER_FOLDERS = frozenset({"submitted", "autograded", "feedback"})


def student_folder(folders: tuple[str, ...], assignment: str) -> str | None:
    """The student folder of a submission found under a folder given to `grade`: of the folders between that
    folder and the file (`folders`, outermost first, as found: links are never followed), the first that is not
    named after the assignment and is not one of nbgrader's course folders (`<student>/...`, nbgrader's
    `submitted/<student>/<assignment>/`, or `<assignment>/<student>/`); None when there is none. The outermost: a
    folder inside a student's own folder is still that student's, never another student's (`mallory/ada/` is
    mallory's)."""
    for name in folders:
        if name and name != assignment and name not in NBGRADER_FOLDERS:
            return name
    return None


@dataclass(frozen=True)
class Identity:
    """The id a submission is graded as (`student`), or why none can be given (`problem`, for a
    not-gradable report), with the rule that decided, what the notebook declares, and the notes a report
    gives (STUDENT_ID still the placeholder, or a witness that says otherwise)."""

    student: str
    rule: Rule
    declared: str | None
    notes: tuple[str, ...] = ()
    problem: str = ""


def resolve(source: Source, released: str, assignment: str, declared: str | None) -> Identity:
    """The identity of a submission (see `Rule`).

    Args:
        source: its file, student folder and rule. released, assignment: the released notebook's file
            name and the assignment id. declared: the notebook's STUDENT_ID (None if it has none or the
            notebook cannot be read).
    Returns:
        Identity; `problem` is set (and `student` is the best name to list it under) when no rule
        resolves whose submission it is.
    """
    stem = notebook_stem(source.path.name)
    usable = declared if declared and declared != PLACEHOLDER_ID else None
    scratch = bool(_SCRATCH.match(undecorated(stem)))   # Jupyter's name for a new notebook names no student
    by_file = None if is_released_name(stem, released) or scratch else stem
    no_id = "the name Jupyter gives a new notebook" if scratch else "the released notebook's name"
    if by_file and by_file != undecorated(by_file) and any(same_student(undecorated(by_file), w)
                                                           for w in (source.folder, declared)):
        by_file = undecorated(by_file)   # "mia (1)": a copy of mia's own file, as her folder or STUDENT_ID says
    if source.rule == "given" and source.given is not None:
        return _with_notes(source.given, "given", declared)
    if source.rule == "self":
        return _with_notes(declared or stem, "self", declared)
    if source.rule == "upload" and source.uploader and not os.environ.get("AUTOGRADER_STUDENT"):
        ids = source.uploader   # the platform's record outranks what the notebook claims
        if usable and not any(same_student(usable, i) for i in ids):
            return Identity(ids[0], "upload", declared, problem=(
                f"whose notebook is this? It was uploaded by {' and '.join(map(repr, ids))} (the course's record), "
                f"but its STUDENT_ID says {usable!r}: set STUDENT_ID to your own id, save, and upload it again"))
        return _with_notes(next((i for i in ids if same_student(i, usable)), ids[0]), "upload", declared)
    if source.rule == "upload":
        chosen = os.environ.get("AUTOGRADER_STUDENT") or declared or by_file
        if not chosen:
            return Identity(stem, "upload", declared, problem=(
                f"whose notebook is this? Its STUDENT_ID is not set and its name ({source.path.name}) is the "
                f"released notebook's: set STUDENT_ID in its first cell to your id, save, and upload it again"))
        return _with_notes(chosen, "upload", declared)
    folder = source.folder
    if source.rule in ("file", "notebook") and folder and by_file and not same_student(by_file, folder):
        return Identity(folder, source.rule, declared, problem=(
            f"whose submission is this? It is in the folder of {folder!r} but its file name says {by_file!r}: a file "
            f"name never speaks for another student than its folder. If {folder!r} is not a student's folder, "
            f"grade the folder that holds the students' folders (or the files themselves); else rename the file"))
    if source.rule == "notebook" and usable:
        if folder and not same_student(folder, usable):
            return Identity(folder, "notebook", declared, problem=(
                f"whose submission is this? It is in the folder of {folder!r} but its STUDENT_ID says {usable!r}: "
                f"the folder is the course's record, so --ids notebook does not override it"))
        notes = ([f"graded as its STUDENT_ID {usable!r} (grade --ids notebook); its file name says {by_file!r}"]
                 if by_file and not same_student(by_file, usable) else [])
        return Identity(folder or usable, "notebook", declared, tuple(notes))
    witness, what = ((folder, "folder") if folder or source.rule == "folder" else (by_file, "file name"))
    added = decoration(stem, released)
    if witness is None and usable and added and not _names_in(added, usable):
        return Identity(usable, source.rule, declared, problem=(
            f"whose submission is this? Its file name says {added!r} beside the released name (a learning platform's "
            f"record of who handed it in) but its STUDENT_ID says {usable!r}, which that name does not hold: check "
            f"who handed it in, then put it in a folder named after that student"))
    if witness is None:
        if usable:
            return Identity(usable, source.rule, declared, (
                f"graded as its STUDENT_ID {usable!r}: the file has {no_id} ({source.path.name}) and no student "
                f"folder",))
        return Identity(stem, source.rule, declared, problem=(
            f"whose submission is this? {source.path.name} is {no_id}, it is in no student folder, and its "
            f"STUDENT_ID is {'not set' if not declared else 'still the placeholder'}: name the file "
            f"<student-id>.ipynb or put it in a folder named after the student"))
    if usable and not same_student(usable, witness):
        fix = (f"rename the file (or correct STUDENT_ID), or grade with --ids notebook to grade it as {usable!r}"
               if what == "file name" else   # --ids notebook never overrides a folder: the course's record
               "check who handed it in: move it to that student's folder (or correct STUDENT_ID)")
        return Identity(witness, source.rule, declared, problem=(
            f"whose submission is this? Its {what} says {witness!r} but its STUDENT_ID says {usable!r}, and the "
            f"parameters it was worked with are those of {usable!r}: {fix}"))
    return _with_notes(witness, source.rule, declared)


def _with_notes(student: str, rule: Rule, declared: str | None) -> Identity:
    return Identity(student, rule, declared, tuple(notes(declared, student)))


def notes(declared: str | None, student: str) -> list[str]:
    """What a report says about the id: STUDENT_ID still the placeholder, or another id than the one graded."""
    if declared == PLACEHOLDER_ID:
        return [f"STUDENT_ID is still {PLACEHOLDER_ID!r}: set it to the id your course gave you, so that your "
                f"parameters are your own" + (f" (graded as {student!r})" if student != declared else "")]
    if declared and not same_student(declared, student):
        return [f"the notebook says STUDENT_ID = {declared!r}, but it was graded as {student!r} (with the "
                f"parameters of {student!r})"]
    return []


def is_id_note(note: str) -> bool:
    """Is `note` one of this module's notes (the batch summary shows only these)?"""
    return note.startswith(ID_NOTES)


def placeholder_warning() -> str:
    """What the notebook's parameters cell shows while STUDENT_ID is still the placeholder."""
    return (f"STUDENT_ID is still {PLACEHOLDER_ID!r}: set it to the id your course gave you and run this cell "
            f"again, before you work out any prediction.")


def nbgrader_student(folder: Path, assignment: str) -> str | None:
    """nbgrader's rule: a submission's folder is `<student>/<assignment>/` (in `submitted/`, and in
    `autograded/`, where autograde runs the kernel): that student; None for another folder."""
    return folder.parent.name if folder.name == assignment and folder.parent.name else None
