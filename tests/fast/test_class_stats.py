"""The class view's numbers: are they those worked out by hand on a few Report fixtures? (A generated class of 200
graded with `grade --stats`, and the page Chromium shows: tests/test_stats.py.)"""
from __future__ import annotations

import math

import pytest

from autograder.render.class_stats import class_stats, point_biserial, wrong_answer
from autograder.report import Diagnosis, Outcome, Report


def outcome(cid: str, status: str, observed: str | None = None, expected: str | None = None, named: str | None = None,
            kind: str = "predict") -> Outcome:
    d = Diagnosis(named, named.replace("-", " "), "feedback", "x", observed or "", "x=1.0") if named else None
    return Outcome(cid, cid[0], f"title {cid}", kind, status, 1.0 if status == "passed" else 0.0, 1.0,
                   observed=observed, expected=expected, misconception=d)


def report(student: str, statuses: list[tuple], **kw) -> Report:
    outs = tuple(outcome(*s) for s in statuses)
    return Report("01-a", f"{student}.ipynb", student, "graded", sum(o.score for o in outs), 2.0, outs, **kw)


def test_counts_difficulty_and_discrimination_are_those_worked_out_by_hand():
    reports = [
        report("a", [("1.p", "passed"), ("1.q", "passed")]),
        report("b", [("1.p", "passed"), ("1.q", "failed", "3.0", "2.0")]),
        report("c", [("1.p", "failed", "4.0", "2.0", "twice"), ("1.q", "failed", "6.0", "2.0")]),
        report("d", [("1.p", "failed", "None", "2.0", "twice"), ("1.q", "missing")]),
        report("d-old", [("1.p", "passed"), ("1.q", "passed")], superseded_by="d.ipynb"),
        Report("01-a", "e.ipynb", "e", "not_gradable", None, 2.0, reason="e.ipynb is not valid JSON"),
    ]
    s = class_stats(reports)
    assert (s.submissions, s.counted, s.superseded, s.not_gradable) == (6, 4, 1, 1)
    assert s.scores == (0.0, 0.0, 1.0, 2.0) and s.mean == 0.75 and s.median == 0.5
    assert s.not_graded == (("e.ipynb", "e.ipynb is not valid JSON"),)   # apart, never a 0
    p, q = s.checks
    assert p.counts == {"passed": 2, "failed": 2, "error": 0, "missing": 0, "timeout": 0} and p.difficulty == 0.5
    # item p = (1, 1, 0, 0), rest = q's score = (1, 0, 0, 0): r = 0.57735 (= 1/sqrt(3))
    assert math.isclose(p.discrimination, 1 / math.sqrt(3))
    assert [(m.id, m.count) for m in p.misconceptions] == [("twice", 2)] and p.unnamed == 0
    assert q.counts["missing"] == 1 and q.unnamed == 2
    assert [(a.answer, a.count) for a in q.wrong_answers] == [("1.5 × the answer", 1), ("3 × the answer", 1)]
    assert s.misconception_counts() == {"1.p": {"twice": 2}}


def test_a_check_nobody_varies_on_has_no_discrimination_and_numbers_group_by_their_ratio():
    assert point_biserial([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]) is None
    assert point_biserial([1.0, 0.0], [1.0, 1.0]) is None
    assert point_biserial([1.0, 0.0, 1.0, 0.0], [3.0, 1.0, 3.0, 1.0]) == 1.0
    assert wrong_answer(outcome("1.p", "failed", "tensor(12.)", "tensor(6.)")) == "2 × the answer"
    assert wrong_answer(outcome("1.p", "failed", "2.001", "2.0")) == "within 1 % of the answer"
    assert wrong_answer(outcome("1.p", "failed", "(2.0, None)", "(2.0, 0.0)")) == "(2.0, None)"
    assert wrong_answer(outcome("1.p", "failed", "3.0", "0.0")) == "3.0"
    assert wrong_answer(outcome("1.p", "failed", "(4.11,)", "(3.0,)")) == "1.37 × the answer"   # a tuple too
    assert wrong_answer(outcome("1.p", "failed", "tensor([2., -4.], dtype=float64)",
                                "tensor([1., -2.], dtype=float64)")) == "2 × the answer"
    assert wrong_answer(outcome("1.p", "failed", "tensor([2., 4.])", "tensor([1., 1.])")) == "tensor([2., 4.])"


def test_reports_of_several_assignments_must_be_told_apart():
    a = report("a", [("1.p", "passed")])
    b = Report("02-b", "b.ipynb", "b", "graded", 0.0, 1.0, (outcome("1.p", "failed"),))
    with pytest.raises(ValueError, match="2 assignments"):
        class_stats([a, b])
    assert class_stats([a, b], "02-b").counted == 1


def test_the_right_value_failed_for_another_reason_is_not_a_wrong_answer():
    """A prediction worked out with autograd fails with the right value, shown to other digits than the expected one
    (`0.0` against `0`, `-3.371` against `-3.3712`): not a wrong answer. 1 % off is one."""
    reports = [report("pat", [("1.p", "failed", "0.0", "0"), ("1.q", "failed", "-3.371", "-3.3712")]),
               report("pia", [("1.p", "failed", "[-8.0, 0.0]", "[-8.0, 0.0]"), ("1.q", "failed", "-3.405", "-3.3712")])]
    p, q = class_stats(reports).checks
    assert p.unnamed == 0 and p.wrong_answers == ()
    assert q.unnamed == 1 and [(a.answer, a.count) for a in q.wrong_answers] == [("1.01 × the answer", 1)]


def test_right_numbers_of_another_dtype_group_as_the_answer_in_that_dtype_unless_a_misconception_names_them():
    """Issue 44: a learner who forgot autocast returns the right numbers as float32; unnamed, they are one group (not
    one wrong answer per student), and named by a dtype misconception they are counted under it."""
    forgot = "tensor([[2.622]], grad_fn=<MmBackward0>)"
    right = "tensor([[2.6094]], dtype=bfloat16, grad_fn=<MmBackward0>)"
    assert wrong_answer(outcome("1.v", "failed", forgot, right, kind="produce")) == "the answer as float32"
    assert wrong_answer(outcome("1.v", "failed", "tensor([1.5, 2.], dtype=float64)", "tensor([1.5, 2.])")) == \
        "the answer as float64"
    assert wrong_answer(outcome("1.v", "failed", "tensor([[3.5]])", right)) == "tensor([[3.5]])"   # other numbers
    reports = [report("a", [("1.v", "failed", forgot, right, None, "produce")]),
               report("b", [("1.v", "failed", "tensor([[1.8]])", "tensor([[1.7969]], dtype=bfloat16)", None,
                              "produce")]),
               report("c", [("1.v", "failed", forgot, right, "forgot-autocast", "produce")])]
    (v,) = class_stats(reports).checks
    assert [(m.id, m.count) for m in v.misconceptions] == [("forgot-autocast", 1)]
    assert v.unnamed == 2 and [(a.answer, a.count) for a in v.wrong_answers] == [("the answer as float32", 2)]
