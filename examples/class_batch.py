"""A generated class: N submissions of one assignment with misconceptions planted at known counts, for the class
view (`autograder stats`) and its tests.

Each student (s000, s001, ...) gets the released notebook with every PREDICT cell answered: each prediction is,
by a seeded draw, right (about 40 %), the value of one of the check's named misconceptions at that student's own
point (about 40 %), another wrong value that no misconception gives (the answer times a factor: 10 %), or
left as `...` (10 %). Some PRODUCE
cells carry a typical wrong function whose misconception is known (assignment 01: ex2 and ex3 read x.grad after
backward(), ex4 runs one pass short or one pass only); the others are right. A misconception is planted only
where its value is at least 1 % away from the right answer and from every other misconception of the check (the
grader names one only where it is unambiguous, within a prediction's 0.2 %), so every planted misconception must
be named, and nothing else. A few files are cut off in the middle (not gradable).

    .venv/bin/autograder release solutions/01-backward-vs-grad                  # once: the key grade uses
    .venv/bin/python examples/class_batch.py --n 200 --out /tmp/class          # writes the notebooks + planted.json
    .venv/bin/autograder grade /tmp/class --out /tmp/class-out --assignment 01-backward-vs-grad --stats
                                                                                # then open /tmp/class-out/stats.html

May import: stdlib, nbformat, autograder (judge, keyfile, plan, wire), examples/make_submissions.
"""
from __future__ import annotations

import argparse
import json
import math
import random
import sys
from collections import defaultdict
from pathlib import Path

import nbformat

from autograder import wire
from autograder.judging import judge
from autograder.keyfile import load_key
from autograder.grading.plan import draw_point

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_submissions import answered, load_scenarios, sig  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent

# Wrong PRODUCE cells (grade_id -> [(code, {check id: the misconception it shows})]) of assignments that have them.
WRONG_CODE = {
    "01-backward-vs-grad": {
        "ex2-produce": [("def ex2(x):\n    (x**2 * torch.sin(x)).backward()\n    return x.grad",
                         {"2.produce.returns": "not-a-tuple", "2.produce.grad": "grad-accumulates-too"})],
        "ex3-produce": [("def ex3(x):\n    (x**2 * torch.sin(x)).backward()\n    return x.grad",
                         {"3.produce.derivative": "adds-the-old-grad", "3.produce.grad": "grad-accumulates-too"})],
        "ex4-produce": [
            ("def ex4_accumulate(x, k):\n    for _ in range(1, k):\n        (x ** 3).backward()\n\n\n"
             "def ex4_reset(x, k):\n    ex4_accumulate(x, k)\n    x.grad = None\n    (x ** 3).backward()",
             {"4.produce.after_k": "one-pass-short"}),
            ("def ex4_accumulate(x, k):\n    for _ in range(k):\n        x.grad = None\n        (x ** 3).backward()\n\n\n"
             "def ex4_reset(x, k):\n    ex4_accumulate(x, k)\n    x.grad = None\n    (x ** 3).backward()",
             {"4.produce.after_k": "one-pass-only"})],
    },
}


def _flat(v: dict) -> list:
    """A wire Value as a list of comparable atoms: numbers, and tags for everything else."""
    t = v["t"]
    if t in ("float", "int"):
        return [wire.decode_float(v["v"])]
    if t == "array":
        return [wire.decode_float(x) for x in v["data"]]
    if t == "seq":
        return [v["kind"]] + [a for item in v["items"] for a in _flat(item)]
    if t == "class":
        return [("class", v["name"])]
    if t == "bool":
        return [("bool", v["v"])]
    return [t]


def distinct(a: dict, b: dict) -> bool:
    """Are two values more than 1 % apart (or of another shape)? Stricter than any tolerance of the grader."""
    fa, fb = _flat(a), _flat(b)
    if len(fa) != len(fb):
        return True
    for x, y in zip(fa, fb, strict=True):
        if isinstance(x, float) and isinstance(y, float):
            if math.isnan(x) or math.isnan(y) or math.isinf(x) or math.isinf(y):
                if not (x == y or (math.isnan(x) and math.isnan(y))):
                    return True
            elif abs(x - y) > 0.01 * max(abs(x), abs(y)) + 1e-6:
                return True
        elif x != y:
            return True
    return False


def literal(v: dict) -> str:
    """A wire Value as the literal a student types into a PREDICT cell (4 significant figures)."""
    t = v["t"]
    if t == "none":
        return "None"
    if t == "bool":
        return str(v["v"])
    if t == "class":
        return json.dumps(v["name"])
    if t in ("int", "float"):
        x = wire.decode_float(v["v"])
        if math.isnan(x):
            return "float('nan')"
        if math.isinf(x):
            return "float('inf')" if x > 0 else "-float('inf')"
        return str(v["v"]) if t == "int" else sig(x)
    if t == "array":
        return "[" + ", ".join(literal({"t": "float", "v": x}) for x in v["data"]) + "]"
    items = [literal(i) for i in v["items"]]
    if v["kind"] == "list":
        return "[" + ", ".join(items) + "]"
    return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"


def _scaled(v: dict, factor: float) -> dict:
    """A value with its (first) number scaled (a wrong value of the same shape, as a missing factor or a
    factor too many gives); 1.5 * factor for None."""
    if v["t"] in ("float", "int"):
        return {"t": "float", "v": wire.decode_float(v["v"]) * factor}
    if v["t"] == "array":
        return {**v, "data": [wire.decode_float(x) * factor for x in v["data"]]}
    if v["t"] == "seq" and v["items"]:
        return {**v, "items": [_scaled(v["items"][0], factor), *v["items"][1:]]}
    return {"t": "float", "v": 1.5 * factor}


def _unnamed(right: dict, others: list[dict]) -> dict | None:
    """A wrong value that no misconception gives: the right one scaled, or None if every try is too close."""
    for factor in (1.37, 0.61, 2.9, -3.3):
        wrong = _scaled(right, factor)
        if distinct(wrong, right) and all(distinct(wrong, o) for o in others):   # (0 * factor is 0: not wrong)
            return wrong
    return None


def make_class(assignment: str, n: int, out: Path, seed: int = 0, missing: float = 0.1) -> dict:
    """Write `n` notebooks of `assignment` into `out` (s000.ipynb, ...) and return what was planted (also
    written to out/planted.json): {"submissions", "not_gradable", "statuses": {check: {status: count}},
    "misconceptions": {check: {misconception id: count}}} over the gradable submissions. `missing`: the share of
    predictions left as `...`, at most 0.1 (0 for a course's class, whose every exercise is then committed whole)."""
    rng = random.Random(seed)
    released = ROOT / "assignments" / assignment
    key = load_key(released / "public_key.json")
    module = load_scenarios(assignment)
    out.mkdir(parents=True, exist_ok=True)
    statuses: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    named: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for i in range(n):
        student = f"s{i:03d}"
        point = draw_point(key.parameters, assignment, student, "own")
        sources: dict[str, str] = dict(module.CODE)
        plan: dict[str, tuple[str, str | None]] = {}   # check id -> (status, misconception)
        for ex in key.exercises:
            values = ex.values(point)
            lines = []
            for c in (c for c in key.checks if c.exercise == ex.id and c.kind == "predict"):
                right = judge.fill(None, judge.right_answer(c), values)
                wrongs = [(m.id, judge.fill(None, m.answer, values)) for m in c.misconceptions]
                draw = rng.random()
                status, mid, value = "passed", None, right
                if draw < missing:
                    status, value = "missing", None
                elif draw < 0.5 and wrongs:
                    mid, value = rng.choice(wrongs)
                    others = [right] + [w for m, w in wrongs if m != mid]
                    if all(distinct(value, o) for o in others):
                        status = "failed"
                    else:   # ambiguous at this student's point: the grader would (rightly) not name it
                        mid, value = None, right
                elif draw < 0.6:
                    wrong = _unnamed(right, [w for _, w in wrongs])
                    if wrong is not None:
                        status, value = "failed", wrong
                lines.append(f"{c.name} = {'...' if value is None else literal(value)}")
                plan[c.id] = (status, mid)
            if lines:
                sources[f"ex{ex.id}-predict"] = "\n".join(lines)
        for gid, variants in WRONG_CODE.get(assignment, {}).items():
            if rng.random() >= 0.3:
                continue
            code, shows = rng.choice(variants)
            if all(_unambiguous(key, cid, mid, point) for cid, mid in shows.items()):
                sources[gid] = code
                plan.update({cid: ("failed", mid) for cid, mid in shows.items()})
        nb = answered(released / key.notebook, student, sources)
        path = out / f"{student}.ipynb"
        nbformat.write(nb, path)
        if i % 40 == 39:   # every 40th file is cut off in the middle of saving: not gradable
            text = path.read_text()
            path.write_text(text[: len(text) // 2])
            continue
        for c in key.checks:
            status, mid = plan.get(c.id, ("passed", None))
            statuses[c.id][status] += 1
            if mid:
                named[c.id][mid] += 1
    gradable = sum(statuses[key.checks[0].id].values())
    planted = {"assignment": assignment, "submissions": n, "not_gradable": n - gradable,
               "statuses": {c: dict(s) for c, s in statuses.items()},
               "misconceptions": {c: dict(m) for c, m in named.items()}}
    (out / "planted.json").write_text(json.dumps(planted, indent=1, sort_keys=True) + "\n")
    return planted


def _unambiguous(key, check_id: str, mid: str, point: dict) -> bool:
    """Is misconception `mid` of `check_id` at least 1 % away from the answer and the check's other
    misconceptions at `point` (where the wrong code fails first: the student's own point)?"""
    c = key.check(check_id)
    values = key.exercise(c.exercise).values(point)
    value = {m.id: judge.fill(None, m.answer, values) for m in c.misconceptions}
    others = [judge.fill(None, judge.right_answer(c), values)] + [v for m, v in value.items() if m != mid]
    return all(distinct(value[mid], o) for o in others)


def main() -> int:
    ap = argparse.ArgumentParser(description="Write N generated submissions with planted misconceptions "
                                 "(and planted.json, what was planted).")
    ap.add_argument("--assignment", default="01-backward-vs-grad")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    planted = make_class(args.assignment, args.n, Path(args.out), args.seed)
    total = sum(sum(m.values()) for m in planted["misconceptions"].values())
    print(f"wrote {args.n} submissions of {args.assignment} into {args.out} ({planted['not_gradable']} cut off, "
          f"{total} misconceptions planted; see planted.json)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
