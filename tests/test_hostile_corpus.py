"""Does every hostile or broken submission of the corpus (tests/hostile_corpus.py) get the outcome a fair
grader must give: its own fault as check outcomes, every other check still passed, never a crash, a
silent 0, an empty message or an oversized report?"""
from __future__ import annotations

import json
import tracemalloc
import uuid

import pytest

from autograder.grading.grade import grade_notebook
from autograder.render.gradebook import to_csv
from autograder.render.terminal import render
from autograder.report import Report

from conftest import ROOT
from hostile_corpus import ALL_CHECKS, CASES, Case, Context

MAX_REPORT_BYTES = 1_000_000


def test_the_corpus_is_large_and_names_are_unique():
    names = [c.name for c in CASES]
    assert len(names) >= 30 and len(set(names)) == len(names)
    for case in CASES:
        assert set(case.checks) <= set(ALL_CHECKS), case.name
        said = case.phrase or all(isinstance(v, tuple) for v in case.checks.values())
        assert said or (case.status == "graded" and not case.checks), f"{case.name}: say what the message must contain"


def _expected(case: Case) -> tuple[dict[str, str], dict[str, str]]:
    """(check id -> status for every check, check id -> phrase for each spoiled check)."""
    statuses = {c: "passed" for c in ALL_CHECKS}
    phrases = {}
    for check, want in case.checks.items():
        status, phrase = want if isinstance(want, tuple) else (want, case.phrase)
        statuses[check] = status
        phrases[check] = phrase
    return statuses, phrases


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name, marks=c.marks) for c in CASES])
def test_hostile_submission(case: Case, released, key, tmp_path, worker):
    _, key_path = released
    folder = tmp_path / "submission"
    folder.mkdir()
    ctx = Context(folder=folder, key_path=key_path, token=f"autograd-lab-hostile-{uuid.uuid4().hex[:12]}")
    graded_with = key.with_limits(dict(case.grading))
    # What `autograder grade` hides: the key's folder and its project, the solutions, the submission's folder.
    hidden = [str(key_path.parent), str(key_path.parents[2]), str(ROOT / "solutions"), str(folder)]
    try:
        path = case.make(ctx)
        if case.max_memory_mb:
            tracemalloc.start()
        report = grade_notebook(path, graded_with, case.student, conceal=hidden, worker=worker)   # never raises
        if case.max_memory_mb:
            peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
            assert peak < case.max_memory_mb, f"the grader peaked at {peak:.0f} MB"

        # Whatever the submission did: a clear outcome, never a crash, a silent 0 or an oversized report.
        text = json.dumps(report.to_dict(), allow_nan=False)
        assert len(text.encode()) < MAX_REPORT_BYTES, f"report of {len(text.encode())} bytes"
        assert Report.from_dict(json.loads(text)) == report
        assert "internal grader error" not in report.reason, report.reason
        json.dumps(report.to_dict(), ensure_ascii=False).encode("utf-8")   # printable and writable as UTF-8
        render(report).encode("utf-8")
        to_csv([report]).encode("utf-8")
        if report.status == "not_gradable":
            assert report.score is None and report.reason.strip() and report.outcomes == ()
        else:
            assert report.score == sum(o.score for o in report.outcomes) and report.reason == ""
        for o in report.outcomes:
            if o.status != "passed":
                assert o.message.strip() and o.message.strip() != o.status, (o.check_id, o.message)
                assert o.score == 0

        assert report.status == case.status, (report.reason, report.notes)
        if case.status == "not_gradable":
            assert case.phrase in report.reason, report.reason
        else:
            statuses, phrases = _expected(case)
            got = {o.check_id: o.status for o in report.outcomes}
            assert got == statuses, ({k: (statuses.get(k), v) for k, v in got.items() if statuses.get(k) != v},
                                     [(o.check_id, o.message) for o in report.outcomes if o.status != "passed"],
                                     report.notes)
            for check, phrase in phrases.items():
                message = next(o.message for o in report.outcomes if o.check_id == check)
                assert phrase in message, (check, phrase, message)
            assert report.score == sum(1 for s in statuses.values() if s == "passed")
        if case.note:
            phrases = case.note if isinstance(case.note, tuple) else (case.note,)
            assert any(p in n for n in report.notes for p in phrases), report.notes
        if case.extra:
            case.extra(report, ctx)
    finally:
        for undo in reversed(ctx.cleanup):
            undo()
