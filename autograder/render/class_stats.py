"""render.class_stats: the class view's numbers. A batch's reports -> ClassStats: per check the status counts, the
difficulty and the discrimination, each named misconception's count and the most common unnamed wrong
answers; the score distribution; not-gradable submissions counted apart (never as zeros). Pure: reports
in, numbers out (render.stats draws them; `autograder stats` and `grade --stats` write them).

May import: stdlib, autograder.report, autograder.model.
"""
from __future__ import annotations

import math
import re
import statistics
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

from autograder.model import Key
from autograder.report import STATUSES, Outcome, Report

SCHEMA = "autograd-lab/stats"
VERSION = 1
WRONG_ANSWERS = 5   # the most common unnamed wrong answers kept per check


@dataclass(frozen=True)
class Named:
    """A named misconception of a check and how many counted submissions it was recognised in."""

    id: str
    name: str
    count: int


@dataclass(frozen=True)
class WrongAnswer:
    """An unnamed wrong answer of a check (a failed outcome that matched no misconception) and how many
    counted submissions gave it. A number is grouped by its ratio to that student's expected value ("2 ×
    the answer"), since every student has parameters of their own; anything else by what it showed."""

    answer: str
    count: int


@dataclass(frozen=True)
class CheckStats:
    """One check across the counted submissions: `n` of them, `counts` per status, `difficulty` (the share
    that passed, 0..1) and `discrimination` (the point-biserial correlation of passing this check with the
    rest of the score, -1..1; None where either does not vary), the named misconceptions (most common first)
    and the unnamed wrong answers (`unnamed`: failed outcomes no misconception explains). A hidden check's
    reports keep only its status and points: it has counts, difficulty and discrimination, and no
    misconceptions or wrong answers."""

    check_id: str
    exercise: str
    kind: str
    title: str
    max_score: float
    visibility: str
    n: int
    counts: dict[str, int]
    difficulty: float | None
    discrimination: float | None
    misconceptions: tuple[Named, ...]
    unnamed: int
    wrong_answers: tuple[WrongAnswer, ...]


@dataclass(frozen=True)
class ClassStats:
    """A batch at a glance. `submissions` reports were read; `counted` are graded and count (a student's
    the one staff chose); `superseded` are graded but do not count (another submission of the same student counts, or
    staff have not yet chosen among them); `not_gradable` are
    counted apart, never as a score, with their reasons in `not_graded` ((submission, reason) pairs).
    `scores` are the counted submissions' scores (points, ascending), out of `max_score`. `notes` say what the
    numbers leave out (no key at hand; hidden checks)."""

    assignment: str
    submissions: int
    counted: int
    superseded: int
    not_gradable: int
    max_score: float
    scores: tuple[float, ...]
    mean: float | None
    median: float | None
    sd: float | None
    checks: tuple[CheckStats, ...]
    not_graded: tuple[tuple[str, str], ...]
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON-native form (stats.json), with "schema" and "v"."""
        return {"schema": SCHEMA, "v": VERSION, **asdict(self)}

    def misconception_counts(self) -> dict[str, dict[str, int]]:
        """check id -> misconception id -> count (checks and misconceptions with a count of 0 left out)."""
        return {c.check_id: {m.id: m.count for m in c.misconceptions if m.count}
                for c in self.checks if any(m.count for m in c.misconceptions)}


def point_biserial(item: list[float], rest: list[float]) -> float | None:
    """The Pearson correlation of a 0/1 item with the rest score: the corrected item-total ("point-biserial")
    correlation of classical item analysis (L. Crocker and J. Algina, Introduction to Classical and Modern
    Test Theory, 1986, ch. 14). None when either list does not vary (or has fewer than 2 entries)."""
    if len(item) < 2:
        return None
    mx, my = statistics.fmean(item), statistics.fmean(rest)
    sxy = sum((x - mx) * (y - my) for x, y in zip(item, rest, strict=True))
    sxx = sum((x - mx) ** 2 for x in item)
    syy = sum((y - my) ** 2 for y in rest)
    if sxx == 0 or syy == 0:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


_NUMBER = re.compile(r"(?<![\w.])-?(?:\d+\.?\d*(?:e[+-]?\d+)?|inf|nan)(?!\w)")   # not the 64 of float64


def _number_pairs(observed: str, expected: str) -> list[tuple[str, str]] | None:
    """The numbers of `observed` paired with those of `expected`, where the text around them is the same (at least
    one number); None otherwise."""
    obs, exp = _NUMBER.findall(observed), _NUMBER.findall(expected)
    if not obs or len(obs) != len(exp) or _NUMBER.sub("#", observed) != _NUMBER.sub("#", expected):
        return None
    return list(zip(obs, exp, strict=True))


def _ratio(observed: str, expected: str) -> float | None:
    """The one ratio by which every number of `observed` is that of `expected` (the same text around them, and
    every ratio within 1 % of the first); None when there is none."""
    pairs = _number_pairs(observed, expected)
    if pairs is None:
        return None
    ratios = []
    for a, b in pairs:
        x, y = float(a), float(b)
        if not (math.isfinite(x) and math.isfinite(y)) or y == 0:
            return None
        ratios.append(x / y)
    return ratios[0] if all(abs(r - ratios[0]) <= 0.01 * abs(ratios[0]) for r in ratios) else None


def _shown_right(o: Outcome) -> bool:
    """Is the failed outcome's value the right one as far as a report shows it (the same text, every number within
    5e-4 of the expected one, relatively: a report shows 4 to 6 significant figures)? Then it failed for another
    reason (a prediction worked out with autograd, say), and is not a wrong answer."""
    if o.observed is None or o.expected is None:
        return False
    if o.observed == o.expected:
        return True
    pairs = _number_pairs(o.observed, o.expected)
    return pairs is not None and all(a == b or math.isclose(float(a), float(b), rel_tol=5e-4, abs_tol=1e-12)
                                     for a, b in pairs)


_DTYPE = re.compile(r", dtype=(\w+)")   # how compare.show writes a tensor's dtype (float32's is not written)


def _dtype_shown(text: str) -> str | None:
    """The dtype of the tensor a shown value is ("tensor([1.], dtype=bfloat16)": "bfloat16"; "tensor(1.)": "float32"),
    or None for anything but one tensor."""
    if not (text.startswith("tensor(") and text.endswith(")")) or text.count("tensor(") != 1:
        return None
    m = _DTYPE.search(text)
    return m.group(1) if m else "float32"


def _right_but_dtype(observed: str, expected: str) -> str | None:
    """The dtype of a shown tensor that holds the expected numbers (within 4 %, the rounding of a half dtype) in
    another dtype than the expected one's ("float32" for a learner who forgot autocast); else None."""
    mine, theirs = _dtype_shown(observed), _dtype_shown(expected)
    if mine is None or theirs is None or mine == theirs:
        return None
    pairs = _number_pairs(_DTYPE.sub("", observed), _DTYPE.sub("", expected))
    if pairs is None or not all(math.isclose(float(a), float(b), rel_tol=0.04, abs_tol=1e-6) for a, b in pairs):
        return None
    return mine


def wrong_answer(o: Outcome) -> str:
    """How an unnamed wrong answer is grouped: "2 × the answer" when every number in it is that multiple of
    the student's own expected value (a number, a tensor, a tuple of them), "within 1 % of the answer" when
    it is close but outside the tolerance, "the answer as float32" for the right numbers in a tensor of another
    dtype than the expected one's, else what it showed ("None", "(tensor(2.), 0.0)")."""
    if o.observed is None:
        return "nothing observed"
    dtype = _right_but_dtype(o.observed, o.expected) if o.expected is not None else None
    if dtype is not None:
        return f"the answer as {dtype}"
    ratio = _ratio(o.observed, o.expected) if o.expected is not None else None
    if ratio is None:
        return o.observed
    if abs(ratio - 1) < 0.01:
        return "within 1 % of the answer"
    return f"{ratio:.3g} × the answer"


def class_stats(reports: list[Report], assignment: str | None = None, key: Key | None = None) -> ClassStats:
    """The class view of `reports` (one batch of one assignment).

    Args:
        reports: every report of the batch; not-gradable and superseded ones are counted apart.
        assignment: the assignment to keep (default: the only one the reports are of, else the key's).
        key: the assignment's key, if at hand: then every misconception of a check is listed, those that no
            submission showed with a count of 0.
    Returns:
        ClassStats; checks in the order the reports list them.
    Raises:
        ValueError: the reports are of several assignments and `assignment` is not given, or none is of it.
    """
    kinds = sorted({r.assignment for r in reports})
    if assignment is None and key is not None:
        assignment = key.assignment
    if assignment is None:
        if len(kinds) > 1:
            raise ValueError(f"these reports are of {len(kinds)} assignments ({', '.join(kinds)}); choose one")
        assignment = kinds[0] if kinds else ""
    reports = [r for r in reports if r.assignment == assignment]
    if not reports:
        raise ValueError(f"no report of {assignment!r} (the reports are of {', '.join(kinds) or 'nothing'})")
    counted = [r for r in reports if r.counted]
    broken = [r for r in reports if r.status != "graded"]
    scores = sorted(float(r.score or 0.0) for r in counted)
    max_score = max((r.max_score for r in reports), default=0.0)
    order: dict[str, Outcome] = {}
    for r in counted:
        for o in r.outcomes:
            order.setdefault(o.check_id, o)
    checks = []
    for cid, first in order.items():
        outs = [(r, o) for r in counted for o in r.outcomes if o.check_id == cid]
        counts = {s: sum(1 for _, o in outs if o.status == s) for s in STATUSES}
        named: Counter[str] = Counter()
        names: dict[str, str] = {}
        if key is not None and key.assignment == assignment and cid in {c.id for c in key.checks}:
            for m in key.check(cid).misconceptions:
                named[m.id] += 0
                names[m.id] = m.name
        wrong: Counter[str] = Counter()
        for _, o in outs:
            if o.status != "failed":
                continue
            if o.misconception:
                named[o.misconception.id] += 1
                names[o.misconception.id] = o.misconception.name
            elif o.visibility == "public" and not _shown_right(o):
                wrong[wrong_answer(o)] += 1   # (the right value, failed for another reason: not a wrong answer)
        item = [1.0 if o.status == "passed" else 0.0 for _, o in outs]
        rest = [float(r.score or 0.0) - o.score for r, o in outs]
        checks.append(CheckStats(
            cid, first.exercise, first.kind, first.title, first.max_score, first.visibility, len(outs), counts,
            counts["passed"] / len(outs) if outs else None, point_biserial(item, rest),
            tuple(Named(m, names[m], n) for m, n in named.most_common()), sum(wrong.values()),
            tuple(WrongAnswer(a, n) for a, n in wrong.most_common(WRONG_ANSWERS))))
    notes = []
    if key is None:
        notes.append("The key was not at hand: only the misconceptions some submission showed are listed.")
    hidden = [c.check_id for c in checks if c.visibility != "public"]
    if hidden:
        notes.append(f"Hidden checks ({', '.join(hidden)}): reports keep only their status and points, so their "
                     f"misconceptions and wrong answers are not counted.")
    return ClassStats(
        assignment, len(reports), len(counted), sum(1 for r in reports if r.status == "graded" and not r.counted),
        len(broken), max_score, tuple(scores),
        statistics.fmean(scores) if scores else None, statistics.median(scores) if scores else None,
        statistics.stdev(scores) if len(scores) > 1 else None, tuple(checks),
        tuple((r.submission, r.reason) for r in broken), tuple(notes))
