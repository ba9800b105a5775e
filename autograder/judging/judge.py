"""judge: the grading semantics. Pure: (key, what a run observed, the student's points) -> Outcomes and notes;
no torch, no processes, no files. One handler per expectation kind (value, convention, installed, raises, warns) owns
its expected value, its comparison, its oracle text and its release advice; `grade` (a submission) and
`key` (the solution, at release) both judge with this module.

May import: stdlib, autograder.model, autograder.judging.compare, autograder.judging.analytic, autograder.wire,
autograder.report, autograder.judging.sources, autograder.judging.worked, autograder.judging.commit.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Union

from autograder import wire
from autograder.judging import analytic, commit, sources, worked
from autograder.judging.compare import (Comparison, compare_exception, compare_predicted, compare_produced, compare_warning,
                                plain, short, show)
from autograder.model import (DTYPE_EPS, Answer, BoolAnswer, Check, ClassAnswer, ConventionExpectation, DtypeAnswer,
                              Exercise, ExprAnswer,
                              InstalledAnswer, InstalledExpectation, Key, Limits, Misconception, NoneAnswer,
                              RaisesExpectation, SeqAnswer, Sign, Tolerance, ValueExpectation, WarnsExpectation,
                              answer_items, container_is_lesson, installed_key)
from autograder.report import Diagnosis, Outcome, Status

Call = tuple[str, int]               # (produce function, point index)
Point = dict[str, Any]
TAMPERED = ("this result reached the grader twice: the submission wrote into the grader's results channel, "
            "so it cannot be trusted")


@dataclass(frozen=True)
class RunEnd:
    """How a sandboxed run ended, as the grader saw it: the process's exit code (or -signal), whether the
    submission's time limit was reached, whether its results stream was cut at wire.MAX_RESULT_BYTES,
    and whether the worker stopped it because a step outlasted its alarm (`stalled`) or because its
    processes together outgrew the run's memory budget (`over_memory`)."""

    exit_code: int
    timed_out: bool
    results_cut: bool = False
    stalled: bool = False
    over_memory: bool = False


@dataclass(frozen=True)
class Evidence:
    """What the judge reads of one submission: the probe's observations; how the run that decides about
    unreached checks ended (`end`); how the run ended that stopped during a produce call (`stopped`) or
    while reading a prediction (`stopped_names`; see grade's runs again after a fatal step); the code
    cells that raised, ran past their limit or ended a run (`cell_faults`: index -> (status, what)); and,
    where the notebook's sources are known, what they say (`facts`), where each exercise was observed
    (`positions`) and the cells' labels; per exercise, the commit record of its predictions or why none
    can be trusted (`commits`); and whether an exercise without a commit is `sealed` (a self-check shows
    no expected value before the learner's predictions are committed); and whether the commits are the course
    service's (`course`: then a filled-in prediction without one is not committed, and scores nothing)."""

    observations: wire.Observations
    end: RunEnd
    stopped: dict[Call, RunEnd] = field(default_factory=dict)
    stopped_names: dict[str, RunEnd] = field(default_factory=dict)
    cell_faults: dict[int, tuple[str, str]] = field(default_factory=dict)
    facts: sources.Facts | None = None
    positions: dict[str, sources.Position] = field(default_factory=dict)
    labels: tuple[str, ...] = ()
    commits: dict[str, commit.Commit | str] = field(default_factory=dict)
    sealed: bool = False
    course: bool = False   # the commits are the course service's: a prediction it did not record scores 0
    predicting: frozenset[str] | None = None   # the exercises with predictions, when the key judged with is partial
    seal_produce: bool = False                 # a sealed exercise's produce checks say nothing either (course mode)

    def label(self, i: int) -> str:
        """A code cell as a student finds it ("cell 9 ('ex1-produce')")."""
        return self.labels[i] if i < len(self.labels) else f"code cell {i + 1}"


def how_it_ended(end: RunEnd, limits: Limits) -> str:
    """Why a run stopped, in words."""
    if end.timed_out:
        return f"the submission's {limits.submission_timeout:g} s limit was reached"
    if end.stalled:
        return "it ran past its time limit and did not stop at its alarm, so the run was stopped"
    if end.over_memory:
        return (f"the run's processes together used more than its {limits.run_memory_mb:g} MB of memory, so the "
                f"run was stopped")
    return f"the process ended, exit code {end.exit_code}"


def ended_fault(end: RunEnd, limits: Limits) -> tuple[str, str]:
    """(status, what happened) of a cell during which a run stopped."""
    if end.timed_out:
        return "timeout", f"was still running when the submission's {limits.submission_timeout:g} s limit was reached"
    if end.stalled:
        return "timeout", (f"ran past its {limits.cell_timeout:g} s limit and did not stop at its alarm, so the run "
                           f"was stopped")
    if end.over_memory:
        return "error", (f"made the run's processes together use more than its {limits.run_memory_mb:g} MB of "
                         f"memory, so the run was stopped")
    return "error", f"ended the run (the process ended, exit code {end.exit_code})"


# Why a cell that imports a module of the learner's own fails in the graded run (the case of
# shared/cases/public-2026-12/local-helper-module).
MODULE_HINT = ("; the graded run has only the notebook (with torch, numpy, sympy and Python's own modules): a module of "
               "your own beside it is not handed in with it, so put its code into the notebook")


def cell_error(evalue: str) -> str:
    """A cell's exception message as the learner can place it: IPython's name for the cell
    ("<ipython-input-3-9a8f...>") left out of a SyntaxError's "(..., line 2)"."""
    return re.sub(r"\(<ipython-input-[^>]*>, line (\d+)\)", r"(line \1 of the cell)", evalue)


def _at(where: str) -> str:
    """" at x=1.5" for a message; nothing for a function of no arguments (model.Exercise.where: "no arguments")."""
    return "" if where == "no arguments" else f" at {where}"


def point_label(p: int) -> str:
    """"your point" for index 0, else "fresh point p"."""
    return "your point" if p == 0 else f"fresh point {p}"


def _stopped_in(key: Key, evidence: Evidence, call: Call, call_text: str, where: str) -> tuple[Status, str] | None:
    """The outcome of a call during which the run stopped, or None."""
    end = evidence.stopped.get(call)
    if end is None:
        return None
    label = point_label(call[1])
    if end.timed_out:
        return "timeout", (f"{call_text} was still running{_at(where)} ({label}) when the submission's "
                           f"{key.limits.submission_timeout:g} s limit was reached")
    if end.stalled:
        return "timeout", (f"{call_text} did not return within {key.limits.call_timeout:g} s{_at(where)} ({label}) "
                           f"and did not stop at its alarm, so the run was stopped")
    if end.over_memory:
        return "error", (f"the submission's processes together used more than the run's "
                         f"{key.limits.run_memory_mb:g} MB of memory while {call_text} was running{_at(where)} "
                         f"({label})")
    return "error", (f"the submission's process ended (exit code {end.exit_code}) while {call_text} was running "
                     f"at {where} ({label})")


def _unreached(key: Key, end: RunEnd) -> tuple[Status, str]:
    """The outcome of a check the run never reached."""
    if end.results_cut:
        return "error", (f"the submission wrote more than {wire.MAX_RESULT_BYTES // 10**6} MB of results, "
                         f"so the grader stopped reading before this check")
    if end.timed_out:
        return "timeout", f"the submission ran past its {key.limits.submission_timeout:g} s limit before this check was reached"
    return "error", f"the submission's process ended (exit code {end.exit_code}) before this check ran"


def version_note(key: Key, check: Check, run_version: str, cuda: bool | None = None) -> str | None:
    """A version-sensitive check graded on another torch than the one it was observed on, or in a run with CUDA
    (keys are observed on torch's CPU build), is flagged."""
    observed_on = key.torch_observed or key.torch_version
    if not check.version_sensitive or (run_version == observed_on and not cuda):
        return None
    if run_version == observed_on:
        return (f"version-sensitive: this behaviour was observed on torch {observed_on} without CUDA, and this run "
                f"had CUDA; if it differs there, the check may be wrong, not you")
    return (f"version-sensitive: this behaviour was observed on torch {observed_on}, and this run used torch "
            f"{run_version}{' with CUDA' if cuda else ''}; if it changed, the check may be wrong, not you")


def on_this_device(check: Check, cuda: bool | None) -> tuple[Check, str | None]:
    """The check as this run's device makes it: in a run with CUDA, a check with `on_cuda` expects that value
    instead (its misconceptions are the CPU's, so none is named), with a note saying so."""
    if not cuda or check.on_cuda is None:
        return check, None
    form = getattr(check.expectation, "form", None) if isinstance(check.expectation, ValueExpectation) else None
    cuda_check = replace(check, expectation=ValueExpectation(check.on_cuda.answer, form), why=check.on_cuda.why,
                         misconceptions=())
    return cuda_check, ("CUDA was available in this run, so this check expects what it does with CUDA (the key's "
                        "reference run, on torch's CPU build, could not check that value)")


def warning_line(w: dict[str, str]) -> str:
    """One warning as one line: "UserWarning: message" (torch's "Triggered internally at" tail dropped)."""
    message = w["message"].split(" (Triggered internally at")[0]
    return f"{w['category']}: {short(message, 300)}"


def warning_details(key: Key, function: str, warnings: list[dict[str, Any]] | tuple[dict[str, Any], ...]) -> tuple[str, ...]:
    """The detail lines of the warnings a call of `function` emitted, each once, in order. A warning that a warns
    check of `function` grades (its class and phrase) says so: "warning (graded in 1.produce.warning): UserWarning:
    ..." ("warning: ..." where that check is hidden, which names nothing it expects); any other is
    "warning (information, not graded): ...", since a warning is never a failure by itself."""
    graders = [c for c in key.checks if c.kind == "produce" and c.function == function
               and isinstance(c.expectation, WarnsExpectation)]
    lines: dict[str, str] = {}
    for w in warnings:
        line = warning_line(w)
        if line in lines:
            continue
        by = next((c for c in graders if compare_warning({"warns": c.expectation.warning,
                                                          "phrase": c.expectation.phrase}, [w]).ok), None)
        label = ("information, not graded" if by is None else None if by.visibility == "hidden" else
                 f"graded in {by.id}")
        lines[line] = f"warning ({label}): {line}" if label else f"warning: {line}"
    return tuple(lines.values())


# ------------------------------------------------------------------------------------------------ handlers

@dataclass(frozen=True)
class Verdict:
    """A handler's judgement of one produce call at one point: the comparison, the texts shown, and the
    misconception a wrong value matches (None: none, or not unambiguously)."""

    comparison: Comparison
    expected: str
    observed: str
    convention: str | None = None
    misconception: Diagnosis | None = None


# ------------------------------------------------------------------------------------------------ misconceptions

def right_answer(check: Check) -> Answer:
    """The check's right answer as an Answer (an exception or warning as its class)."""
    e = check.expectation
    if isinstance(e, RaisesExpectation):
        return ClassAnswer(e.exception)
    if isinstance(e, WarnsExpectation):
        return ClassAnswer(e.warning)
    return e.answer


def coincide(a: dict[str, Any], b: dict[str, Any], tol: Tolerance) -> bool:
    """Are two values the same answer within `tol` (in either direction of the lenient comparison)?"""
    return compare_predicted(a, b, tol).ok or compare_predicted(b, a, tol).ok


def undefined(answer: Answer, value: dict[str, Any], values: Point) -> bool:
    """Is `value` (`answer` filled at `values`) nan where `answer` is a formula of the parameters (1/(k-2) at
    k = 2)? Such a formula has no value there; a constant nan ("nan": torch's result) is a value."""
    if isinstance(answer, SeqAnswer):
        return any(undefined(a, v, values) for a, v in zip(answer.items, value.get("items", ()), strict=False))
    if not isinstance(answer, ExprAnswer):
        return False
    nums = [value["v"]] if value["t"] in ("float", "int") else value.get("data", [])
    return any(n == "nan" for n in nums) and not analytic.is_constant(answer.expr, values.keys())


def misconception_values(check: Check, values: Point, tol: Tolerance) -> tuple[list[tuple[Misconception, dict]], list[str]]:
    """The misconceptions of `check` that can name a wrong value at `values` (symbol -> number), each with the
    wire Value it leads to there; and the ids of those left out there: a misconception whose value cannot be
    evaluated at this point, or coincides (within `tol`) with the right answer or with another misconception,
    would not say unambiguously what the learner thought. Pure but for sympy evaluation."""
    if not check.misconceptions:
        return [], []
    answer = fill(None, right_answer(check), values)
    evaluated, left_out = _evaluated(check, values)
    typed = typed_answer(check, values) if any(retyped(check, m) for m, _ in evaluated) else None
    usable = []
    for i, (m, v) in enumerate(evaluated):
        if _ambiguous(check, i, evaluated, answer, tol, typed):
            left_out.append(m.id)
        else:
            usable.append((m, v))
    return usable, left_out


def retyped(check: Check, m: Misconception) -> bool:
    """Is `m` a dtype misconception of a value check (model.DtypeAnswer): the check's right numbers with its dtype?"""
    return isinstance(m.answer, DtypeAnswer) and not isinstance(right_answer(check), DtypeAnswer)


def _with_dtype(v: dict[str, Any], dtype: str) -> dict[str, Any]:
    """A wire Value with every tensor in it made `dtype` (a tuple's items included)."""
    if v["t"] == "tensor":
        return {**v, "dtype": dtype}
    if v["t"] == "seq":
        return {**v, "items": [_with_dtype(i, dtype) for i in v["items"]]}
    return v


def typed_answer(check: Check, values: Point) -> dict[str, Any] | None:
    """The right answer of a produce check at `values` in the reference run's form (its tensors' dtypes included), or
    None where the check has no form holding a tensor (a prediction, a number, None)."""
    form = getattr(check.expectation, "form", None)
    if check.kind != "produce" or not isinstance(form, dict) or not _dtypes(form):
        return None
    return fill(form, right_answer(check), values)


def misconception_value(check: Check, m: Misconception, values: Point) -> dict[str, Any]:
    """The wire Value misconception `m` of `check` leads to at `values`: its answer filled there, or for a dtype
    misconception of a value check (`retyped`) the check's right answer in the reference run's form with every tensor
    of that dtype. Raises ValueError, TypeError or ArithmeticError where it has no value there (a pole; a dtype
    misconception of a value that holds no tensor)."""
    if not retyped(check, m):
        return fill(None, m.answer, values)
    typed = typed_answer(check, values)
    if typed is None:
        raise ValueError(f"{m.answer.text} names a dtype, and the reference run's value holds no tensor")
    return _with_dtype(typed, m.answer.name)


def _evaluated(check: Check, values: Point) -> tuple[list[tuple[Misconception, dict[str, Any]]], list[str]]:
    """The misconceptions of `check` with their wire Values at `values`, and the ids of those without one there (a
    pole, a complex value, a formula with no value such as 0/0)."""
    evaluated: list[tuple[Misconception, dict[str, Any]]] = []
    left_out: list[str] = []
    for m in check.misconceptions:
        try:
            value = misconception_value(check, m, values)
        except (ValueError, TypeError, ArithmeticError):   # a pole, a complex value: no number at this point
            left_out.append(m.id)
            continue
        if undefined(m.answer, value, values):   # a formula with no value here (0/0): it cannot name anything
            left_out.append(m.id)
        else:
            evaluated.append((m, value))
    return evaluated, left_out


def _ambiguous(check: Check, i: int, evaluated: list[tuple[Misconception, dict[str, Any]]], answer: dict[str, Any],
               tol: Tolerance, typed: dict[str, Any] | None = None) -> bool:
    """Does the `i`th evaluated misconception coincide with the right answer or with another one (two produce
    misconceptions of one value are told apart by their evidence)? A dtype misconception of a value check is held
    against the right answer with its dtypes (`typed`: typed_answer), from which it differs by its dtype alone."""
    m, v = evaluated[i]
    apart = check.kind == "produce"
    right = typed if retyped(check, m) and typed is not None else answer
    return coincide(v, right, tol) or any(coincide(v, w, tol) for j, (n, w) in enumerate(evaluated)
                                          if j != i and not (apart and n.evidence != m.evidence))


def diagnose(check: Check, values: Point, observed: dict[str, Any], tol: Tolerance, where: str,
             rec: wire.CallResult | None = None) -> Diagnosis | None:
    """The misconception `observed` (a wrong wire Value) matches within `tol` at `values`, or None: none
    matches, or it matches one that is ambiguous at this point (see `misconception_values`). For a produce call
    (`rec`), a misconception with evidence matches only where the call did what its evidence says. (The same as
    keeping those of `misconception_values` that match; only those that match are tested for ambiguity.)"""
    if not check.misconceptions:
        return None
    evaluated, _ = _evaluated(check, values)
    lenient = not container_is_lesson(check)   # [a, b] is the misconception (a, b) where a list is the tuple
    matching = [i for i, (m, v) in enumerate(evaluated) if compare_predicted(v, observed, tol, lenient).ok
                and (rec is None or all(_holds(sign, rec, values, tol) for sign in m.evidence))]
    if not matching:
        return None
    answer = fill(None, right_answer(check), values)
    typed = typed_answer(check, values) if any(retyped(check, evaluated[i][0]) for i in matching) else None
    found = [evaluated[i] for i in matching if not _ambiguous(check, i, evaluated, answer, tol, typed)]
    if len(found) != 1:
        return None
    m, v = found[0]
    formula = f"the right value as {m.answer.text}" if retyped(check, m) else m.answer.text
    return Diagnosis(m.id, m.name, m.feedback, formula, plain(v), where)


def _holds(sign: Sign, rec: wire.CallResult, values: Point, tol: Tolerance) -> bool:
    """Did the produce call `rec` do what `sign` says (model.Sign)?"""
    if sign.what == "warns":
        return any(sign.phrase in w.get("message", "") for w in rec.warnings)
    if sign.what == "message":
        return rec.status == "raised" and rec.exception is not None and sign.phrase in rec.exception.get("message", "")
    if sign.what == "runs_backward":
        return rec.backward_calls is not None and (rec.backward_calls > 0) == sign.flag
    grad = rec.tensors.get(sign.what.split(".")[0], {}).get("grad")
    return grad is not None and sign.answer is not None and compare_predicted(fill(None, sign.answer, values), grad,
                                                                              tol).ok


def observed_value(check: Check, rec: wire.CallResult) -> dict[str, Any] | None:
    """What a produce check observes of a call that returned: the returned Value, or a tensor argument's .grad after
    the call; with ".dtype" (`observe = "x.grad.dtype"`), that tensor's dtype as a dtype Value (anything but a tensor
    stays what it is, and is compared as such). None: not observed."""
    target = check.observe or "returned"
    base = target.removesuffix(".dtype")
    value = rec.returned if base == "returned" else rec.tensors.get(base.split(".")[0], {}).get("grad")
    if value is not None and target.endswith(".dtype") and value.get("t") == "tensor":
        return {"t": "dtype", "name": str(value["dtype"])}
    return value


def _dtypes(form: Any) -> set[str]:
    """The dtypes of the tensors in a reference run's form (a tuple's items included)."""
    if not isinstance(form, dict):
        return set()
    if form.get("t") == "tensor":
        return {str(form.get("dtype"))}
    return {d for item in form.get("items", ()) for d in _dtypes(item)}


def misconception_tolerance(key: Key, check: Check, observed: dict[str, Any] | None = None) -> Tolerance:
    """The tolerance a misconception of `check` is matched with, and told apart from the right answer and the
    other misconceptions: a prediction's (predict_rtol, predict_atol); for a produced value, the dtype's as
    compare_produced uses it (Grading.produced), the loosest of the dtypes of the tensors of the reference run's
    form and of the `observed` value: float64's where every one is float64 (or there is none), float32's for a
    float32 tensor (also in a tuple), bfloat16's for a bfloat16 one."""
    if check.kind == "predict":
        return key.grading.prediction(check)
    dtypes = (_dtypes(getattr(check.expectation, "form", None)) | _dtypes(observed)) or {"float64"}
    tols = [key.grading.produced(check, d) for d in sorted(dtypes)]
    return Tolerance(max(t.rtol for t in tols), max(t.atol for t in tols))


@dataclass(frozen=True)
class Stop:
    """A produce call that cannot be compared (it raised where a value was expected): an `error`."""

    message: str
    observed: str | None = None
    misconception: Diagnosis | None = None   # a misconception whose raises = ... and evidence the call matched


class ValueHandler:
    """A value (`expect = ...`): None, a bool, a sympy expression or a tuple of these. Predictions are
    compared leniently (any number form), productions strictly (kind, dtype, shape, then values within
    the dtype's tolerance); the expected value is the reference run's form filled with sympy's numbers."""

    def expected(self, key: Key, check: Check, values: Point, form: Any = None) -> dict[str, Any]:
        """The expected wire Value at `values` (symbol -> number)."""
        return fill(form, check.expectation.answer, values)

    def oracle(self, key: Key, check: Check, where: str) -> str:
        """Where the expected value comes from, in words."""
        ref = f"reference torch {key.torch_version} run"
        answer = check.expectation.answer
        if not any(isinstance(i, ExprAnswer) for i in answer_items(answer)):
            return f"API contract; {ref} agrees"
        form = f"; form from {ref}" if check.kind == "produce" else ""
        return f"sympy: {short(answer.text, 160)}{_at(where)}{form}"

    def convention(self, key: Key, check: Check, values: Point, torch_value: str) -> str | None:
        """The convention line of the outcome (None: no convention)."""
        return None

    def expected_at(self, key: Key, check: Check, exercise: Exercise, point: Point,
                    installed: dict[str, dict[str, Any]]) -> dict[str, Any]:
        """The expected wire Value of a produce call at `point` (the exercise's parameters); `installed` is what the
        run's probe read of the installed torch (wire.Observations.installed). Raises LookupError where the value
        needs a fact the run did not read."""
        return self.expected(key, check, exercise.values(point), check.expectation.form)

    def produced(self, key: Key, check: Check, exercise: Exercise, rec: wire.CallResult, point: Point,
                 call_text: str, installed: dict[str, dict[str, Any]] | None = None) -> Verdict | Stop:
        """Judge one produce call at one point (`installed`: the run's facts of the installed torch)."""
        where = exercise.where(point)
        if rec.status == "raised":
            e = rec.exception or {"type": "?", "message": ""}
            seen = {"t": "class", "name": e["type"]}   # a mistake that ends in a cryptic torch error may be named
            named = diagnose(check, exercise.values(point), seen, misconception_tolerance(key, check), where, rec) \
                if check.observe == "returned" else None
            return Stop(f"{call_text} raised {e['type']}{_at(where)}: {short(e['message'], 300)}",
                        f"{e['type']}: {short(e['message'], 300)}", named)
        target = check.observe
        observed = observed_value(check, rec)
        if observed is None:
            return Stop(f"{target} was not observed")
        values = exercise.values(point)
        try:
            expected = self.expected_at(key, check, exercise, point, installed or {})
        except LookupError as e:
            return Stop(f"{call_text} cannot be judged{_at(where)}: the installed torch has no {e.args[0]}, which "
                        f"this check reads")
        c = compare_produced(expected, observed, lambda dtype: key.grading.produced(check, dtype),
                             list_for_tuple=not container_is_lesson(check))
        expected_text = show(expected)
        diagnosis = None if c.ok else diagnose(check, values, observed, misconception_tolerance(key, check, observed),
                                               where, rec)
        return Verdict(c, expected_text, show(observed), self.convention(key, check, values, expected_text), diagnosis)

    def advice(self, key: Key, check: Check) -> str:
        """What to fix when the solution fails this check at release (where a tolerance is the matter, `release_advice`
        says more)."""
        if check.kind == "predict":
            return (f"The solution notebook's {check.name} and the spec's expect disagree: fix the expect "
                    f"expression if the notebook is right, else the notebook.")
        return (f"The reference torch {key.torch_version} run and the expectation disagree: if torch is right, fix "
                f"the expect expression; if sympy is right, fix the solution.")


def _numbers(expected: dict[str, Any], observed: dict[str, Any]) -> list[tuple[float, float, str]] | None:
    """(observed, expected, dtype) of each number of two Values of one form (a Python number's dtype: "float64"); None
    where the forms differ."""
    if expected["t"] == "seq" and observed["t"] == "seq" and len(expected["items"]) == len(observed["items"]):
        out: list[tuple[float, float, str]] = []
        for e, o in zip(expected["items"], observed["items"], strict=True):
            sub = _numbers(e, o)
            if sub is None:
                return None
            out += sub
        return out
    if expected["t"] == "tensor" and observed["t"] == "tensor" and len(expected["data"]) == len(observed["data"]):
        return [(float(wire.decode_float(o)), float(wire.decode_float(e)), str(expected["dtype"]))
                for o, e in zip(observed["data"], expected["data"], strict=True)
                if not isinstance(o, bool) and not isinstance(e, bool)]
    if expected["t"] in ("float", "int") and observed["t"] in ("float", "int"):
        return [(wire.decode_float(observed["v"]), wire.decode_float(expected["v"]), "float64")]
    return [] if expected["t"] == observed["t"] else None


MAX_OPS_ADVISED = 32   # a difference of more roundings than this is taken for a wrong value, not for rounding


def _is_number_of(x: float, dtype: str) -> bool:
    """Is `x` exactly a number of the half dtype `dtype` ("bfloat16": a float32 whose low 16 bits are 0; "float16":
    IEEE half precision)?"""
    import struct

    try:
        if dtype == "bfloat16":
            bits = struct.unpack("<I", struct.pack("<f", x))[0]
            return struct.unpack("<f", struct.pack("<f", x))[0] == x and bits & 0xFFFF == 0
        return struct.unpack("<e", struct.pack("<e", x))[0] == x
    except (OverflowError, struct.error):
        return False


def _up(x: float) -> float:
    """`x` rounded up to two significant figures (0.004431 -> 0.0045)."""
    if x <= 0 or not math.isfinite(x):
        return x
    step = 10.0 ** (math.floor(math.log10(x)) - 1)
    return math.ceil(x / step - 1e-9) * step


def tolerance_text(tol: Tolerance, dtype: str, ops: int) -> str:
    """"rtol = atol = 4 × 2^-7 = 0.03125" where the tolerance is `dtype`'s ops * eps, else "rtol = 1e-05, atol = 1e-05"."""
    eps = DTYPE_EPS.get(dtype)
    if eps and tol.rtol == tol.atol == ops * eps:
        return f"rtol = atol = {ops} × 2^{int(math.log2(eps))} = {tol.rtol:.4g}"
    return f"rtol = {tol.rtol:.3g}, atol = {tol.atol:.3g}"


def release_advice(key: Key, check: Check, obs: wire.Observations, points: list[Point]) -> str | None:
    """What to fix where the solution misses a produce check's number only by its tolerance: the first point where the
    reference run's value of `check` differs from sympy's in its numbers alone, the dtype and tolerance it was compared
    with, and the fix that would pass there: the dtype's default tolerance (a spec's own rtol/atol is tighter), more
    roundings (`ops = N`), the dtype the value is computed in (`dtype = "bfloat16"` for a float32 value that went
    through bfloat16: autocast), or an rtol. None: the check is not such a number, or it fails in another way (kind,
    dtype, shape, nan), where the handler's advice applies."""
    e = check.expectation
    if check.kind != "produce" or type(e) not in (ValueExpectation, ConventionExpectation):
        return None
    g = key.grading
    ops = check.ops if check.ops is not None else g.ops
    miss = _first_miss(key, check, obs, points)
    if miss is None:
        return None
    point, observed, nums = miss
    used = lambda dtype: g.produced(check, dtype)
    dtype = max({d for _, _, d in nums}, key=lambda d: used(d).rtol)
    tol = used(dtype)
    passes = lambda t: all(abs(o - x) <= t.atol + t.rtol * abs(x) for o, x, _ in nums)
    worst = max(abs(o - x) / max(abs(x), 1e-300) for o, x, _ in nums)
    needed = max((abs(o - x) - tol.atol) / abs(x) for o, x, _ in nums if x != 0) if any(x for _, x, _ in nums) \
        else math.inf
    spec_tol = check.rtol is not None or check.atol is not None
    label = check.dtype or dtype
    said = "the check's rtol/atol" if spec_tol else f"{label}'s default tolerance"
    number = " (a Python number)" if observed["t"] in ("float", "int") else ""
    head = (f"There the value is {dtype}{number} and differs from sympy's by {worst:.3g} relatively; it was "
            f"compared with {said}, {tolerance_text(tol, label, ops)}.")
    rtol_fix = (f"rtol = {_up(needed):.2g}" if math.isfinite(needed) else
                f"atol = {_up(max(abs(o - x) for o, x, _ in nums)):.2g}") + " (enough at this point)"
    if spec_tol:
        default = g.default(label, check.ops)
        if passes(default):
            return (f"{head} This value is {label}; its default tolerance, {tolerance_text(default, label, ops)}, "
                    f"would pass: remove rtol and atol from the check, or set {rtol_fix}.")
        return f"{head} Set {rtol_fix} if the difference is rounding, else fix the expect expression or the solution."
    # the half dtypes whose tolerance would pass, those whose numbers the value holds first (a float32 value that went
    # through bfloat16 holds bfloat16 numbers); then the tighter first
    made = [h for h in ("bfloat16", "float16") if all(_is_number_of(o, h) for o, _, _ in nums)]
    halves = [h for h in dict.fromkeys(made + ["float16", "bfloat16"])
              if DTYPE_EPS[h] > DTYPE_EPS.get(label, 0.0) and passes(g.default(h, check.ops))]
    if halves and not check.dtype:
        h = halves[0]
        seen = f"Its numbers are all {h} numbers: the difference is {h}'s rounding" if h in made else \
            f"That is the rounding of {h}"
        return (f"{head} {seen}. If the value is computed in {h} (autocast, or a {h} tensor cast back to {dtype}), "
                f"declare it with dtype = \"{h}\" on the check; {h}'s default tolerance, "
                f"{tolerance_text(g.default(h, check.ops), h, ops)}, would pass. Or set {rtol_fix}.")
    eps = DTYPE_EPS.get(label)
    if eps:
        spread = max(abs(o - x) / (1 + abs(x)) for o, x, _ in nums)
        n = max(ops + 1, math.ceil(spread / eps - 1e-9))
        if n <= MAX_OPS_ADVISED:
            return (f"{head} The difference is {spread / eps:.3g} roundings of {label} (eps = 2^{int(math.log2(eps))}): if the "
                    f"value is computed in that many steps, set ops = {n} on the check ({label}'s tolerance is then "
                    f"{tolerance_text(g.default(label, n), label, n)}); or set {rtol_fix}. Otherwise fix the expect "
                    f"expression or the solution.")
    return f"{head} No floating dtype's rounding explains the difference. {handler(check).advice(key, check)}"


def _first_miss(key: Key, check: Check, obs: wire.Observations, points: list[Point]
                ) -> tuple[Point, dict[str, Any], list[tuple[float, float, str]]] | None:
    """The first point where the run's value of `check` misses sympy's in its numbers alone: (the point, the observed
    Value, its finite numbers with sympy's and their dtypes); None where the first miss is of another kind (kind,
    dtype, shape, nan), or a call did not return."""
    e = check.expectation
    ex = key.exercise(check.exercise)
    for p, point in enumerate(points):
        rec = obs.calls.get((check.function, p))
        observed = observed_value(check, rec) if rec is not None and rec.status == "returned" else None
        if observed is None:
            return None
        expected = fill(e.form, e.answer, ex.values(point))
        c = compare_produced(expected, observed, lambda dtype: key.grading.produced(check, dtype))
        if c.ok:
            continue
        nums = _numbers(expected, observed)
        if c.reason != "values" or not nums or not all(math.isfinite(o) and math.isfinite(x) for o, x, _ in nums):
            return None
        return point, observed, nums
    return None


class ConventionHandler(ValueHandler):
    """A value where torch and calculus differ by convention: graded against torch's value, and every
    outcome shows sympy's value under the stated formulation beside it, with the convention's name."""

    def oracle(self, key: Key, check: Check, where: str) -> str:
        return (f"torch's convention, checked against the reference torch {key.torch_version} run: "
                f"{check.expectation.convention}")

    def convention(self, key: Key, check: Check, values: Point, torch_value: str) -> str | None:
        e = check.expectation
        try:
            nums = analytic.evaluate(e.sympy, values.keys(), values)
            sympy_value = show({"t": "float", "v": wire.encode_float(nums[0])}) if len(nums) == 1 else \
                "[" + ", ".join(show({"t": "float", "v": wire.encode_float(n)}) for n in nums) + "]"
        except (ValueError, TypeError) as err:
            sympy_value = f"no number ({short(str(err), 100)})"
        return (f"{e.convention} — torch {key.torch_version} gives {torch_value}; sympy's "
                f"{e.sympy} gives {sympy_value}. Graded against torch's value; sympy's is shown for comparison.")

    def advice(self, key: Key, check: Check) -> str:
        return (f"expect is torch's value under the convention; the reference torch {key.torch_version} run "
                f"disagrees with it: fix expect to what torch does (sympy's value goes in sympy = ...).")


class InstalledHandler(ValueHandler):
    """A fact of the installed torch (model.InstalledExpectation): its version strings, or the `accumulate_grad`
    keyword a function's own source passes to autograd's engine. The expected value is what this run's probe read
    from the torch it imports, before the submission's code ran; so the check stays right on every torch release,
    and sympy has nothing to say about it. Compared strictly, as any produced value."""

    def expected_at(self, key: Key, check: Check, exercise: Exercise, point: Point,
                    installed: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return _installed_value(check.expectation.answer, check.expectation.form, exercise, point, installed)

    def oracle(self, key: Key, check: Check, where: str) -> str:
        facts = ", ".join(i.fact for i in answer_items(check.expectation.answer))
        return f"the installed torch, read before your code ran: {facts}{_at(where)}"

    def advice(self, key: Key, check: Check) -> str:
        return ("The solution's value and the installed torch (read by the probe before the solution ran) disagree: "
                "fix the solution, or name the fact it reads in installed = ...")


def _installed_value(answer: Answer, form: Any, exercise: Exercise, point: Point,
                     installed: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The wire Value an installed answer has in a run that read `installed` (a tuple's container from the reference
    run's `form`). Raises LookupError naming the fact the run did not read."""
    if isinstance(answer, SeqAnswer):
        items = form["items"] if isinstance(form, dict) and form.get("t") == "seq" else [None] * len(answer.items)
        return {"t": "seq", "kind": form["kind"] if isinstance(form, dict) and form.get("t") == "seq" else answer.kind,
                "items": [_installed_value(a, f, exercise, point, installed)
                          for f, a in zip(items, answer.items, strict=True)]}
    if isinstance(answer, InstalledAnswer):
        name = installed_key(answer.fact, exercise, point)
        if name not in installed:
            raise LookupError(name.replace("engine_flag:", ""))
        return installed[name]
    return fill(form, answer, exercise.values(point))


class RaisesHandler:
    """An exception: the call must raise the class (or a subclass) with the key phrase in its message,
    from inside torch where the reference run's exception came from torch; a prediction names the class."""

    def expected(self, key: Key, check: Check, values: Point, form: Any = None) -> dict[str, Any]:
        return {"t": "class", "name": check.expectation.exception}

    def oracle(self, key: Key, check: Check, where: str) -> str:
        return f"reference torch {key.torch_version} run; API contract"

    def convention(self, key: Key, check: Check, values: Point, torch_value: str) -> str | None:
        return None

    def produced(self, key: Key, check: Check, exercise: Exercise, rec: wire.CallResult, point: Point,
                 call_text: str, installed: dict[str, dict[str, Any]] | None = None) -> Verdict:
        e = check.expectation
        ref_exc = (e.reference or {}).get("exception") or {}
        ref_origin = ref_exc.get("origin", "")
        c = compare_exception({"raises": e.exception, "phrase": e.phrase},
                              rec.exception if rec.status == "raised" else None,
                              library=ref_origin.split(".")[0] if ref_origin.startswith("torch") else "",
                              called=not ref_origin.startswith("torch") and ref_exc.get("statement") is False)
        expected_text = f"{e.exception} whose message contains {e.phrase!r}"
        observed_text = (f"{rec.exception['type']}: {short(rec.exception['message'], 200)}" if rec.status == "raised"
                         else f"returned {show(rec.returned)}")
        if ref_exc:
            expected_text += f" (reference run raised {ref_exc['type']}: {short(ref_exc['message'], 120)})"
        diagnosis = None
        if not c.ok:
            seen = {"t": "class", "name": rec.exception["type"]} if rec.status == "raised" and rec.exception else \
                rec.returned
            if seen is not None:
                diagnosis = diagnose(check, exercise.values(point), seen, misconception_tolerance(key, check, seen),
                                     exercise.where(point), rec)
        return Verdict(c, expected_text, observed_text, misconception=diagnosis)

    def advice(self, key: Key, check: Check) -> str:
        return ("Make raises = and phrase = match what the reference torch run raised (the class, and a few words "
                "of its message), or fix the solution.")


class WarnsHandler:
    """A warning: the call must emit the class (or a subclass) with the key phrase in its message; a
    prediction names the class."""

    def expected(self, key: Key, check: Check, values: Point, form: Any = None) -> dict[str, Any]:
        return {"t": "class", "name": check.expectation.warning}

    def oracle(self, key: Key, check: Check, where: str) -> str:
        return f"reference torch {key.torch_version} run; API contract"

    def convention(self, key: Key, check: Check, values: Point, torch_value: str) -> str | None:
        return None

    def produced(self, key: Key, check: Check, exercise: Exercise, rec: wire.CallResult, point: Point,
                 call_text: str, installed: dict[str, dict[str, Any]] | None = None) -> Verdict:
        e = check.expectation
        c = compare_warning({"warns": e.warning, "phrase": e.phrase}, rec.warnings)
        return Verdict(c, f"{e.warning} whose message contains {e.phrase!r}",
                       "; ".join(warning_line(w) for w in rec.warnings[:3]) or "no warning")

    def advice(self, key: Key, check: Check) -> str:
        return ("Make warns = and phrase = match a warning the reference torch run emitted (the class, and a few "
                "words of its message), or fix the solution.")


Handler = Union[ValueHandler, ConventionHandler, InstalledHandler, RaisesHandler, WarnsHandler]
HANDLERS: dict[type, Handler] = {ValueExpectation: ValueHandler(), ConventionExpectation: ConventionHandler(),
                                 InstalledExpectation: InstalledHandler(), RaisesExpectation: RaisesHandler(),
                                 WarnsExpectation: WarnsHandler()}


def handler(check: Check) -> Handler:
    """The handler of the check's expectation kind."""
    return HANDLERS[type(check.expectation)]


def expressions(check: Check) -> list[str]:
    """Every sympy expression the check may evaluate: its answer's, its convention's, its misconceptions', and its
    answer where CUDA is available."""
    def of(answer: Any) -> list[str]:
        if isinstance(answer, ExprAnswer):
            return [answer.expr]
        return [t for a in answer.items for t in of(a)] if isinstance(answer, SeqAnswer) else []
    e = check.expectation
    out = of(e.answer) if isinstance(e, ValueExpectation) else []
    if isinstance(e, ConventionExpectation) and e.sympy:
        out.append(e.sympy)
    return (out + [t for m in check.misconceptions for t in of(m.answer)]
            + (of(check.on_cuda.answer) if check.on_cuda else []))


def fill(form: dict[str, Any] | None, answer: Any, values: Point) -> dict[str, Any]:
    """The expected wire Value: the reference run's `form` with sympy's numbers at `values`. Without a form
    (predictions) numbers become floats (an int for a literal integer) and sequences tuples."""
    if isinstance(answer, NoneAnswer):
        return {"t": "none"}
    if isinstance(answer, BoolAnswer):
        return {"t": "bool", "v": answer.value}
    if isinstance(answer, ClassAnswer):
        return {"t": "class", "name": answer.name}
    if isinstance(answer, DtypeAnswer):
        return {"t": "dtype", "name": answer.name}
    if isinstance(answer, SeqAnswer):
        items = form["items"] if form else [None] * len(answer.items)
        return {"t": "seq", "kind": form["kind"] if form else answer.kind,
                "items": [fill(f, a, values) for f, a in zip(items, answer.items, strict=True)]}
    nums = [wire.encode_float(x) for x in analytic.evaluate(answer.expr, values.keys(), values)]
    if form is not None and form["t"] == "int" and len(nums) == 1:
        return {"t": "int", "v": int(round(float(nums[0])))}
    if form is None or form["t"] in ("float", "int"):
        if len(nums) == 1:
            if form is None and analytic.is_integer(answer.expr, values.keys()):
                return {"t": "int", "v": int(round(float(nums[0])))}   # shown as 2, not 2.0
            return {"t": "float", "v": nums[0]}
        shape = [n for n in analytic.shape(answer.expr, values.keys()) if n != 1] or [len(nums)]
        return {"t": "array", "dtype": "float64", "shape": shape, "data": nums}
    return {**form, "data": nums}


# ------------------------------------------------------------------------------------------------ judging

def _base(check: Check) -> Outcome:
    return Outcome(check.id, check.exercise, check.title, check.kind, "passed", 0.0, check.points, check.visibility,
                   why=check.why)


def _commit_text(key: Key, name: str, record: commit.Commit, final: dict[str, Any] | None) -> tuple[str, bool]:
    """(what the outcome says about the commit, whether the final cell differs from it)."""
    committed = record.values[name]
    when = record.time.replace("T", " ").replace("Z", " UTC")
    text = f"{name} = {show(committed)}, committed {when}"
    revised = final is None or (final != committed and show(final) != show(committed))
    if revised:
        now = ("could not be read" if final is None else "no longer sets it" if final["t"] in ("undefined", "ellipsis")
               else f"says {show(final)}")
        graded = "the committed value" if key.grading.prediction_policy == "first" else "the final cell"
        text += f"; revised after the answer was shown: the cell now {now} (graded: {graded})"
    return text, revised


def judge_prediction(key: Key, check: Check, evidence: Evidence, point: Point) -> Outcome:
    """One prediction check (see `_judge_prediction`). In a course's batch (`evidence.course`), a prediction the
    course service holds no commit of fails: it was never checked before the answers could be seen."""
    o = _judge_prediction(key, check, evidence, point)
    record = evidence.commits.get(check.exercise)
    if evidence.course and o.status in ("passed", "failed") and not (
            isinstance(record, commit.Commit) and check.name in record.values):
        return replace(o, status="failed", score=0.0, misconception=None, commit=None, message=(
            f"{check.name} is not committed on the course service (its check cell was never run with every "
            f"prediction of exercise {check.exercise} filled in, signed in as this student), so it scores nothing"))
    return o


def _judge_prediction(key: Key, check: Check, evidence: Evidence, point: Point) -> Outcome:
    """One prediction check: the variable's value, compared leniently with the expectation at the
    student's own point. With a commit record, the committed value is graded (policy "first") or the final
    cell (policy "last"), and the outcome says which value was committed, when, and whether the cell
    was revised after the answer was shown. A prediction obtained by running autograd or a PRODUCE
    function fails (grading's `predictions` "worked-out"; see autograder.judging.worked)."""
    obs = evidence.observations
    ex = key.exercise(check.exercise)
    base = _base(check)
    value = obs.names.get(check.name)
    record = evidence.commits.get(check.exercise)
    ran_then = None   # the committed value was obtained by running code, as the cell stood at the commit
    graded_commit = revised = False
    final = value   # the cell as it stands (graded under policy "last")
    if isinstance(record, commit.Commit) and check.name in record.values:
        commit_text, revised = _commit_text(key, check.name, record, value)
        base = replace(base, commit=commit_text)
        if key.grading.prediction_policy == "first":
            value, graded_commit = record.values[check.name], True
            if key.grading.predictions == "worked-out" and record.computed and check.name in record.computed:
                ran_then = f"{record.computed[check.name]} (as its cell stood when it was committed)"
    elif isinstance(record, str):
        base = replace(base, commit=f"{record}, so it was not trusted: the prediction was graded as its cell stands")
    elif isinstance(record, commit.Commit):
        base = replace(base, commit=f"{check.name} is not in exercise {check.exercise}'s commit record (the record was "
                                    f"made without it), so it was graded as its cell stands")
    if check.name in obs.duplicated:
        return replace(base, status="error", message=TAMPERED)
    if value is None:
        end = evidence.stopped_names.get(check.name)
        if end is not None:
            return replace(base, status="timeout" if end.timed_out or end.stalled else "error",
                           message=f"reading {check.name} stopped the run: {how_it_ended(end, key.limits)}")
        status, msg = _unreached(key, evidence.end)
        return replace(base, status=status, message=msg)
    if value["t"] in ("undefined", "ellipsis"):
        state = "is not defined" if value["t"] == "undefined" else "is still ..."
        fault = _binding_fault(evidence, check.exercise, check.name)
        if fault is not None:
            status, where, what = fault
            return replace(base, status=status, message=f"{check.name} {state}: {where} {what} before it set "
                                                         f"{check.name}")
        magic = _under_cell_magic(evidence, check.exercise, check.name) if value["t"] == "undefined" else None
        return replace(base, status="missing", message=(
            magic or f"{check.name} is not defined: run its PREDICT cell (a Markdown or Raw cell never runs: it must be "
                     f"Code)" if value["t"] == "undefined" else f"{check.name} {state}: write your prediction"))
    h = handler(check)
    values = ex.values(point)
    expected = h.expected(key, check, values)
    lenient = not container_is_lesson(check)   # a list of the items stands for a tuple that is not the lesson
    c = compare_predicted(expected, value, key.grading.prediction(check), lenient)
    if graded_commit and revised and final is not None and final["t"] not in ("undefined", "ellipsis"):
        again = compare_predicted(expected, final, key.grading.prediction(check), lenient).ok   # shown already
        base = replace(base, commit=f"{base.commit}; the revised value would {'pass' if again else 'not pass'}")
    oracle = h.oracle(key, check, ex.where(point))
    base = replace(base, convention=h.convention(key, check, values, show(expected)),
                   version_note=version_note(key, check, obs.torch_version, obs.cuda),
                   # as a learner writes a prediction: [1.5, -2.0]; a class name as the string it is ('RuntimeError')
                   expected=repr(expected["name"]) if expected["t"] == "class" else plain(expected),
                   oracle=oracle,
                   observed=show(value))
    if graded_commit:   # the committed value is graded: judged as its cell stood then (a later rewrite is not)
        ran = (_ran(key, evidence, check) or ran_then) if ran_then else None
    else:
        ran = _ran(key, evidence, check)
    if ran is not None:
        return replace(base, status="failed", message=ran)
    if c.ok:
        return replace(base, score=check.points, message=f"{check.name} = {show(value)}")
    return replace(base, status="failed", message=f"{check.name}: {c.detail}",
                   misconception=diagnose(check, values, value, misconception_tolerance(key, check), ex.where(point)))


def ran(key: Key, evidence: Evidence, check: Check) -> str | None:
    """The message of a prediction obtained by running code (see autograder.judging.worked), or None."""
    return _ran(key, evidence, check)


def _ran(key: Key, evidence: Evidence, check: Check) -> str | None:
    """The message of a prediction obtained by running code (see autograder.judging.worked), or None."""
    after = _after(evidence, check.exercise)
    if key.grading.predictions != "worked-out" or evidence.facts is None or after is None:
        return None
    produce = frozenset(f for e in key.exercises for f in e.functions)
    names = frozenset(c.name for c in key.checks if c.kind == "predict" and c.name)
    found = worked.finding(evidence.facts, check.name, after, produce, names, evidence.labels)
    return None if found is None else worked.message(check.name, found, evidence.label(found.cell))


def filled(key: Key, exercise: str, obs: wire.Observations) -> dict[str, dict[str, Any]] | None:
    """The wire Values of every prediction of `exercise` when each is filled in (defined, not `...`), else
    None. An exercise without predictions has nothing to commit: None."""
    names = [c.name for c in key.checks if c.exercise == exercise and c.kind == "predict" and c.name]
    values = {n: obs.names.get(n) for n in names}
    if not names or any(v is None or v["t"] in ("undefined", "ellipsis") for v in values.values()):
        return None
    return values


def sealed(o: Outcome, exercise: str, name: str | None = None, all_filled: bool = False) -> Outcome:
    """An outcome as a self-check shows it before the exercise's predictions are committed: no expected
    value, oracle, convention or misconception; a written prediction is not judged yet. `all_filled`: every
    prediction of the exercise is filled in, but none was committed (a terminal check, which never commits)."""
    later = (f"expected values are shown once every prediction of exercise {exercise} is filled in and committed by "
             f"running its check cell in the notebook")
    if o.kind == "predict":
        if o.status not in ("passed", "failed"):
            return replace(o, expected=None, oracle=None, convention=None, why=None)
        when = (f"once they are committed: run exercise {exercise}'s check cell, lab.check(\"{exercise}\"), in the "
                f"notebook (a check from a terminal never commits)" if all_filled else
                f"when every prediction of exercise {exercise} is filled in (run this check again then)")
        return replace(o, status="sealed", score=0.0, expected=None, oracle=None, convention=None, details=(), why=None,
                       misconception=None, message=f"{name} = {o.observed} is written down; it is judged {when}")
    message = o.message
    if o.status == "failed":
        message = message.split("): ")[0] + ")" if "): " in message else o.check_id
        message = f"{message}: not the expected value ({later})"
    return replace(o, message=message, expected=None, oracle=None, convention=None, details=(), why=None,
                   misconception=None)


# Why a graded report shows no fresh point's parameters, expected value or observed value: they change with every
# submission (plan.points_for), and shown with their answers they could be collected into a table.
FRESH_HIDDEN = ("a graded run's fresh points are not shown, and they change with every submission; your own "
                "point's check shows what is expected")


def _pointless(d: Diagnosis | None) -> Diagnosis | None:
    """A misconception named at a hidden fresh point: its name and feedback, without its value there."""
    return None if d is None else replace(d, value="", where="")


def judge_production(key: Key, check: Check, evidence: Evidence, points: list[Point], warned: set[str]) -> Outcome:
    """One produce check at every point; the first point that fails decides. A function's warnings
    (information, never a failure) are shown once, on its first check (`warned`)."""
    obs = evidence.observations
    check, device_note = on_this_device(check, obs.cuda)
    extra = (device_note,) if device_note else ()
    ex = key.exercise(check.exercise)
    h = handler(check)
    fn, target = check.function, check.observe
    call_text = ex.call_text(fn)
    what = ("returned by " + call_text if target == "returned" else
            "the dtype of what " + call_text + " returns" if target == "returned.dtype" else f"{target} after {call_text}")
    base = _base(check)
    warnings_seen: list[str] = []
    first: Outcome | None = None
    for p, point in enumerate(points):
        label = point_label(p)
        hide = p > 0 and bool(key.fresh_seed)   # a graded run's fresh point: never shown (see FRESH_HIDDEN)
        where = label if hide else ex.where(point)
        rec = obs.calls.get((fn, p))
        if (fn, p) in obs.duplicated:
            return replace(base, status="error", message=TAMPERED)
        if rec is None:
            status, msg = _stopped_in(key, evidence, (fn, p), call_text, where) or _unreached(key, evidence.end)
            return replace(base, status=status, message=msg)
        if p == 0 and fn not in warned:
            warned.add(fn)
            warnings_seen = list(warning_details(key, fn, rec.warnings))
        if rec.status == "undefined":
            fault = _binding_fault(evidence, check.exercise, fn)
            if fault is not None:
                status, where, what = fault
                return replace(base, status=status, message=f"{fn} is not defined: {where}, which defines it, {what}")
            return replace(base, status="missing", message=f"{fn} is not defined: run its cell, or check its name (a "
                                                          f"Markdown or Raw cell never runs: its cell must be Code)")
        if rec.status == "raised" and rec.exception and rec.exception["type"] == "NotImplementedError":
            if _written_above_raise(evidence, check.exercise, fn):
                return replace(base, status="error", message=(
                    f"{fn} raises NotImplementedError at its last line: that line was the placeholder of the "
                    f"released notebook; delete it, now that the code above it is written"))
            return replace(base, status="missing", message=f"{fn} is not written yet (it raises NotImplementedError)")
        if rec.status in ("timeout", "skipped"):
            return replace(base, status="timeout",
                           message=f"{call_text} did not return within {key.limits.call_timeout:g} s{_at(where)}")
        if p == 0:
            base = replace(base, version_note=version_note(key, check, obs.torch_version, obs.cuda))
        v = h.produced(key, check, ex, rec, point, call_text, obs.installed)
        if first is not None and v.misconception is not None:   # right at the student's own point: a misconception
            # that matches here does not explain their work, only happens to give this value here (a hard-coded
            # number that equals it at this point: data-x #25)
            v = replace(v, misconception=None)
        if isinstance(v, Stop) and hide:   # what it raised or printed there could name the point
            raised = f"raised {rec.exception['type']}" if rec.status == "raised" and rec.exception else \
                "gave no value that can be compared"
            return replace(base, status="error", message=f"{call_text} {raised} at {label} ({FRESH_HIDDEN})",
                           misconception=_pointless(v.misconception))
        if isinstance(v, Stop):   # at a shown fresh point, the message says which point it is, as a failure's does
            message = v.message.replace(f"{_at(where)}: ", f"{_at(where)} ({label}): ", 1) if p else v.message
            return replace(base, status="error", message=message, observed=v.observed, misconception=v.misconception)
        if p == 0 and v.convention is not None:
            base = replace(base, convention=v.convention)
        if v.comparison.ok:
            if p == 0:
                first = replace(base, score=check.points, message=f"{what}{_at(where)}: {v.observed}",
                                expected=v.expected, oracle=h.oracle(key, check, where), observed=v.observed)
            continue
        hint = ("" if p == 0 else
                f" — it is right at your own point but not at {label}: is a value hard-coded, or is the code "
                f"right only at some points?" if first else "")
        if hide:
            return replace(base, status="failed", message=f"{what} at {label}: not the expected value{hint} "
                           f"({FRESH_HIDDEN})", misconception=_pointless(v.misconception),
                           details=extra + tuple(warnings_seen))
        return replace(base, status="failed", message=f"{what}{_at(where)} ({label}): {v.comparison.detail}{hint}",
                       expected=v.expected, oracle=h.oracle(key, check, where), observed=v.observed,
                       misconception=v.misconception,
                       details=extra + tuple(warnings_seen))
    assert first is not None
    return replace(first, details=extra + tuple(warnings_seen))


def _after(evidence: Evidence, exercise: str) -> int | None:
    position = evidence.positions.get(exercise)
    if position is not None:
        return position.after
    return len(evidence.facts.binds) - 1 if evidence.facts is not None else None


def _binding_fault(evidence: Evidence, exercise: str, name: str) -> tuple[str, str, str] | None:
    """(status, the cell, what went wrong) when the last cell that binds `name` before the exercise was
    observed raised, ran past its limit or ended a run; else None."""
    after = _after(evidence, exercise)
    if evidence.facts is None or after is None:
        return None
    cell = evidence.facts.defining_cell(name, after)
    if cell is None:   # no cell binds it: one that Python could not parse may be meant to (a SyntaxError)
        cell = evidence.facts.unreadable_cell(name, after)
    if cell is None or cell not in evidence.cell_faults:
        return None
    status, what = evidence.cell_faults[cell]
    return status, evidence.label(cell), what


def _under_cell_magic(evidence: Evidence, exercise: str, name: str) -> str | None:
    """Why `name` is not defined where the cell that sets it starts with a cell magic that does not run its body in
    the notebook (`%%timeit`: a namespace of its own; `%%bash`: not Python; `%%time x`: an argument IPython refuses),
    or None."""
    after = _after(evidence, exercise)
    if evidence.facts is None or after is None:
        return None
    cell = evidence.facts.unreadable_cell(name, after)
    magic = sources.cell_magic(evidence.facts.sources[cell]) if cell is not None else None
    if magic is None or sources.python_of(evidence.facts.sources[cell]) is not None:
        return None
    how = ("runs its body in a namespace of its own, so nothing it sets stays defined" if magic[0] == "timeit" else
           f"takes no argument ({magic[1].strip()!r} makes IPython refuse the cell)" if magic[0] == "time" else
           "does not run its body as Python in the notebook")
    return (f"{name} is not defined: it is set in {evidence.label(cell)}. %%{magic[0]} {how}: take its line away "
            f"(%%time and %%capture alone are fine)")


def _written_above_raise(evidence: Evidence, exercise: str, function: str) -> bool:
    """Does the function, as defined when the exercise was observed, have code above its final
    `raise NotImplementedError`?"""
    after = _after(evidence, exercise)
    if evidence.facts is None or after is None:
        return False
    fn = evidence.facts.definition(function, after)
    return fn is not None and sources.code_above_raise(fn)


def exercise_notes(key: Key, evidence: Evidence) -> list[str]:
    """Per exercise: where it was judged when not at its own check cell, its check cells when there are several (a
    copied cell), and the names it used that a later cell binds again (information, never a penalty: it was judged as the notebook stood there)."""
    facts, out = evidence.facts, []
    if facts is None:
        return out
    for ex in key.exercises:
        position = evidence.positions.get(ex.id)
        if position is None:
            continue
        at = evidence.label(position.after) if position.after >= 0 else "the start of the notebook"
        if position.where == "moved":
            out.append(f"exercise {ex.id}: its check cell ({evidence.label(position.check)}) stands above the cell "
                       f"that defines its functions, so it was judged after {at}, where the released notebook "
                       f"checks it")
        elif position.where == "no check cell":
            out.append(f"exercise {ex.id}: the notebook has no lab.check(\"{ex.id}\") cell, so it was judged after "
                       f"{at}, where the released notebook checks it")
        copies = [i for i, e in enumerate(facts.checks) if e == ex.id]
        if len(copies) > 1:   # a copied check cell (nbgrader #108): judged once, at the first
            out.append(f"exercise {ex.id}: the notebook has {len(copies)} lab.check(\"{ex.id}\") cells "
                       f"({', '.join(evidence.label(i) for i in copies)}): a copied cell; the exercise was judged once")
        names = tuple(c.name for c in key.checks if c.exercise == ex.id and c.kind == "predict" and c.name)
        for name, cell in facts.rebound_later(facts.used_names(ex.functions, names, position.after), position.after):
            out.append(f"exercise {ex.id}: {evidence.label(cell)} binds {name} again, which exercise {ex.id} uses; "
                       f"the exercise was judged as the notebook stood after {at}")
    return out


def for_report(o: Outcome) -> Outcome:
    """An outcome as a report keeps it: public texts cut to a readable length whatever a submission
    returned; a hidden check reduced to its title, status and points."""
    if o.visibility == "public":
        return replace(o, message=short(o.message, 1000), observed=o.observed and short(o.observed, 1000),
                       expected=o.expected and short(o.expected, 1000), commit=o.commit and short(o.commit, 1000))
    return replace(o, message=o.status, expected=None, oracle=None, observed=None, why=None, details=(),
                   convention=None, misconception=None)


def outcomes(key: Key, evidence: Evidence, points: list[Point]) -> tuple[Outcome, ...]:
    """Judge every check of `key` against `evidence` at the student's `points` (own point first, then
    the fresh points). Pure but for sympy evaluation; never raises for a student's fault. With
    `evidence.sealed`, an exercise with predictions and no commit record is shown `sealed`.

    Returns one Outcome per check, in the key's order."""
    out = []
    warned: set[str] = set()
    closed = {e.id for e in key.exercises if evidence.sealed and not isinstance(evidence.commits.get(e.id), commit.Commit)
              and (e.id in evidence.predicting if evidence.predicting is not None else
                   any(c.exercise == e.id and c.kind == "predict" and c.name for c in key.checks))}
    for check in key.checks:
        o = (judge_prediction(key, check, evidence, points[0]) if check.kind == "predict"
             else judge_production(key, check, evidence, points, warned))
        record = evidence.commits.get(check.exercise)
        uncommitted = (evidence.sealed and check.kind == "predict" and isinstance(record, commit.Commit)
                       and check.name not in record.values)   # a record made without this prediction
        if check.exercise in closed and check.kind == "produce" and evidence.seal_produce:
            o = replace(o, status="sealed", score=0.0, observed=None, details=(), message=(
                f"{check.id}: judged once exercise {check.exercise}'s "
                f"predictions are committed (predict first: fill them in, then run its check cell)"))
        out.append(for_report(sealed(o, check.exercise, check.name,
                                     filled(key, check.exercise, evidence.observations) is not None)
                              if check.exercise in closed or uncommitted else o))
    return tuple(out)


def commit_notes(key: Key, evidence: Evidence) -> list[str]:
    """When predictions that are filled in were not judged with a commit record: which exercises, and why
    (none was found, or the one found was not trusted)."""
    out, unrecorded = [], []
    for ex in key.exercises:
        record = evidence.commits.get(ex.id)
        if isinstance(record, str):
            out.append(f"exercise {ex.id}: {record}, so it was not trusted: its predictions were graded as their "
                       f"cells stand")
        elif record is None and not evidence.sealed and filled(key, ex.id, evidence.observations) is not None:
            unrecorded.append(ex.id)
    if unrecorded and evidence.course:
        which = f"exercise {unrecorded[0]}" if len(unrecorded) == 1 else f"exercises {', '.join(unrecorded)}"
        out.insert(0, f"{which}: no commit on the course service, so the predictions score nothing (the course "
                      f"records a prediction when its check cell runs with every prediction filled in)")
    elif unrecorded:
        which = f"exercise {unrecorded[0]}" if len(unrecorded) == 1 else f"exercises {', '.join(unrecorded)}"
        out.insert(0, f"{which}: no commit record (the check cell was not run with every prediction filled in, or "
                      f"its output was cleared), so the predictions were graded as their cells stand")
    return out


def notes(key: Key, evidence: Evidence, labels: tuple[str, ...] | list[str], cell_notes: bool = True) -> list[str]:
    """What a report notes about the run beyond its checks: cells that raised or ran past their limit
    (with `cell_notes`), lines the probe did not write, another torch. (Where a run ended early, grade
    says it, with its last output.)"""
    obs = evidence.observations
    label = lambda i: labels[i] if i < len(labels) else f"code cell {i + 1}"
    out = []
    for cell in obs.cells if cell_notes else ():
        if cell.status == "error":
            out.append(f"{label(cell.index)} raised {cell.ename}: {short(cell_error(cell.evalue), 200)}"
                       + (MODULE_HINT if cell.ename == "ModuleNotFoundError" else ""))
        elif cell.status == "timeout":
            out.append(f"{label(cell.index)} ran past {key.limits.cell_timeout:g} s and was stopped")
    if obs.rejected:
        out.append(f"{obs.rejected} line(s) in the results channel were not written by the grader's probe "
                   f"and were ignored")
    if obs.torch_version != key.torch_version:
        out.append(f"this run used torch {obs.torch_version}, but the key was observed on torch "
                   f"{key.torch_version}: version-sensitive checks may differ")
    return out
