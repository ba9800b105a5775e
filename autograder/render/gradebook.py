"""render.gradebook: Reports -> CSV gradebook, nbgrader's grades.csv and a summary table. Pure.

May import: stdlib, autograder.report, autograder.render.terminal, autograder.model (student_key).
"""
from __future__ import annotations

import csv
import io
import textwrap
from typing import Callable

from autograder.model import student_key
from autograder.render.terminal import printable
from autograder.report import STATUSES, Report

FIXED_COLUMNS = ("submission", "student", "status", "score", "max_score", "counts", "predictions", "released_with")
# The columns, in order, of nbgrader's `nbgrader export` grades.csv (nbgrader/plugins/export.py, CsvExportPlugin).
NBGRADER_COLUMNS = ("assignment", "duedate", "timestamp", "student_id", "last_name", "first_name", "email",
                    "raw_score", "late_submission_penalty", "score", "max_score")


def cell(text: str) -> str:
    """A CSV cell that holds text a submission chose (a file name, a STUDENT_ID), written so that no
    spreadsheet evaluates it and no terminal obeys it: one that starts with =, +, -, @, a tab or a carriage
    return gets a leading apostrophe (OWASP, "CSV Injection"), and control characters are shown as escapes
    ("\\x1b", render.terminal.printable). Numbers the grader writes never go through here."""
    text = printable(text)   # a carriage return becomes "\\x0d" here
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t") else text


def counts(r: Report) -> str:
    """Whether the report counts in the gradebook: "yes"; "no (<submission> counts)" when staff chose another
    submission of the same student; "choose: ..." while the student has several and staff have not chosen (write
    yes here in the one that counts and grade again, or list it in the output folder's choices.csv); "" when not
    gradable (no score)."""
    if r.status != "graded":
        return ""
    if r.choose_among:
        return (f"choose: {len(r.choose_among) + 1} submissions of {printable(r.student)}; write yes in the one that "
                f"counts, then grade again")
    return f"no ({printable(r.superseded_by)} counts)" if r.superseded_by else "yes"


def predictions(r: Report) -> str:
    """How the report's predictions stand to their commit records (autograder.judging.commit), for staff at a glance:
    "revised after the answer: 2 predictions of exercise 1" (predictions whose cell changed after the commit),
    "no record: exercises 1, 3" (exercises with written predictions graded without a commit record); "" when neither.
    Exercises are named as such, so that a count of predictions is not read as an exercise's number."""
    revised = [o.exercise for o in r.outcomes if o.kind == "predict" and o.commit and "revised after the answer" in o.commit]
    unrecorded = list(dict.fromkeys(o.exercise for o in r.outcomes if o.kind == "predict" and o.status != "missing"
                                    and o.exercise not in r.commits))
    parts = []
    if revised:
        parts.append(f"revised after the answer: {len(revised)} prediction{'' if len(revised) == 1 else 's'} of "
                     f"{_exercises(revised)}")
    if unrecorded:
        parts.append(f"no record: {_exercises(unrecorded)}")
    return "; ".join(parts)


def _exercises(ids: list[str]) -> str:
    """"exercise 1" or "exercises 1, 3": each exercise once, in the order given."""
    ids = list(dict.fromkeys(ids))
    return ("exercise " if len(ids) == 1 else "exercises ") + ", ".join(ids)


def check_ids(reports: list[Report]) -> list[str]:
    """Every check id seen, in first-seen order."""
    seen: dict[str, None] = {}
    for r in reports:
        for o in r.outcomes:
            seen.setdefault(o.check_id, None)
    return list(seen)


def to_csv(reports: list[Report]) -> str:
    """One row per submission: submission, student, status (graded | not_gradable), score (empty
    when not gradable, never 0), max_score, counts (see `counts`), predictions (see `predictions`), released_with
    (the key digest the notebook was released with, when the assignment was released again since: Report.released_key),
    then each check's status (the grader's; "failed, adjusted by staff to 1" where staff overrode its score, which
    the score then counts). Text a
    submission chose is neutralised for spreadsheets (`cell`)."""
    ids = check_ids(reports)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*FIXED_COLUMNS, *ids])
    for r in sorted(reports, key=lambda r: r.submission):
        by_id = {o.check_id: o.status if o.adjusted is None else f"{o.status}, adjusted by staff to {o.score:g}"
                 for o in r.outcomes}
        score = "" if r.score is None else f"{r.score:g}"
        w.writerow([cell(r.submission), cell(r.student), r.status, score, f"{r.max_score:g}", counts(r),
                    predictions(r), r.released_key, *(by_id.get(i, "") for i in ids)])
    return buf.getvalue()


def to_nbgrader_csv(reports: list[Report]) -> str:
    """The reports as nbgrader's grades.csv (`nbgrader export`): its columns in its order, one row per student
    and assignment (sorted), numbers written as nbgrader writes them ("21.0"): the score of the submission that
    counts; a row without a score for a student whose submissions await staff's choice, or who has none that
    could be graded (raw_score, late_submission_penalty and score empty, never 0; nbgrader itself writes 0.0
    there). duedate, timestamp, names and email are not in a report and stay empty; no late penalty is applied,
    so a graded row has penalty 0.0 and score = raw_score."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(NBGRADER_COLUMNS)
    by_student: dict[tuple[str, str], list[Report]] = {}
    for r in reports:   # ids that differ only in case are one student: one row, spelled as the one that counts
        by_student.setdefault((r.assignment, student_key(r.student)), []).append(r)
    for (assignment, _), rs in sorted(by_student.items()):
        counted = [r for r in rs if r.counted]
        r = counted[0] if counted else rs[0]
        student = r.student
        raw = str(float(r.score)) if counted and r.score is not None else ""
        w.writerow([assignment, "", "", cell(student), "", "", "", raw, "0.0" if raw else "", raw,
                    str(float(r.max_score))])
    return buf.getvalue()


def summary(reports: list[Report], shown: Callable[[str], bool] = lambda note: False) -> str:
    """A fixed-width table: one line per submission with status, score and counts per check status; under a
    submission, its reason when it is not gradable, and each of its notes that `shown` picks (the command
    passes grading.identity.is_id_note: whose submission it is)."""
    fit = lambda text, n: text if len(text) <= n else text[: n - 1] + "…"
    sub_w = min(40, max([10] + [len(r.submission) for r in reports]))
    stu_w = min(24, max([7] + [len(r.student) for r in reports]))
    head = (f"{'submission':<{sub_w}} {'student':<{stu_w}} {'status':<13} {'score':>9}  "
            + " ".join(f"{s:>7}" for s in STATUSES))
    lines = [head, "-" * len(head)]
    for r in sorted(reports, key=lambda r: r.submission):
        score = "—" if r.score is None else f"{r.score:g}/{r.max_score:g}"
        counts = r.counts()
        lines.append(f"{fit(r.submission, sub_w):<{sub_w}} {fit(r.student, stu_w):<{stu_w}} {r.status:<13} {score:>9}  "
                     + " ".join(f"{counts[s] if r.status == 'graded' else '—':>7}" for s in STATUSES))
        extra = [r.reason] if r.status == "not_gradable" else [n for n in r.notes if shown(n)]
        if r.superseded_by:
            extra.append(f"does not count: {r.superseded_by}, another submission of {r.student}, counts")
        extra += [f"adjusted by staff: {o.check_id} {o.adjusted.machine_score:g} -> {o.score:g}"
                  + (": no change" if o.adjusted.machine_score == o.score else "") for o in r.adjusted()]
        for text in extra:
            lines += textwrap.wrap(text, len(head), initial_indent="   ↳ ", subsequent_indent="     ")
    return printable("\n".join(lines))
