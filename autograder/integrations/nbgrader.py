"""nbgrader: nbgrader course directories. Finds submissions in `submitted/<student>/<assignment>/`, and,
from our reports, writes nbgrader's `autograded/` and `feedback/` folders and the scores into its
gradebook database, so that formgrader shows them (`autograder grade --nbgrader`). For a course that runs
`nbgrader autograde` itself, `configure` puts `GradeInSandbox` where nbgrader would run the notebook in a kernel:
each submission is graded by our sandboxed grader, out of any kernel, and the full key never enters a student's
process; nbgrader then records the scores as its own.

May import: stdlib, nbformat, nbconvert (its Preprocessor), traitlets, nbgrader (its documented Python API:
nbgrader.api.Gradebook, nbgrader.coursedir.CourseDirectory), autograder.model, autograder.keyfile,
autograder.report, autograder.grading.identity, autograder.grading.intake, autograder.grading.notebook,
autograder.grading.batch, autograder.grading.grade, autograder.grading.overrides, autograder.judging.sources, autograder.render.html,
autograder.render.terminal, autograder.sandbox.client.
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from autograder.grading import identity, intake
from autograder.grading.batch import Submission
from autograder.grading.overrides import machine
from autograder.model import Key
from autograder.judging.sources import check_cell_exercise
from autograder.report import Report, write_text_atomic


def is_course(path: str | Path) -> bool:
    """Is `path` an nbgrader course directory (it has nbgrader_config.py or a submitted/ folder)?"""
    p = Path(path)
    return p.is_dir() and ((p / "nbgrader_config.py").is_file() or (p / "submitted").is_dir())


def submissions(course: str | Path, assignment: str, ignored: list[str] | None = None) -> list[Submission]:
    """The submitted notebooks of `assignment`: `submitted/<student>/<assignment>/*.ipynb`, sorted,
    each named "<student>/<notebook>" and graded as <student> (identity rule "folder": a STUDENT_ID that
    names someone else makes it not gradable). With `ignored` (a list to add to): where a student's folder also holds
    a worked notebook of the assignment, a notebook that is not one (no cell of the assignment: a scratch
    Untitled.ipynb), one unchanged since its release (an untouched -Copy1) or a second copy of one file (the same
    bytes) is not a submission: it is left out and
    named in `ignored` with why (nbgrader #258: "skip extra notebooks"), so that it does not compete with the work."""
    from autograder.grading.notebook import not_work

    subs = _submissions(course, assignment)
    if ignored is None:
        return subs
    by_student: dict[str, list[Submission]] = {}
    for s in subs:
        by_student.setdefault(s.name.split("/", 1)[0], []).append(s)
    kept: list[Submission] = []
    for group in by_student.values():
        why: dict[str, str] = {}
        first: dict[str, str] = {}   # sha256 of the bytes -> the first notebook that holds them
        for s in sorted(group, key=lambda s: (len(s.name), s.name)) if len(group) > 1 else ():   # the file, then copies
            try:   # read once: whether it is work, and whether it is a file already seen
                data = s.read()
            except intake.Refused:
                why[s.name] = ""   # not readable: graded, and its report says why
                continue
            why[s.name] = not_work(data, Path(s.path).name)
            digest = hashlib.sha256(data).hexdigest()
            if digest in first and not why[s.name]:   # one file handed in twice: the first is the work
                why[s.name] = f"the same file as {first[digest]}"
            first.setdefault(digest, s.name)
        worked = [s for s in group if not why.get(s.name)]
        if worked and len(worked) < len(group):
            ignored += [f"{s.name} ({why[s.name]})" for s in group if why[s.name]]
            group = worked
        kept += group
    return kept


def _submissions(course: str | Path, assignment: str) -> list[Submission]:
    root = Path(course) / "submitted"
    if not root.is_dir():
        return []
    subs = []
    for f in intake.find([root]):   # no link followed; a link or a special file is a submission the intake refuses
        parts = Path(f.name).parts
        if len(parts) == 3 and parts[1] == assignment:
            subs.append(Submission(str(f.path), f"{parts[0]}/{parts[2]}", identity.Source(f.path, parts[0], "folder"), f))
        elif len(parts) == 2 and parts[1] == assignment and f.kind == "folder link":
            subs.append(Submission(str(f.path), f"{parts[0]}/{parts[1]}", identity.Source(f.path, parts[0], "folder"), f))
    return subs


def _exercise_scores(report: Report) -> dict[str, float]:
    scores: dict[str, float] = {}
    for o in report.outcomes:
        scores[o.exercise] = scores.get(o.exercise, 0.0) + o.score
    return scores


def write_autograded(course: str | Path, submission: Submission, report: Report, released: str) -> Path:
    """Write `autograded/<student>/<assignment>/<released>`: the submission, under the released notebook's
    name (the name nbgrader's gradebook and formgrader use, whatever the student called the file), with each
    exercise's
    `lab.check` grade cell holding the exercise's score as its result (what nbgrader's own
    determine_grade reads), and the whole report in the notebook's metadata ("autograd_lab").
    A not-gradable submission's grade cells hold an error that says why (nbgrader shows it); one the grader
    cannot read as a notebook is written as its bytes (if the intake read it: never through a link). The
    submission's own timestamp.txt (nbgrader's hand-in time) is copied the same way. Returns the path written."""
    import nbformat

    sub = Path(submission.path)
    out = Path(course) / "autograded" / report.student / report.assignment / Path(released).name
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        data = submission.read()
    except intake.Refused:
        data = None
    try:
        if data is None:
            raise ValueError("not read")
        nb = nbformat.reads(data.decode("utf-8"), as_version=4)
    except Exception:  # an unreadable submission: keep its bytes, if any; the report says why
        if data is not None:
            out.write_bytes(data)
        else:
            out.unlink(missing_ok=True)
        return out
    fill_grade_cells(nb, report, with_text=False)
    nb.metadata["autograd_lab"] = {**nb.metadata.get("autograd_lab", {}), "report": report.to_dict()}
    # Whole or not at all; a lone surrogate (half of an emoji, valid in JSON as "\\ud83d") is written back as
    # that escape (write_text_atomic's backslashreplace), where UTF-8 has no bytes for it.
    write_text_atomic(out, nbformat.writes(nb))
    f = submission.found
    stamp = (intake.Found(sub.parent / "timestamp.txt", (Path(f.name).parent / "timestamp.txt").as_posix(), f.root)
             if f is not None else intake.Found(sub.parent / "timestamp.txt", "timestamp.txt", None))
    try:
        (out.parent / "timestamp.txt").write_bytes(intake.read(stamp, limit=1000))
    except intake.Refused:
        pass
    return out


def write_feedback(course: str | Path, report: Report, released: str) -> Path:
    """Write `feedback/<student>/<assignment>/<released notebook's stem>.html` (the name nbgrader's own
    feedback has): the report's feedback page."""
    from autograder.render.html import to_html

    out = Path(course) / "feedback" / report.student / report.assignment / (Path(released).stem + ".html")
    write_text_atomic(out, to_html(report))
    return out


def hand_in_time(submission: Submission) -> Any:
    """The submission's hand-in time as nbgrader's exchange wrote it (timestamp.txt beside the notebook, read through
    the intake: never through a link, at most 1000 bytes), as a naive UTC datetime; None when there is none.

    Raises:
        ValueError: there is one, but it is not a time nbgrader.utils.parse_utc reads (empty, text, unreadable); the
            message says so without quoting it (nbgrader's autograde warns about an empty one and fails one of text; we
            grade it, and staff should hear of it).
    """
    from nbgrader.utils import parse_utc

    sub = Path(submission.path)
    f = submission.found
    stamp = (intake.Found(sub.parent / "timestamp.txt", (Path(f.name).parent / "timestamp.txt").as_posix(), f.root)
             if f is not None else intake.Found(sub.parent / "timestamp.txt", "timestamp.txt", None))
    if not os.path.lexists(stamp.path):
        return None
    try:
        text = intake.read(stamp, limit=1000).decode("utf-8").strip()
    except intake.Refused as e:
        raise ValueError(str(e)) from None
    except UnicodeDecodeError:
        raise ValueError("it is not UTF-8 text") from None
    if not text:
        raise ValueError("it is empty")
    try:
        return parse_utc(text)
    except (ValueError, OverflowError, TypeError):
        raise ValueError("it is not a time") from None


def late_plugin(course: str | Path) -> Any:
    """The course's LateSubmissionPlugin (its penalty_method, or the plugin class nbgrader_config.py names), as
    nbgrader's autograde makes it."""
    from nbgrader.plugins import LateSubmissionPlugin
    from traitlets.config.loader import PyFileConfigLoader

    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course)).load_config()
    except Exception:   # the course's own config: nbgrader itself would stop at it; the default plugin then
        config = None
    cls = LateSubmissionPlugin
    wanted = config.get("AssignLatePenalties", {}).get("plugin_class") if config is not None else None
    if isinstance(wanted, type) and issubclass(wanted, LateSubmissionPlugin):
        cls = wanted
    return cls(config=config) if config is not None else cls()


def record_scores(course: str | Path, key: Key, reports: list[Report],
                  hand_ins: dict[str, Any] | None = None) -> list[tuple[str, float, float | None]] | None:
    """Put each graded report's exercise scores into nbgrader's gradebook.db as the auto scores of
    the `lab.check` grade cells (the assignment must be in the database: `nbgrader
    generate_assignment` puts it there). Creates missing students and submissions. A not-gradable
    report gets no score (its cells stay ungraded, never 0). `hand_ins`: student -> hand-in time (timestamp.txt,
    `hand_in_time`), recorded as the submission's timestamp, so that nbgrader sees a late submission as late; the
    course's late penalty (its LateSubmissionPlugin, as nbgrader's autograde applies it) is then recorded too.
    An exercise with a check staff overrode (Outcome.adjusted) gets the grader's score as its auto score and the
    exercise's score with the overrides as its manual score (which nbgrader counts, and formgrader shows as graded by
    hand); a manual score set earlier stays where no override is now (nbgrader cannot tell ours from a person's).
    Returns (student, seconds late, penalty or None) of each submission recorded; None when the course has no
    gradebook.db or it does not know the assignment.
    Source: nbgrader.api.Gradebook, nbgrader.preprocessors.AssignLatePenalties (nbgrader 0.9)."""
    from nbgrader.api import Gradebook, MissingEntry

    db = Path(course) / "gradebook.db"
    if not db.is_file():
        return None
    notebook = Path(key.notebook).stem
    done: list[tuple[str, float, float | None]] = []
    plugin = late_plugin(course) if hand_ins else None
    with Gradebook(f"sqlite:///{db}") as gb:
        try:
            cells = gb.find_notebook(notebook, key.assignment).grade_cells
        except MissingEntry:
            return None
        names: dict[str, str] = {}   # exercise -> its grade cell, read from nbgrader's own copy of the source
        for cell in cells:
            exercise = check_cell_exercise(gb.find_source_cell(cell.name, notebook, key.assignment).source)
            if exercise:
                names[exercise] = cell.name
        for report in reports:
            if not report.counted:
                continue
            gb.update_or_create_student(report.student)
            stamp = (hand_ins or {}).get(report.student)
            gb.update_or_create_submission(key.assignment, report.student, **({"timestamp": stamp} if stamp else {}))
            adjusted = {o.exercise for o in report.adjusted()}   # staff's overrides: nbgrader's manual scores
            for exercise, score in _exercise_scores(machine(report)).items():
                if exercise in names:
                    grade = gb.find_grade(names[exercise], notebook, key.assignment, report.student)
                    grade.auto_score = score
                    if exercise in adjusted:
                        grade.manual_score = _exercise_scores(report)[exercise]
                        grade.needs_manual_grade = False
                    else:   # as nbgrader's autograde (SaveAutoGrades): review only where a person already graded
                        grade.needs_manual_grade = grade.manual_score is not None
            gb.db.commit()
            submitted = gb.find_submission(key.assignment, report.student)
            late = float(submitted.total_seconds_late or 0)
            penalty = None
            nb_row = gb.find_submission_notebook(notebook, key.assignment, report.student)
            nb_row.late_submission_penalty = None   # as nbgrader's AssignLatePenalties: reset, then the course's policy
            if late > 0 and plugin is not None:
                penalty = plugin.late_submission_penalty(report.student, nb_row.score, late)
                if penalty is not None:
                    penalty = min(max(float(penalty), 0.0), float(nb_row.score))
                    nb_row.late_submission_penalty = penalty
            gb.db.commit()
            done.append((report.student, late, penalty))
    return done


# ----------------------------------------------------------------------------- nbgrader autograde, sandboxed

def configure(c: Any, keys: str | Path) -> None:
    """Set a course's nbgrader_config.py up for our notebooks (call it there: `configure(c, "/path/to/build")`,
    `keys` being the folder that holds <assignment>/key.json, autograd-lab's build/): nbgrader's student copy keeps
    our `...` placeholders, and `nbgrader autograde` grades with `GradeInSandbox` instead of running the
    student's notebook in a kernel (where code the student wrote could set its own score), and without nbgrader's
    warning for our STUDENT_ID cell at every submission (`OverwriteCellsQuietly`)."""
    c.ClearSolutions.code_stub = {"python": ""}
    c.GradeInSandbox.keys = str(keys)
    c.Autograde.autograde_preprocessors = [
        "autograder.integrations.nbgrader.GradeInSandbox", "nbgrader.preprocessors.LimitOutput",
        "nbgrader.preprocessors.SaveAutoGrades", "nbgrader.preprocessors.AssignLatePenalties",
        "nbgrader.preprocessors.CheckCellMetadata"]
    # nbgrader's own DeduplicateIds leaves a copied grade cell with `"nbgrader": {}`, which its CheckCellMetadata then
    # takes for an old metadata format: the whole submission fails and scores 0 (nbgrader #108, a copied check cell)
    c.Autograde.sanitize_preprocessors = [
        "nbgrader.preprocessors.ClearOutput", "autograder.integrations.nbgrader.DeduplicateGradeIds",
        "nbgrader.preprocessors.OverwriteKernelspec", "autograder.integrations.nbgrader.OverwriteCellsQuietly",
        "nbgrader.preprocessors.CheckCellMetadata"]


def _preprocessor_base() -> type:
    from nbconvert.preprocessors import Preprocessor

    return Preprocessor


def _is_grade(cell: Any) -> bool:
    meta = cell.get("metadata", {}).get("nbgrader")
    return isinstance(meta, dict) and bool(meta.get("grade"))


def fill_grade_cells(nb: Any, report: Report, with_text: bool) -> None:
    """Each exercise's grade cell gets its score as the cell's result (what nbgrader's determine_grade reads: its
    partial credit), and with `with_text` the report's text of that exercise as its printed output; for a
    not-gradable report, an error that says why (never points). An exercise's grade cell is its lab.check cell that
    nbgrader grades (after dedupe_grade_ids), else its first; another lab.check cell of it (a copy) says where the
    score is, as an error if nbgrader would grade it (nbgrader gives a grade cell without an error full marks). A
    grade cell that is no lab.check cell gets an error as well."""
    import nbformat

    from autograder.render.terminal import render

    dedupe_grade_ids(nb)
    scores = _exercise_scores(report)
    exercises = [check_cell_exercise(c.source) if c.cell_type == "code" else None for c in nb.cells]
    home: dict[str, int] = {}
    for i, exercise in enumerate(exercises):
        if exercise is not None and (exercise not in home or (_is_grade(nb.cells[i]) and not _is_grade(nb.cells[home[exercise]]))):
            home[exercise] = i
    for i, (cell, exercise) in enumerate(zip(nb.cells, exercises, strict=True)):
        if exercise is None:
            if cell.cell_type == "code" and _is_grade(cell) and not cell.metadata["nbgrader"].get("solution"):
                cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded", traceback=[], evalue=(
                    "not a lab.check cell: autograd-lab grades only its exercises' check cells"))]
            continue
        if home[exercise] != i:   # a copied check cell: the exercise's grade cell holds its score
            where = f"a copy of exercise {exercise}'s check cell: its score is in cell {home[exercise] + 1}"
            cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded", evalue=where, traceback=[])
                            if _is_grade(cell) else nbformat.v4.new_output("stream", name="stdout", text=where + "\n")]
            continue
        if report.status != "graded":
            cell.outputs = [nbformat.v4.new_output("error", ename="NotGraded", evalue=report.reason, traceback=[])]
            continue
        score = scores.get(exercise, 0.0)
        text = render(replace(report, outcomes=tuple(o for o in report.outcomes if o.exercise == exercise), score=score,
                              max_score=sum(o.max_score for o in report.outcomes if o.exercise == exercise)))
        cell.outputs = ([nbformat.v4.new_output("stream", name="stdout", text=text)] if with_text else []) + [
            nbformat.v4.new_output("execute_result", {"text/plain": f"{score:g}"}, execution_count=None)]


def dedupe_grade_ids(nb: Any) -> list[str]:
    """Keep the first cell of each nbgrader grade_id; take the nbgrader metadata off every later one (a copied cell:
    nbgrader grades a grade_id once, and a second cell of it would stop nbgrader's checks). Returns the grade_ids
    that had copies."""
    seen: set[str] = set()
    copied: list[str] = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader")
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if not isinstance(grade_id, str):
            continue
        if grade_id in seen:
            del cell.metadata["nbgrader"]
            copied.append(grade_id)
        seen.add(grade_id)
    return copied


def _overwrite_cells_base() -> type:
    try:
        from nbgrader.preprocessors import OverwriteCells
    except ImportError:   # a learner's install has no nbgrader: nothing here runs there
        return _preprocessor_base()
    return OverwriteCells


class OverwriteCellsQuietly(_overwrite_cells_base()):  # type: ignore[misc]
    """nbgrader autograde's OverwriteCells (each graded, solution or locked cell as the released one), without its
    warning "Cell 'student-id' does not exist in the database" for every submission: our STUDENT_ID cell has a
    grade_id but is none of those, so nbgrader never records it. Such a cell loses its grade_id, as nbgrader's own
    step does after the warning; every other cell is nbgrader's."""

    def preprocess_cell(self, cell: Any, resources: dict, cell_index: int) -> tuple[Any, dict]:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade_id") is not None and not (meta.get("grade") or meta.get("solution") or meta.get("locked")):
            del meta["grade_id"]
            return cell, resources
        return super().preprocess_cell(cell, resources, cell_index)


class DeduplicateGradeIds(_preprocessor_base()):  # type: ignore[misc]
    """nbgrader autograde's sanitizing step for copied cells (`dedupe_grade_ids`), in place of nbgrader's
    DeduplicateIds, which keeps the last copy and leaves the others' metadata empty rather than absent."""

    from traitlets import Bool

    enabled = Bool(True).tag(config=True)

    def preprocess(self, nb: Any, resources: dict) -> tuple[Any, dict]:
        for grade_id in dedupe_grade_ids(nb):
            self.log.warning("a copy of the cell with grade_id %r is no longer a grade cell: the first one is", grade_id)
        return nb, resources


class GradeInSandbox(_preprocessor_base()):  # type: ignore[misc]
    """nbgrader autograde's step that would run the notebook: grades the submission as `autograder grade
    --nbgrader` does (the handed-in file from submitted/, read through the intake; a fresh sandboxed run; the full
    key from `keys`) and writes each exercise's score into its grade cell as the cell's result, the report's text
    as the cell's printed output, and the whole report into the notebook's metadata. nbgrader's SaveAutoGrades
    then records those scores (its partial credit). No kernel runs; nothing the submission does reaches this
    process. A submission that cannot be graded gets an error in each grade cell that says why (never points)."""

    from traitlets import Bool, Unicode

    keys = Unicode("", help="the folder holding <assignment>/key.json (autograd-lab's build/)").tag(config=True)
    enabled = Bool(True).tag(config=True)   # nbconvert runs only enabled preprocessors (its default: off)

    def preprocess(self, nb: Any, resources: dict) -> tuple[Any, dict]:
        from nbgrader.coursedir import CourseDirectory

        from autograder.grading.grade import grade_notebook, not_gradable_report
        from autograder.keyfile import load_key

        info = resources["nbgrader"]
        student, assignment, notebook = info["student"], info["assignment"], info["notebook"]
        key = load_key(Path(self.keys) / assignment / "key.json")
        course = CourseDirectory(parent=self)
        root = Path(os.path.abspath(course.root))   # the course's own folder: below it, no link is followed
        path = Path(os.path.abspath(course.format_path(course.submitted_directory, student, assignment))) / \
            f"{notebook}.ipynb"
        name = path.relative_to(root).as_posix()
        sub = Submission(str(path), name, identity.Source(path, student, "folder"), intake.Found(path, name, root))
        try:
            report = grade_notebook(path, key, worker=_worker(), source=sub.source, data=sub.read())
        except intake.Refused as e:
            report = not_gradable_report(key, name, student, str(e))
        _write_scores(nb, report)
        return nb, resources


_WORKER: list[Any] = []


def _worker() -> Any:
    """One warm sandbox worker for this nbgrader process (closed when it exits)."""
    if not _WORKER:
        import atexit

        from autograder.sandbox.client import Worker

        _WORKER.append(Worker())
        atexit.register(_WORKER[0].close)
    return _WORKER[0]


def _write_scores(nb: Any, report: Report) -> None:
    """Each exercise's grade cell: its score as the cell's result (nbgrader's partial credit), the report's text
    as its printed output; a not-gradable report: an error that says why. The report goes into the metadata."""
    fill_grade_cells(nb, report, with_text=True)
    nb.metadata["autograd_lab"] = {**nb.metadata.get("autograd_lab", {}), "report": report.to_dict()}

