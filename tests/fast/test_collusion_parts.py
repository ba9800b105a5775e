"""The collusion view's parts, worked out by hand: the Poisson-binomial tail, a shown prediction read as a syntax tree
(never run), produce functions normalised (renamed, other literals, comments and formatting: one form) and the
released stub not evidence. (A whole notebook's produce functions: tests/test_collusion.py, which may import nbgrader's
checksum.)"""
from __future__ import annotations

import pytest

from autograder.authoring.collusion import normal_form, shown_value, tail
from autograder.judging import sources


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
    ("tensor([1., 2.], dtype=float64)", None),
    ("(" * 300 + "1" + ")" * 300, None),
])
def test_a_shown_prediction_is_read_as_a_syntax_tree_only(text, value):
    assert shown_value(text) == value


def _fn(source: str):
    return sources.parse(source).body[0]


def test_a_function_copied_with_renamed_variables_other_numbers_comments_and_spacing_has_one_form():
    mine = _fn("def ex3(x):\n    y = x ** 2 * torch.sin(x)\n    d, = torch.autograd.grad(y, x)\n    return d * 1.0\n")
    theirs = _fn("def ex3(inp):\n    '''my docstring'''\n    # the derivative\n    out=inp**3*torch.sin( inp )\n"
                 "    g,  = torch.autograd.grad(out, inp)   # a tuple\n    return g*2.5\n")
    other = _fn("def ex3(x):\n    y = x ** 2 * torch.cos(x)\n    d, = torch.autograd.grad(y, x)\n    return d * 1.0\n")
    assert normal_form(mine) == normal_form(theirs) and normal_form(mine)[1] >= 20
    assert normal_form(other) != normal_form(mine)   # torch.cos is not torch.sin: globals and attributes are kept
    assert normal_form(_fn('def ex5(x, y):\n    """Doc."""\n    raise NotImplementedError\n')) is None   # the stub
