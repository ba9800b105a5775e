"""analytic: the sympy oracle. Parses an instructor's answer expression with an explicit symbol table
and evaluates it exactly at a point, then rounds to float64. Never torch. Only instructor-written text
(spec.toml) is ever parsed here, never a student's.

May import: stdlib, sympy (lazily), mpmath (sympy's), autograder.profile.
"""
from __future__ import annotations

import math
import threading
from functools import lru_cache
from typing import Any, Iterable

from autograder import profile

FUNCTIONS = ("sin", "cos", "tan", "exp", "log", "sqrt", "Abs", "sign", "Heaviside", "Max", "Min",
             "atan", "tanh", "sinh", "cosh", "diff", "Rational", "Piecewise", "Matrix", "pi", "E", "oo", "nan")


_LOCK = threading.Lock()   # sympy's caches are not documented as thread-safe; `grade --jobs` uses threads


def _sympy() -> Any:
    import sympy
    return sympy


# What an answer expression may be made of, checked token by token before sympy sees it (its parse_expr evaluates
# the text with Python's eval: a key's text must never reach it unchecked, whoever wrote the key file): numbers,
# names of the symbol table, these operators and brackets; no attribute, string, keyword or lambda.
_OPERATORS = {"+", "-", "*", "/", "**", "(", ")", "[", "]", ",", "<", ">", "<=", ">=", "==", "!=", "&", "|", "~"}
_CONSTANTS = ("True", "False")


def _tokens_allowed(text: str, symbols: tuple[str, ...]) -> None:
    """Raise ValueError unless `text` is only numbers, allowed names and allowed operators."""
    import io
    import tokenize

    names = {*symbols, *FUNCTIONS, *_CONSTANTS}
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        raise ValueError("unbalanced brackets, or the expression ends too early") from None
    for tok in tokens:
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.ENDMARKER, tokenize.INDENT, tokenize.DEDENT):
            continue
        if tok.type == tokenize.NUMBER:
            if tok.string[-1:] in "jJ":
                raise ValueError(f"{tok.string!r}: complex literals are not allowed (write I-free real expressions)")
            continue
        if tok.type == tokenize.NAME and tok.string in names:
            continue
        if tok.type == tokenize.NAME:
            raise ValueError(f"name '{tok.string}' is not defined; the names you may use are {', '.join(symbols)} and "
                             f"{', '.join(FUNCTIONS)}")
        if tok.type == tokenize.OP and tok.string in _OPERATORS:
            continue
        if tok.type == tokenize.OP and tok.string == "^":
            raise ValueError("'^' is not a power: write ** (x**2)")
        raise ValueError(f"{tok.string!r} is not allowed in an answer expression (only numbers, the names above, "
                         f"+ - * / ** and brackets)")


@lru_cache(maxsize=512)
def _parse(text: str, symbols: tuple[str, ...]) -> Any:
    _tokens_allowed(text, symbols)
    sp = _sympy()
    from sympy.parsing.sympy_parser import auto_number, parse_expr, rationalize

    local = {name: sp.Symbol(name, real=True) for name in symbols}
    glob: dict[str, Any] = {name: getattr(sp, name) for name in FUNCTIONS}
    glob.update(Integer=sp.Integer, Float=sp.Float, __builtins__={})
    try:
        expr = parse_expr(text, local_dict=local, global_dict=glob, transformations=(auto_number, rationalize),
                          evaluate=True)
    except NameError as e:
        raise ValueError(f"{e}; the names you may use are {', '.join(symbols)} and {', '.join(FUNCTIONS)}") from None
    except Exception as e:  # instructor text: tokenize and sympy raise many kinds for a malformed expression
        if type(e).__name__ == "TokenError":
            raise ValueError("unbalanced brackets, or the expression ends too early") from None
        raise ValueError(f"{type(e).__name__}: {e}") from None
    if hasattr(expr, "doit"):
        expr = expr.doit()
    if not isinstance(expr, (sp.Basic, sp.MatrixBase)):
        raise ValueError(f"it evaluates to a {type(expr).__name__}, not a sympy expression")
    return expr


def parse(text: str, symbols: Iterable[str]) -> Any:
    """Parse `text` (e.g. "diff(x**2*sin(x), x)") with real symbols `symbols`.

    Returns a sympy expression or Matrix, derivatives already taken (`doit`); cached.
    Raises ValueError with the reason (unknown name, syntax) for the spec loader to report.
    Source: sympy.parsing.sympy_parser.parse_expr with the auto_number and rationalize
    transformations, so "0.1" is the exact 1/10.
    """
    return _parse(text, tuple(sorted(symbols)))


def evaluate(text: str, symbols: Iterable[str], point: dict[str, int | float]) -> tuple[float, ...]:
    """Evaluate `text` at `point`, then round each entry to float64.

    A float in `point` is read as the exact decimal of its repr (1.37 -> 137/100). The expression
    is evaluated in 50-digit arithmetic (sympy.lambdify to mpmath, ~50 µs), which rounds to the
    same float64 as exact evaluation (a finite value beyond float64's range to ±inf); where that raises
    or gives a non-finite entry (a pole, 0/0, a function mpmath lacks), exact substitution
    (`Basic.subs`, then `N` at 30 digits, ~2 ms) decides.

    Args:
        text: the answer expression; symbols: the names it may use; point: name -> value.
    Returns:
        The entries (one for a scalar, row-major for a Matrix) as floats; ±inf and nan for
        sympy's oo, -oo, zoo and nan.
    Raises:
        ValueError: a symbol is left without a value.
    """
    with profile.stage("judge: sympy evaluation"):
        return _cached(text, tuple(symbols), tuple(point.items()))


@lru_cache(maxsize=4096)
def _cached(text: str, names: tuple[str, ...], items: tuple[tuple[str, int | float], ...]) -> tuple[float, ...]:
    """`evaluate`, kept: a submission's checks evaluate the same expression at the same point more than once
    (a prediction and the produce check of one value, their misconceptions)."""
    point = dict(items)
    with _LOCK:
        fast = _fast(text, names, point)
        return fast if fast is not None else _evaluate(text, names, point)


@lru_cache(maxsize=512)
def _lambdified(text: str, symbols: tuple[str, ...], order: tuple[str, ...]) -> Any:
    sp = _sympy()
    expr = parse(text, symbols)
    entries = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    return sp.lambdify([sp.Symbol(n, real=True) for n in order], entries, modules="mpmath")


def _fast(text: str, symbols: tuple[str, ...], point: dict[str, int | float]) -> tuple[float, ...] | None:
    """The 50-digit evaluation, or None when it cannot be trusted (see `evaluate`)."""
    import mpmath

    order = tuple(sorted(point))
    try:
        f = _lambdified(text, symbols, order)
        with mpmath.workdps(50):
            args = [_mpf50(point[n]) for n in order]
            values = f(*args)
            finite = all(isinstance(v, mpmath.mpf) and mpmath.isfinite(v) for v in values)
            out = tuple(float(v) for v in values)
    except Exception:  # a pole, a function mpmath lacks, a complex value: exact substitution decides
        return None
    # A finite 50-digit value beyond float64's range rounds to ±inf: exact substitution would say the same, after
    # building a number of billions of digits (x**(10**10)). A non-finite one (a pole, 0/0) goes to it.
    return out if finite or all(math.isfinite(v) for v in out) else None


@lru_cache(maxsize=65536, typed=True)
def _mpf50(value: int | float) -> Any:
    """`value` as a 50-digit mpmath number (a float: the exact decimal of its repr), made once: a point's values
    recur across the expressions evaluated there, and parsing the decimal is most of an evaluation's cost. Called
    only inside mpmath.workdps(50) (an mpf is immutable; its precision is that of the context it was made in)."""
    import mpmath

    return mpmath.mpf(repr(value)) if isinstance(value, float) else mpmath.mpf(value)


def _evaluate(text: str, symbols: tuple[str, ...], point: dict[str, int | float]) -> tuple[float, ...]:
    sp = _sympy()
    expr = parse(text, symbols)
    subs = {sp.Symbol(n, real=True): sp.Rational(repr(v)) if isinstance(v, float) else sp.Integer(v)
            for n, v in point.items()}
    exact = expr.subs(subs, simultaneous=True)
    if hasattr(exact, "doit"):
        exact = exact.doit()
    entries = list(exact) if isinstance(exact, sp.MatrixBase) else [exact]
    out = []
    for e in entries:
        if e.free_symbols:
            raise ValueError(f"{text!r} still has {sorted(map(str, e.free_symbols))} after substitution")
        if e in (sp.zoo, sp.nan):
            out.append(math.nan)
        elif e == sp.oo:
            out.append(math.inf)
        elif e == -sp.oo:
            out.append(-math.inf)
        else:
            out.append(float(sp.N(e, 30)))
    return tuple(out)


def shape(text: str, symbols: Iterable[str]) -> tuple[int, ...]:
    """The shape of `text`'s value: () for a scalar, (rows, cols) for a Matrix. Raises ValueError
    as `parse` does."""
    sp = _sympy()
    with _LOCK:
        expr = parse(text, symbols)
    return tuple(expr.shape) if isinstance(expr, sp.MatrixBase) else ()


def is_constant(text: str, symbols: Iterable[str]) -> bool:
    """Does `text` use none of `symbols` (a constant such as "nan" or "0")? Raises ValueError as `parse` does."""
    with _LOCK:
        expr = parse(text, symbols)
    return not getattr(expr, "free_symbols", ())


def is_integer(text: str, symbols: Iterable[str]) -> bool:
    """Is `text` a literal integer such as "2" (no symbols)? Raises ValueError as `parse` does."""
    with _LOCK:
        expr = parse(text, symbols)
    return bool(getattr(expr, "is_Integer", False))


def sympy_version() -> str:
    """The installed sympy version string."""
    return str(_sympy().__version__)
