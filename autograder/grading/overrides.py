"""overrides: staff corrections of one check's score for one student (Override), read from a CSV for a batch
(`grade --overrides FILE.csv`) or from the course service's records, checked against the key, and applied to a
canonical report as visible adjustments (report.Adjustment: the machine's score and status are kept beside staff's
score). Pure, except `read_csv`, which reads its file.

May import: stdlib, autograder.report, autograder.model, autograder.keyfile.
"""
from __future__ import annotations

import csv
import hashlib
import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Literal

from autograder.model import Check, Key, student_key
from autograder.report import Adjustment, Report, points

COLUMNS = ("student", "check", "score", "why")   # a batch's CSV; also the service's fields (besides who and when)
MAX_WHY = 1000   # characters of a reason
State = Literal["applied", "superseded", "cleared", "to confirm", "not gradable"]


class OverrideError(ValueError):
    """An override that cannot be used: the message names where it came from (the file and line, or the request),
    what is wrong and the fix."""


@dataclass(frozen=True)
class Override:
    """Staff's score for one check of one student: `student` (a course id), `check` (a check id of the key), `score`
    (points, 0..the check's points; None: a `--clear`, the check goes back to the machine's score), `why` (for the
    student), `by` (a staff user), `when` (ISO 8601 UTC). `where` says where it came from, for messages
    ("overrides.csv, line 3"); `check_digest` is the check's definition when it was made (`check_digest`): an override
    of a check a re-release changed waits for staff to confirm it."""

    student: str
    check: str
    score: float | None
    why: str
    by: str
    when: str
    where: str = ""
    check_digest: str = ""


def check_digest(check: Check) -> str:
    """A digest of a check's definition (its key entry: expectation, points, tolerances, misconceptions ...), the same
    across releases that keep the check as it was (a release draws a new secret, which this leaves out)."""
    from autograder.keyfile import check_json

    return hashlib.sha256(json.dumps(check_json(check), sort_keys=True).encode()).hexdigest()[:16]


def problem(key: Key, check: str, score: float | None, why: str) -> str:
    """Why an override of `check` to `score` with reason `why` cannot be made under `key` ("" when it can): an unknown
    check (the message lists a few that exist), a score outside 0..the check's points, no reason."""
    found = next((c for c in key.checks if c.id == check), None)
    if found is None:
        near = [c.id for c in key.checks if c.id.split(".")[0] == check.split(".")[0]] or [c.id for c in key.checks]
        return (f"{key.assignment} has no check {check!r}: use a check id as the reports name it, such as "
                f"{', '.join(near[:4])}")
    if score is not None and not (0 <= score <= found.points):
        return (f"the score {points(score)} is outside 0..{points(found.points)}, the points of {check}: give a score "
                f"from 0 to {points(found.points)}")
    if score is not None and not why.strip():
        return "an override needs a reason (why), which the student reads: say why the score changes"
    if len(why) > MAX_WHY:
        return f"the reason is {len(why)} characters: keep it to {MAX_WHY}"
    return ""


SEPARATORS = {",": "commas", ";": "semicolons", "\t": "tabs"}   # what a CSV may be separated with (Excel: ';' in
# locales with a decimal comma, and it may write a first line "sep=;")


def _separator(line: str) -> str:
    """The separator of a CSV whose header is `line`: the one (',', ';' or tab) that makes the most of COLUMNS
    appear as columns, then the one seen most; ',' when none is seen."""
    def fit(sep: str) -> tuple[int, int]:
        names = {c.strip().strip('"').strip().lower() for c in line.split(sep)}
        return sum(1 for c in COLUMNS if c in names), line.count(sep)

    best = max(SEPARATORS, key=fit)
    return best if fit(best) != (0, 0) else ","


def _number(text: str, sep: str) -> float:
    """A score as written: "1", "0.5"; with ';' or tab separators also a decimal comma ("0,5"). Raises ValueError."""
    if sep != "," and text.count(",") == 1 and "." not in text:
        text = text.replace(",", ".")
    score = float(text)
    if score != score or score in (float("inf"), float("-inf")):
        raise ValueError(text)
    return score


def read_csv(path: str | Path, key: Key, by: str, when: str) -> list[Override]:
    """The overrides of a batch's CSV (columns student, check, score, why; a header line first; optional column
    `who`, else `by`), each checked against `key`, in file order (a later line for the same student and check
    supersedes an earlier one). `when`: the time every override of the file is given (ISO 8601 UTC). The columns may
    be separated by ',', ';' or tabs (seen in the header line; an Excel first line such as "sep=;" is skipped);
    with ';' or tabs a score may have a decimal comma ("0,5").

    Raises:
        OverrideError: the file cannot be read, lacks a column, or has lines that cannot be used: the message names
            the file and each such line (student, check, score), what is wrong and the fix.
    """
    import io

    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
        first, _, rest = text.partition("\n")
        skipped = 1 if first.strip().lower().startswith("sep=") else 0   # Excel's "sep=;" line
        body = rest if skipped else text
        sep = _separator(body.partition("\n")[0])
        reader = csv.DictReader(io.StringIO(body, newline=""), delimiter=sep)
        rows = list(reader)
        header = [h.strip().lower() for h in reader.fieldnames or []]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise OverrideError(f"{path}: the overrides cannot be read ({e}): give a UTF-8 CSV with the columns "
                            f"{', '.join(COLUMNS)}") from None
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise OverrideError(f"{path}, line {1 + skipped}: no column {', '.join(missing)} (read as separated by "
                            f"{SEPARATORS[sep]}): the header line must name the columns {', '.join(COLUMNS)} (and, if "
                            f"you like, who), separated by commas, semicolons or tabs")
    out, problems = [], []
    for n, raw in enumerate(rows, start=2 + skipped):
        row = {str(k).strip().lower(): (v or "").strip() for k, v in raw.items() if k is not None}
        where = f"{path}, line {n}"
        if not any(row.values()):
            continue   # an empty line
        found = next((c for c in key.checks if c.id == row["check"]), None)
        if not row["score"] and found is not None:
            problems.append(f"{where} ({row['student']}, {row['check']}): give a score (points from 0 to "
                            f"{points(found.points)})")
            continue
        try:
            score = _number(row["score"], sep)
        except ValueError:
            problems.append(f"{where}: the score {row['score']!r} of {row['student']} {row['check']} is not a number: "
                            f"write the points, such as 1 or 0.5")
            continue
        if not row["student"]:
            problems.append(f"{where}: no student: write the student's id in the column student")
            continue
        why = problem(key, row["check"], score, row["why"])
        if why:
            problems.append(f"{where} ({row['student']}, {row['check']}): {why}")
            continue
        out.append(Override(row["student"], row["check"], score, row["why"], row.get("who") or by, when, where,
                            check_digest(next(c for c in key.checks if c.id == row["check"]))))
    if problems:
        raise OverrideError(f"{len(problems)} override(s) cannot be used, and nothing was graded:\n  "
                            + "\n  ".join(problems))
    return out


def current(overrides: Iterable[Override]) -> dict[tuple[str, str], Override]:
    """(student_key(student), check) -> the override that stands: the last one given for it, unless that one is a
    clear (score None), which leaves the check to the machine."""
    last: dict[tuple[str, str], Override] = {}
    for o in overrides:
        last[(student_key(o.student), o.check)] = o
    return {k: o for k, o in last.items() if o.score is not None}


def machine(report: Report) -> Report:
    """`report` as the grader made it: every adjusted outcome back to the machine's score, the total with them."""
    if not report.adjusted():
        return report
    outcomes = tuple(replace(o, score=o.adjusted.machine_score, adjusted=None) if o.adjusted else o
                     for o in report.outcomes)
    return replace(report, outcomes=outcomes, score=_total(report, outcomes))


def apply(report: Report, overrides: Iterable[Override]) -> tuple[Report, tuple[Override, ...]]:
    """`report` with the overrides that stand for its student (`current`) as adjustments: each such check's score is
    staff's, with the machine's kept (report.Adjustment), its status the machine's, and the total the sum. Applied to
    the machine's report (`machine`), so applying again, or other overrides, never stacks. A not-gradable report is
    returned as it is: an override changes a check's score, and such a report has none (never a score made up from
    overrides alone). Returns (the report, the overrides applied)."""
    base = machine(report)
    mine = {check: o for (who, check), o in current(overrides).items() if who == student_key(report.student)}
    if not mine or base.status != "graded":
        return base, ()
    applied, outcomes = [], []
    for o in base.outcomes:
        found = mine.get(o.check_id)
        if found is None or found.score is None:
            outcomes.append(o)
            continue
        outcomes.append(replace(o, score=float(found.score),
                                adjusted=Adjustment(o.score, found.by, found.when, found.why)))
        applied.append(found)
    outcomes_t = tuple(outcomes)
    return replace(base, outcomes=outcomes_t, score=_total(base, outcomes_t)), tuple(applied)


def _total(report: Report, outcomes: tuple) -> float | None:
    """The report's score with `outcomes` in place of its own: its score plus the change of each outcome's points
    (the grader's total is kept as it was made, to the last bit, where nothing changed)."""
    if report.score is None:
        return None
    before = {o.check_id: o.score for o in report.outcomes}
    delta = sum(o.score - before.get(o.check_id, o.score) for o in outcomes)
    return report.score + delta if delta else report.score
