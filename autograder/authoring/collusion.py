"""collusion: the collusion view's numbers (issue 48). From one assignment's graded reports, its key and (optionally) the
handed-in notebooks: the ordered pairs of students where one's wrong predictions are right at the other's point (the
values there come from the key, through the judge's expected-value code; a student's point from plan.draw_point with
their id, never from anything a submission says), with the chance of so many matches over the parameter grid
(discrimination's grid); and the pairs whose produce functions are one syntax tree after normalising names, literals
and formatting (parsed with `ast`, never run). A shown prediction is shown again as this module writes it
(shown_text), never as the report's text; one it cannot read or compare is left out and counted, never the view's
end. Evidence only: it reads reports and writes none, and no score changes.

May import: stdlib, numpy, sympy, nbgrader (its cell checksum only), autograder.model, autograder.report, autograder.grading.plan,
autograder.grading.notebook, autograder.judging.judge, autograder.judging.compare, autograder.judging.sources,
autograder.authoring.discrimination, autograder.render.collusion.
"""
from __future__ import annotations

import ast
import bisect
import hashlib
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from math import prod
from typing import Any

from autograder.authoring import discrimination
from autograder.grading import plan
from autograder.judging import judge
from autograder.judging.compare import compare_predicted, plain
from autograder.model import Check, Key, container_is_lesson
from autograder.render.collusion import (ALPHA, CellPair, Collusion, Match, PredictionPair, SharedFunction)
from autograder.report import Report

GRID = 50_000          # parameter grids up to this size are enumerated for a chance; larger ones are sampled
MAX_TEXT = 2_000       # characters of a shown prediction that are read (a longer one is not compared)
MAX_CELL = 20_000      # characters of a code cell that are parsed (a longer one is not compared)
MAX_NODES = 5_000      # nodes of a function's tree that are compared (a larger one is not)
MIN_NODES = 20         # a function of fewer nodes is too short to be evidence
MAX_SHARED = 2         # a function written so by more students is a usual solution (or a usual mistake): no evidence
MAX_NAMED = 10         # a note names at most this many students or files
GRAD_FN = re.compile(r",\s*grad_fn=<[A-Za-z0-9_]{1,80}>")
# what reading a shown value (or comparing it) can raise: such an outcome is left out and counted, never the view's end
UNREADABLE = (SyntaxError, ValueError, TypeError, ArithmeticError, RecursionError, MemoryError, KeyError)


# ------------------------------------------------------------------------------------------------ predictions

def shown_value(text: str | None) -> dict[str, Any] | None:
    """The wire Value a report's shown prediction stands for (compare.show's text: "-2.36", "(2.712,)", "None",
    "tensor(6.)", "[1.5, -2.0]", "RuntimeError"; "tensor([3.24], dtype=float64, requires_grad=True)" and "array(...)"
    as their numbers, keywords not read), read as a Python syntax tree and never evaluated; None for anything else,
    for what cannot be read (a number of 400 digits) or a text of more than MAX_TEXT characters."""
    if not text or len(text) > MAX_TEXT:
        return None
    text = GRAD_FN.sub("", text)   # ", grad_fn=<MulBackward0>": show()'s, and no Python syntax
    try:
        tree = ast.parse(text.strip(), mode="eval")
        return _value(tree.body)
    except UNREADABLE:   # a number of 400 digits (float() overflows), nested too deeply, ...: not read
        return None


def shown_text(value: dict[str, Any]) -> str:
    """A value shown_value read, written again by this view (never the report's text, which may carry a student's
    comment or a spreadsheet formula after the number): numbers as Python's repr writes them ("3.24", "-inf"), None,
    True, tuples and lists of them, an exception class's name (an identifier) and a string as its repr."""
    t = value["t"]
    if t == "int":
        return str(int(value["v"]))
    if t == "float":
        v = value["v"]
        return v if isinstance(v, str) else repr(float(v))   # "nan", "inf", "-inf": wire's strings, as written
    if t == "none":
        return "None"
    if t == "bool":
        return repr(bool(value["v"]))
    if t == "class":
        return str(value["name"]) if str(value["name"]).isidentifier() else "?"
    if t == "str":
        return repr(str(value["v"]))
    if t == "seq":
        items = [shown_text(i) for i in value["items"]]
        if value["kind"] == "tuple":
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if t in ("tensor", "array"):
        nums = [shown_text({"t": "float", "v": x}) for x in value["data"]]
        if len(value["shape"]) == 2:
            cols = value["shape"][1]
            body = "[" + ", ".join("[" + ", ".join(nums[r * cols:(r + 1) * cols]) + "]"
                                   for r in range(value["shape"][0])) + "]"
        else:
            body = "[" + ", ".join(nums) + "]"
        return f"{t}({body})"
    return "?"


def _value(node: ast.expr) -> dict[str, Any] | None:
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None:
            return {"t": "none"}
        if isinstance(v, bool):
            return {"t": "bool", "v": v}
        if isinstance(v, int):
            return {"t": "int", "v": v} if abs(v) < 2 ** 53 else {"t": "float", "v": float(v)}
        if isinstance(v, float):
            return {"t": "float", "v": v if math.isfinite(v) else str(v)}
        if isinstance(v, str):
            return {"t": "str", "v": v[:200]}
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = _value(node.operand)
        if inner is None or inner["t"] not in ("int", "float"):
            return None
        if isinstance(node.op, ast.UAdd):
            return inner
        x = -float(inner["v"])   # "inf" and "nan" (wire's strings) too
        return {**inner, "v": x if math.isfinite(x) else ("nan" if math.isnan(x) else "-inf" if x < 0 else "inf")} \
            if inner["t"] == "float" else {**inner, "v": -inner["v"]}
    if isinstance(node, (ast.Tuple, ast.List)):
        items = [_value(e) for e in node.elts[:64]]
        if any(i is None for i in items) or len(node.elts) > 64:
            return None
        return {"t": "seq", "kind": "tuple" if isinstance(node, ast.Tuple) else "list", "items": items,
                "truncated": False}
    if isinstance(node, ast.Name):
        if node.id in ("nan", "inf"):
            return {"t": "float", "v": node.id}
        return {"t": "class", "name": node.id[:100]}   # an exception class, as show() writes it
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("tensor", "array") \
            and len(node.args) == 1:   # its keywords (dtype=, requires_grad=, shape=) are not read
        inner = _value(node.args[0])
        if inner is None:
            return None
        if inner["t"] in ("int", "float"):   # a one-number tensor or array: the number (compare_predicted's)
            return inner
        rows = _rows(inner)
        if rows is None:
            return None
        shape = [len(rows)] if rows and not isinstance(rows[0], list) else [len(rows), len(rows[0]) if rows else 0]
        data = rows if len(shape) == 1 else [x for row in rows for x in row]
        return {"t": node.func.id, "dtype": "float64", "shape": shape, "data": data}
    return None


def _rows(v: dict[str, Any]) -> list[Any] | None:
    """A list (or tuple) of numbers as wire numbers, or of equally long such lists (a matrix), else None."""
    if v["t"] != "seq" or not v["items"]:
        return None
    if all(i["t"] in ("int", "float") for i in v["items"]):
        return [i["v"] if i["t"] == "float" else float(i["v"]) for i in v["items"]]
    rows = [_rows(i) for i in v["items"]]
    if any(r is None or any(isinstance(x, list) for x in r) for r in rows) or len({len(r) for r in rows}) != 1:
        return None
    return rows


def _depends(check: Check) -> bool:
    """Does the check's right answer hold a sympy expression (so that it can differ from one point to another)?"""
    return check.kind == "predict" and bool(discrimination.expressions(judge.right_answer(check)))


@dataclass(frozen=True)
class _Wrong:
    """One counted student's wrong prediction of a check whose answer depends on the parameters."""

    check: Check
    value: dict[str, Any]
    shown: str


def _numbers(v: dict[str, Any]) -> list[float] | None:
    """The numbers of a wire Value in order (a tuple's too), or None where a part is not a number or None."""
    if v["t"] in ("int", "float"):
        x = v["v"]
        return [float(x)]
    if v["t"] in ("tensor", "array"):   # (shown_value's: wire numbers, flat)
        return [float(x) for x in v["data"]]
    if v["t"] == "seq":
        out: list[float] = []
        for item in v["items"]:
            if item["t"] == "none":
                continue
            sub = _numbers(item)
            if sub is None:
                return None
            out += sub
        return out
    return None


class _Chance:
    """The probability that a wrong value equals a check's right value at a random point of the parameter grid (each
    point weighed as plan.draw_point draws it): the check's expressions are evaluated once over the grid (enumerated
    up to GRID points, else GRID seeded draws), then each value is held against every point."""

    def __init__(self, key: Key) -> None:
        self.key = key
        self.grids: dict[str, tuple[list[Any], Any, int]] = {}

    def _grid(self, check: Check) -> tuple[list[Any], Any, int]:

        if check.id in self.grids:
            return self.grids[check.id]
        key = self.key
        ex = key.exercise(check.exercise)
        right = judge.right_answer(check)
        used = discrimination._used(key, check, (right,))
        dists = {name: discrimination.distribution(key.parameters[name]) for name in used}
        size = prod(len(v) for v, _ in dists.values())
        _, full, weight = discrimination.weighted_grid(key, ex, dists, GRID, GRID, 0)
        n = len(weight)
        symbols = discrimination._symbols(key, check)
        entries = [e for item in discrimination.expressions(right)
                   for e in discrimination._entries(item.expr, symbols, full, n)]
        self.grids[check.id] = (entries, weight, size)
        return self.grids[check.id]

    def of(self, check: Check, value: dict[str, Any]) -> float:
        """The chance (0..1) that `value` matches `check`'s right value at a random point, at the check's prediction
        tolerance (0 for a value whose numbers are not as many as the answer's). A sampled grid's estimate is at
        least 1/GRID (a value seen at one point could be there). 1.0 (no evidence) where the answer cannot be evaluated
        over the grid."""
        import numpy as np

        nums = _numbers(value)
        try:
            entries, weight, size = self._grid(check)
        except (ValueError, TypeError, ArithmeticError, KeyError):   # an answer numpy cannot evaluate over the grid:
            return 1.0                                               # its matches are never counted as evidence
        if nums is None or len(nums) != len(entries):
            return 0.0
        tol = self.key.grading.prediction(check)
        mask = np.ones(len(weight), dtype=bool)
        with np.errstate(all="ignore"):
            for x, col in zip(nums, entries, strict=True):
                if math.isnan(x):
                    mask &= np.isnan(col)
                elif math.isinf(x):
                    mask &= col == x
                else:
                    mask &= np.abs(col - x) <= tol.atol + tol.rtol * np.maximum(np.abs(col), abs(x))
        share = float(weight[mask].sum())
        return share if size <= GRID else max(share, 1.0 / GRID)


def tail(chances: list[float], k: int) -> float:
    """P(at least `k` of independent events with these probabilities happen): the Poisson-binomial tail, exactly
    (dynamic programming over the events). 1.0 for k <= 0."""
    if k <= 0:
        return 1.0
    dist = [1.0]
    for q in chances:
        q = min(max(q, 0.0), 1.0)
        nxt = [0.0] * (len(dist) + 1)
        for i, pr in enumerate(dist):
            nxt[i] += pr * (1 - q)
            nxt[i + 1] += pr * q
        dist = nxt
    return min(1.0, max(0.0, sum(dist[k:])))


def _distinct(wrongs: list[_Wrong]) -> list[_Wrong]:
    """One wrong prediction per set of nonzero numbers (to 4 significant figures): two checks whose answers are one
    expression (an exercise's value again in a tuple, or in a later exercise) fail together, so their matches are
    one piece of evidence, not two independent ones. The first such check is kept."""
    seen: set[tuple[str, ...]] = set()
    out = []
    for w in wrongs:
        nums = _numbers(w.value)
        mark = tuple(sorted(f"{x:.4g}" for x in nums if x != 0)) if nums is not None else ()
        mark = mark or (w.check.id,)
        if mark not in seen:
            seen.add(mark)
            out.append(w)
    return out


def _points(key: Key, student: str) -> dict[str, Any]:
    """The student's own point, drawn from their id as the grader draws it (never a report's or a notebook's say)."""
    return plan.draw_point(key.parameters, key.assignment, student, "own")


def prediction_pairs(reports: list[Report], key: Key) -> tuple[tuple[PredictionPair, ...], int, list[str]]:
    """The ordered pairs (A, B) where at least one of A's wrong predictions equals the right value at B's point.

    Args:
        reports: counted reports of `key`'s assignment, one per student.
        key: the full key (the right values at every point come from it).
    Returns:
        (the pairs, most unlikely first; the number of ordered pairs compared; notes on what was left out).
    """
    checks = {c.id: c for c in key.checks if _depends(c)}
    chance = _Chance(key)
    wrong: dict[str, list[_Wrong]] = {}
    expected: dict[tuple[str, str], dict[str, Any] | None] = {}
    unread = 0

    def at(student: str, check: Check) -> dict[str, Any] | None:
        if (student, check.id) not in expected:
            values = key.exercise(check.exercise).values(_points(key, student))
            try:
                expected[student, check.id] = judge.handler(check).expected(key, check, values)
            except (ValueError, TypeError, ArithmeticError):   # no value at that point (a pole)
                expected[student, check.id] = None
        return expected[student, check.id]

    shown_numbers: dict[tuple[str, str], list[float] | None] = {}

    def numbers_at(student: str, check: Check) -> list[float] | None:
        if (student, check.id) not in shown_numbers:
            there = at(student, check)
            shown_numbers[student, check.id] = None if there is None else _numbers(there)
        return shown_numbers[student, check.id]

    for r in reports:
        mine = []
        for o in r.outcomes:
            check = checks.get(o.check_id)
            if check is None or o.status != "failed":
                continue
            value = shown_value(o.observed)
            if value is None:
                unread += o.observed is not None   # (a hidden check's report may show nothing: not compared)
                continue
            try:
                own = at(r.student, check)
                if own is not None and compare_predicted(own, value, key.grading.prediction(check),
                                                         not container_is_lesson(check)).ok:
                    continue   # the right value, failed for another reason (worked out with code): no wrong answer
                shown = shown_text(value)
                _numbers(value), chance.of(check, value)   # what the pairs below do with it: it must not raise
            except UNREADABLE:   # a value no comparison can take: left out and counted, never the view's end
                unread += 1
                continue
            mine.append(_Wrong(check, value, shown))
        wrong[r.student] = _distinct(mine)
    n = len(reports)
    compared = n * (n - 1)
    index: dict[str, tuple[list[float], list[str], list[str]]] = {}

    def candidates(check: Check, mine: list[float] | None) -> list[str]:
        """The students whose right value of `check` may match numbers `mine`: by the first number, through a sorted
        index (loose by a factor of 4; compare_predicted decides), plus those whose value is no plain number list."""
        if check.id not in index:
            keyed = sorted((nums[0], r.student) for r in reports
                           if (nums := numbers_at(r.student, check)) and math.isfinite(nums[0]))
            rest = [r.student for r in reports if not (nums := numbers_at(r.student, check))
                    or not math.isfinite(nums[0])]
            index[check.id] = ([x for x, _ in keyed], [s for _, s in keyed], rest)
        firsts, students, rest = index[check.id]
        if not mine or not math.isfinite(mine[0]):
            return [r.student for r in reports]
        tol = key.grading.prediction(check)
        d = 4 * (tol.atol + tol.rtol * abs(mine[0]))
        return students[bisect.bisect_left(firsts, mine[0] - d):bisect.bisect_right(firsts, mine[0] + d)] + rest

    by_name = {r.student: r for r in reports}
    pairs = []
    for a in reports:
        opportunities = wrong[a.student]
        if not opportunities:
            continue
        qs = [chance.of(w.check, w.value) for w in opportunities]
        found: dict[str, list[Match]] = defaultdict(list)
        for w, q in zip(opportunities, qs, strict=True):
            mine = _numbers(w.value)
            for b in candidates(w.check, mine):
                there = at(b, w.check)
                try:
                    same = b != a.student and there is not None and compare_predicted(
                        there, w.value, key.grading.prediction(w.check), not container_is_lesson(w.check)).ok
                except UNREADABLE:   # (read and compared once above: not expected here) no match
                    same = False
                if same:
                    found[b].append(Match(w.check.id, w.shown, plain(there), max(q, 0.0)))
        for name, matches in found.items():
            b = by_name[name]
            p = tail(qs, len(matches))
            whole = min(1.0, p * compared)
            pairs.append(PredictionPair(a.student, b.student, a.submission, b.submission, tuple(matches),
                                        len(opportunities), sum(qs), p, whole,
                                        "unlikely by chance" if whole <= ALPHA else "consistent with chance"))
    pairs.sort(key=lambda p: (p.chance, -len(p.matches), p.student, p.source))
    notes = [f"{unread} wrong prediction(s) were shown in a form this view does not read (or cannot compare), and "
             f"were not compared."] if unread else []
    return tuple(pairs), compared, notes


# ------------------------------------------------------------------------------------------------ produce cells

class _Normal(ast.NodeTransformer):
    """A function's tree with its own names (parameters, and names bound inside it) renamed v0, v1, ... in order of
    first appearance, every number (int, float or complex alike), string and bytes literal made one placeholder per
    kind, and docstrings left out. Globals it reads (torch, range) and attributes (.backward) keep their names: they are what it does."""

    def __init__(self, free: frozenset[str]) -> None:
        self.free = free
        self.names: dict[str, str] = {}

    def _name(self, name: str) -> str:
        if name in self.free:
            return name
        return self.names.setdefault(name, f"v{len(self.names)}")

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return ast.copy_location(ast.Name(self._name(node.id), node.ctx), node)

    def visit_arg(self, node: ast.arg) -> ast.AST:
        return ast.copy_location(ast.arg(self._name(node.arg), None), node)

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        v = node.value
        if isinstance(v, bool) or v is None or v is Ellipsis:
            return node
        kind = "number" if isinstance(v, (int, float, complex)) else type(v).__name__   # 2 and 2.0: one placeholder
        return ast.copy_location(ast.Constant(kind), node)

    def _body(self, node: Any) -> Any:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            node.body = body[1:] or [ast.Pass()]
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.AST:
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef


def _stub(fn: ast.FunctionDef) -> bool:
    """Is the function only the release's placeholder (a docstring, then pass, `...` or raise NotImplementedError)?"""
    body = [s for s in fn.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return all(isinstance(s, ast.Pass) or (isinstance(s, ast.Raise) and s.exc is not None and "NotImplementedError"
                                           in ast.dump(s.exc)) for s in body)


def normal_form(fn: ast.FunctionDef) -> tuple[str, int] | None:
    """(the sha256 of the function's normalised tree, its node count), or None for a stub, a tree of more than
    MAX_NODES nodes or one nested too deeply to walk. The function's own name is kept."""
    from autograder.judging import sources

    if _stub(fn):
        return None
    if sum(1 for _ in ast.walk(fn)) > MAX_NODES:
        return None
    free = sources.free_globals(fn) | {fn.name}
    try:
        tree = _Normal(free).visit(ast.parse(ast.unparse(fn)).body[0])   # a copy: the cached tree is shared
        text = ast.dump(tree, annotate_fields=False, include_attributes=False)
        nodes = sum(1 for _ in ast.walk(tree))   # as normalised: without its docstring
    except (RecursionError, ValueError, SyntaxError, MemoryError):   # nested too deeply to walk: not compared
        return None
    return hashlib.sha256(text.encode()).hexdigest(), nodes


def functions_of(data: bytes, name: str, key: Key) -> dict[str, tuple[str, int]]:
    """The produce functions a handed-in notebook defines: function name -> normal_form, from its code cells (parsed,
    never run; a cell of more than MAX_CELL characters, or one nbgrader's checksum shows unchanged since the release,
    is left out). The last definition of a name counts, as when the notebook runs. {} for a notebook that cannot be
    read."""
    from autograder.grading.notebook import NotebookError, parse_notebook
    from autograder.judging import sources

    wanted = {f for e in key.exercises for f in e.functions}
    try:
        nb = parse_notebook(data, name, outputs=False)
    except (NotebookError, RecursionError):
        return {}
    found: dict[str, tuple[str, int]] = {}
    for c in nb.cells:
        if c.get("cell_type") != "code":
            continue
        text = c.source if isinstance(c.source, str) else "".join(c.source)
        if len(text) > MAX_CELL or _untouched(c):
            continue
        tree = sources.parse(text)
        for node in tree.body if tree is not None else ():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in wanted:
                form = normal_form(node)
                if form is None:
                    found.pop(node.name, None)
                else:
                    found[node.name] = form
    return found


def _untouched(c: Any) -> bool:
    """Is this an nbgrader solution cell whose checksum shows it as the release made it?"""
    meta = c.get("metadata", {}).get("nbgrader")
    if not isinstance(meta, dict) or not meta.get("solution") or not meta.get("checksum"):
        return False
    try:
        from nbgrader.utils import compute_checksum

        return compute_checksum(c) == meta["checksum"]
    except Exception:   # nbgrader missing, odd metadata: compared
        return False


def cell_pairs(reports: list[Report], key: Key, notebooks: dict[str, bytes]
               ) -> tuple[tuple[CellPair, ...], int, int]:
    """The unordered pairs of students who wrote at least one produce function of the same normal form that is not
    common (`notebooks`: submission name -> its bytes, for the counted `reports` at hand). A form is common, and no
    evidence, when its tree has fewer than MIN_NODES nodes or more than MAX_SHARED students wrote it (in a class of
    200 generated by examples/class_batch.py, a typical wrong ex4 of 22 nodes is written alike by 18). Returns (the pairs, most shared functions first; how many notebooks were read; how many
    forms were common)."""
    exercise_of = {f: e.id for e in key.exercises for f in e.functions}
    forms: dict[tuple[str, str], list[Report]] = defaultdict(list)
    size: dict[tuple[str, str], int] = {}
    read = 0
    for r in reports:
        data = notebooks.get(r.submission)
        if data is None:
            continue
        read += 1
        for fn, (digest, nodes) in functions_of(data, r.submission, key).items():
            forms[fn, digest].append(r)
            size[fn, digest] = nodes
    shared: dict[tuple[str, str], list[SharedFunction]] = defaultdict(list)
    common_forms = 0
    who: dict[tuple[str, str], tuple[Report, Report]] = {}
    for (fn, digest), group in forms.items():
        if len(group) < 2:
            continue
        k, nodes = len(group), size[fn, digest]
        if nodes < MIN_NODES or k > MAX_SHARED:   # a usual or short solution, or a usual mistake: no evidence
            common_forms += 1
            continue
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                first, second = sorted((a, b), key=lambda r: r.student)
                pair = (first.student, second.student)
                who[pair] = (first, second)
                shared[pair].append(SharedFunction(fn, exercise_of[fn], nodes, k))
    pairs = [CellPair(pair, (who[pair][0].submission, who[pair][1].submission),
                      tuple(sorted(fs, key=lambda f: (f.exercise, f.function))))
             for pair, fs in shared.items()]
    pairs.sort(key=lambda p: (-len(p.functions), p.students))
    return tuple(pairs), read, common_forms


# ------------------------------------------------------------------------------------------------ the view

def named(names: list[str]) -> str:
    """Names for a note: at most MAX_NAMED of them, then how many more ("ivan, wes", "a, b, ... and 3 more")."""
    shown = ", ".join(names[:MAX_NAMED])
    return shown + (f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else "")


def collusion(reports: list[Report], key: Key, notebooks: dict[str, bytes] | None = None,
              notes: list[str] | tuple[str, ...] = ()) -> Collusion:
    """The collusion view of `reports` (one batch, or the service's graded hand-ins that count).

    Args:
        reports: the batch's reports; only counted ones of `key`'s assignment are compared (one per student).
        key: the assignment's full key (a public key lacks the hidden checks, which are then not compared).
        notebooks: submission name -> the handed-in notebook's bytes, for the produce-cell comparison (None or {}:
            produce cells are not compared, and the view says so).
        notes: the caller's notes on what it left out (notebooks whose bytes are not those graded), shown after ours.
    Returns:
        Collusion.
    Raises:
        ValueError: no counted report of the key's assignment.
    """
    ours = [r for r in reports if r.assignment == key.assignment]
    counted = [r for r in ours if r.counted]
    if not counted:
        raise ValueError(f"no counted report of {key.assignment} to compare")
    left = sorted({r.student for r in ours if not r.counted})
    by_student: dict[str, Report] = {}
    for r in counted:   # a batch counts one report per student; the first is kept should two say the same id
        by_student.setdefault(r.student, r)
    counted = sorted(by_student.values(), key=lambda r: r.student)
    predictions, compared, ours_notes = prediction_pairs(counted, key)
    given, notes = list(notes), ours_notes
    if left:
        notes.insert(0, f"{len(ours) - len(counted)} report(s) that do not count (not gradable, superseded, or waiting "
                        f"for staff to choose among a student's submissions) were not compared: {named(left)}.")
    cells, read, common = cell_pairs(counted, key, notebooks or {})
    if not notebooks:
        notes.append("No handed-in notebook was at hand, so produce cells were not compared (pass the graded folder: "
                     "autograder collusion OUT --submissions FOLDER).")
    elif read < len(counted):
        missing = [r.submission for r in counted if r.submission not in notebooks]
        notes.append(f"{len(missing)} counted submission(s) had no notebook at hand (or none whose bytes were graded), "
                     f"so their produce cells were not compared: {named(missing)}.")
    notes += given
    if common:
        notes.append(f"{common} produce function form(s) written alike by more than {MAX_SHARED} students (or too short "
                     f"to tell) are usual solutions or usual mistakes, and are not listed.")
    if key.public:
        notes.append("This is a public key: hidden checks were not compared.")
    return Collusion(key.assignment, len(counted), compared, predictions, cells, read, tuple(notes))
