"""Does `autograder grade` give every example submission exactly its recorded statuses?"""
import csv
import json
from dataclasses import replace

from autograder.model import ExprAnswer, ValueExpectation
from autograder.report import read_report

from conftest import EXAMPLES, run_cli


def test_grade_the_examples_matches_the_recorded_statuses(released, tmp_path):
    _, key_path = released
    out = tmp_path / "out"
    p = run_cli("grade", str(EXAMPLES), "--out", str(out), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    expected = {f.name.split(".")[0]: json.loads(f.read_text()) for f in EXAMPLES.glob("*.expected.json")}
    assert len(expected) >= 10
    for student, exp in expected.items():
        report = read_report(out / "reports" / f"{student}.json")
        assert report.status == exp["status"], (student, report.reason)
        got = {o.check_id: o.status for o in report.outcomes}
        assert got == exp["checks"], (student, {k: (v, got.get(k)) for k, v in exp["checks"].items() if got.get(k) != v})
        assert report.versions["torch_key"] == "2.13.0" and report.versions["sympy"]

    rows = list(csv.DictReader((out / "gradebook.csv").open()))
    assert list(rows[0])[:8] == ["submission", "student", "status", "score", "max_score", "counts", "predictions",
                                 "released_with"]
    assert len(rows[0]) == 8 + 26   # the fixed columns, then one per check
    by = {r["student"]: r for r in rows}
    assert by["ivan"]["status"] == "not_gradable" and by["ivan"]["score"] == ""   # never a silent 0
    assert by["gus"]["status"] == "graded" and by["gus"]["score"] == "0"
    assert by["ada"]["score"] == "26" and by["hana"]["4.produce.after_k"] == "timeout"
    assert by["ada"]["predictions"] == "" and by["noah"]["predictions"] == "no record: exercises 1, 2, 3, 4, 5, 6"
    assert by["rex"]["predictions"] == "revised after the answer: 2 predictions of exercise 1"
    assert "ivan.ipynb" in p.stdout and "not_gradable" in p.stdout


def test_a_failed_check_names_expected_oracle_observed_and_why(key, worker):
    from autograder.grading.grade import grade_notebook

    r = grade_notebook(EXAMPLES / "dev.ipynb", key, "dev", exercises=["2"], worker=worker)
    o = next(o for o in r.outcomes if o.check_id == "2.produce.returns")
    assert o.status == "failed"
    assert o.observed.startswith("tensor(") and o.expected.startswith("(tensor(")
    assert o.oracle == "sympy: (diff(x**2*sin(x), x),) at x=-1.58; form from reference torch 2.13.0 run"
    assert "tuple" in o.why


def test_hard_coded_answers_fail_at_a_fresh_point_with_a_hint(key, worker):
    from autograder.grading.grade import grade_notebook

    r = grade_notebook(EXAMPLES / "eve.ipynb", key, "eve", exercises=["1"], worker=worker)
    o = next(o for o in r.outcomes if o.check_id == "1.produce.grad")
    assert o.status == "failed" and "fresh point 1" in o.message and "hard-coded" in o.message


def test_a_warning_is_shown_but_costs_nothing(key, worker):
    from autograder.grading.grade import grade_notebook

    r = grade_notebook(EXAMPLES / "jade.ipynb", key, "jade", exercises=["1"], worker=worker)
    assert r.score == r.max_score == 4
    shown = [d for o in r.outcomes for d in o.details]
    assert len(shown) == 1 and "UserWarning" in shown[0] and "not a leaf" in shown[0]


def test_grading_twice_gives_the_same_scores(key, worker):
    from autograder.grading.grade import grade_notebook

    a = grade_notebook(EXAMPLES / "ben.ipynb", key, "ben", worker=worker)
    b = grade_notebook(EXAMPLES / "ben.ipynb", key, "ben", worker=worker)
    assert [(o.check_id, o.status, o.score) for o in a.outcomes] == [(o.check_id, o.status, o.score) for o in b.outcomes]


def test_a_grader_fault_is_not_graded_and_never_points(key, worker):
    from autograder.grading.grade import grade_notebook

    broken = replace(key, checks=tuple(replace(c, expectation=ValueExpectation(ExprAnswer("log(x)")))
                                       if c.id == "1.predict.grad" else c for c in key.checks))
    # log of a negative point is complex: the grader fails
    r = grade_notebook(EXAMPLES / "eve.ipynb", broken, "eve", exercises=["1"], worker=worker)   # eve's x0 is negative
    assert r.status == "not_gradable" and r.score is None
    assert "internal grader error" in r.reason and "not the student's fault" in r.reason
