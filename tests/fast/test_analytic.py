"""Does the sympy oracle parse instructor text safely and evaluate exactly?"""
import math

import pytest

from autograder.judging import analytic


def test_derivative_of_x2_sin_x_at_a_decimal_point():
    (v,) = analytic.evaluate("diff(x**2*sin(x), x)", ["x"], {"x": 1.37})
    assert v == pytest.approx(2 * 1.37 * math.sin(1.37) + 1.37**2 * math.cos(1.37), rel=1e-15)


def test_decimals_are_exact_rationals():
    # 0.1 + 0.2 is exactly 3/10 for sympy, not 0.30000000000000004
    assert analytic.evaluate("x + 0.2", ["x"], {"x": 0.1}) == (0.3,)


def test_integer_parameter_and_product():
    assert analytic.evaluate("k*diff(x**3, x)", ["x", "k"], {"x": 2.0, "k": 3}) == (36.0,)


def test_unknown_name_is_refused_with_the_allowed_names():
    with pytest.raises(ValueError, match="the names you may use are x"):
        analytic.parse("z*2", ["x"])


def test_python_builtins_are_not_reachable():
    with pytest.raises(ValueError):
        analytic.parse("__import__('os').getcwd()", ["x"])


def test_non_finite_results():
    assert math.isnan(analytic.evaluate("1/x", ["x"], {"x": 0})[0])   # sympy: 1/0 is zoo, complex infinity
    assert analytic.evaluate("oo", ["x"], {"x": 1}) == (math.inf,)


def test_a_finite_value_beyond_float64_rounds_to_infinity_without_exact_arithmetic():
    from autograder.judging.analytic import evaluate

    assert evaluate("x**(10**10)", ["x"], {"x": 1.5}) == (float("inf"),)   # exactly: billions of digits, never ends
    assert evaluate("-x**(10**10)", ["x"], {"x": 1.5}) == (float("-inf"),)


@pytest.mark.parametrize("text, why", [
    ("x.__class__", "'.' is not allowed in an answer expression"),
    ("__import__('os').system('id')", "name '__import__' is not defined"),
    ("x + 'a'", "is not allowed in an answer expression"),
    ("(lambda: 1)()", "name 'lambda' is not defined"),
    ("x^2", "'^' is not a power: write ** (x**2)"),
    ("2j*x", "complex literals are not allowed"),
])
def test_an_answer_text_is_checked_token_by_token_before_sympy_evaluates_it(text, why):
    """sympy's parse_expr runs Python's eval on its text: only numbers, the symbol table and + - * / ** and
    brackets reach it, whoever wrote the key."""
    with pytest.raises(ValueError) as e:
        analytic.parse(text, ["x"])
    assert why in str(e.value)
    assert analytic.parse("diff(x**2, x) + Rational(1, 3)", ["x"]) is not None
