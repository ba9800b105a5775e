"""Are the terminal text, the CSV gradebooks and the Gradescope output pure views of one Report fixture, with
the status words of the one status table? (No grading: Report fixtures only.)"""
from __future__ import annotations

import csv
import io

from autograder.grading.identity import is_id_note
from autograder.render.gradebook import summary, to_csv, to_nbgrader_csv
from autograder.render.gradescope import to_results
from autograder.render.html import to_html
from autograder.render.terminal import render
from autograder.report import STATUS_WORDS, STATUSES, Outcome, Report


def fixture() -> tuple[Report, Report]:
    outcomes = tuple(Outcome(f"1.check.{s}", "1", f"a {s} check", "produce", s, 1.0 if s == "passed" else 0.0, 1.0,
                             message=f"message of the {s} check", expected="2.0" if s == "failed" else None,
                             observed="3.0" if s == "failed" else None, oracle="sympy: 2*x at x=1.0",
                             why="why it matters") for s in (*STATUSES, "sealed"))
    graded = Report("01-a", "mia.ipynb", "mia", "graded", 1.0, 6.0, outcomes, parameters={"x0": 1.0},
                    notes=("the notebook says STUDENT_ID = 'max', but it was graded as 'mia' (with the parameters "
                           "of 'mia')", "cell 3 raised NameError: x"),
                    versions={"torch": "2.13.0", "torch_key": "2.13.0", "sympy": "1.14", "grader": "0.1.0"})
    broken = Report("01-a", "ivan.ipynb", "ivan", "not_gradable", None, 5.0, reason="ivan.ipynb is empty")
    return graded, broken


def test_the_terminal_view_shows_each_status_with_its_mark_and_the_failed_checks_detail():
    graded, broken = fixture()
    text = render(graded)
    for status, word in STATUS_WORDS.items():
        assert f"a {status} check" in text and f" {word.mark} " in text
    assert "you: 3.0    expected: 2.0" in text and "why it matters: why it matters" in text
    assert text.count("why it matters:") == 1   # only a failed check says why; an error shows its exception
    assert text.endswith("score 1 / 6 · 1 passed, 1 failed, 1 error, 1 missing, 1 timeout, 1 sealed (1 point sealed: "
                         "judged once the exercise's predictions are committed)")
    assert "NOT GRADED: ivan.ipynb is empty" in render(broken) and "this is not a 0" in render(broken)


def test_the_gradebooks_keep_not_gradable_apart_from_zero_and_the_summary_shows_only_id_notes():
    graded, broken = fixture()
    rows = list(csv.DictReader(io.StringIO(to_csv([graded, broken]))))
    assert [(r["student"], r["status"], r["score"]) for r in rows] == [("ivan", "not_gradable", ""), ("mia", "graded", "1")]
    assert rows[1]["1.check.timeout"] == "timeout" and rows[0]["1.check.timeout"] == ""
    nb = list(csv.DictReader(io.StringIO(to_nbgrader_csv([graded, broken]))))
    assert [(r["student_id"], r["raw_score"], r["score"]) for r in nb] == [("ivan", "", ""), ("mia", "1.0", "1.0")]
    table = summary([graded, broken], shown=is_id_note)
    assert "STUDENT_ID = 'max'" in table and "NameError" not in table and "ivan.ipynb is empty" in table


def test_gradescope_and_html_name_the_statuses_with_the_same_words():
    graded, _ = fixture()
    results = to_results(graded)
    by_name = {t["number"]: t for t in results["tests"]}
    for status, word in STATUS_WORDS.items():
        assert by_name[f"1.check.{status}"]["output"].startswith(f"**Status: {word.meaning}**")
    page = to_html(graded)
    for status, word in STATUS_WORDS.items():
        assert f'<span class="agl-st agl-st-{status}">{word.mark}</span>' in page
        assert (f".agl-report .agl-st-{status} {{ color: {word.colour}; background: {word.background}; "
                f"border-color: {word.colour}; }}") in page


def test_every_view_names_a_misconception_with_its_feedback_and_evidence():
    from dataclasses import replace

    from autograder.report import Diagnosis

    graded, _ = fixture()
    d = Diagnosis("one-pass-short", "one pass short", "range(1, k) runs k - 1 passes.", "(k - 1)*diff(x**3, x)",
                  "43.9569", "x=2.2, k=4")
    graded = replace(graded, outcomes=tuple(replace(o, misconception=d) if o.status == "failed" else o
                                            for o in graded.outcomes))
    text = render(graded)
    assert ('misconception: "one pass short" (that thinking gives (k - 1)*diff(x**3, x) = 43.9569 at x=2.2, k=4, '
            'which is your value). range(1, k) runs k - 1 passes.') in " ".join(text.split())
    page = to_html(graded)
    assert '<strong class="agl-mname">one pass short</strong> — range(1, k) runs k - 1 passes.' in page
    output = {t["number"]: t for t in to_results(graded)["tests"]}["1.check.failed"]["output"]
    assert "- **Misconception:** **one pass short**: range(1, k) runs k - 1 passes." in output
    assert Report.from_dict(graded.to_dict()) == graded   # the JSON keeps it


def test_a_long_formula_is_left_out_of_a_misconceptions_evidence():
    from autograder.report import Diagnosis

    short_one = Diagnosis("a", "a", "f", "(k - 1)*diff(x**3, x)", "43.9569", "x=2.2, k=4")
    assert short_one.evidence == "that thinking gives (k - 1)*diff(x**3, x) = 43.9569 at x=2.2, k=4, which is your value"
    long_one = Diagnosis("a", "a", "f", "Matrix([2*(s00*w0 + s01*w1 - t0)*s00 + 2*(s10*w0 + s11*w1 - t1)*s10])",
                         "[-8.4972, -14.2494]", "w=[0.5, 1.0]")
    assert long_one.evidence == "that thinking gives [-8.4972, -14.2494], which is your value"
    assert Diagnosis("a", "a", "f", "None", "None", "x=1.0").evidence == "that thinking gives None, which is your value"


def test_printable_shows_controls_and_the_invisible_characters_that_reorder_text():
    """Trojan Source: a right-to-left override in a name makes 'ada\u202egpj.ipynb' read as another file."""
    from autograder.render.terminal import printable

    assert printable("ada\u202egpj.ipynb") == "ada\\u202egpj.ipynb"
    assert printable("a\u200bb\u2066c\x85d\x1b[2J") == "a\\u200bb\\u2066c\\u0085d\\x1b[2J"
    assert printable("ünï cödé\tok\n") == "ünï cödé\tok\n"   # letters of any script, tab and newline stay
