"""release: build an assignment's answer key (sympy x reference torch run of the solution), refuse to
release when the oracles disagree, the solution scores below 100 % or the blank copy above 0, and
write the student notebook, the public key, the full key and nbgrader's source (the solution completed by
`prepare`). The solution is graded by the same
`grading.grade` and `judging.judge` as every submission.

It checks what needs no code run first (the spec, the notebook, the expectations over the parameters' ranges, the
misconceptions, whether it may replace the key released before), and only then starts a sandbox worker.

May import: stdlib, nbformat, autograder.model, autograder.keyfile, autograder.wire, autograder.report,
autograder.authoring.spec, autograder.authoring.student_copy, autograder.authoring.prepare, autograder.authoring.scaffold,
autograder.authoring.domain, autograder.authoring.discrimination, autograder.grading.notebook, autograder.grading.plan,
autograder.grading.grade, autograder.judging.sources, autograder.judging.judge, autograder.judging.analytic,
autograder.judging.worked,
autograder.sandbox.inside.installed (torch: the spec's object arguments, checked before the reference run),
autograder.authoring.sweep,
autograder.judging.compare, autograder.sandbox.client.
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

from autograder import wire
from autograder.authoring import discrimination, domain, sweep
from autograder.authoring.domain import _finite
from autograder.authoring.prepare import PrepareError, prepare
from autograder.authoring.spec import Assignment, SpecError, load_spec, parse_spec
from autograder.authoring.student_copy import student_copy
from autograder.grading import plan
from autograder.grading.grade import end_of
from autograder.grading.notebook import LAB_CALL, METADATA_KEY, code_cell_labels, code_cells, read_notebook
from autograder.judging import analytic, compare, judge, sources, worked
from autograder.keyfile import load_key, public_key, to_json, with_digest
from autograder.model import (Check, ExprAnswer, InstalledExpectation, Key, NoneAnswer, Number, Parameter,
                              RaisesExpectation, SeqAnswer,
                              ValueExpectation, WarnsExpectation, answer_items)
from autograder.report import Outcome, write_json_atomic
from autograder.sandbox import client as sandbox

__all__ = ["BuildError", "Release", "Source", "TraceTimeout", "build_key", "load_key", "public_key",
           "read_source", "release"]
# Students whose parameters the solution is checked at when a key is built (3 points each).
SAMPLE_STUDENTS = ("reference-a", "reference-b", "reference-c")
# Students at whose own points release also evaluates every misconception, to say how often one is ambiguous.
CLASS_STUDENTS = tuple(f"class-{i:03d}" for i in range(100))


class BuildError(RuntimeError):
    """The key cannot be released: the message names the check and what to fix. `problems`: each problem's
    message, where one step found several (the message numbers them)."""

    def __init__(self, message: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.problems = problems or (message,)


class TraceTimeout(BuildError):
    """Release did not finish tracing the solution's predictions (autograder.judging.worked) in the time it gave
    them, even retried with more: the machine's fault (a busy machine), never evidence about the spec or the
    solution. `seconds`: the longest time it tried."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


@dataclass(frozen=True)
class MisconceptionSummary:
    """What release found of an assignment's named misconceptions: how many (distinct per exercise), on how
    many checks, at how many (check, misconception, point) triples they were evaluated (the sample students'
    points and CLASS_STUDENTS' own points), at how many of those one was ambiguous and so not used there
    (its value coincides with the right answer or with another misconception of the check), and the checks
    where that happens most, in words. An evaluation is one misconception of one check at one point."""

    misconceptions: int = 0
    checks: int = 0
    evaluated: int = 0
    ambiguous: int = 0
    most_ambiguous: tuple[str, ...] = ()
    overlaps: tuple[discrimination.Overlap, ...] = ()   # each (check, misconception), the largest share first

    @property
    def text(self) -> str:
        """One line for the release summary."""
        if not self.misconceptions:
            return "no named misconceptions"
        share = 100 * self.ambiguous / self.evaluated if self.evaluated else 0.0
        line = (f"{self.misconceptions} named misconception{'s' * (self.misconceptions != 1)} on {self.checks} "
                f"check{'s' * (self.checks != 1)}; ambiguous (so not used) in {self.ambiguous} of {self.evaluated} "
                f"evaluations ({share:.1f} %)")
        line += "; most often " + ", ".join(self.most_ambiguous) if self.most_ambiguous else ""
        worst = self.overlaps[0] if self.overlaps else None
        if worst is None or worst.share == 0:
            return line + "; each told apart from the right answer for every student"
        share = f"{100 * worst.share:.2f} %" if worst.share >= 5e-5 else "under 0.01 %"
        return line + f"; passes as right for at most {share} of students ({worst.check} {worst.misconception})"


@dataclass(frozen=True)
class Release:
    """What `release` wrote and measured: paths (strings), the number of checks, the scores (points)
    of the solution (lowest over the sample students) and of the blank copy, out of max_score, and what
    it found of the named misconceptions."""

    assignment: str
    student_notebook: str
    public_key: str
    key: str
    checks: int
    solution_score: float
    blank_score: float
    max_score: float
    misconceptions: MisconceptionSummary = MisconceptionSummary()
    completed: tuple[str, ...] = ()   # what release added to the solution notebook (authoring.prepare), in words
    course: str = ""                  # with `release --course`: the course's course.json (autograder.grading.coursefile)
    domain: sweep.Summary = sweep.Summary()   # the solution checked over the drawable domain (authoring.sweep)


def _skeleton(v: dict[str, Any]) -> dict[str, Any]:
    """The form of a Value without its numbers (what the reference run fixes: kinds, dtypes, shapes)."""
    if v["t"] == "seq":
        return {"t": "seq", "kind": v["kind"], "items": [_skeleton(i) for i in v["items"]]}
    if v["t"] == "tensor":
        return {k: v[k] for k in ("t", "dtype", "shape", "requires_grad", "is_leaf", "grad_fn")} | {"data": [], "truncated": False}
    if v["t"] in ("float", "int"):
        return {"t": v["t"], "v": 0}
    return {"t": v["t"]}


def _base_key(a: Assignment, torch_version: str) -> Key:
    return Key(a.id, a.title, a.notebook, a.torch_observed, torch_version, analytic.sympy_version(), a.limits,
               a.grading, a.parameters, a.exercises, a.checks, digest="",
               fresh_seed="-" + secrets.token_hex(16))   # seeds the graded fresh points; never in the public key


def _run(key: Key, cells: list[str], student: str, what: str,
         worker: sandbox.Worker) -> tuple[wire.Observations, sandbox.ProbeRun]:
    positions = {e: p.after for e, p in sources.Facts.of(cells).positions(key).items()}
    run = worker.run(plan.probe_request(key, cells, student, positions=positions), key.limits)
    try:
        obs = wire.parse_results(run.results)
    except wire.WireError as e:
        raise BuildError(f"the {what} did not run in the probe ({e}); output:\n{run.output_tail[-1500:]}") from None
    if not obs.complete:
        raise BuildError(f"the {what} did not finish in the probe (timed out: {run.timed_out}); "
                         f"output:\n{run.output_tail[-1500:]}")
    return obs, run


def _check_objects(a: Assignment) -> None:
    """Every object argument (model.Arg.objects) names a Python function of this torch, whose source can be read:
    a typo, a module or a function written in C would stop the reference run with a traceback instead.

    Raises:
        SpecError: naming the spec, the exercise, the argument, the object and the fix.
    """
    import inspect

    from autograder.sandbox.inside import installed

    for ex in a.exercises:
        for arg in (g for g in ex.args if g.objects):
            for name in (o for o in arg.objects if o != installed.GENERATED):
                where = f"{a.source} [[exercise]] id={ex.id!r}: argument {arg.name!r}: object {name!r}"
                try:
                    obj = installed.resolve(name)
                except LookupError:
                    raise SpecError(f"{where}: this torch has no such object; check its spelling "
                                    f"(names are read as code reads them, torch.autograd.grad)") from None
                if not (inspect.isfunction(obj) or inspect.ismethod(obj)):
                    raise SpecError(f"{where} is {type(obj).__name__!r}, not a Python function: list functions whose "
                                    f"source a learner can read")
                try:
                    inspect.getsource(obj)
                except (OSError, TypeError):
                    raise SpecError(f"{where}: its source cannot be read on this torch; list another function") \
                        from None


@dataclass(frozen=True)
class Source:
    """A solution folder read and checked without running any of its code (`read_source`): the validated spec,
    the notebook as `prepare` completes it, its code cells' sources and labels ("cell 7 ('ex1-predict')"), and what
    prepare added, in words."""

    assignment: Assignment
    nb_path: Path
    nb: Any
    cells: tuple[str, ...]
    labels: tuple[str, ...]
    added: tuple[str, ...]


def read_source(solution_dir: str | Path) -> Source:
    """Read and check the spec and the notebook of `solution_dir`, running none of its code and starting no sandbox
    worker or kernel: the spec (autograder.authoring.spec), its id against the folder's name, the notebook's
    presence, `prepare`'s completion, each Lab(...) call's id and every object argument (`_check_objects`).

    Raises:
        SpecError: a bad spec. BuildError: the notebook cannot be completed, or a Lab(...) names another assignment.
    """
    solution_dir = Path(solution_dir)
    a = load_spec(solution_dir)
    if a.id != solution_dir.resolve().name:
        raise SpecError(f"{a.source} [assignment]: id = {a.id!r} must be the folder's name, {solution_dir.resolve().name!r}")
    nb_path = solution_dir / a.notebook
    if not nb_path.exists():
        raise SpecError(f"{a.source} [assignment]: notebook {a.notebook!r} is not in {solution_dir}")
    try:
        nb, added = prepare(read_notebook(nb_path), a, str(nb_path))   # metadata, placeholders, stubs, check cells
    except PrepareError as e:
        raise BuildError(str(e)) from None
    cells = code_cells(nb)
    labels = code_cell_labels(nb)
    for i, source in enumerate(cells):
        for other in (m.group(1) for m in LAB_CALL.finditer(source)):
            if other != a.id:
                raise BuildError(f"{nb_path}: {_label(labels, i)} makes Lab({other!r}, ...), but this assignment is "
                                 f"{a.id!r}: write Lab({a.id!r}, STUDENT_ID)")
    _check_objects(a)
    return Source(a, nb_path, nb, tuple(cells), tuple(labels), tuple(added))


def build_key(solution_dir: str | Path, worker: sandbox.Worker | None = None,
              completed: list[str] | None = None,
              trace_timeout: float = worked.MAX_SECONDS) -> tuple[Key, Any, float]:
    """Build the full key of the assignment in `solution_dir` (spec.toml + solution notebook).

    Reads and checks the spec and the notebook first (`read_source`: a bad spec is reported before any worker
    starts), then runs the solution through the sandboxed probe for SAMPLE_STUDENTS, takes each produce
    check's form (kinds, dtypes, shapes, exception) from the first reference run, then grades
    the solution with that key at every sample point: a failing check means the reference torch
    run and sympy disagree (or the solution is wrong), and raises BuildError.

    `worker`: a warm sandbox.Worker to run in (default: one started for this build). `completed`: a list that gets
    what `prepare` added to the notebook, in words. `trace_timeout`: seconds to trace each sample student's
    predictions in (`_judged`).

    Returns:
        (the full Key, the solution notebook, the solution's lowest score over the sample students).
    Raises:
        SpecError: a bad spec. BuildError: a cell of the solution raised, the oracles disagree,
            the solution scores below 100 %. TraceTimeout: the machine did not finish tracing the predictions.
    """
    src = read_source(solution_dir)
    if completed is not None:
        completed += src.added
    if worker is None:
        with sandbox.Worker([str(Path(solution_dir).resolve().parent)]) as w:
            key, score = _build(src, w, trace_timeout)
    else:
        key, score = _build(src, worker, trace_timeout)
    return key, src.nb, score


def _build(src: Source, worker: sandbox.Worker, trace_timeout: float,
           say: Callable[[str], None] = lambda text: None) -> tuple[Key, float]:
    """build_key's runs, of a Source read already: (the full Key, the solution's lowest score)."""
    a, nb_path, cells, labels = src.assignment, src.nb_path, list(src.cells), list(src.labels)
    key = _base_key(a, "unknown")
    say(f"running the solution for sample student {SAMPLE_STUDENTS[0]}")
    first, first_run = _run(key, cells, SAMPLE_STUDENTS[0], "solution notebook", worker)
    for cell in first.cells:
        if cell.status != "ok":
            raise BuildError(f"{nb_path}: {_label(labels, cell.index)} of the solution {cell.status}: "
                             f"{cell.ename}: {cell.evalue}")
    key = replace(key, torch_version=first.torch_version)
    checks = []
    for check in key.checks:
        checks.append(_with_reference(check, first, a, nb_path, cells, labels))
    salt = hashlib.sha256("\0".join(cells).encode()).hexdigest()[:32]   # the solution's code: never shipped
    key = with_digest(replace(key, checks=tuple(checks), digest_salt=salt))
    scores = []
    facts = sources.Facts.of(cells)   # the solution's predictions must be worked out too (autograder.judging.worked)
    for i, student in enumerate(SAMPLE_STUDENTS):
        if i:
            say(f"running the solution for sample student {student}")
        obs, run = (first, first_run) if i == 0 else _run(key, cells, student, "solution notebook", worker)
        outcomes = _judged(key, obs, run, facts, tuple(labels), student, trace_timeout)
        scores.append(sum(o.score for o in outcomes))
        problems = []
        points = plan.points_for(key, student)
        for o in outcomes:
            if o.status == "passed":
                continue
            check = key.check(o.check_id)
            if o.kind == "predict" and "was not worked out" in (o.message or ""):
                problems.append(f"{a.source} check {o.check_id!r}: the solution notebook computes {check.name} by "
                                f"running code ({o.message.split(' was not worked out (', 1)[-1].split(')', 1)[0]}"
                                f"), and with [grading] predictions = \"worked-out\" (the default) a prediction "
                                f"computed so fails. Write the solution's {check.name} by hand (numbers, P.<parameter>"
                                f", arithmetic), or set predictions = \"any\" in [grading] to accept computed "
                                f"predictions")
            else:
                advice = judge.release_advice(key, check, obs, points) if o.status == "failed" else None
                problems.append(f"{a.source} check {o.check_id!r}: the solution does not pass ({o.status}) for "
                                f"sample student {student!r}: {o.message}. "
                                f"{advice or judge.handler(check).advice(key, check)}")
        _refuse(problems)   # every check the solution fails for this student, at once
    return key, float(min(scores))


# A sample student's predictions traced past release's --trace-timeout are traced once more, with this many times
# the time, before release gives up (the machine's fault: TraceTimeout).
TRACE_RETRY_FACTOR = 3


def _judged(key: Key, obs: wire.Observations, run: sandbox.ProbeRun, facts: sources.Facts, labels: tuple[str, ...],
            student: str, trace_timeout: float) -> tuple[Outcome, ...]:
    """The solution's outcomes for one sample student, its predictions traced (autograder.judging.worked) on a clock
    of their own: `trace_timeout` seconds, and once more with TRACE_RETRY_FACTOR times that if the clock stopped a
    trace (the sandbox runs between the students, and a busy machine, take time that says nothing about the spec).

    Raises:
        TraceTimeout: the clock stopped a trace both times.
    """
    evidence = judge.Evidence(obs, end_of(run), facts=facts, positions=facts.positions(key), labels=labels)
    for seconds in (trace_timeout, TRACE_RETRY_FACTOR * trace_timeout):
        worked.start_clock(facts, seconds)
        outcomes = judge.outcomes(key, evidence, plan.points_for(key, student))
        if not worked.out_of_time(facts):
            return outcomes
    raise TraceTimeout(f"release could not finish tracing the solution's predictions (whether each is worked out) "
                       f"for sample student {student!r} in {seconds:g} s on this machine (it tried {trace_timeout:g} s, "
                       f"then {seconds:g} s). This is the machine's load, not a problem of the spec or the solution: "
                       f"run release again, or raise --trace-timeout (now {trace_timeout:g} s)", seconds)


def parameter_grid(p: Parameter) -> list[Number]:
    """Every value a student can draw for `p` (plan.draw_point): a real's magnitudes low..high in steps of its
    decimals, with its sign; an integer's low..high; a fixed value."""
    if p.kind == "fixed":
        return [p.value]
    if p.kind == "integer":
        return list(range(int(p.low), int(p.high) + 1))
    step = 10.0 ** -int(p.decimals)
    mags = [round(float(p.low) + i * step, int(p.decimals)) for i in range(int(round((p.high - p.low) / step)) + 1)]
    return ([m for m in mags] if p.sign in ("positive", "any") else []) + ([-m for m in mags] if p.sign in
                                                                          ("negative", "any") else [])


def check_domain(key: Key, source: str) -> None:
    """Evaluate every value a check expects over the whole domain a student can draw: over the joint grid of the
    parameters it depends on where there are two or more (authoring.domain), and over the whole range of each
    (every value a student can draw, the other parameters at the sample students' own points). A pole
    (`1/(c - 1)` with c = 1.0 drawable, `1/(x + c)` with x of either sign) leaves a student who can never pass.
    An expectation that is not finite at a sample point already is meant so (torch's inf or nan) and is left alone.

    Raises:
        BuildError: every check with such a value (not only the first), each naming the spec file, the check, the
            parameter values and the fix.
    """
    bases = [plan.draw_point(key.parameters, key.assignment, s, "own") for s in SAMPLE_STUDENTS]
    grids = {name: parameter_grid(p) for name, p in key.parameters.items()}
    problems = []
    for check in key.checks:
        answers = [("expect", check.expectation.answer)] if isinstance(check.expectation, ValueExpectation) \
            and not isinstance(check.expectation, InstalledExpectation) else []   # an installed fact: no formula
        answers += [("on_cuda.expect", check.on_cuda.answer)] if check.on_cuda is not None else []
        ex = key.exercise(check.exercise)
        symbols = tuple(ex.values(bases[0]))
        for what, answer in answers:
            texts = [a.expr for a in answer_items(answer) if isinstance(a, ExprAnswer)]
            free = {str(x) for t in texts for x in analytic.parse(t, symbols).free_symbols}
            used = sorted({n for n in free if n in key.parameters} | {a.param for a in ex.args if a.name in free and a.param})
            problem = _domain_problem(key, check, what, answer, used, symbols, bases, grids, source)
            if problem:
                problems.append(problem)
                break
    _refuse(problems)


def _refuse(problems: list[str]) -> None:
    """Raise one BuildError for every problem found (numbered when there are several), or nothing."""
    if len(problems) == 1:
        raise BuildError(problems[0])
    if problems:
        raise BuildError(f"{len(problems)} problems:\n" + "\n".join(f"  {i}. {p}" for i, p in enumerate(problems, 1)),
                         tuple(problems))


def _domain_problem(key: Key, check: Check, what: str, answer: Any, used: list[str], symbols: tuple[str, ...],
                    bases: list[dict[str, Number]], grids: dict[str, list[Number]], source: str) -> str | None:
    """check_domain for one expected value: the refusal's text, or None."""
    ex = key.exercise(check.exercise)
    where = f"{source} check {check.id!r}: {what} has no finite value at"
    for b in bases:
        try:
            meant = what == "expect" and not _finite(judge.fill(None, answer, ex.values(b)))
        except (ValueError, TypeError, ArithmeticError) as e:   # complex, or no number at all
            shown = ", ".join(f"{n} = {b[n]}" for n in used)
            return f"{where} {shown} (with {ex.where(b)}: {e}): write a value that holds at every point"
        if meant:
            return None   # meant so: torch's inf or nan, which the reference run checked (on_cuda's it cannot)
    if len(used) >= 2:   # first: where several parameters meet, one range alone is seldom the fix
        bad, _ = domain.nonfinite_points(key.parameters, used, answer, symbols, bases[0], ex.values)
        if bad:
            names = ", ".join(f"{n} = {bad[0][n]}" for n in used)
            signs = _sign_fix(key, used, answer, symbols, bases[0], ex.values)
            return (f"{where} {names} (with {ex.where(bad[0])}), values a student can draw together"
                    f"{f' ({len(bad)} such points found)' if len(bad) > 1 else ''}: such a student could never pass. "
                    f"{signs or 'Make the ranges of ' + ', '.join(used[:-1]) + ' and ' + used[-1] + ' such that they never meet there (for instance disjoint ranges, or different signs)'}"
                    f", or write the expectation so that it holds there")
    for base in bases:
        for name in [None, *used]:
            values = [None] if name is None else grids[name]
            failing = []
            for value in values:
                point = base if name is None else {**base, name: value}
                try:
                    ok = _finite(judge.fill(None, answer, ex.values(point)))
                except (ValueError, TypeError, ArithmeticError):
                    ok = False
                if not ok:
                    failing.append(value)
            if not failing:
                continue
            if name is None:
                return f"{where} {ex.where(base)}: write a value that holds at every point"
            p = key.parameters[name]
            point = {**base, name: failing[0]}
            shown = ", ".join(map(str, failing[:4])) + (", ..." if len(failing) > 4 else "")
            return (f"{where} {name} = {shown} (with {ex.where(point)}), {'a value' if len(failing) == 1 else 'values'} "
                    f"a student can draw ({name} ranges over {p.low}..{p.high}"
                    f"{', either sign' if p.sign == 'any' else ''}): such a student could never pass. "
                    f"{_either(_sign_fix(key, [name], answer, symbols, base, ex.values), _narrower(p, name, failing[0]))}, or "
                    f"write the expectation so that it holds there")
    return None


def _either(*fixes: str) -> str:
    """Fixes in words, joined: "Give x0 one sign ...; or narrow x0's range ..."."""
    shown = [f for f in fixes if f]
    return "; or ".join(f if i == 0 else f[0].lower() + f[1:] for i, f in enumerate(shown))


def _sign_fix(key: Key, used: list[str], answer: Any, symbols: tuple[str, ...], base: dict[str, Number],
              values: Any) -> str:
    """One sign for a parameter now of either sign that leaves every such point out (checked: the search finds none
    with it), in words, or ""."""
    for n in used:
        p = key.parameters[n]
        if p.kind != "real" or p.sign != "any":
            continue
        for sign in ("positive", "negative"):
            params = {**key.parameters, n: replace(p, sign=sign)}
            at = {**base, n: abs(base[n]) if sign == "positive" else -abs(base[n])}
            if len(used) >= 2:
                left, _ = domain.nonfinite_points(params, used, answer, symbols, at, values)
            else:
                left = [v for v in parameter_grid(params[n]) if not _finite_at(answer, values({**at, n: v}))]
            if not left:
                return f"Give {n} one sign, which leaves them all out: sign = \"{sign}\""
    return ""


def _finite_at(answer: Any, values: dict[str, Number]) -> bool:
    try:
        return _finite(judge.fill(None, answer, values))
    except (ValueError, TypeError, ArithmeticError):
        return False


def _narrower(p: Parameter, name: str, bad: Number) -> str:
    """The fix for a parameter value without a finite expectation, in words: the larger of the ranges on either
    side of it (in magnitude), if one is left ("Narrow c's range to leave it out: low = 1.1 (26 values) or
    high = 0.9 (5 values)")."""
    if p.kind == "fixed":
        return f"Change {name}'s fixed value"
    step = 1 if p.kind == "integer" else 10.0 ** -int(p.decimals)
    mag = abs(bad) if p.kind == "real" else bad
    options = []
    if mag + step <= p.high:
        low = round(mag + step, int(p.decimals or 0)) if p.kind == "real" else int(mag + step)
        options.append((round((p.high - low) / step) + 1, f"low = {low}"))
    if mag - step >= p.low:
        high = round(mag - step, int(p.decimals or 0)) if p.kind == "real" else int(mag - step)
        options.append((round((high - p.low) / step) + 1, f"high = {high}"))
    if not options:
        return f"Give {name} a range without {bad}"
    options.sort(reverse=True)
    return f"Narrow {name}'s range to leave it out: " + " or ".join(f"{t} ({n} values)" for n, t in options)


def check_on_cuda(key: Key, source: str) -> None:
    """Every `on_cuda` value (what a check expects where CUDA is available, which the reference run on torch's CPU
    build cannot check) must differ from the CPU's answer at the reference point, else on_cuda says nothing (that it
    holds on every drawable value is `check_domain`'s).

    Raises:
        BuildError: naming the spec file, the check and the fix.
    """
    point = plan.points_for(replace(key, fresh_seed=None), SAMPLE_STUDENTS[0])[0]
    for check in (c for c in key.checks if c.on_cuda is not None and not isinstance(c.expectation, WarnsExpectation)):
        ex = key.exercise(check.exercise)
        values = ex.values(point)
        if judge.coincide(judge.fill(None, check.on_cuda.answer, values), judge.fill(None, judge.right_answer(check), values),
                          judge.misconception_tolerance(key, check)):
            raise BuildError(f"{source} check {check.id!r}: on_cuda.expect is the check's own answer at "
                             f"{ex.where(point)}: remove on_cuda, or give the value the check has with CUDA")


def check_misconceptions(key: Key, source: str) -> MisconceptionSummary:
    """Check every misconception as answers are checked: it evaluates at every sample student's point and
    fresh points (drawn without the key's secret, so the same at every release) and every CLASS_STUDENTS own point, and differs from the right answer at the reference point (the first sample
    student's own point); count where it is ambiguous (judge.misconception_values).

    Raises:
        BuildError: naming the spec file, the check, the misconception and the fix.
    """
    unseeded = replace(key, fresh_seed=None)   # the same points at every release, whatever the key's secret
    points = [p for s in SAMPLE_STUDENTS for p in plan.points_for(unseeded, s)]
    points += [plan.draw_point(key.parameters, key.assignment, s, "own") for s in CLASS_STUDENTS]
    evaluated = ambiguous = 0
    per_check: list[tuple[int, str]] = []
    distinct = {(c.exercise, m.id) for c in key.checks for m in c.misconceptions}
    for check in (c for c in key.checks if c.misconceptions):
        ex = key.exercise(check.exercise)
        tol = judge.misconception_tolerance(key, check)
        left: dict[str, int] = {}
        for i, point in enumerate(points):
            values = ex.values(point)
            for m in check.misconceptions:
                try:
                    value = judge.misconception_value(check, m, values)
                except (ValueError, TypeError, ArithmeticError) as e:
                    raise BuildError(f"{source} check {check.id!r}: misconception {m.id!r} has no value at "
                                     f"{ex.where(point)} ({e}); write a value that holds at every point the "
                                     f"parameters can take") from None
                if judge.undefined(m.answer, value, values):
                    raise BuildError(f"{source} check {check.id!r}: misconception {m.id!r} has no value at "
                                     f"{ex.where(point)} (its formula gives nan there); write a value that holds at "
                                     f"every point the parameters can take")
                for sign in (e for e in m.evidence if e.answer is not None):
                    try:
                        judge.fill(None, sign.answer, values)
                    except (ValueError, TypeError, ArithmeticError) as e:
                        raise BuildError(f"{source} check {check.id!r}: misconception {m.id!r}: evidence {sign.what} "
                                         f"has no value at {ex.where(point)} ({e})") from None
            _, out = judge.misconception_values(check, values, tol)
            if i == 0:
                answer = judge.fill(None, judge.right_answer(check), values)
                for m in check.misconceptions:
                    right = judge.typed_answer(check, values) if judge.retyped(check, m) else answer
                    if judge.coincide(judge.misconception_value(check, m, values), right, tol):
                        raise BuildError(f"{source} check {check.id!r}: misconception {m.id!r} gives the right answer "
                                         f"at the reference point ({ex.where(point)}): a misconception must lead to a "
                                         f"wrong value; fix its value")
            evaluated += len(check.misconceptions)
            ambiguous += len(out)
            for mid in out:
                left[mid] = left.get(mid, 0) + 1
        for mid, n in left.items():
            if n == len(points):   # never used: it says the same as another misconception everywhere
                values = ex.values(points[0])
                mine = judge.misconception_value(check, next(m for m in check.misconceptions if m.id == mid), values)
                same = [m.id for m in check.misconceptions if m.id != mid
                        and judge.coincide(mine, judge.misconception_value(check, m, values), tol)]
                raise BuildError(f"{source} check {check.id!r}: misconception {mid!r} coincides with "
                                 f"{' and '.join(map(repr, same)) or 'another value'} at every point release tried "
                                 f"({len(points)}), so neither could ever be named: remove one, or make their values "
                                 f"differ")
        per_check += [(n, f"{check.id} {mid} ({n} of {len(points)} points)") for mid, n in left.items()]
    worst = tuple(text for _, text in sorted(per_check, key=lambda t: -t[0])[:3])
    return MisconceptionSummary(len(distinct), sum(1 for c in key.checks if c.misconceptions), evaluated, ambiguous,
                                worst, check_discrimination(key, source))


def check_discrimination(key: Key, source: str) -> tuple[discrimination.Overlap, ...]:
    """Measure, for every misconception of every check, the share of students for whom it passes as the right
    answer at the check's tolerance (discrimination.overlap, over every point a student can draw). Such a student
    is told they are right, and their misconception is never named.

    Returns: the overlaps, the largest share first.
    Raises:
        BuildError: a share above discrimination.MAX_SHARE (1 %) that the spec does not accept with
            `overlap = { share = ..., why = "..." }`, naming the spec file, the check, the misconception, the share,
            the parameter values where it passes, and the fixes.
    """
    found, problems = [], []
    for check in key.checks:
        for m in check.misconceptions:
            o = discrimination.overlap(key, check, m)
            found.append(o)
            allowed = m.overlap.share if m.overlap else discrimination.MAX_SHARE
            if o.share > allowed:
                at = f", where {', '.join(o.values)}" if o.values else ""
                accepted = (f" (its spec accepts up to {100 * m.overlap.share:g} %)" if m.overlap else "")
                problems.append(
                    f"{source} check {check.id!r}: misconception {m.id!r} passes as the right answer for "
                    f"{100 * o.share:.2f} % of students{accepted} (within the check's tolerance{at}): they would be "
                    f"told they are right, and it would never be named. Change the parameters' ranges so that its "
                    f"value and the right answer differ for all but 1 % of students, or accept it with overlap = "
                    f"{{ share = {min(0.99, round(o.share + 0.005, 3)):g}, why = \"...\" }} in this misconception's "
                    f"table")
    _refuse(problems)
    return tuple(sorted(found, key=lambda o: -o.share))


def _label(labels: list[str], index: int) -> str:
    """"code cell 7 ('ex1-predict')": the index-th code cell (from 0) as Jupyter shows it (cell 12 of all)."""
    return f"code {labels[index]}" if 0 <= index < len(labels) else f"code cell {index + 1}"


def _cells_naming(cells: list[str], labels: list[str], name: str) -> str:
    """Where the notebook's code mentions `name`, in words (for an error that names it)."""
    found = [labels[i] for i, src in enumerate(cells) if re.search(rf"\b{re.escape(name)}\b", src) and i < len(labels)]
    return f" ({name} appears in {', '.join(found[:3])})" if found else f" (no code cell mentions {name})"


def _with_reference(check: Check, first: wire.Observations, a: Assignment, nb_path: Path,
                    cells: list[str] = (), labels: list[str] = ()) -> Check:
    """`check` with what the reference torch run of the solution fixes: a produced value's form (kinds,
    dtypes, shapes), or the exception it raised. Raises BuildError when the solution does not set a
    prediction, lacks a function, or a call did not do what the spec expects."""
    where = f"{a.source} check {check.id!r}"
    if check.kind == "predict":
        if first.names.get(check.name, {}).get("t") in (None, "undefined", "ellipsis"):
            raise BuildError(f"{where}: the solution notebook {nb_path.name} does not set {check.name}"
                             f"{_cells_naming(list(cells), list(labels), check.name)}; check predict = "
                             f"\"{check.name}\" in spec.toml, or answer it in the notebook")
        return check
    rec = first.calls.get((check.function, 0))
    if rec is None or rec.status == "undefined":
        raise BuildError(f"{where}: the solution notebook {nb_path.name} defines no function {check.function}"
                         f"{_cells_naming(list(cells), list(labels), check.function)}; check the exercise's functions "
                         f"in spec.toml, or define it in the notebook")
    if rec.status not in ("returned", "raised"):
        raise BuildError(f"{where}: the solution's {check.function} did not finish ({rec.status})")
    e = check.expectation
    if isinstance(e, RaisesExpectation):
        return replace(check, expectation=replace(e, reference={"exception": rec.exception} if rec.status == "raised"
                                                  else None))
    if isinstance(e, WarnsExpectation):
        return check
    if rec.status == "raised" and (rec.exception or {}).get("type") == "NotImplementedError":
        raise BuildError(f"{where}: the solution's {check.function} reached its `raise NotImplementedError`: "
                         f"end its solution region with a `return` (a bare `return` for a function that "
                         f"returns nothing)")
    if rec.status == "raised":
        raise BuildError(f"{where}: the solution's {check.function} raised {rec.exception}; "
                         f"expect a value, or write raises = \"{rec.exception['type'] if rec.exception else ''}\"")
    observed = judge.observed_value(check, rec)
    if observed is None:
        raise BuildError(f"{where}: the reference torch run of the solution's {check.function} did not report "
                         f"{check.observe}")
    form = None if isinstance(e.answer, NoneAnswer) else _skeleton(observed)
    if isinstance(e.answer, SeqAnswer) and (observed["t"] != "seq" or len(observed["items"]) != len(e.answer.items)):
        raise BuildError(f"{where}: expect lists {len(e.answer.items)} item(s), but the reference torch run of the "
                         f"solution's {check.function} returned {compare.describe(observed)}; make expect match")
    if isinstance(e.answer, ExprAnswer) and observed["t"] == "seq":
        raise BuildError(f"{where}: expect is one value ({e.answer.expr!r}), but the reference torch run of the "
                         f"solution's {check.function} returned {compare.describe(observed)}; write expect = [...] "
                         f"with one expression per item of the {observed['kind']}")
    _numbers_observed(where, e.answer, observed, check)
    assert isinstance(e, ValueExpectation)
    return replace(check, expectation=replace(e, form=form))


def _numbers_observed(where: str, answer: Any, observed: dict[str, Any], check: Check, item: str = "") -> None:
    """Every expression of `answer` must meet a number or tensor in the reference run's `observed` value: the form
    (kinds, dtypes, shapes) is taken from that run, so a None there would make the key expect None where the spec
    says a number, and the cross-check with sympy would never run.

    Raises:
        BuildError: naming the check, the item and what the solution left there.
    """
    if isinstance(answer, SeqAnswer) and observed.get("t") == "seq":
        for i, (a, o) in enumerate(zip(answer.items, observed["items"], strict=False)):
            _numbers_observed(where, a, o, check, f" (item {i})")
        return
    if isinstance(answer, ExprAnswer) and observed.get("t") not in ("float", "int", "tensor", "array"):
        what = "returned" if check.observe == "returned" else f"left {check.observe} as"
        hint = (" (did the solution call backward()?)" if observed.get("t") == "none" and check.observe != "returned"
                else "")
        raise BuildError(f"{where}: expect{item} is a number ({answer.expr!r}), but the reference torch run of the "
                         f"solution's {check.function} {what} {compare.describe(observed)}{hint}: fix the solution, or "
                         f"write expect = \"None\" if that is the answer")


def _check_blanks(key: Key, obs: wire.Observations, nb_path: Path) -> None:
    """The student copy must show what to fill in: `name = ...` for each prediction, and each produce
    function defined, raising NotImplementedError (release's `prepare` writes both where a solution region sets the
    name or holds the function's body)."""
    for check in key.checks:
        state = obs.names.get(check.name, {}).get("t") if check.kind == "predict" else None
        if check.kind == "predict" and state not in ("ellipsis", "undefined", None):
            raise BuildError(f"{nb_path}: the student copy sets {check.name} to a value: its answer is outside "
                             f"### BEGIN SOLUTION / ### END SOLUTION, so it would ship to students; move it inside")
        if check.kind == "predict" and state != "ellipsis":
            raise BuildError(f"{nb_path}: the student copy has no placeholder for {check.name}: set {check.name} "
                             f"between ### BEGIN SOLUTION and ### END SOLUTION in a PREDICT cell (release writes "
                             f"`{check.name} = ...` above it), or write the placeholder yourself")
        if check.kind == "produce":
            rec = obs.calls.get((check.function, 0))
            if rec is None or rec.status == "undefined":
                raise BuildError(f"{nb_path}: the student copy does not define {check.function}: keep its `def` line "
                                 f"outside ### BEGIN SOLUTION, and its body inside")
            if rec.status != "raised" or (rec.exception or {}).get("type") != "NotImplementedError":
                raise BuildError(f"{nb_path}: in the student copy {check.function} runs ({rec.status}) instead of "
                                 f"raising NotImplementedError: put its body between ### BEGIN SOLUTION and ### END "
                                 f"SOLUTION (release writes `raise NotImplementedError(...)` after it)")


def _nothing_of_the_solution_ships(nb: Any, blank: Any, nb_path: Path) -> None:
    """No line of a solution (a region between the markers, or a whole cell marked as a solution) may be in the
    student copy, unless the same cell has it outside its regions too (`return`, given code): a check of what
    nbgrader's preprocessors made, whatever the markers' spelling.

    Raises:
        BuildError: naming the cell and the line.
    """
    for i, (cell, out) in enumerate(zip(nb.cells, blank.cells, strict=True)):
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        inside, secret, given = "BEGIN SOLUTION" not in cell.source, set(), set()
        for line in cell.source.splitlines():
            if line.strip() in ("### BEGIN SOLUTION", "### END SOLUTION"):
                inside = line.strip() == "### BEGIN SOLUTION"
            elif line.strip():
                (secret if inside else given).add(line.strip())
        left = [line.strip() for line in out.source.splitlines() if line.strip() in secret - given]
        if left:
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            raise BuildError(f"{nb_path}: cell {i + 1} ({gid!r}) of the student copy still holds {left[0][:80]!r} from "
                             f"its solution: check its ### BEGIN SOLUTION / ### END SOLUTION markers")


def _unmarked_cells(nb: Any) -> str:
    """What to check when nbgrader refuses the markers (prepare marks every cell that has one as a solution cell)."""
    bad = [f"cell {i + 1}" for i, c in enumerate(nb.cells)
           if c.source.count("### BEGIN SOLUTION") != c.source.count("### END SOLUTION")]
    return (f"Check the markers of {', '.join(bad)}: each ### BEGIN SOLUTION needs its ### END SOLUTION in the same "
            f"cell" if bad else "Check that every ### BEGIN SOLUTION has its ### END SOLUTION, in the same cell")


# What a student sees or is graded on, per check (the key's JSON form): a re-release that changes any of it, or the
# parameters, is refused without force (`what_changes`).
_GRADED = ("kind", "title", "expect", "points", "visibility", "name", "function", "observe", "rtol", "atol",
           "convention", "on_cuda")


def what_changes(old: Key, new: Key) -> list[str]:
    """What a release of `new` changes for the students of `old` (the key already released), in words: whose own
    parameters change (of the sample and class students release draws), checks added or removed, and checks whose
    expectation, points or visibility change; [] when nothing a student sees or is graded on does."""
    from autograder.keyfile import _check_json

    out = []
    students = (*SAMPLE_STUDENTS, *CLASS_STUDENTS)
    if old.parameters != new.parameters:
        moved = sum(plan.draw_point(old.parameters, old.assignment, s, "own")
                    != plan.draw_point(new.parameters, new.assignment, s, "own") for s in students)
        names = sorted(n for n in {*old.parameters, *new.parameters} if old.parameters.get(n) != new.parameters.get(n))
        out.append(f"the parameters ({', '.join(names)}) of {moved} of {len(students)} students release draws "
                   f"(a student who has the notebook keeps working with the old numbers)")
    before = {c.id: _check_json(c) for c in old.checks}
    after = {c.id: _check_json(c) for c in new.checks}
    if set(after) - set(before):
        out.append(f"checks added: {', '.join(sorted(set(after) - set(before)))}")
    if set(before) - set(after):
        out.append(f"checks removed: {', '.join(sorted(set(before) - set(after)))}")
    changed = sorted(cid for cid in set(before) & set(after)
                     if any(before[cid].get(f) != after[cid].get(f) for f in _GRADED))
    if changed:
        out.append(f"what these checks expect or are worth: {', '.join(changed)}")
    if old.exercises != new.exercises:
        out.append("the exercises' functions or arguments")
    return out


def release(solution_dir: str | Path, assignments_dir: str | Path | None = None,
            build_dir: str | Path | None = None, worker: sandbox.Worker | None = None, force: bool = False,
            trace_timeout: float = worked.MAX_SECONDS, progress: Callable[[str], None] | None = None,
            domain_budget: sweep.Budget | None = sweep.FULL) -> Release:
    """Build the key, check the blank student copy scores 0, and write the release.

    Writes `<assignments_dir>/<id>/<notebook>` (the student copy, with the assignment id in its
    metadata), `<assignments_dir>/<id>/public_key.json` and `<build_dir>/<id>/key.json`.
    Defaults: `assignments/` and `build/` beside the folder that holds `solution_dir`. `worker`: a warm
    sandbox.Worker to run the solution in (default: one started for this release, which cannot see the
    solutions and build folders). A key already released there keeps its secret (the graded fresh points), and a
    release that changes what its students see or are graded on (`what_changes`) is refused unless `force`, except
    over the key of the untouched scaffold `autograder new` wrote (`_scaffold_key`).

    In this order, so that what needs no code run is said before any worker starts: the spec and the notebook
    (`read_source`: a typo is said in well under a second),
    whether it may replace the key released before, the expectations over the parameters' ranges and the
    misconceptions (check_domain, check_on_cuda, check_misconceptions); only then does a sandbox worker start, and
    the solution run (build_key) and the blank copy. `trace_timeout`: seconds to trace each sample student's
    predictions in (`_judged`). `progress`: called with each step, in words, as it starts ("starting the sandbox
    worker"). `domain_budget`: the points, besides the sample students', at which the solution must pass its own
    checks, after the reference run (authoring.sweep: sweep.FULL; sweep.QUICK for a draft; None: none).

    Raises SpecError or BuildError (TraceTimeout: the machine's fault) (nothing is written then).
    """
    say = progress or (lambda text: None)
    solution_dir = Path(solution_dir).resolve()
    root = solution_dir.parent.parent
    say("reading the spec and the notebook")
    src = read_source(solution_dir)
    base = _base_key(src.assignment, "unknown")
    kdir = Path(build_dir or root / "build") / base.assignment
    _may_replace(kdir / "key.json", base, force)   # up front: its reason, before the long checks
    say("checking the expectations over the parameters' ranges, and the misconceptions")
    misconceptions = _spec_checks(base, str(solution_dir / "spec.toml"))
    if worker is not None:
        return _release(src, misconceptions, root, assignments_dir, kdir, worker, trace_timeout, say, domain_budget)
    conceal = [str(solution_dir.parent), str(root / "build"), *([str(build_dir)] if build_dir else [])]
    say("starting the sandbox worker")
    with sandbox.Worker(conceal) as worker:
        return _release(src, misconceptions, root, assignments_dir, kdir, worker, trace_timeout, say, domain_budget)


def _spec_checks(key: Key, source: str) -> MisconceptionSummary:
    """check_domain, check_on_cuda and check_misconceptions of a key (they read the spec's expressions only: a key
    before the reference run will do), every problem at once, not one per release. A dtype misconception of a value
    check (judge.retyped: "the right numbers as float32") needs the reference run's form, so it is left out here and
    checked after the reference run (`_release`).

    Raises:
        BuildError: every problem the three found.
    """
    key = replace(key, checks=tuple(replace(c, misconceptions=tuple(m for m in c.misconceptions
                                                                    if not judge.retyped(c, m))) for c in key.checks))
    problems, misconceptions = [], MisconceptionSummary()
    for step in (check_domain, check_on_cuda, check_misconceptions):
        try:
            result = step(key, source)
        except BuildError as e:
            problems += e.problems
        else:
            misconceptions = result if isinstance(result, MisconceptionSummary) else misconceptions
    _refuse(problems)
    return misconceptions


def _scaffold_key(old: Key) -> bool:
    """Is `old` the key of the untouched scaffold `autograder new` writes (autograder.authoring.scaffold, for this
    id, title, notebook and torch_observed): its placeholder exercise, which no student works on? Then replacing it
    changes nothing for any student (what_changes says nothing against the scaffold's own spec)."""
    from autograder.authoring.scaffold import spec_text

    try:
        scaffold = parse_spec(spec_text(old.assignment, old.title, old.notebook, old.torch_observed), "scaffold")
    except SpecError:
        return False
    return scaffold.title == old.title and not what_changes(_base_key(scaffold, "unknown"), old)


def _may_replace(path: Path, key: Key, force: bool) -> None:
    """Refuse, before anything runs, a release over the key at `path` (released before) that changes what its
    students see or are graded on (`what_changes`: it reads the spec only, so `key` may be one before the
    reference run), unless `force`, or the key there is the untouched scaffold's (`_scaffold_key`).

    Raises:
        BuildError: naming the key, each change and --force.
    """
    if force or not path.is_file():
        return
    try:
        old = load_key(path)
    except ValueError:
        return   # not a key this grader reads: nothing to compare with
    changes = [] if _scaffold_key(old) else what_changes(old, key)
    if changes:
        raise BuildError(f"{path} was released before, and this release changes what its students see or are "
                         f"graded on: {'; '.join(changes)}. Regrading handed-in notebooks with the new key notes "
                         f"each one released with the old key. Release with --force to go ahead (as you should "
                         f"while no student has the notebook yet); release checked this first, before running "
                         f"anything")


def _release(src: Source, misconceptions: MisconceptionSummary, root: Path, assignments_dir: str | Path | None,
             kdir: Path, worker: sandbox.Worker, trace_timeout: float, say: Callable[[str], None],
             domain_budget: sweep.Budget | None = sweep.FULL) -> Release:
    import nbformat

    key, solution_score = _build(src, worker, trace_timeout, say)
    nb, solution_dir = src.nb, src.nb_path.parent
    if any(judge.retyped(c, m) for c in key.checks for m in c.misconceptions):   # now with the reference run's form
        say("checking the dtype misconceptions against the reference run's dtypes")
        misconceptions = check_misconceptions(key, str(solution_dir / "spec.toml"))
    swept = sweep.Summary()
    if domain_budget is not None:   # the sample points pass (_build): now every point a student can draw
        say("checking the solution at every point a student can draw" if domain_budget.name == "full" else
            f"checking the solution at a few thousand points an exercise (--domain {domain_budget.name})")
        cells = code_cells(nb)
        positions = {e: p.after for e, p in sources.Facts.of(cells).positions(key).items()}
        try:
            problems, swept = sweep.remembered(key, cells, positions, worker, str(solution_dir / "spec.toml"),
                                               domain_budget, say)
        except RuntimeError as e:
            raise BuildError(f"{src.nb_path}: {e}") from None
        _refuse(problems)
    try:
        blank = student_copy(nb)
    except RuntimeError as e:   # nbgrader: a solution region outside a solution cell, or unbalanced markers
        raise BuildError(f"{solution_dir / key.notebook}: {e}. {_unmarked_cells(nb)}") from None
    _nothing_of_the_solution_ships(nb, blank, solution_dir / key.notebook)
    blank.metadata[METADATA_KEY] = {"assignment": key.assignment, "key_digest": key.digest}
    say("running the blank student copy")
    obs, run = _run(key, code_cells(blank), SAMPLE_STUDENTS[0], "blank student copy", worker)
    _check_blanks(key, obs, solution_dir / key.notebook)   # first: a missing placeholder or stub is the usual cause
    outcomes = judge.outcomes(key, judge.Evidence(obs, end_of(run)), plan.points_for(key, SAMPLE_STUDENTS[0]))
    scored = [o for o in outcomes if o.score > 0 or o.status != "missing"]
    if scored:
        raise BuildError(f"the blank student copy is not all 'missing': {scored[0].check_id} is {scored[0].status} "
                         f"({scored[0].message}); put that cell's answer inside ### BEGIN SOLUTION / ### END SOLUTION")
    out = Path(assignments_dir or root / "assignments") / key.assignment
    out.mkdir(parents=True, exist_ok=True)
    nb_out = out / key.notebook
    nbformat.write(blank, str(nb_out))
    previous = kdir / "key.json"
    if previous.is_file():   # keep the course's secret: regrading with a rebuilt key gives the same fresh points
        try:
            old_secret = json.loads(previous.read_text(encoding="utf-8")).get("secret")
        except (OSError, ValueError):
            old_secret = None
        if isinstance(old_secret, str) and old_secret:
            key = replace(key, fresh_seed=old_secret)
    write_json_atomic(out / "public_key.json", to_json(public_key(key)), mode=0o644, durable=True)
    (out / ".autograd-lab-commits.json").unlink(missing_ok=True)   # a learner's commit records never ship
    write_json_atomic(kdir / "key.json", to_json(key), mode=0o600, durable=True)
    (kdir / "source").mkdir(exist_ok=True)   # the solution with its generated nbgrader metadata: nbgrader's source
    nbformat.write(nb, str(kdir / "source" / key.notebook))
    return Release(key.assignment, str(nb_out), str(out / "public_key.json"), str(kdir / "key.json"),
                   len(key.checks), solution_score, float(sum(o.score for o in outcomes)), key.max_score,
                   misconceptions, src.added, domain=swept)
