"""An override is a visible adjustment of a real report (tests/golden: the grader's reports of the example
submissions): staff's score counts, the grader's outcome stays beside it, applying never stacks, a not-gradable report
gets no score from overrides, and a check's digest follows its definition, not the release's secret."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from autograder.grading.overrides import Override, apply, check_digest, current, machine, problem
from autograder.keyfile import load_key
from autograder.report import Report

ROOT = Path(__file__).resolve().parents[2]
BEN = ROOT / "tests" / "golden" / "01-backward-vs-grad" / "ben.json"
KEY = ROOT / "assignments" / "01-backward-vs-grad" / "public_key.json"


def _ben() -> Report:
    return Report.from_dict(json.loads(BEN.read_text()))


def _o(check: str, score: float | None, why: str = "a fair appeal", student: str = "ben") -> Override:
    return Override(student, check, score, why, "prof", "2026-12-07T13:00:00+00:00")


def test_staffs_score_counts_the_graders_outcome_stays_and_applying_again_never_stacks():
    ben = _ben()
    assert (ben.score, next(o for o in ben.outcomes if o.check_id == "2.predict.returns").score) == (20.0, 0.0)
    once, used = apply(ben, [_o("2.predict.returns", 1), _o("1.predict.returns", 0.5, student="Ben")])
    assert once.score == 21.5 and len(used) == 2   # ids that differ only in case are one student
    two = next(o for o in once.outcomes if o.check_id == "2.predict.returns")
    assert (two.status, two.score, two.adjusted.machine_score, two.adjusted.why) == ("failed", 1.0, 0.0, "a fair appeal")
    assert apply(once, [_o("2.predict.returns", 1), _o("1.predict.returns", 0.5)])[0] == once
    assert apply(once, [])[0].to_dict() == machine(once).to_dict() == ben.to_dict()
    assert Report.from_dict(json.loads(json.dumps(once.to_dict()))) == once
    assert "adjusted" not in ben.to_dict()["outcomes"][0]   # a report without overrides is as it was


def test_the_last_override_of_a_check_stands_and_a_clear_gives_it_back_to_the_grader():
    given = [_o("2.predict.returns", 1), _o("2.predict.returns", 0.5, "half"), _o("1.predict.returns", 1)]
    assert {k: o.score for k, o in current(given).items()} == {("ben", "2.predict.returns"): 0.5,
                                                               ("ben", "1.predict.returns"): 1}
    assert apply(_ben(), given)[0].score == 21.5
    cleared = [*given, _o("2.predict.returns", None, "withdrawn")]
    assert apply(_ben(), cleared)[0].score == 21.0 and [o.check_id for o in apply(_ben(), cleared)[0].adjusted()] \
        == ["1.predict.returns"]


def test_a_not_gradable_report_gets_no_score_from_overrides():
    broken = replace(_ben(), status="not_gradable", score=None, outcomes=(), reason="not a notebook")
    assert apply(broken, [_o("2.predict.returns", 1)]) == (broken, ())


def test_what_an_override_may_be_and_a_checks_digest():
    key = load_key(KEY)
    assert problem(key, "2.predict.returns", 1, "fair") == ""
    assert problem(key, "2.predict.returns", 1.5, "fair").startswith("the score 1.5 is outside 0..1")
    assert problem(key, "2.predict.returns", -1, "fair").startswith("the score -1 is outside 0..1")
    assert problem(key, "2.predict.returns", 1, "  ").startswith("an override needs a reason")
    assert problem(key, "2.predict.nope", 1, "fair").startswith("01-backward-vs-grad has no check '2.predict.nope'")
    check = next(c for c in key.checks if c.id == "2.predict.returns")
    assert check_digest(check) == check_digest(replace(check)) != check_digest(replace(check, why=check.why + "!"))
    assert check_digest(check) != check_digest(replace(check, points=2.0))
