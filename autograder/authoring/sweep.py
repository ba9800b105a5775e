"""sweep: release's check of the solution over the whole domain a student can draw, at the check's tolerance: for
every produce check whose expectation is a sympy expression, the reference torch run of the solution against sympy at
every drawable point of the parameters its exercise's calls use (enumerated up to `Budget.enumerate_up_to` points,
else `Budget.draws` random draws plus each parameter's edges and the joint points `domain` searches near poles), in
sandboxed runs of many points each. A right solution that fails its own check anywhere a student can draw would cost
that student a point for right work; the sample points alone miss it (issue 44: 24 of 1.63 M points, 3.2 % off at an
rtol of 0.03).

May import: stdlib, numpy, sympy, autograder.wire, autograder.model, autograder.keyfile, autograder.authoring.domain,
autograder.authoring.discrimination, autograder.grading.plan, autograder.judging.analytic, autograder.judging.compare,
autograder.judging.judge, autograder.sandbox.client, autograder.sandbox.cgroup.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from math import prod
from pathlib import Path
from typing import Any, Callable, Iterator

from autograder import wire
from autograder.authoring import domain
from autograder.authoring.discrimination import distribution
from autograder.grading import plan
from autograder.judging import analytic, compare, judge
from autograder.model import (BoolAnswer, Check, Exercise, ExprAnswer, InstalledExpectation, Key, NoneAnswer,
                              Number, ValueExpectation, answer_items)
from autograder.sandbox import cgroup
from autograder.sandbox import client as sandbox

__all__ = ["FULL", "QUICK", "Budget", "Summary", "fingerprint", "remembered", "sweep"]


@dataclass(frozen=True)
class Budget:
    """How many points the sweep calls the solution at, per exercise: every drawable combination of the parameters
    its calls use where there are at most `enumerate_up_to`, else `draws` random draws (as plan.draw_point draws)
    plus, for each parameter, `edges` draws at each of its edge values (its lowest and highest value, and the
    values nearest 0 of each sign) and the joint points near poles that `domain.joint_columns` searches. Each sandboxed
    run makes at most `batch_calls` calls; `parallel` runs go at once (0: one per core this process may use,
    `jobs()`). How many go at once changes how long the check takes, never what it finds."""

    enumerate_up_to: int = 1_000_000
    draws: int = 100_000
    edges: int = 64
    batch_calls: int = 60_000
    parallel: int = 0
    name: str = "full"

    def jobs(self) -> int:
        """The runs that go at once: `parallel`, else one per usable core (sandbox.cgroup.usable_cores: affinity
        and CPU quota), and no more than one per GiB of the memory available now (each run is a forked copy of the
        warm worker, with its results of up to MAX_RESULTS bytes); at least 1."""
        if self.parallel > 0:
            return self.parallel
        try:
            with open("/proc/meminfo") as f:
                avail = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
        except (OSError, StopIteration, ValueError, IndexError):
            avail = 2**62
        return max(1, min(cgroup.usable_cores(), avail // 2**30))


FULL = Budget()   # what `autograder release` runs
QUICK = Budget(enumerate_up_to=2_000, draws=1_000, edges=4, name="quick")   # `release --domain quick` and the test suite
MAX_RESULTS = 256 * 2**20   # bytes of one sweep run's results (the instructor's solution, not a student's code)
SHOWN = 3                   # failing points named per check


PROGRESS_EVERY = 15.0   # seconds between two progress lines of a long domain check


def _duration(seconds: float) -> str:
    """`seconds` as a person says it: "40 s", "3 min"."""
    return f"{max(1, round(seconds)):.0f} s" if seconds < 90 else f"{round(seconds / 60):.0f} min"


def cache_dir() -> Path:
    """Where passed domain checks are remembered: $AUTOGRAD_LAB_CACHE, else $XDG_CACHE_HOME/autograd-lab/domain,
    else ~/.cache/autograd-lab/domain."""
    if os.environ.get("AUTOGRAD_LAB_CACHE"):
        return Path(os.environ["AUTOGRAD_LAB_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "autograd-lab" / "domain"


def _code_digest() -> str:
    """sha256 of the autograder package's own source (every .py file): a change to how grading judges is a
    change to what a passed check said."""
    h = hashlib.sha256()
    root = Path(__file__).resolve().parent.parent
    for f in sorted(root.rglob("*.py")):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _judged_key(key: Key, exercise: str | None = None) -> dict[str, Any]:
    """The key as far as a domain check's outcome depends on it: its JSON form without its secret, its digests and
    its prose (titles, a check's `why`, points, visibility); with `exercise`, of that exercise and its checks only."""
    from autograder.keyfile import to_json

    k = to_json(key)
    for name in ("secret", "title", "digest", "digest_salt"):
        k.pop(name, None)
    k["exercises"] = [{**e, "title": ""} for e in k["exercises"] if exercise in (None, e["id"])]
    k["checks"] = [{**c, "title": "", "why": "", "points": 0, "visibility": ""} for c in k["checks"]
                   if exercise in (None, c["exercise"])]
    return k


def fingerprint(key: Key, cells: list[str], positions: dict[str, int], budget: Budget) -> str:
    """What a domain check's outcome depends on, as a sha256 (hex): the key without its secret and prose
    (`_judged_key`: parameters, exercises, checks, tolerances, limits, the torch and sympy it was built with), the
    solution's code cells and where each exercise is observed, the budget (but how many runs go at once), and the
    grader's own code. The same fingerprint gives the same outcome."""
    blob = json.dumps({"key": _judged_key(key), "cells": cells, "positions": positions,
                       "budget": asdict(replace(budget, parallel=0)), "code": _code_digest()}, sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def exercise_fingerprint(key: Key, exercise: str, cells: list[str], positions: dict[str, int], budget: Budget) -> str:
    """What one exercise's share of a domain check depends on, as a sha256 (hex): the key as `_judged_key` gives it
    for that exercise (the other exercises and their checks left out); the code cells up to the one after which the
    exercise is observed (a later cell has not run when its calls are made); the budget (but how many runs go at
    once); the grader's own code. A change to another exercise's checks, or to a later cell, leaves it the same: only
    what changed is checked again."""
    after = positions.get(exercise, len(cells) - 1)
    blob = json.dumps({"key": _judged_key(key, exercise), "cells": cells[:after + 1], "after": after,
                       "exercise": exercise, "budget": asdict(replace(budget, parallel=0)), "code": _code_digest()},
                      sort_keys=True)
    return hashlib.sha256(blob.encode()).hexdigest()


def _kept(key: Key, cells: list[str], positions: dict[str, int], budget: Budget) -> dict[str, dict[str, Any]]:
    """exercise id -> what its passed check said (checks, points, exact, date), for each exercise whose same check
    (`exercise_fingerprint`) passed before on this machine."""
    out = {}
    for ex in key.exercises:
        try:
            kept = json.loads((cache_dir() / f"exercise-{exercise_fingerprint(key, ex.id, cells, positions, budget)}"
                                             f".json").read_text(encoding="utf-8"))
            out[ex.id] = {"checks": int(kept["checks"]), "points": int(kept["points"]), "exact": bool(kept["exact"]),
                          "capped": str(kept["capped"])}
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return out


def _keep(key: Key, t: _Target, cells: list[str], positions: dict[str, int], budget: Budget, points: int) -> None:
    """Remember that exercise `t` passed at `points` (check, point) pairs; a cache that cannot be written is not."""
    path = cache_dir() / f"exercise-{exercise_fingerprint(key, t.exercise.id, cells, positions, budget)}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"checks": len(t.checks), "points": points, "exact": t.exact, "capped": t.capped,
                                   "date": time.strftime("%Y-%m-%d %H:%M")}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


@dataclass(frozen=True)
class Summary:
    """What the sweep did: how many produce checks it judged, at how many points in all (a point of one exercise
    counts once per check), of how many exercises, how many of those were enumerated whole (else sampled), in how
    many sandboxed runs, and how long it took (seconds, wall clock); `kept` of the exercises were not run again,
    since the same exercise (`exercise_fingerprint`) passed before."""

    checks: int = 0
    points: int = 0
    exercises: int = 0
    enumerated: int = 0
    runs: int = 0
    seconds: float = 0.0
    remembered: str = ""   # when the same check (`fingerprint`) passed before: its date; then nothing ran now
    budget: str = "full"   # Budget.name
    kept: int = 0          # exercises whose same check passed before (`exercise_fingerprint`): not run again now
    jobs: int = 0          # sandboxed runs at once (Budget.jobs)
    capped: tuple[str, ...] = ()   # exercises the spec's domain_points checked at fewer points (_Target.capped)

    @property
    def text(self) -> str:
        """One line for the release summary."""
        if not self.checks:
            return "domain check: no produce check has a sympy expectation"
        quick = (" (quick: a draft's check of a few thousand points an exercise; release without --domain quick before "
                 "students get the notebook)" if self.budget == "quick" else "")
        how = ("every drawable point" if self.enumerated == self.exercises else
               f"every drawable point of {self.enumerated} of {self.exercises} exercises, sampled for the others"
               if self.enumerated else "sampled points, edges and points near poles")
        how += "".join(f"; {c}" for c in self.capped)
        checks = (f"its {self.checks} produce check{'s' * (self.checks != 1)} with a sympy expectation"
                  if self.checks != 1 else "its produce check with a sympy expectation")
        runs = f"{self.runs} sandboxed run{'s' * (self.runs != 1)}" + (f", {self.jobs} at once" if self.jobs > 1 and
                                                                      self.runs > 1 else "")
        if self.remembered:
            return (f"domain check{quick}: the solution passes {checks} at {self.points:,} points ({how}; the same "
                    f"solution, key and grader passed it on {self.remembered}, so it was not run again)")
        if self.kept and self.kept == self.exercises:
            return (f"domain check{quick}: the solution passes {checks} at {self.points:,} points ({how}; each "
                    f"exercise passed it before with the same code, checks and grader, so none ran again)")
        kept = (f"; {self.kept} of the {self.exercises} exercises passed before with the same code, checks and grader, "
                f"so only the other {self.exercises - self.kept} ran now" if self.kept else "")
        return (f"domain check{quick}: the solution passes {checks} at {self.points:,} points ({how}{kept}; {runs}, "
                f"{self.seconds:.0f} s)")


@dataclass(frozen=True)
class _Target:
    """One exercise's share of the sweep: the checks judged, the parameters varied, and their points as numpy
    columns (name -> float64 array), all of length `n`."""

    exercise: Exercise
    checks: tuple[Check, ...]
    used: tuple[str, ...]
    columns: dict[str, Any]
    n: int
    exact: bool
    drawable: int

    @property
    def capped(self) -> str:
        """What the spec's domain_points changed, in words ("" where it changed nothing)."""
        cap = self.exercise.domain_points
        if cap is None or self.exact and self.n == self.drawable:
            return ""
        return (f"exercise {self.exercise.id} at {self.n:,} of its {self.drawable:,} drawable points, as its spec's "
                f"domain_points = {cap} asks")

    def values(self, key: Key, lo: int, hi: int) -> dict[str, list[Number]]:
        """Each varied parameter's values at points lo..hi-1 as plan.draw_point gives them (a real rounded to its
        decimals, an integer an int)."""
        import numpy as np

        out = {}
        for name in self.used:
            p, v = key.parameters[name], self.columns[name][lo:hi]
            out[name] = (np.round(v, int(p.decimals)).tolist() if p.kind == "real" else [int(x) for x in np.round(v)])
        return out

    def points(self, key: Key, base: dict[str, Number], lo: int, hi: int,
               values: dict[str, list[Number]] | None = None) -> list[dict[str, Number]]:
        """Points lo..hi-1 (`values`, made if not given), the parameters no call varies at `base`."""
        cols = list((values or self.values(key, lo, hi)).values())
        return [{**base, **dict(zip(self.used, row, strict=True))} for row in zip(*cols, strict=True)] if cols \
            else [dict(base) for _ in range(hi - lo)]


def swept(check: Check) -> bool:
    """Is `check` judged by the sweep: a produce check whose expectation holds a sympy expression (an installed
    fact, an exception or a warning has no formula to compare with)."""
    e = check.expectation
    return (check.kind == "produce" and isinstance(e, ValueExpectation) and not isinstance(e, InstalledExpectation)
            and any(isinstance(a, ExprAnswer) for a in answer_items(e.answer)))


def _used(key: Key, ex: Exercise, checks: list[Check], symbols: tuple[str, ...]) -> list[str]:
    """The parameters a call of the exercise's functions or one of its checks' expressions depends on."""
    names = {p for a in ex.args for p in ([a.param] if a.param else []) + list(a.params or ()) + ([a.grad] if a.grad
                                                                                                 else [])}
    for check in checks:
        for a in (i for i in answer_items(check.expectation.answer) if isinstance(i, ExprAnswer)):
            names |= {str(s) for s in analytic.parse(a.expr, symbols).free_symbols if str(s) in key.parameters}
    return sorted(n for n in names if key.parameters[n].kind != "fixed")


def _edges(key: Key, used: list[str], budget: Budget, rng: Any, corners_up_to: int = 4096) -> dict[str, Any]:
    """For each parameter: its edge values (lowest, highest, nearest 0 of each sign), each with `budget.edges` draws
    of the others; and every corner (each parameter at its lowest or highest) where there are at most
    `corners_up_to`."""
    import itertools

    import numpy as np

    dists = {n: distribution(key.parameters[n]) for n in used}
    cols: dict[str, list[Any]] = {n: [] for n in used}
    for name in used:
        grid = np.sort(dists[name][0])
        ends = {grid[0], grid[-1]}
        neg, pos = grid[grid < 0], grid[grid > 0]
        ends |= ({neg[-1]} if len(neg) else set()) | ({pos[0]} if len(pos) else set())
        for v in sorted(ends):
            for o in used:
                cols[o].append(np.full(budget.edges, v) if o == name else
                               rng.choice(dists[o][0], size=budget.edges, p=dists[o][1]))
    if 2 ** len(used) <= corners_up_to:
        corners = np.array(list(itertools.product(*([dists[n][0].min(), dists[n][0].max()] for n in used))))
        for j, n in enumerate(used):
            cols[n].append(corners[:, j])
    return {n: np.concatenate(c) for n, c in cols.items()}


def targets(key: Key, budget: Budget, base: dict[str, Number], skip: frozenset[str] = frozenset()) -> list[_Target]:
    """Each exercise with a swept check (but those in `skip`), and the points it is called at (see Budget)."""
    import numpy as np

    out = []
    for ex in key.exercises:
        if ex.id in skip:
            continue
        checks = [c for c in key.checks if c.exercise == ex.id and swept(c)]
        if not checks or any(a.objects for a in ex.args):
            continue
        symbols = tuple(ex.values(base))
        used = _used(key, ex, checks, symbols)
        drawable = prod(len(distribution(key.parameters[n])[0]) for n in used)
        seed = int.from_bytes(hashlib.sha256(f"{key.assignment}\0{ex.id}".encode()).digest()[:4], "big")
        if not used:
            out.append(_Target(ex, tuple(checks), (), {}, 1, True, 1))
            continue
        entries = domain._entries([e for c in checks for e in judge.expressions(c)], symbols)
        own, corners = budget, 4096
        if ex.domain_points is not None:   # the spec's cap, where each call is costly (one that starts processes)
            cap = ex.domain_points
            own = replace(budget, enumerate_up_to=min(budget.enumerate_up_to, cap), draws=min(budget.draws, cap),
                          edges=min(budget.edges, max(1, cap // 100)))
            corners = min(corners, cap // 4)
        columns, exact = domain.joint_columns(key.parameters, used, entries, seed, own.enumerate_up_to,
                                              own.draws, max(1, min(domain.PROBES, own.draws // 5)))
        if not exact:
            edges = _edges(key, used, own, np.random.default_rng(seed + 1), corners)
            columns = {n: np.concatenate([columns[n], edges[n]]) for n in used}
            rows = np.unique(np.stack([columns[n] for n in used], axis=1), axis=0)   # each point once
            columns = {n: rows[:, j] for j, n in enumerate(used)}
        out.append(_Target(ex, tuple(checks), tuple(used), columns, len(columns[used[0]]), exact, drawable))
    return out


def _requests(key: Key, cells: list[str], positions: dict[str, int], base: dict[str, Number], found: list[_Target],
              budget: Budget) -> Iterator[tuple[dict[str, Any], dict[str, tuple[int, list[dict[str, Number]]]]]]:
    """Sweep requests (plan.probe_request's form, an observation as plan.observation makes it but of the functions
    with swept checks only, each call with "targets": what its checks read, and its arguments as "columns" of the
    parameters' values with plan.arg_template, which the probe turns into what plan.call_args would write) and, per
    exercise, the first index and the points each holds: each request as full as `budget.batch_calls` allows, exercise after
    exercise, since every request runs the notebook's cells once."""
    done = {t.exercise.id: 0 for t in found}
    size = _run_size(found, budget)
    while any(done[t.exercise.id] < t.n for t in found):
        observe, ranges, room = [], {}, size
        for t in found:
            wanted = _functions(t)
            lo = done[t.exercise.id]
            take = min(t.n - lo, room // len(wanted))
            if take <= 0:
                continue
            hi = done[t.exercise.id] = lo + take
            room -= take * len(wanted)
            values = t.values(key, lo, hi)
            points = t.points(key, base, lo, hi, values)   # for the judging
            template = plan.arg_template(t.exercise)   # the calls' arguments as columns: the probe makes each point's
            named = {p for a in template for p in (a.get("params") or [a["param"]]) + ([a["grad"]] if a.get("grad")
                                                                                       else [])}
            columns = {"n": hi - lo, "args": template,
                       "values": {p: values[p] if p in values else [base[p]] * (hi - lo) for p in sorted(named)}}
            observe.append({"exercise": t.exercise.id, "after": positions.get(t.exercise.id, len(cells) - 1),
                            "names": [], "calls": [{"call": fn, "function": fn, "columns": columns,
                                                    "targets": sorted(wanted[fn])}
                                                   for fn in t.exercise.functions if fn in wanted]})
            ranges[t.exercise.id] = (lo, points)
        observe.sort(key=lambda entry: entry["after"])
        yield ({"v": 2, "cells": cells, "skip": {}, "observe": observe, "parameters": base,
                "call_timeout": float(key.limits.call_timeout), "cell_timeout": float(key.limits.cell_timeout),
                "warm": plan.warm_ups(cells)}, ranges)


def _run_size(found: list[_Target], budget: Budget) -> int:
    """The calls of each sweep run: runs of one size, a multiple of `budget.jobs()` of them, so that none runs alone
    at the end, each of at most `budget.batch_calls` (but an exercise's functions at one point go together)."""
    total = sum(t.n * len(_functions(t)) for t in found)
    jobs = budget.jobs()
    runs = jobs * math.ceil(total / (jobs * budget.batch_calls))
    return max(math.ceil(total / runs), max(len(_functions(t)) for t in found))


def _functions(t: _Target) -> dict[str, set[str]]:
    """function -> what its checks read of a call ("returned", or a tensor argument's name)."""
    out: dict[str, set[str]] = {}
    for c in t.checks:
        out.setdefault(c.function, set()).add("returned" if c.observe == "returned" else c.observe.split(".")[0])
    return out


@dataclass
class _Misses:
    """One check's failures found so far: how many, the first few (point, expected, observed, detail), the largest
    relative and absolute differences of a numeric failure (None: a failure that no tolerance would pass), and, per
    parameter varied, the one value every failure has so far (None once two differ)."""

    count: int = 0
    shown: list[tuple[dict[str, Number], str, str, str]] | None = None
    worst: float | None = 0.0
    worst_abs: float = 0.0
    advice: str | None = None   # judge.release_advice at the first point: the dtype's tolerance, ops, or an rtol
    single: dict[str, Number | None] | None = None

    def add(self, point: dict[str, Number], used: tuple[str, ...], expected: str, observed: str, detail: str,
            gap: tuple[float, float] | None) -> None:
        self.count += 1
        if self.shown is None:
            self.shown, self.single = [], {n: point[n] for n in used}
        elif self.single is not None:
            self.single = {n: v if point[n] == v else None for n, v in self.single.items()}
        if len(self.shown) < SHOWN:
            self.shown.append((point, expected, observed, detail))
        if gap is None or self.worst is None:
            self.worst = None
        else:
            self.worst, self.worst_abs = max(self.worst, gap[0]), max(self.worst_abs, gap[1])


def _expected_columns(check: Check, ex: Exercise, points: list[dict[str, Number]]) -> tuple[Any, Any] | None:
    """Sympy's value of a check whose answer is one expression, or a tuple of them, at every point, in float64 (numpy;
    an array of shape (points, numbers), a tuple's items' numbers one after another), and which numbers are constants
    (a bool array of shape (numbers,): their float64 value is sympy's, NaN and infinities too); or None where it
    cannot be evaluated so. Only a first look, which `_Judging` uses with half the tolerance, so that a point it
    passes passes judge's exact (50-digit) evaluation too."""
    import numpy as np
    import sympy as sp

    answer = check.expectation.answer
    items = answer_items(answer)
    if not points or not all(isinstance(a, (ExprAnswer, NoneAnswer, BoolAnswer)) for a in items):
        return None
    names = {s: np.array([p[s] for p in points], dtype=np.float64) for s in points[0]}
    named = ex.values(names)
    try:
        entries: list[Any] = []
        for a in (i for i in items if isinstance(i, ExprAnswer)):   # None and a bool hold no number (a bool is in
            #                                                           the form, which a group's first point judges)
            expr = analytic.parse(a.expr, tuple(named))
            entries += list(expr) if isinstance(expr, sp.MatrixBase) else [expr]
        constant = np.array([not e.free_symbols for e in entries], dtype=bool)
        order = sorted(named)
        f = sp.lambdify([sp.Symbol(n, real=True) for n in order], entries, modules="numpy")
        with np.errstate(all="ignore"):
            out = [np.broadcast_to(np.asarray(v, dtype=np.float64), (len(points),))
                   for v in f(*(np.asarray(named[n], dtype=np.float64) for n in order))]
    except Exception:   # not vectorisable (a function numpy lacks, a complex value): judge decides at each point
        return None
    return np.stack(out, axis=1), constant


def _gap(expected: dict[str, Any], observed: dict[str, Any] | None) -> tuple[float, float] | None:
    """The largest |observed - expected| / |expected| and |observed - expected| over the numbers of two values of one
    form (None: no number to compare, or a value that is not finite)."""
    e = compare.flat_numbers(expected) if expected else None
    o = compare.flat_numbers(observed) if observed else None
    if e is None or o is None or len(e) != len(o) or any(isinstance(x, (str, bool)) for x in e + o):
        return None
    rel = max((abs(a - b) / abs(b) if b else (0.0 if a == b else math.inf)) for a, b in zip(o, e, strict=True))
    return rel, max(abs(a - b) for a, b in zip(o, e, strict=True))


def _form_dtypes(form: dict[str, Any]) -> list[str]:
    """The dtype of each of a form's numbers, in order (wire): a tensor's or array's own, "float64" for a Python
    number; as compare_produced judges each item of a tuple at its own dtype's tolerance."""
    if form["t"] in ("tensor", "array"):
        return [str(form.get("dtype"))] * int(form["n"])
    if form["t"] == "seq":
        return [d for item in form["items"] for d in _form_dtypes(item)]
    return ["float64"] if form["t"] in ("float", "int") else []


class _Judging:
    """One run's judging of one exercise's checks: each point's call record, exact (judge's own handlers) or, for
    calls that came as columns of numbers (wire.Columns), a numpy first look at half the tolerance after the
    group's first point passed the exact judgement (then its form, which every point of the group shares, is
    right)."""

    def __init__(self, key: Key, obs: wire.Observations, t: _Target, points: list[dict[str, Number]],
                 misses: dict[str, _Misses]) -> None:
        self.key, self.obs, self.t, self.points, self.misses = key, obs, t, points, misses

    def exact(self, check: Check, j: int, rec: wire.CallResult | None) -> bool:
        """Judge the call at point `j` as grading does; keep a failure. True: it passed."""
        key, ex, point = self.key, self.t.exercise, self.points[j]
        if rec is None or rec.status in ("timeout", "skipped", "undefined"):
            why = {"timeout": f"did not return within {key.limits.call_timeout:g} s",
                   "skipped": f"was not called (an earlier call did not return within {key.limits.call_timeout:g} s)",
                   "undefined": "was not defined"}.get(rec.status if rec else "", "was not observed")
            self.misses.setdefault(check.id, _Misses()).add(point, self.t.used, "", "", f"{check.function} {why}", None)
            return False
        v = judge.handler(check).produced(key, check, ex, rec, point, ex.call_text(check.function), self.obs.installed)
        if isinstance(v, judge.Stop):
            self.misses.setdefault(check.id, _Misses()).add(point, self.t.used, "", v.observed or "", v.message, None)
            return False
        if v.comparison.ok:
            return True
        expected = judge.handler(check).expected_at(key, check, ex, point, self.obs.installed)
        m = self.misses.setdefault(check.id, _Misses())
        if not m.count:   # what the dtype's tolerance, ops or an rtol would do there, as release says it
            m.advice = judge.release_advice(key, check, replace(self.obs, calls={(check.function, 0): rec}), [point])
        target = judge.observed_value(check, rec) if rec.status == "returned" else None
        gap = _gap(expected, target) if v.comparison.reason == "values" else None   # no tolerance passes another form
        m.add(point, self.t.used, v.expected, v.observed, v.comparison.detail, gap)
        return False

    def check(self, check: Check) -> int:
        """Judge `check` at every point of this run; return how many points."""
        import numpy as np

        n = len(self.points)
        seen = np.zeros(n, dtype=bool)
        expected: Any = ...   # computed when first needed
        target = (check.observe or "returned").split(".")[0]
        for cols in self.obs.columns:
            if cols.call != check.function or target not in cols.forms:
                continue
            idx = np.asarray(cols.points, dtype=np.int64)
            if len(idx) and (idx.max() >= n or seen[idx].any()):   # not this run's points, or a point twice
                continue
            seen[idx] = True
            if not self.exact(check, int(idx[0]), cols.record(0)):   # its form (and first numbers) failed
                for i in range(1, len(idx)):
                    self.exact(check, int(idx[i]), cols.record(i))
                continue
            if expected is ...:
                expected = _expected_columns(check, self.t.exercise, self.points)
            first, end = cols.offsets()[target]
            form = cols.forms[target] if target == "returned" else cols.forms[target]["grad"]
            rest = np.arange(1, len(idx))
            if expected is not None and expected[0].shape[1] == end - first and len(rest):
                observed = np.asarray(cols.rows, dtype=np.float64)[1:, first:end]   # "nan", "inf": numpy reads them
                want, constant = expected[0][idx[1:]], expected[1]
                tols = [self.key.grading.produced(check, d) for d in _form_dtypes(form)]   # each number's own
                rtol, atol = np.array([t.rtol for t in tols]), np.array([t.atol for t in tols])
                with np.errstate(all="ignore"):
                    near = np.isfinite(want) & (np.abs(observed - want) <= 0.5 * (atol + rtol * np.abs(want)))
                    # a constant NaN or infinity (the where trap's "nan") is sympy's own: the same one passes, as in
                    # compare._close
                    near |= constant & ((np.isnan(want) & np.isnan(observed)) | (np.isinf(want) & (observed == want)))
                rest = rest[~near.all(axis=1)]
            for i in rest:
                self.exact(check, int(idx[i]), cols.record(int(i)))
        for j in np.flatnonzero(~seen):
            self.exact(check, int(j), self.obs.calls.get((check.function, int(j))))
        return n


def _judge_run(key: Key, obs: wire.Observations, found: list[_Target], ranges: dict[str, tuple[int, list[dict[str, Number]]]],
               base: dict[str, Number], misses: dict[str, _Misses]) -> dict[str, int]:
    """Judge one run's calls; return, per exercise, how many (check, point) pairs were judged."""
    judged = {}
    for t in found:
        if t.exercise.id in ranges:
            judging = _Judging(key, obs, t, ranges[t.exercise.id][1], misses)
            judged[t.exercise.id] = sum(judging.check(check) for check in t.checks)
    return judged


def _problem(key: Key, check: Check, m: _Misses, t: _Target, source: str) -> str:
    """The refusal's text for one check: where, both values, and the tolerance that would pass."""
    point, expected, observed, detail = (m.shown or [({}, "", "", "")])[0]
    ex = t.exercise
    of = (f"{m.count:,} of its {t.n:,} drawable points" if t.exact else
          f"{m.count:,} of {t.n:,} points drawn from its {t.drawable:,} drawable ones")
    also = "; also at " + "; ".join(ex.where(p) for p, *_ in (m.shown or [])[1:]) if m.count > 1 else ""
    values = (f": sympy expects {expected}, the reference torch {key.torch_version} run of the solution gives "
              f"{observed} ({detail})" if expected else f": {detail}")
    text = (f"{source} check {check.id!r}: the solution fails its own check at {of}, at {ex.where(point)}{values}"
            f"{also}. A student drawn there would lose the check's points for right work.")
    dtypes = judge._dtypes(check.expectation.form) or {"float64"}
    tol = key.grading.produced(check, sorted(dtypes)[0])
    label = check.dtype or "/".join(sorted(dtypes))
    fixed = [f"{n} = {v}" for n, v in (m.single or {}).items() if v is not None]
    if m.count > 1 and fixed and len(fixed) < len(t.used):
        text += (f" Every failing point has {' and '.join(fixed)}: a solution right elsewhere that fails only there "
                 f"is likely wrong there (a branch, a special case), not rounded.")
    advice = judge.handler(check).advice(key, check)
    if m.worst is not None and math.isfinite(m.worst) and m.worst > 0:
        rtol, atol = float(f"{m.worst * 1.05:.2g}"), float(f"{m.worst_abs * 1.05:.2g}")
        passes = (f"rtol = {rtol:g} (or atol = {atol:g}) would pass at every point found" if rtol <= 0.5 else
                  f"atol = {atol:g} would pass at every point found (no rtol would: sympy's value is near 0 there, "
                  f"where rounding is absolute, as when terms cancel)")
        text += f" Its tolerance is rtol = {tol.rtol:g}, atol = {tol.atol:g} ({label}): {passes}. "
        text += m.advice or (f"If the difference is rounding (a low-precision dtype, a long computation), set "
                             f"{passes.split(' would')[0]} on the check; else {advice[0].lower()}{advice[1:]}")
    else:
        text += " " + advice
    return text


def remembered(key: Key, cells: list[str], positions: dict[str, int], worker: sandbox.Worker, source: str,
               budget: Budget = FULL, say: Callable[[str], None] | None = None) -> tuple[list[str], Summary]:
    """`sweep`, unless the same check (`fingerprint`) passed before on this machine (`cache_dir`): then its summary,
    marked as remembered; else `sweep` with each exercise's own memory (`exercise_fingerprint`), so that only the
    exercises whose code or checks changed run again. Only a pass is remembered; a failure is found again each time.
    A cache that cannot be read or written is not used."""
    path = cache_dir() / f"{fingerprint(key, cells, positions, budget)}.json"
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
        return [], replace(Summary(**{k: kept[k] for k in ("checks", "points", "exercises", "enumerated", "runs",
                                                           "seconds", "budget")}), remembered=str(kept["date"]),
                           capped=tuple(map(str, kept["capped"])))
    except (OSError, ValueError, KeyError, TypeError):
        pass
    problems, summary = sweep(key, cells, positions, worker, source, budget, memo=True, say=say)
    if not problems:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({**asdict(summary), "date": time.strftime("%Y-%m-%d %H:%M")}), encoding="utf-8")
            os.replace(tmp, path)
        except OSError:
            pass
    return problems, summary


def sweep(key: Key, cells: list[str], positions: dict[str, int], worker: sandbox.Worker, source: str,
          budget: Budget = FULL, student: str = "reference-a", memo: bool = False,
          say: Callable[[str], None] | None = None) -> tuple[list[str], Summary]:
    """Judge the solution (its code cells, observed after the cells `positions` names, as grading observes them) at
    the points of `Budget`, the parameters no call uses at `student`'s own point. With `memo`, an exercise whose same
    check passed before on this machine (`exercise_fingerprint`, in `cache_dir`) is not run again, and each exercise
    that passes now is remembered (whatever the others do). `say` hears what is left, at most every PROGRESS_EVERY
    seconds while runs go on (the points judged, of how many, and about how long the rest takes).

    Returns:
        (the problems, one per check that fails somewhere, each naming the spec file, the check, the point, both
        values and the tolerance that would pass; what the sweep did).
    Raises:
        RuntimeError: a sweep run did not finish (the message says why and shows the output's end).
    """
    start = time.monotonic()
    base = plan.draw_point(key.parameters, key.assignment, student, "own")
    kept = _kept(key, cells, positions, budget) if memo else {}
    found = targets(key, budget, base, frozenset(kept))
    if not found and not kept:
        return [], Summary()
    limits = replace(key.limits, submission_timeout=max(float(key.limits.submission_timeout), 3600.0))
    misses: dict[str, _Misses] = {}
    judged: dict[str, int] = {t.exercise.id: 0 for t in found}
    total, said = sum(t.n * len(t.checks) for t in found), [start]
    planned = math.ceil(sum(t.n * len(_functions(t)) for t in found) / _run_size(found, budget)) if found else 0
    settled = [0]   # runs judged (a run sent again counts once)
    pending: list[Any] = []
    began: list[float] = []   # when the first run was sent (the points' columns were made before)
    runs = 0

    def finished(run: Any) -> wire.Observations | None:
        try:
            obs = wire.parse_results(run.results, MAX_RESULTS)
        except wire.WireError:
            return None
        return obs if obs.complete else None

    def settle(item: tuple[Any, dict[str, Any], dict[str, tuple[int, list[dict[str, Number]]]]]) -> None:
        nonlocal judged, runs
        future, request, ranges = item
        result = future.result()
        runs += 1
        obs = finished(result)
        if obs is None:   # a busy machine (a step that outlasted its alarm): once more, on its own
            result = worker.run(request, limits, max_results=MAX_RESULTS)
            runs += 1
            obs = finished(result)
        if obs is None:
            raise RuntimeError(f"a run of the domain check did not finish, twice (exit {result.exit_code}, timed out: "
                               f"{result.timed_out}, a step outlasted its alarm: {result.stalled}, over its memory: "
                               f"{result.over_memory}, results cut: {result.results_cut}); release again, or with "
                               f"--domain quick while you draft; output:\n{result.output_tail[-1500:]}")
        for ex, n in _judge_run(key, obs, found, ranges, base, misses).items():
            judged[ex] += n
        settled[0] += 1
        done, now = sum(judged.values()), time.monotonic()
        if (say is not None and done < total and now - said[0] >= PROGRESS_EVERY
                and not any(f.done() for f, *_ in pending)):   # the runs of one wave end together: all of it counted
            said[0] = now
            # by runs, not points: runs hold the same number of calls, and a costly exercise's points are few
            left = (now - began[0]) * max(0, planned - settled[0]) / settled[0]
            say(f"domain check: {done:,} of {total:,} points judged, about {_duration(left)} left")

    jobs = budget.jobs()
    with ThreadPoolExecutor(jobs) as pool:   # at most `jobs` requests built at a time
        for request, ranges in _requests(key, cells, positions, base, found, budget) if found else ():
            if len(pending) >= jobs:
                settle(pending.pop(0))
            began[:] = began or [time.monotonic()]
            pending.append((pool.submit(worker.run, request, limits, MAX_RESULTS), request, ranges))
        while pending:
            settle(pending.pop(0))
    by_id = {c.id: t for t in found for c in t.checks}
    problems = [_problem(key, key.check(cid), m, by_id[cid], source)
                for cid, m in sorted(misses.items(), key=lambda kv: [c.id for c in key.checks].index(kv[0]))]
    said_of = {**{e: k["capped"] for e, k in kept.items()}, **{t.exercise.id: t.capped for t in found}}
    if memo:
        for t in found:
            if not any(c.id in misses for c in t.checks):
                _keep(key, t, cells, positions, budget, judged[t.exercise.id])
    return problems, Summary(sum(len(t.checks) for t in found) + sum(k["checks"] for k in kept.values()),
                             sum(judged.values()) + sum(k["points"] for k in kept.values()), len(found) + len(kept),
                             sum(t.exact for t in found) + sum(k["exact"] for k in kept.values()), runs,
                             time.monotonic() - start, budget=budget.name, kept=len(kept), jobs=jobs,
                             capped=tuple(c for c in (said_of.get(e.id, "") for e in key.exercises) if c))
