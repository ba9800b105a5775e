"""spec: an assignment's spec.toml -> Assignment (typed `model` checks, exercises, parameters, limits),
validated on load; raises SpecError naming the file, the check and the fix. The format is documented in
docs/instructor.md ("Writing a spec").

May import: stdlib, autograder.model, autograder.wire (its dtype names), autograder.judging.analytic (to parse answer
expressions).
"""
from __future__ import annotations

import difflib
import keyword
import re
from contextvars import ContextVar
import tomllib
import unicodedata
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from autograder.judging import analytic
from autograder import wire
from autograder.model import (ARG_DTYPES, DTYPE_EPS, INSTALLED_FACTS, LIMIT_NAMES, Answer, Arg, BoolAnswer, Check,
                              ClassAnswer, ConventionExpectation, DtypeAnswer, Exercise, Expectation, ExprAnswer,
                              Grading, InstalledAnswer,
                              InstalledExpectation, Kind, Limits, Misconception, NoneAnswer,
                              OnCuda, Overlap, Parameter, RaisesExpectation, SeqAnswer, Sign, ValueExpectation, WarnsExpectation)


class SpecError(ValueError):
    """An instructor's mistake in a spec: the message names the file, the place and the fix."""


@dataclass(frozen=True)
class Assignment:
    """A loaded, validated spec. `source` is the spec file's path (for messages). Its checks carry no
    reference-run facts yet (forms, reference exceptions): `authoring.release.build_key` adds them."""

    id: str
    title: str
    notebook: str
    torch_observed: str
    limits: Limits
    grading: Grading
    parameters: dict[str, Parameter]
    exercises: tuple[Exercise, ...]
    checks: tuple[Check, ...]
    source: str = field(default="", compare=False)


_TEXT: ContextVar[str] = ContextVar("spec_text", default="")   # the spec being loaded, to give line numbers


def _line(key: str) -> str:
    """", line 12" where `key = ` is written in the spec being loaded (its first such line), else ""."""
    for n, line in enumerate(_TEXT.get().splitlines(), 1):
        if re.search(rf"(^|[{{,\s]){re.escape(key)}\s*=", line) and not line.lstrip().startswith("#"):
            return f", line {n}"
    return ""


def _keys(where: str, table: dict[str, Any], allowed: set[str], required: set[str] = frozenset()) -> None:
    unknown = sorted(set(table) - allowed)
    if unknown:
        k = unknown[0]
        near = difflib.get_close_matches(k, sorted(allowed), n=1, cutoff=0.6)
        raise SpecError(f"{where}{_line(k)}: unknown key {k!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                        + (f" and {', '.join(map(repr, unknown[1:]))}" if unknown[1:] else "")
                        + f"; allowed: {', '.join(sorted(allowed))}")
    missing = sorted(set(required) - set(table))
    if missing:
        raise SpecError(f"{where}: missing required key(s) {', '.join(missing)}")


def _line_text(where: str, value: Any, what: str) -> str:
    """A title or a `why`: one line of text, shown in notebooks (a generated placeholder's comment), reports and
    feedback pages; a line break or another control character would end up as code in a generated cell."""
    if not (isinstance(value, str) and value.strip()):
        raise SpecError(f"{where}: {what} must be a line of text")
    bad = [c for c in value if unicodedata.category(c) in ("Cc", "Zl", "Zp")]
    if bad:
        raise SpecError(f"{where}: {what} {value!r} holds a line break or control character ({bad[0]!r}); write it "
                        f"on one line")
    return value


def _ident(where: str, value: Any, what: str) -> str:
    if not (isinstance(value, str) and value.isidentifier() and not keyword.iskeyword(value)):
        raise SpecError(f"{where}: {what} {value!r} must be a Python identifier")
    return value


WORDS = {"predictions": ("worked-out", "any"), "prediction_policy": ("first", "last")}   # [grading] words
MIN_DOMAIN_POINTS = 100   # an exercise's domain_points: fewer would hardly be a check of its domain


def _number(where: str, value: Any, what: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (positive and value <= 0):
        raise SpecError(f"{where}: {what} must be a {'positive ' if positive else ''}number, got {value!r}")
    return float(value)


def _parameters(path: str, table: dict[str, Any]) -> dict[str, Parameter]:
    out = {}
    for name, dist in table.items():
        where = f"{path} [parameters.{name}]"
        _ident(where, name, "parameter name")
        if not isinstance(dist, dict) or dist.get("kind") not in ("real", "integer", "fixed"):
            raise SpecError(f"{where}: give kind = \"real\", \"integer\" or \"fixed\"")
        if dist["kind"] == "fixed":   # the same for every student: a kink or singular point an exercise is about
            _keys(where, dist, {"kind", "value"}, {"value"})
            value = dist["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or abs(value) == float("inf"):
                raise SpecError(f"{where}: value must be a finite number")
            out[name] = Parameter("fixed", value=value)
            continue
        if dist["kind"] == "integer":
            _keys(where, dist, {"kind", "low", "high"}, {"low", "high"})
            if not all(isinstance(dist[k], int) for k in ("low", "high")) or dist["low"] > dist["high"]:
                raise SpecError(f"{where}: low and high must be integers with low <= high")
            out[name] = Parameter("integer", dist["low"], dist["high"])
            continue
        _keys(where, dist, {"kind", "low", "high", "sign", "decimals"}, {"low", "high"})
        low, high = _number(where, dist["low"], "low"), _number(where, dist["high"], "high")
        if not 0 < low < high:
            raise SpecError(f"{where}: need 0 < low < high (magnitudes, kept away from 0); use sign = \"any\" "
                            f"or \"negative\" for negative values")
        sign = dist.get("sign", "positive")
        if sign not in ("positive", "negative", "any"):
            raise SpecError(f"{where}: sign must be \"positive\", \"negative\" or \"any\", got {sign!r}")
        decimals = dist.get("decimals", 2)
        if not isinstance(decimals, int) or not 0 <= decimals <= 6:
            raise SpecError(f"{where}: decimals must be an integer from 0 to 6")
        out[name] = Parameter("real", low, high, sign, decimals)
    return out


def _installed(where: str, value: Any, objects: set[str]) -> InstalledExpectation:
    """A produce check's `installed = "fact"` (or a list of facts, for a tuple): model.INSTALLED_FACTS."""
    facts = value if isinstance(value, list) else [value]
    known = [f for f in INSTALLED_FACTS if f != "engine_flag"] + [f"engine_flag({n})" for n in sorted(objects)]
    items = []
    for fact in facts:
        if fact not in known:
            hint = "" if objects else " (engine_flag(<argument>) needs an argument with objects = [...])"
            raise SpecError(f"{where}: installed = {fact!r} is not a fact of the installed torch the probe reads; "
                            f"write one of {', '.join(map(repr, known))}, or a list of them for a tuple{hint}")
        items.append(InstalledAnswer(fact))
    if not items:
        raise SpecError(f"{where}: installed = [] is empty; list one fact per item")
    return InstalledExpectation(SeqAnswer(tuple(items)) if isinstance(value, list) else items[0])


def _enough_points(src: str, params: dict[str, Parameter], fresh_points: int) -> None:
    """The student's own point and `fresh_points` fresh points must all differ (autograder.grading.plan): where no
    parameter is real, the integer ranges must hold that many points."""
    if any(p.kind == "real" for p in params.values()):
        return
    count = 1
    for p in params.values():
        count *= int(p.high) - int(p.low) + 1 if p.kind == "integer" else 1
    if fresh_points + 1 > count:
        raise SpecError(f"{src} [grading]: fresh_points = {fresh_points} asks for {fresh_points + 1} different points "
                        f"(the student's own and {fresh_points} fresh), but the parameters allow {count}: set "
                        f"fresh_points to at most {count - 1}, or widen an integer parameter's range")


def _expect(where: str, raw: dict[str, Any], symbols: set[str], objects: set[str] = frozenset()) -> Expectation:
    given = [k for k in ("expect", "raises", "warns", "installed") if k in raw]
    if len(given) != 1:
        raise SpecError(f"{where}: give exactly one of expect = ..., raises = \"ExceptionClass\", "
                        f"warns = \"WarningClass\" or installed = \"fact\"")
    if given[0] == "installed":
        if "predict" in raw:
            raise SpecError(f"{where}: installed = ... goes with a produce check (what the learner's code reads from "
                            f"the torch it runs on); a prediction's answer is written with expect = ...")
        if "phrase" in raw or "convention" in raw:
            raise SpecError(f"{where}: installed = ... takes neither phrase nor convention")
        return _installed(where, raw["installed"], objects)
    if given[0] in ("raises", "warns"):
        kind = given[0]
        cls = _class_name(where, raw[kind], kind)
        phrase = raw.get("phrase", "")
        if not isinstance(phrase, str):
            raise SpecError(f"{where}: phrase must be a string (a key phrase of the message, not all of it: "
                            f"torch's wording drifts between releases)")
        return RaisesExpectation(cls, phrase) if kind == "raises" else WarnsExpectation(cls, phrase)
    if "phrase" in raw:
        raise SpecError(f"{where}: phrase goes with raises or warns, not with expect")
    return ValueExpectation(_answer(where, "expect", raw["expect"], symbols))


def _on_cuda(where: str, raw: dict[str, Any], kind: Kind, symbols: set[str]) -> OnCuda | None:
    """A produce check's `on_cuda = { expect = ..., why = "..." }`: its value where CUDA is available."""
    if "on_cuda" not in raw:
        return None
    table = raw["on_cuda"]
    if kind != "produce":
        raise SpecError(f"{where}: on_cuda goes with a produce check (a prediction asks one question, whatever the "
                        f"machine: say in its title which machine it is about)")
    if not isinstance(table, dict) or set(table) != {"expect", "why"} or not isinstance(table["why"], str):
        raise SpecError(f"{where}: on_cuda must be a table {{ expect = \"...\", why = \"...\" }}: the value where "
                        f"CUDA is available, and why it differs")
    if not raw.get("version_sensitive"):
        raise SpecError(f"{where}: a check with on_cuda depends on the machine: add version_sensitive = true")
    return OnCuda(_answer(where, "on_cuda.expect", table["expect"], symbols), table["why"])


def _class_name(where: str, value: Any, kind: str) -> str:
    """An exception (`kind` "raises") or warning ("warns") class name; a near miss of a builtin one is a typo."""
    import builtins
    import difflib

    cls = _ident(where, value, kind)
    suffixes = ("Error", "Exception") if kind == "raises" else ("Warning",)
    if not isinstance(getattr(builtins, cls, None), type):
        # Only a near miss is a typo ("RunTimeError"); a library's own class such as torch's
        # GradcheckError (0.62 similar to "ArithmeticError") is not one.
        close = difflib.get_close_matches(cls, [n for n in dir(builtins) if n.endswith(suffixes)], 1, cutoff=0.8)
        if close:
            raise SpecError(f"{where}: {kind} = {cls!r} is not a Python {'exception' if kind == 'raises' else 'warning'}; "
                            f"did you mean {close[0]!r}?")
    return cls


def _answer(where: str, what: str, e: Any, symbols: set[str]) -> Answer:
    """An `expect` (or a misconception's `value`): "None", "True", "False", a dtype ("torch.bfloat16"), a sympy
    expression, or a list of these for a tuple."""
    def one(text: Any) -> Answer:
        if not isinstance(text, str):
            raise SpecError(f"{where}: {what} items must be strings (\"None\", \"True\", \"False\", a dtype such as "
                            f"\"torch.float32\", or a sympy expression), got {text!r}")
        if text.strip() == "None":
            return NoneAnswer()
        if text.strip().startswith("torch."):   # a dtype, by one of its names (torch.half is torch.float16)
            name = wire.dtype_name(text)
            if name is None:
                raise SpecError(f"{where}: {what} {text!r} is not a dtype of torch; write one of "
                                f"{', '.join('torch.' + n for n in wire.DTYPE_NAMES)}")
            return DtypeAnswer(name)
        if text.strip() in ("True", "False"):
            return BoolAnswer(text.strip() == "True")
        try:
            analytic.parse(text, symbols)
        except ValueError as err:
            raise SpecError(f"{where}: {what} {text!r} is not a valid expression: {err}") from None
        return ExprAnswer(text)

    if isinstance(e, list):
        if not e:
            raise SpecError(f"{where}: {what} = [] is empty; list one value per item")
        return SeqAnswer(tuple(one(item) for item in e))
    return one(e)


MISCONCEPTION_KEYS = {"id", "name", "checks", "value", "raises", "container", "feedback", "evidence", "overlap"}


def _overlap(where: str, raw: Any) -> Overlap:
    """A misconception's `overlap = { share = 0.05, why = "..." }`: it may pass as the right answer for up to `share`
    of the students (release refuses one above 1 % otherwise)."""
    if not (isinstance(raw, dict) and set(raw) == {"share", "why"} and isinstance(raw["share"], (int, float))
            and not isinstance(raw["share"], bool) and 0 < raw["share"] < 1 and isinstance(raw["why"], str)
            and raw["why"].strip()):
        raise SpecError(f"{where}: overlap must be {{ share = 0.05, why = \"...\" }}: the share of students (between 0 "
                        f"and 1) for whom this misconception may pass as the right answer, and why that is acceptable")
    return Overlap(float(raw["share"]), " ".join(raw["why"].split()))


def _evidence(where: str, raw: Any, grads: set[str], symbols: set[str]) -> tuple[Sign, ...]:
    """A misconception's `evidence = { "x.grad" = "expr", warns = "phrase", runs_backward = true }`."""
    if not isinstance(raw, dict) or not raw:
        raise SpecError(f"{where}: evidence must be a table of what the call did, e.g. "
                        f"{{ \"x.grad\" = \"exp(y)\" }}, {{ warns = \"a phrase\" }} or {{ runs_backward = false }}")
    signs = []
    for what, value in raw.items():
        if what in grads:
            signs.append(Sign(what, _answer(where, f"evidence {what}", value, symbols)))
        elif what in ("warns", "message") and isinstance(value, str) and value:
            signs.append(Sign(what, phrase=value))
        elif what == "runs_backward" and isinstance(value, bool):
            signs.append(Sign("runs_backward", flag=value))
        else:
            raise SpecError(f"{where}: evidence {what} = {value!r} is not one of: a tensor argument's .grad "
                            f"({', '.join(sorted(grads))}) = a value, warns = \"a phrase of the warning\", message = "
                            f"\"a phrase of the exception\", runs_backward = true or false")
    return tuple(signs)


def _shared(predict: Check, produce: Check) -> bool:
    """Does a prediction ask for what a produce check of its exercise observes (its value, or one item of the
    produce check's tuple; for an exception or warning, its class)?"""
    a, b = predict.expectation, produce.expectation
    if isinstance(a, (RaisesExpectation, WarnsExpectation)) or isinstance(b, (RaisesExpectation, WarnsExpectation)):
        return type(a) is type(b) and getattr(a, "exception", None) == getattr(b, "exception", None) \
            and getattr(a, "warning", None) == getattr(b, "warning", None)
    items = b.answer.items if isinstance(b.answer, SeqAnswer) else ()
    return a.answer == b.answer or a.answer in items


def _twins(predict: Check, checks: list[Check]) -> list[Check]:
    """The produce checks of an exercise that observe what `predict` asks for (`_shared`): the one of the same
    name where there is one (`5.predict.second` and `5.produce.second`, while `5.produce.materialize` raises the
    same class), else every one that shares its value or class."""
    shared = [q for q in checks if q.kind == "produce" and _shared(predict, q)]
    named = [q for q in shared if q.id.split(".", 2)[-1] == predict.id.split(".", 2)[-1]]
    return named or shared


def _twins_flagged(checks: list[Check]) -> list[Check]:
    """An exercise's checks with each prediction version-sensitive where a produce check it shares its value with
    (its twin, `_twins`) is: the flag belongs to the behaviour, whichever way it is asked about."""
    return [replace(c, version_sensitive=True) if c.kind == "predict" and not c.version_sensitive
            and any(q.version_sensitive for q in _twins(c, checks)) else c for c in checks]


def _misconceptions(src: str, eid: str, raws: Any, checks: list[Check], symbols: set[str],
                    grads: set[str] = frozenset()) -> list[Check]:
    """The exercise's checks with the misconceptions of its [[exercise.misconception]] tables attached to
    the checks each one lists."""
    if not isinstance(raws, list):
        raise SpecError(f"{src} [[exercise]] id={eid!r}: write each misconception as an [[exercise.misconception]] "
                        f"table")
    by_id = {c.id: c for c in checks}
    attached: dict[str, list[Misconception]] = {c.id: [] for c in checks}
    seen: set[str] = set()
    for raw in raws:
        mid = raw.get("id", "") if isinstance(raw, dict) else ""
        where = f"{src} exercise {eid!r} misconception {mid!r}"
        if not isinstance(raw, dict):
            raise SpecError(f"{where}: a misconception is a table with id, name, checks, value and feedback")
        _keys(where, raw, MISCONCEPTION_KEYS, {"id", "name", "checks", "feedback"})
        if not (isinstance(mid, str) and re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", mid)):
            raise SpecError(f"{where}: id must be written in lower case with hyphens (\"one-pass-short\")")
        if mid in seen:
            raise SpecError(f"{where}: exercise {eid!r} has two misconceptions with this id; give each its own")
        seen.add(mid)
        name, feedback = raw["name"], raw["feedback"]
        if not (isinstance(name, str) and 0 < len(name.strip()) <= 60):
            raise SpecError(f"{where}: name must be a few words (at most 60 characters), as staff and learners "
                            f"read it in a list: \"one pass short\"")
        if not (isinstance(feedback, str) and 0 < len(feedback.strip()) <= 400):
            raise SpecError(f"{where}: feedback must be one or two sentences (at most 400 characters) for the "
                            f"learner whose answer this misconception explains")
        if ("value" in raw) == ("raises" in raw):
            raise SpecError(f"{where}: give exactly one of value = ... (what this mental model predicts: \"None\", "
                            f"a sympy expression, a list for a tuple) or raises = \"ExceptionClass\"")
        if "raises" in raw:
            answer: Answer = ClassAnswer(_class_name(where, raw["raises"], "raises"))
        else:
            answer = _answer(where, "value", raw["value"], symbols)
        container = raw.get("container", "tuple")
        if container not in ("tuple", "list") or (container == "list" and not isinstance(answer, SeqAnswer)):
            raise SpecError(f"{where}: container = \"list\" goes with value = [...] (a list instead of a tuple)")
        if container == "list":
            answer = SeqAnswer(answer.items, "list")
        names = raw["checks"]
        if isinstance(names, list) and len(set(map(str, names))) != len(names):
            raise SpecError(f"{where}: checks lists a check twice; list each check once")
        if not (isinstance(names, list) and names and all(isinstance(n, str) for n in names)):
            raise SpecError(f"{where}: checks must list the ids of this exercise's checks it applies to "
                            f"([\"predict.after_k\", \"produce.after_k\"])")
        evidence = _evidence(where, raw["evidence"], grads, symbols) if "evidence" in raw else ()
        if evidence and not any(by_id.get(f"{eid}.{n}") and by_id[f"{eid}.{n}"].kind == "produce" for n in names):
            raise SpecError(f"{where}: evidence is what a produce call did; list a produce check in checks, or "
                            f"leave evidence out (a prediction is named by its value)")
        m = Misconception(mid, name.strip(), answer, " ".join(feedback.split()), evidence,
                          _overlap(where, raw["overlap"]) if "overlap" in raw else None)
        for n in names:
            cid = f"{eid}.{n}"
            check = by_id.get(cid)
            if check is None:
                raise SpecError(f"{where}: checks names {n!r}, which is not a check of exercise {eid!r}; its checks "
                                f"are {', '.join(c.id.split('.', 1)[1] for c in checks)}")
            if isinstance(check.expectation, InstalledExpectation):
                raise SpecError(f"{where}: {n!r} expects a fact of the installed torch, which differs from one torch "
                                f"release to the next, and a misconception's value is fixed: attach it to a prediction")
            if check.kind == "produce" and isinstance(check.expectation, WarnsExpectation):
                raise SpecError(f"{where}: {n!r} checks a warning; a misconception names a wrong value, state or "
                                f"exception, so attach it to a prediction or a value check")
            if isinstance(answer, DtypeAnswer) and not _dtype_misconception_fits(check):
                raise SpecError(f"{where}: {n!r} is not about a dtype: value = {answer.text!r} names a dtype, which "
                                f"a misconception can be on a dtype check (expect = \"torch.<dtype>\"), or on a "
                                f"produce check of a value (the right numbers as {answer.text}); not on this one")
            if check.kind == "produce" and isinstance(answer, ClassAnswer) and check.observe != "returned":
                raise SpecError(f"{where}: {n!r} observes {check.observe}, and a call that raises is an error there, "
                                f"never this misconception: attach raises = ... to a prediction or to a check with "
                                f"observe = \"returned\"")
            if isinstance(check.expectation, ValueExpectation) and check.expectation.answer == answer or \
                    isinstance(check.expectation, RaisesExpectation) and answer == ClassAnswer(check.expectation.exception):
                raise SpecError(f"{where}: its value is the answer of {n!r}; a misconception is a wrong answer")
            attached[cid].append(m)
    return [replace(c, misconceptions=tuple(attached[c.id])) if attached[c.id] else c for c in checks]


def _dtype_misconception_fits(check: Check) -> bool:
    """Can a misconception whose value is a dtype be named on `check`: a check whose answer is a dtype, or a produce
    check of a value that holds numbers (then it stands for the right numbers with that dtype)?"""
    e = check.expectation
    if not isinstance(e, ValueExpectation) or isinstance(e, InstalledExpectation):
        return False
    if isinstance(e.answer, DtypeAnswer):
        return True
    items = e.answer.items if isinstance(e.answer, SeqAnswer) else (e.answer,)
    return check.kind == "produce" and not check.observe.endswith(".dtype") \
        and any(isinstance(i, ExprAnswer) for i in items)


def _observed_kind(where: str, observe: str, expectation: Expectation) -> None:
    """A `.dtype` observation gives a dtype, and only a dtype observation or a returned value can be one."""
    answer = expectation.answer if isinstance(expectation, ValueExpectation) else None
    if observe.endswith(".dtype") and not isinstance(answer, DtypeAnswer):
        raise SpecError(f"{where}: observe = {observe!r} is a dtype: write expect = \"torch.float32\" (or another "
                        f"dtype of torch)")
    if isinstance(answer, DtypeAnswer) and observe != "returned" and not observe.endswith(".dtype"):
        raise SpecError(f"{where}: expect = {answer.text!r} is a dtype, and {observe!r} is a tensor or None: observe "
                        f"\"{observe}.dtype\"")


def _arg(where: str, raw: dict[str, Any]) -> Arg:
    """One [[exercise]] args item: a scalar (param = "p") or a tensor of parameters (params = [...],
    optional shape = [rows, cols])."""
    _ident(where, raw["name"], "argument name")
    if ("param" in raw) == ("params" in raw):
        raise SpecError(f"{where}: argument {raw['name']!r} needs exactly one of param = \"p\" (a scalar) or "
                        f"params = [\"p0\", \"p1\", ...] (a tensor)")
    values = dict(raw)
    if "objects" in raw:
        objs = raw["objects"]
        dotted = re.compile(r"torch(\.[A-Za-z_][A-Za-z0-9_]*)+")
        if not (isinstance(objs, list) and objs and len(set(objs)) == len(objs) and all(
                isinstance(o, str) and (dotted.fullmatch(o) or o == "<generated>") for o in objs)):
            raise SpecError(f"{where}: argument {raw['name']!r}: objects must be a list of distinct dotted names of "
                            f"torch (\"torch.autograd.grad\", \"torch.Tensor.backward\") or \"<generated>\" (a "
                            f"function each run writes, with a random accumulate_grad in its engine call)")
        if "param" not in raw or set(raw) - {"name", "param", "objects"}:
            raise SpecError(f"{where}: argument {raw['name']!r}: objects = [...] goes with param = \"i\" (an integer "
                            f"parameter from 0 to {len(objs) - 1}: which object a point passes) and nothing else")
        return Arg(raw["name"], raw["param"], tensor=False, objects=tuple(objs))
    if "params" in raw:
        ps = raw["params"]
        if not (isinstance(ps, list) and ps and all(isinstance(p, str) for p in ps)):
            raise SpecError(f"{where}: argument {raw['name']!r}: params must be a non-empty list of parameter names")
        shape = raw.get("shape", [len(ps)])
        if not (isinstance(shape, list) and all(isinstance(n, int) and n > 0 for n in shape)):
            raise SpecError(f"{where}: argument {raw['name']!r}: shape must be a list of positive integers")
        size = 1
        for n in shape:
            size *= n
        if size != len(ps):
            raise SpecError(f"{where}: argument {raw['name']!r}: shape {shape} holds {size} values, but params lists "
                            f"{len(ps)}")
        if raw.get("grad") is not None or raw.get("tensor", True) is False:
            raise SpecError(f"{where}: argument {raw['name']!r}: a params tensor takes neither grad nor tensor = false")
        values["params"], values["shape"] = tuple(ps), tuple(shape)
    elif "shape" in raw:
        raise SpecError(f"{where}: argument {raw['name']!r}: shape goes with params = [...]")
    arg = Arg(**values)
    if arg.dtype not in ARG_DTYPES:
        raise SpecError(f"{where}: argument {arg.name!r} dtype must be one of {', '.join(map(repr, ARG_DTYPES))}")
    return arg


def _convention(where: str, raw: dict[str, Any], symbols: set[str]) -> tuple[str | None, str | None]:
    """A convention check names the convention and gives sympy's value under its formulation."""
    convention, sympy_text = raw.get("convention"), raw.get("sympy")
    if sympy_text is not None and convention is None:
        raise SpecError(f"{where}: sympy = ... goes with convention = \"the convention's name\"")
    if convention is None:
        return None, None
    if not isinstance(convention, str) or not convention.strip():
        raise SpecError(f"{where}: convention must name the convention in words")
    if not isinstance(sympy_text, str):
        raise SpecError(f"{where}: a convention check needs sympy = \"expression\": sympy's value under the stated "
                        f"formulation, shown beside torch's")
    try:
        analytic.parse(sympy_text, symbols)
    except ValueError as e:
        raise SpecError(f"{where}: sympy {sympy_text!r} is not a valid expression: {e}") from None
    return convention, sympy_text


def load_spec(path: str | Path) -> Assignment:
    """Read and validate a spec.toml.

    Args:
        path: the spec file, or a folder holding spec.toml.
    Returns:
        The Assignment.
    Raises:
        SpecError: unreadable TOML, an unknown or missing key, a bad value or expression; the
            message names the file and the table or check id, and says what to write instead.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "spec.toml"
    src = str(p)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{src}: no such file; an assignment folder needs a spec.toml") from None
    return parse_spec(text, src)


def parse_spec(text: str, src: str) -> Assignment:
    """Validate the text of a spec.toml; `src` names it in messages (its path). Raises SpecError as load_spec."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise SpecError(f"{src}: not valid TOML: {e}") from None
    token = _TEXT.set(text)
    try:
        return _load(src, data)
    finally:
        _TEXT.reset(token)


def _load(src: str, data: dict[str, Any]) -> Assignment:
    _keys(src, data, {"assignment", "grading", "parameters", "exercise"}, {"assignment", "parameters", "exercise"})
    a = data["assignment"]
    _keys(f"{src} [assignment]", a, {"id", "title", "notebook", "torch_observed"}, {"id", "title", "notebook"})
    if not (isinstance(a["notebook"], str) and a["notebook"].endswith(".ipynb")):
        raise SpecError(f"{src} [assignment]: notebook = {a['notebook']!r} must name an .ipynb file beside spec.toml")
    g = data.get("grading", {})
    _keys(f"{src} [grading]", g, set(LIMIT_NAMES) | {f.name for f in fields(Grading)})
    for k, v in g.items():
        if k in WORDS:
            if v not in WORDS[k]:
                raise SpecError(f"{src} [grading]: {k} = {v!r} must be one of {', '.join(map(repr, WORDS[k]))}")
            continue
        _number(f"{src} [grading]", v, k, positive=True)
    for k in (f.name for f in fields(Limits) if isinstance(f.default, int)):
        if k in g and not isinstance(g[k], int):
            raise SpecError(f"{src} [grading]: {k} must be a whole number")
    if "ops" in g and (not isinstance(g["ops"], int) or g["ops"] < 1):
        raise SpecError(f"{src} [grading]: ops must be a whole number >= 1 (the roundings a produced value may carry: "
                        f"its default tolerance is ops * eps of its dtype)")
    if "fresh_points" in g and (not isinstance(g["fresh_points"], int) or g["fresh_points"] < 1):
        raise SpecError(f"{src} [grading]: fresh_points must be an integer >= 1 (fresh points catch hard-coded numbers)")
    limits = Limits(**{k: v for k, v in g.items() if k in LIMIT_NAMES})
    grading = Grading(**{k: v for k, v in g.items() if k not in LIMIT_NAMES})
    params = _parameters(src, data["parameters"])
    _enough_points(src, params, grading.fresh_points)

    exercises: list[Exercise] = []
    checks: list[Check] = []
    seen: set[str] = set()
    if not isinstance(data["exercise"], list) or not data["exercise"]:
        raise SpecError(f"{src}: add at least one [[exercise]]")
    for ex in data["exercise"]:
        eid = str(ex.get("id", ""))
        where = f"{src} [[exercise]] id={eid!r}"
        _keys(where, ex, {"id", "title", "functions", "args", "check", "misconception", "domain_points"},
              {"id", "title", "functions", "args", "check"})
        domain_points = ex.get("domain_points")
        if domain_points is not None and (type(domain_points) is not int or domain_points < MIN_DOMAIN_POINTS):
            raise SpecError(f"{where}: domain_points must be a whole number of at least {MIN_DOMAIN_POINTS} (the points "
                            f"release's domain check calls this exercise's functions at, where each call is costly: "
                            f"one that starts processes); leave it out for the check's own budget (every drawable "
                            f"point up to a million, else 100,000 draws)")
        if not eid or eid in {e.id for e in exercises}:
            raise SpecError(f"{where}: exercise ids must be non-empty and unique")
        functions = tuple(_ident(where, f, "function") for f in ex["functions"])
        args: list[Arg] = []
        for raw in ex["args"]:
            _keys(f"{where} args", raw, set(Arg.__dataclass_fields__), {"name"})
            arg = _arg(where, raw)
            for ref in (arg.param, arg.grad, *(arg.params or ())):
                if ref is not None and ref not in params:
                    raise SpecError(f"{where}: argument {arg.name!r} names parameter {ref!r}; define it under [parameters]")
            if arg.objects:
                p = params[arg.param]
                if p.kind != "integer" or p.low != 0 or p.high != len(arg.objects) - 1:
                    raise SpecError(f"{where}: argument {arg.name!r} lists {len(arg.objects)} objects; its parameter "
                                    f"{arg.param!r} must be {{ kind = \"integer\", low = 0, high = "
                                    f"{len(arg.objects) - 1} }}, one value per object")
            args.append(arg)
        symbols = set(params) | {a.name for a in args if a.param is not None}
        exercises.append(Exercise(eid, _line_text(where, ex["title"], "title"), functions, tuple(args), domain_points))
        mine: list[Check] = []
        for raw in ex["check"]:
            cid = f"{eid}.{raw.get('id', '')}"
            cwhere = f"{src} check {cid!r}"
            _keys(cwhere, raw, {"id", "title", "predict", "function", "observe", "expect", "raises", "warns", "phrase",
                                "why", "points", "visibility", "rtol", "atol", "convention", "sympy",
                                "version_sensitive", "on_cuda", "installed", "container", "ops", "dtype"},
                  {"id", "title", "why"})
            if cid in seen:
                raise SpecError(f"{cwhere}: duplicate check id; give each check of an exercise its own id")
            seen.add(cid)
            kind: Kind = "predict" if "predict" in raw else "produce"
            if kind == "predict" and ({"function", "observe"} & set(raw)):
                raise SpecError(f"{cwhere}: a check is either predict = \"name\" or observe = ...; not both")
            function = observe = name = None
            if kind == "predict":
                name = _ident(cwhere, raw["predict"], "predict")
            else:
                if "observe" not in raw:
                    raise SpecError(f"{cwhere}: give predict = \"variable\" or observe = \"returned\" | \"<arg>.grad\"")
                function = raw.get("function", functions[0] if len(functions) == 1 else None)
                if function not in functions:
                    raise SpecError(f"{cwhere}: function must be one of {list(functions)}")
                observe = raw["observe"]
                grads = {f"{a.name}.grad" for a in args if a.tensor}
                if not isinstance(observe, str) or observe.removesuffix(".dtype") not in {"returned"} | grads:
                    raise SpecError(f"{cwhere}: observe must be \"returned\" or one of {sorted(grads)} (or one of "
                                    f"these with \".dtype\": its dtype)" if grads else
                                    f"{cwhere}: observe must be \"returned\" or \"returned.dtype\" (exercise {eid!r} "
                                    f"has no tensor argument whose .grad could be observed)")
                if ("raises" in raw or "warns" in raw) and observe != "returned":
                    raise SpecError(f"{cwhere}: raises and warns go with observe = \"returned\" (what the call did)")
                if raw.get("raises") == "NotImplementedError":
                    raise SpecError(f"{cwhere}: a produce function that raises NotImplementedError is read as its "
                                    f"unwritten placeholder (the check would be `missing` for every student): ask for "
                                    f"this exception in a prediction (predict = ..., raises = \"NotImplementedError\")")
            points = _number(cwhere, raw.get("points", 1.0), "points", positive=True)
            vis = raw.get("visibility", "public")
            if vis not in ("public", "hidden"):
                raise SpecError(f"{cwhere}: visibility must be \"public\" or \"hidden\"")
            tol = {k: _number(cwhere, raw[k], k, positive=True) for k in ("rtol", "atol") if k in raw}
            ops, dtype = raw.get("ops"), raw.get("dtype")
            if ops is not None and (not isinstance(ops, int) or isinstance(ops, bool) or ops < 1):
                raise SpecError(f"{cwhere}: ops must be a whole number >= 1, the roundings its value may carry (its "
                                f"default tolerance is ops * eps of its dtype)")
            if dtype is not None and dtype not in DTYPE_EPS:
                raise SpecError(f"{cwhere}: dtype = {dtype!r}: write the floating dtype its value is computed in, one of "
                                f"{', '.join(map(repr, DTYPE_EPS))}")
            convention, sympy_text = _convention(cwhere, raw, symbols)
            sensitive = raw.get("version_sensitive", False)
            if not isinstance(sensitive, bool):
                raise SpecError(f"{cwhere}: version_sensitive must be true or false")
            expectation = _expect(cwhere, raw, symbols, {a.name for a in args if a.objects})
            if observe is not None:
                _observed_kind(cwhere, observe, expectation)
            if (ops is not None or dtype is not None) and not (isinstance(expectation, ValueExpectation) and any(
                    isinstance(i, ExprAnswer) for i in (expectation.answer.items if isinstance(expectation.answer,
                                                        SeqAnswer) else (expectation.answer,)))):
                raise SpecError(f"{cwhere}: ops and dtype set the tolerance of a number: this check expects none")
            if convention is not None:
                if not isinstance(expectation, ValueExpectation):
                    raise SpecError(f"{cwhere}: convention = ... goes with expect = (torch's value), not with "
                                    f"raises or warns")
                expectation = ConventionExpectation(expectation.answer, None, convention, sympy_text)
            container = raw.get("container")
            if container is not None and (container != "tuple" or not isinstance(getattr(expectation, "answer", None),
                                                                                 SeqAnswer)):
                raise SpecError(f"{cwhere}: container = \"tuple\" goes with expect = [...] (a tuple), and says that "
                                f"the tuple is the lesson: a list of the same items fails; leave it out to accept one")
            mine.append(Check(cid, eid, kind, _line_text(cwhere, raw["title"], "title"), expectation,
                              _line_text(cwhere, raw["why"], "why"), points, vis, name,
                              function, observe, tol.get("rtol"), tol.get("atol"), sensitive,
                              on_cuda=_on_cuda(cwhere, raw, kind, symbols), container=container, ops=ops,
                              dtype=dtype))
        checks += _twins_flagged(_misconceptions(src, eid, ex.get("misconception", []), mine, symbols,
                                                 {f"{a.name}.grad" for a in args if a.tensor}))
    return Assignment(str(a["id"]), _line_text(f"{src} [assignment]", a["title"], "title"), a["notebook"], str(a.get("torch_observed", "")),
                      limits, grading, params, tuple(exercises), tuple(checks), src)
