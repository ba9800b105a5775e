"""nbgrader: nbgrader course directories. Finds submissions in `submitted/<student>/<assignment>/`, and,
from our reports, writes nbgrader's `autograded/` and `feedback/` folders and the scores into its
gradebook database, so that formgrader shows them.

May import: stdlib, nbformat, nbgrader (its documented Python API, nbgrader.api.Gradebook), autograder.model,
autograder.report, autograder.grading.identity, autograder.grading.notebook, autograder.grading.batch,
autograder.judging.sources, autograder.render.html.
"""
from __future__ import annotations

import shutil
from pathlib import Path

from autograder.grading import identity
from autograder.grading.batch import Submission
from autograder.model import Key
from autograder.judging.sources import check_cell_exercise
from autograder.report import Report


def is_course(path: str | Path) -> bool:
    """Is `path` an nbgrader course directory (it has nbgrader_config.py or a submitted/ folder)?"""
    p = Path(path)
    return p.is_dir() and ((p / "nbgrader_config.py").is_file() or (p / "submitted").is_dir())


def submissions(course: str | Path, assignment: str) -> list[Submission]:
    """The submitted notebooks of `assignment`: `submitted/<student>/<assignment>/*.ipynb`, sorted,
    each named "<student>/<notebook>" and graded as <student> (identity rule "folder": a STUDENT_ID that
    names someone else makes it not gradable)."""
    root = Path(course) / "submitted"
    found = [p for p in sorted(root.glob(f"*/{assignment}/*.ipynb")) if ".ipynb_checkpoints" not in p.parts]
    students = [identity.nbgrader_student(p.parent, assignment) or p.parent.parent.name for p in found]
    return [Submission(str(p), f"{s}/{p.name}", identity.Source(p, s, "folder"))
            for p, s in zip(found, students, strict=True)]


def _exercise_scores(report: Report) -> dict[str, float]:
    scores: dict[str, float] = {}
    for o in report.outcomes:
        scores[o.exercise] = scores.get(o.exercise, 0.0) + o.score
    return scores


def write_autograded(course: str | Path, submission: str | Path, report: Report, released: str) -> Path:
    """Write `autograded/<student>/<assignment>/<released>`: the submission, under the released notebook's
    name (the name nbgrader's gradebook and formgrader use, whatever the student called the file), with each
    exercise's
    `lab.check` grade cell holding the exercise's score as its result (what nbgrader's own
    determine_grade reads), and the whole report in the notebook's metadata ("autograd_lab").
    A not-gradable submission's grade cells hold an error that says why (nbgrader shows it).
    Returns the path written."""
    import nbformat

    sub = Path(submission)
    out = Path(course) / "autograded" / report.student / report.assignment / Path(released).name
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        nb = nbformat.read(sub, as_version=4)
    except Exception:  # an unreadable submission: keep its bytes; the report says why
        shutil.copyfile(sub, out)
        return out
    scores = _exercise_scores(report)
    for cell in nb.cells:
        exercise = check_cell_exercise(cell.source) if cell.cell_type == "code" else None
        if exercise is None:
            continue
        if report.status != "graded":
            cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded", evalue=report.reason, traceback=[])]
        else:
            cell.outputs = [nbformat.v4.new_output("execute_result", {"text/plain": f"{scores.get(exercise, 0.0):g}"},
                                                   execution_count=None)]
    nb.metadata["autograd_lab"] = {**nb.metadata.get("autograd_lab", {}), "report": report.to_dict()}
    nbformat.write(nb, out)
    timestamp = sub.parent / "timestamp.txt"
    if timestamp.is_file():
        shutil.copyfile(timestamp, out.parent / "timestamp.txt")
    return out


def write_feedback(course: str | Path, report: Report, released: str) -> Path:
    """Write `feedback/<student>/<assignment>/<released notebook's stem>.html` (the name nbgrader's own
    feedback has): the report's feedback page."""
    from autograder.render.html import to_html

    out = Path(course) / "feedback" / report.student / report.assignment / (Path(released).stem + ".html")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_html(report), encoding="utf-8")
    return out


def record_scores(course: str | Path, key: Key, reports: list[Report]) -> int:
    """Put each graded report's exercise scores into nbgrader's gradebook.db as the auto scores of
    the `lab.check` grade cells (the assignment must be in the database: `nbgrader
    generate_assignment` puts it there). Creates missing students and submissions. A not-gradable
    report gets no score (its cells stay ungraded, never 0). Returns the number of submissions
    recorded; 0 when the course has no gradebook.db or does not know the assignment.
    Source: nbgrader.api.Gradebook (nbgrader 0.9)."""
    from nbgrader.api import Gradebook, MissingEntry

    db = Path(course) / "gradebook.db"
    if not db.is_file():
        return 0
    notebook = Path(key.notebook).stem
    done = 0
    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            cells = gb.find_notebook(notebook, key.assignment).grade_cells
        except MissingEntry:
            return 0
        names: dict[str, str] = {}   # exercise -> its grade cell, read from nbgrader's own copy of the source
        for cell in cells:
            exercise = check_cell_exercise(gb.find_source_cell(cell.name, notebook, key.assignment).source)
            if exercise:
                names[exercise] = cell.name
        for report in reports:
            if report.status != "graded" or report.superseded_by:
                continue
            gb.update_or_create_student(report.student)
            try:
                gb.find_submission(key.assignment, report.student)
            except MissingEntry:
                gb.add_submission(key.assignment, report.student)
            for exercise, score in _exercise_scores(report).items():
                if exercise in names:
                    grade = gb.find_grade(names[exercise], notebook, key.assignment, report.student)
                    grade.auto_score = score
                    # as nbgrader's autograde (SaveAutoGrades): review only where a person already graded
                    grade.needs_manual_grade = grade.manual_score is not None
            gb.db.commit()
            done += 1
    return done
