"""discrimination: for how many students a named misconception passes as the right answer at its check's tolerance,
over every point a student can draw (release refuses one above MAX_SHARE unless its spec accepts the overlap).

May import: stdlib, numpy, sympy, autograder.model, autograder.grading.plan, autograder.judging.analytic,
autograder.judging.judge.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

from autograder.grading import plan
from autograder.judging import analytic, judge
from autograder.model import Check, Exercise, ExprAnswer, Key, Misconception, Parameter, SeqAnswer, Tolerance

__all__ = ["MAX_SHARE", "Overlap", "distribution", "expressions", "overlap"]
MAX_SHARE = 0.01   # the share of students above which a misconception is refused (unless its spec accepts it)
ENUMERATE = 1_000_000   # joint grids up to this size are enumerated; larger ones are sampled
SAMPLES = 200_000   # draws for a larger grid (the share's standard error at 1 % is then 0.02 %)


@dataclass(frozen=True)
class Overlap:
    """Where misconception `misconception` of check `check` passes as the right answer: `share` (0..1) of the
    students (each drawn value weighed as plan.draw_point draws it), `exact` when every drawable point was
    enumerated (else `share` is estimated from SAMPLES draws); `values`: the drawable parameter values where it
    passes for most students who have them, in words ("t = 1.0, t = -1.0"), at most five."""

    check: str
    misconception: str
    share: float
    exact: bool
    values: tuple[str, ...] = ()


def distribution(p: Parameter) -> tuple[Any, Any]:
    """Every value `p` can be drawn as and its probability (numpy float64 arrays of one length): a real's
    magnitude is `round(uniform(low, high), decimals)` (plan.draw_point), so both ends of its range have half an
    interior value's weight, and its sign is + or - with probability 1/2 each where `sign = "any"`."""
    import numpy as np

    if p.kind == "fixed":
        return np.array([float(p.value)]), np.array([1.0])
    if p.kind == "integer":
        values = np.arange(int(p.low), int(p.high) + 1, dtype=np.float64)
        return values, np.full(len(values), 1.0 / len(values))
    d = int(p.decimals)
    steps = int(round((float(p.high) - float(p.low)) * 10 ** d))
    mags = np.round(float(p.low) + np.arange(steps + 1) / 10 ** d, d)
    weights = np.ones(steps + 1)
    if steps:
        weights[0] = weights[-1] = 0.5
    weights /= weights.sum()
    if p.sign == "positive":
        return mags, weights
    if p.sign == "negative":
        return -mags, weights
    return np.concatenate([mags, -mags]), np.concatenate([weights, weights]) / 2


def _symbols(key: Key, check: Check) -> tuple[str, ...]:
    ex = key.exercise(check.exercise)
    return tuple(ex.values({n: 0 for n in key.parameters}))


def _used(key: Key, check: Check, answers: tuple[Any, ...]) -> list[str]:
    """The parameters the answers depend on (an argument's name stands for its parameter)."""
    ex = key.exercise(check.exercise)
    symbols = _symbols(key, check)
    free: set[str] = set()
    for answer in answers:
        for item in expressions(answer):
            free |= {str(s) for s in analytic.parse(item.expr, symbols).free_symbols}
    params = {a.name: a.param for a in ex.args if a.param}
    return sorted({params.get(n, n) for n in free if params.get(n, n) in key.parameters})


def expressions(answer: Any) -> list[ExprAnswer]:
    """The sympy expressions of an answer, a tuple's items' included, in order."""
    if isinstance(answer, SeqAnswer):
        return [e for item in answer.items for e in expressions(item)]
    return [answer] if isinstance(answer, ExprAnswer) else []


def _entries(text: str, symbols: tuple[str, ...], columns: dict[str, Any], n: int) -> list[Any]:
    """The entries of expression `text` (one for a scalar, row-major for a Matrix) at n points, as float64 arrays."""
    import numpy as np
    import sympy as sp

    expr = analytic.parse(text, symbols)
    entries = list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
    out = []
    for entry in entries:
        names = sorted(str(s) for s in entry.free_symbols)
        f = sp.lambdify([sp.Symbol(s, real=True) for s in names], entry, modules="numpy")
        with np.errstate(all="ignore"):
            v = np.asarray(f(*(columns[s] for s in names)), dtype=np.float64)
        out.append(np.broadcast_to(v, (n,)))
    return out


def _close(a: Any, b: Any, tol: Tolerance) -> Any:
    """judge.coincide elementwise: within tol of each other in either direction; nan only with nan, inf only with
    itself."""
    import numpy as np

    with np.errstate(all="ignore"):
        near = np.abs(a - b) <= tol.atol + tol.rtol * np.maximum(np.abs(a), np.abs(b))
    return np.where(np.isnan(a) | np.isnan(b), np.isnan(a) & np.isnan(b),
                    np.where(np.isinf(a) | np.isinf(b), a == b, near))


def _same(right: Any, wrong: Any, symbols: tuple[str, ...], columns: dict[str, Any], n: int, base: dict[str, Any],
          tol: Tolerance) -> Any:
    """A boolean array: where `wrong` passes as `right` (answers of one check)."""
    import numpy as np

    if isinstance(right, SeqAnswer) and isinstance(wrong, SeqAnswer):
        if right.kind != wrong.kind or len(right.items) != len(wrong.items):
            return np.zeros(n, dtype=bool)
        mask = np.ones(n, dtype=bool)
        for r, w in zip(right.items, wrong.items, strict=True):
            mask &= _same(r, w, symbols, columns, n, base, tol)
        return mask
    if isinstance(right, ExprAnswer) and isinstance(wrong, ExprAnswer):
        if analytic.shape(right.expr, symbols) != analytic.shape(wrong.expr, symbols):
            return np.zeros(n, dtype=bool)
        mask = np.ones(n, dtype=bool)
        for r, w in zip(_entries(right.expr, symbols, columns, n), _entries(wrong.expr, symbols, columns, n),
                        strict=True):
            mask &= _close(r, w, tol)
        return mask
    # a None, a bool or a class name on either side: told apart by kind, the same at every point
    return np.full(n, judge.coincide(judge.fill(None, right, base), judge.fill(None, wrong, base), tol))


def overlap(key: Key, check: Check, m: Misconception, seed: int = 0) -> Overlap:
    """Where misconception `m` of `check` passes as the check's right answer at the tolerance a misconception is
    matched with (judge.misconception_tolerance), at a student's own point: over the whole grid of the parameters
    the two answers depend on when it has at most ENUMERATE points, else over SAMPLES draws (numpy's generator
    seeded with `seed`, so a release measures the same share each time). A produce check is also called at fresh
    points, so for it the share is an upper bound of the students who pass with the misconception."""

    ex = key.exercise(check.exercise)
    symbols = _symbols(key, check)
    right = judge.right_answer(check)
    used = _used(key, check, (right, m.answer))
    dists = {name: distribution(key.parameters[name]) for name in used}
    columns, full, weight = weighted_grid(key, ex, dists, ENUMERATE, SAMPLES, seed)
    exact = prod(len(v) for v, _ in dists.values()) <= ENUMERATE
    n = len(weight)
    base = plan.draw_point(key.parameters, key.assignment, "reference-a", "own")
    same = _same(right, m.answer, symbols, full, n, ex.values(base), judge.misconception_tolerance(key, check))
    share = float(weight[same].sum())
    values: list[str] = []
    if share > 0:
        for name in used:
            col = columns[name]
            grid, _ = dists[name]
            mostly = [v for v in grid if weight[(col == v) & same].sum() > 0.5 * weight[col == v].sum()]
            values += _ranges(name, mostly, grid, key.parameters[name])
    return Overlap(check.id, m.id, share, exact, tuple(values[:5]) + (("...",) if len(values) > 5 else ()))


def weighted_grid(key: Key, ex: Exercise, dists: dict[str, tuple[Any, Any]], enumerate_up_to: int, samples: int,
                  seed: int) -> tuple[dict[str, Any], dict[str, Any], Any]:
    """The points of the parameters in `dists` (name -> (values, weights), `distribution`) that students are drawn
    at, each with its weight: every combination where there are at most `enumerate_up_to`, else `samples` draws
    (numpy's generator seeded with `seed`). Returns (the varied columns, every parameter's and argument's column
    with the others at reference-a's own point, the weights): numpy arrays of one length."""
    import numpy as np

    used = list(dists)
    if prod(len(v) for v, _ in dists.values()) <= enumerate_up_to:
        grids = np.meshgrid(*(v for v, _ in dists.values()), indexing="ij") if used else []
        wgrids = np.meshgrid(*(w for _, w in dists.values()), indexing="ij") if used else []
        columns = {name: g.ravel() for name, g in zip(used, grids, strict=True)}
        weight = np.prod([w.ravel() for w in wgrids], axis=0) if used else np.array([1.0])
    else:
        rng = np.random.default_rng(seed)
        columns = {name: rng.choice(v, size=samples, p=w) for name, (v, w) in dists.items()}
        weight = np.full(samples, 1.0 / samples)
    n = len(weight)
    base = plan.draw_point(key.parameters, key.assignment, "reference-a", "own")
    full = {**{p: np.full(n, float(v)) for p, v in base.items()}, **columns}
    full.update({a.name: full[a.param] for a in ex.args if a.param})
    return columns, full, weight


def _ranges(name: str, chosen: list[float], grid: Any, p: Parameter) -> list[str]:
    """`chosen` values of `name`'s grid in words, runs of neighbours as ranges: ["g2 = -0.18..-0.14", "t = 1.0"]."""
    order = sorted(float(v) for v in grid)
    index = {v: i for i, v in enumerate(order)}
    runs: list[list[float]] = []
    for v in sorted(float(c) for c in chosen):
        if runs and index[v] == index[runs[-1][-1]] + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    return [f"{name} = {_number(r[0], p)}" + (f"..{_number(r[-1], p)}" if len(r) > 1 else "") for r in runs]


def _number(v: float, p: Parameter) -> str:
    return str(int(v)) if p.kind == "integer" else repr(round(float(v), int(p.decimals or 0) if p.kind == "real" else 12))
