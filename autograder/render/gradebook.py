"""render.gradebook: Reports -> CSV gradebook and a summary table. Pure; imports stdlib and report."""
from __future__ import annotations

import csv
import io

from autograder.report import STATUSES, Report

FIXED_COLUMNS = ("submission", "student", "status", "score", "max_score")


def check_ids(reports: list[Report]) -> list[str]:
    """Every check id seen, in first-seen order."""
    seen: dict[str, None] = {}
    for r in reports:
        for o in r.outcomes:
            seen.setdefault(o.check_id, None)
    return list(seen)


def to_csv(reports: list[Report]) -> str:
    """One row per submission: submission, student, status (graded | not_gradable), score (empty
    when not gradable, never 0), max_score, then each check's status."""
    ids = check_ids(reports)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*FIXED_COLUMNS, *ids])
    for r in sorted(reports, key=lambda r: r.submission):
        by_id = {o.check_id: o.status for o in r.outcomes}
        score = "" if r.score is None else f"{r.score:g}"
        w.writerow([r.submission, r.student, r.status, score, f"{r.max_score:g}", *(by_id.get(i, "") for i in ids)])
    return buf.getvalue()


def summary(reports: list[Report]) -> str:
    """A fixed-width table: one line per submission with status, score and counts per check status."""
    head = f"{'submission':<34} {'student':<14} {'status':<13} {'score':>9}  " + " ".join(f"{s:>7}" for s in STATUSES)
    lines = [head, "-" * len(head)]
    for r in sorted(reports, key=lambda r: r.submission):
        score = "—" if r.score is None else f"{r.score:g}/{r.max_score:g}"
        counts = r.counts()
        lines.append(f"{r.submission[:34]:<34} {r.student[:14]:<14} {r.status:<13} {score:>9}  "
                     + " ".join(f"{counts[s]:>7}" for s in STATUSES))
        if r.status == "not_gradable":
            lines.append(f"{'':<34} ↳ {r.reason[:110]}")
    return "\n".join(lines)
