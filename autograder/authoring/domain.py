"""domain: the points a student can draw at which an expected value has no finite value, found over the joint grid of
every parameter it depends on (enumerated where small, else sampled and probed at the roots of its denominators and of
its logarithms' and roots' arguments), each confirmed by exact evaluation.

May import: stdlib, numpy, sympy, autograder.model, autograder.authoring.discrimination, autograder.judging.analytic,
autograder.judging.judge.
"""
from __future__ import annotations

from math import prod
from typing import Any

from autograder.authoring.discrimination import ENUMERATE, distribution, expressions
from autograder.judging import analytic, judge
from autograder.model import Answer, Number, Parameter

__all__ = ["joint_columns", "nonfinite_points"]
SAMPLES = 100_000   # random joint draws for a grid larger than ENUMERATE
PROBES = 20_000     # draws of the other parameters at each root found symbolically
HUGE = 1e12         # a float64 value beyond this is checked exactly (a pole that float64 rounding misses)
CONFIRM = 200       # candidates checked exactly, at most


def _entries(texts: list[str], symbols: tuple[str, ...]) -> list[Any]:
    import sympy as sp

    out = []
    for text in texts:
        expr = analytic.parse(text, symbols)
        out += list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    return out


def _evaluate(entries: list[Any], columns: dict[str, Any], n: int) -> Any:
    """A boolean array: where some entry is not finite or beyond HUGE in float64 (candidates)."""
    import numpy as np
    import sympy as sp

    bad = np.zeros(n, dtype=bool)
    for entry in entries:
        names = sorted(str(s) for s in entry.free_symbols)
        f = sp.lambdify([sp.Symbol(s, real=True) for s in names], entry, modules="numpy")
        with np.errstate(all="ignore"):
            try:
                v = np.asarray(f(*(columns[s].astype(np.complex128) for s in names)), dtype=np.complex128)
            except (TypeError, ValueError, ZeroDivisionError):
                return np.ones(n, dtype=bool)   # not vectorisable: every point is a candidate (confirmed exactly)
        v = np.broadcast_to(v, (n,))
        bad |= ~np.isfinite(v) | (np.abs(v.imag) > 1e-9 * (1 + np.abs(v.real))) | (np.abs(v) > HUGE)
    return bad


def _roots(entries: list[Any], used: list[str]) -> list[tuple[str, Any]]:
    """(symbol, the sympy expression of the others it equals) where a denominator, or the argument of a log or of a
    fractional power, of an entry is 0."""
    import sympy as sp

    zeros = set()
    for entry in entries:
        _, factors = sp.factor_list(sp.denom(sp.together(entry)))
        zeros |= {f for f, _ in factors if f.free_symbols}
        zeros |= {a.args[0] for a in entry.atoms(sp.log) if a.args[0].free_symbols}
        zeros |= {a.base for a in entry.atoms(sp.Pow) if not a.exp.is_integer and a.base.free_symbols}
    out = []
    for z in zeros:
        for s in sorted(z.free_symbols, key=str):
            if str(s) not in used:
                continue
            try:
                solutions = sp.solve(z, s)
            except (NotImplementedError, ValueError, TypeError):
                continue
            out += [(str(s), sol) for sol in solutions[:4] if sol.is_real is not False]
    return out


def joint_columns(parameters: dict[str, Parameter], used: list[str], entries: list[Any], seed: int = 0,
                  enumerate_up_to: int = ENUMERATE, samples: int = SAMPLES, probes: int = PROBES) -> tuple[dict[str, Any], bool]:
    """The joint points of the `used` parameters that release searches: every drawable combination where there are
    at most `enumerate_up_to`, else `samples` random draws (weighed as plan.draw_point draws) plus `probes` draws at
    each root of `entries` (sympy expressions: where a denominator, or the argument of a log or of a fractional power,
    is 0), the root's own parameter rounded onto its grid.

    Returns:
        (name -> numpy float64 array of the points' values, all of one length; whether the grid was enumerated).
    """
    import numpy as np

    dists = {name: distribution(parameters[name]) for name in used}
    exact = prod(len(v) for v, _ in dists.values()) <= enumerate_up_to
    rng = np.random.default_rng(seed)
    if exact:
        grids = np.meshgrid(*(v for v, _ in dists.values()), indexing="ij")
        return {name: g.ravel() for name, g in zip(used, grids, strict=True)}, True
    columns = {name: rng.choice(v, size=samples, p=w) for name, (v, w) in dists.items()}
    for name, solution in _roots(entries, used):   # each root: the others drawn, this one rounded onto its grid
        others = {o: rng.choice(dists[o][0], size=probes, p=dists[o][1]) for o in used if o != name}
        f = _lambdify(solution, others)
        if f is None:
            continue
        grid = dists[name][0]
        with np.errstate(all="ignore"):
            raw = np.asarray(f(), dtype=np.complex128) * np.ones(probes)
        # a complex root is no point a student can draw (its real part alone is no root): left out, and no
        # ComplexWarning on the instructor's terminal
        at = np.where(np.abs(raw.imag) <= 1e-12 * (1 + np.abs(raw.real)), raw.real, np.nan)
        p = parameters[name]
        at = np.round(at, int(p.decimals)) if p.kind == "real" else np.round(at)
        keep = np.isin(at, grid)
        for o in others:
            columns[o] = np.concatenate([columns[o], others[o][keep]])
        columns[name] = np.concatenate([columns[name], at[keep]])
    return columns, False


def nonfinite_points(parameters: dict[str, Parameter], used: list[str], answer: Answer, symbols: tuple[str, ...],
                     base: dict[str, Number], values: Any, seed: int = 0, limit: int = 3) -> tuple[list[dict], bool]:
    """Points a student can draw (`base` with the `used` parameters at drawable values) where `answer` has no finite
    value, each confirmed by exact evaluation (judge.fill, as grading computes it).

    Args:
        parameters: the key's; used: the parameters `answer` depends on; symbols: the names its expressions use;
        base: a drawn point (name -> number) for the other parameters; values: a point -> symbol values function
        (the exercise's `values`, which binds its arguments' names).
    Returns:
        (at most `limit` such points, whether the whole joint grid was enumerated: else they were searched by
        SAMPLES random draws and PROBES draws at each symbolic root).
    """
    import numpy as np

    entries = _entries([e.expr for e in expressions(answer)], symbols)
    if not entries or len(used) < 2:
        return [], True
    columns, exact = joint_columns(parameters, used, entries, seed)
    n = len(next(iter(columns.values())))
    full = {s: np.full(n, float(base[s])) for s in base}
    full.update(columns)
    named = values({s: full[s] for s in base})
    candidates = np.flatnonzero(_evaluate(entries, {k: np.asarray(v, dtype=np.float64) for k, v in named.items()}, n))
    found = []
    for i in candidates[:CONFIRM]:
        point = {**base, **{name: _drawn(columns[name][i], parameters[name]) for name in used}}
        try:
            filled = judge.fill(None, answer, values(point))
            ok = _finite(filled)
        except (ValueError, TypeError, ArithmeticError):
            ok = False
        if not ok and point not in found:
            found.append(point)
            if len(found) >= limit:
                break
    return found, exact


def _lambdify(solution: Any, others: dict[str, Any]) -> Any:
    import sympy as sp

    names = sorted(str(s) for s in solution.free_symbols)
    if any(n not in others for n in names):
        return None
    f = sp.lambdify([sp.Symbol(n, real=True) for n in names], solution, modules="numpy")
    return lambda: f(*(others[n] for n in names))


def _drawn(v: float, p: Parameter) -> Number:
    return int(round(float(v))) if p.kind == "integer" else round(float(v), int(p.decimals)) if p.kind == "real" \
        else p.value


def _finite(value: dict[str, Any]) -> bool:
    if value.get("t") == "seq":
        return all(_finite(v) for v in value["items"])
    nums = [value["v"]] if value.get("t") == "float" else value.get("data", []) if value.get("t") == "array" else []
    return not any(n in ("nan", "inf", "-inf") for n in nums)
