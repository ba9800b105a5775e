"""keyfile: the answer key's JSON format (the one place it is written down), its digest, and reading and
finding key files. `autograder release` writes keys with `to_json`; everyone else reads a `model.Key`.

May import: stdlib, autograder.model.

Format "autograd-lab/key", version 1 (one JSON object):

    schema, v            "autograd-lab/key", 1
    assignment, title    the assignment's id and title
    notebook             the released notebook's file name
    torch_observed       the torch version the spec says its expectations were observed on
    torch_version        the torch of the reference run the key was built from
    sympy_version        the sympy that parsed the answers at release
    grading              {submission_timeout, call_timeout, cell_timeout, memory_mb, processes, output_mb,
                          disk_mb (model.Limits), fresh_points, predict_rtol, predict_atol, float32_rtol,
                          float32_atol, float64_rtol, float64_atol, predictions ("worked-out" | "any"),
                          prediction_policy ("first" | "last"), and ops where it is not model.DEFAULT_OPS
                          (model.Grading)}
    parameters           {name: {"kind": "real", "low", "high", "sign", "decimals"} |
                                {"kind": "integer", "low", "high"} | {"kind": "fixed", "value"}}
    exercises            [{id, title, functions: [name], args: [{name, param, params, shape, tensor, dtype,
                          requires_grad, grad, and objects (dotted names of torch) where the spec gives them}]}]
    checks               [{id, exercise, kind: "predict" | "produce", title, expect, why, points,
                          visibility: "public" | "hidden", name, function, observe, rtol, atol,
                          convention, sympy, version_sensitive, and ops and dtype where the spec gives them}],
                          where
                            expect = {"none": true} | {"bool": b} | {"expr": "sympy text"} | {"seq": [expect]}
                                     | {"dtype": "bfloat16"} (a torch dtype)
                                     | {"installed": "fact"} (model.INSTALLED_FACTS: read by each run's probe)
                                     | {"raises": "Class", "phrase": "..."} | {"warns": "Class", "phrase": "..."}
                            a convention check has `convention` and `sympy` set and a value `expect`;
                            a check with named misconceptions has "misconceptions": [{id, name, value, feedback,
                              evidence, overlap}] (overlap, when the spec accepts one: {"share": 0..1, "why": text};
                              evidence, when given: [{"what": "x.grad", "value": answer} |
                              {"what": "warns" | "message", "phrase": text} | {"what": "runs_backward", "flag": bool}]),
                            where value is an answer object as `expect` is, or {"list": [...]} (a list instead
                            of a tuple) or {"class": "Name"} (an exception class)
                            a produce check of a value also has "form" (the reference run's wire Value
                            without numbers, or null for None) and one of an exception "reference"
                            ({"exception": {type, mro, message, origin, statement}} or null)
                            a produce check whose behaviour depends on the device has "on_cuda": {"expect":
                            answer, "why": text}, what it expects where CUDA is available (model.OnCuda)
                            a check whose tuple must be written as a tuple (the spec's container = "tuple") has
                            "container": "tuple" (model.container_is_lesson)
    digest               sha256 (16 hex digits) of digest_salt followed by everything above but digest, secret,
                         public, hidden, public_digest and digest_salt, as JSON with sorted keys
    digest_salt          full key only: sha256 of the solution notebook's code, so that the digest (which the
                         public key and the student notebook carry) cannot be recomputed to test a guess
    secret               full key only: the random text that seeds the graded fresh points
    public, hidden,      public key only: true; {"checks": n, "points": p} of the checks left out; the
    public_digest        digest of the public key's own content ("digest" stays the full key's)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from autograder.model import (DEFAULT_OPS, Answer, Arg, BoolAnswer, Check, ClassAnswer, ConventionExpectation,
                              DtypeAnswer, Exercise, Expectation,
                              ExprAnswer, Grading, HiddenChecks, InstalledAnswer, InstalledExpectation, Key, Limits, Misconception, NoneAnswer, OnCuda, Overlap, Parameter, Sign,
                              RaisesExpectation, SeqAnswer, ValueExpectation, WarnsExpectation)

SCHEMA = "autograd-lab/key"
VERSION = 1
_NOT_DIGESTED = ("digest", "secret", "public", "hidden", "public_digest", "digest_salt")


def digest_of(data: dict[str, Any]) -> str:
    """The digest of a key's JSON form (see the module docstring), salted with its digest_salt where it has one."""
    body = {k: v for k, v in data.items() if k not in _NOT_DIGESTED}
    if isinstance(body.get("exercises"), list):   # an exercise's domain_points is release's alone (authoring.sweep):
        #                                           grading never reads it, so a key that sets it grades as before
        body["exercises"] = [{k: v for k, v in e.items() if k != "domain_points"} if isinstance(e, dict) else e
                             for e in body["exercises"]]
    salt = data.get("digest_salt", "") if isinstance(data.get("digest_salt", ""), str) else ""
    return hashlib.sha256((salt + json.dumps(body, sort_keys=True)).encode()).hexdigest()[:16]


# ------------------------------------------------------------------------------------------------ to JSON

def answer_json(a: Answer) -> dict[str, Any]:
    """An answer as its `expect` object."""
    if isinstance(a, NoneAnswer):
        return {"none": True}
    if isinstance(a, BoolAnswer):
        return {"bool": a.value}
    if isinstance(a, ExprAnswer):
        return {"expr": a.expr}
    if isinstance(a, ClassAnswer):
        return {"class": a.name}
    if isinstance(a, InstalledAnswer):
        return {"installed": a.fact}
    if isinstance(a, DtypeAnswer):
        return {"dtype": a.name}
    if a.kind == "list":
        return {"list": [answer_json(i) for i in a.items]}
    return {"seq": [answer_json(i) for i in a.items]}


def _expect_json(e: Expectation) -> dict[str, Any]:
    if isinstance(e, RaisesExpectation):
        return {"raises": e.exception, "phrase": e.phrase}
    if isinstance(e, WarnsExpectation):
        return {"warns": e.warning, "phrase": e.phrase}
    return answer_json(e.answer)


def _sign_json(e: Sign) -> dict[str, Any]:
    if e.what in ("warns", "message"):
        return {"what": e.what, "phrase": e.phrase}
    if e.what == "runs_backward":
        return {"what": "runs_backward", "flag": e.flag}
    return {"what": e.what, "value": answer_json(e.answer)}


def _sign_from(d: dict[str, Any]) -> Sign:
    what = str(d["what"])
    if what in ("warns", "message"):
        return Sign(what, phrase=str(d["phrase"]))
    if what == "runs_backward":
        return Sign(what, flag=bool(d["flag"]))
    return Sign(what, answer_from(d["value"]))


def _check_json(c: Check) -> dict[str, Any]:
    e = c.expectation
    out = {"id": c.id, "exercise": c.exercise, "kind": c.kind, "title": c.title, "expect": _expect_json(e),
           "why": c.why, "points": c.points, "visibility": c.visibility, "name": c.name, "function": c.function,
           "observe": c.observe, "rtol": c.rtol, "atol": c.atol,
           "convention": e.convention if isinstance(e, ConventionExpectation) else None,
           "sympy": e.sympy if isinstance(e, ConventionExpectation) else None,
           "version_sensitive": c.version_sensitive}
    if c.kind == "produce" and isinstance(e, ValueExpectation):
        out["form"] = e.form
    if c.kind == "produce" and isinstance(e, RaisesExpectation):
        out["reference"] = e.reference
    if c.on_cuda is not None:
        out["on_cuda"] = {"expect": answer_json(c.on_cuda.answer), "why": c.on_cuda.why}
    if c.container is not None:   # only where set: a key without it keeps its digest
        out["container"] = c.container
    if c.ops is not None:   # only where set: a key without them keeps its digest
        out["ops"] = c.ops
    if c.dtype is not None:
        out["dtype"] = c.dtype
    if c.misconceptions:
        out["misconceptions"] = [{"id": m.id, "name": m.name, "value": answer_json(m.answer), "feedback": m.feedback,
                                  **({"evidence": [_sign_json(e) for e in m.evidence]} if m.evidence else {}),
                                  **({"overlap": {"share": m.overlap.share, "why": m.overlap.why}} if m.overlap else {})}
                                 for m in c.misconceptions]
    return out


def check_json(c: Check) -> dict[str, Any]:
    """A check's entry in the key's JSON (what its digest covers)."""
    return _check_json(c)


def parameter_json(p: Parameter) -> dict[str, Any]:
    if p.kind == "fixed":
        return {"kind": "fixed", "value": p.value}
    if p.kind == "integer":
        return {"kind": "integer", "low": p.low, "high": p.high}
    return {"kind": "real", "low": p.low, "high": p.high, "sign": p.sign, "decimals": p.decimals}


def arg_json(a: Arg) -> dict[str, Any]:
    out = {"name": a.name, "param": a.param, "params": list(a.params) if a.params is not None else None,
           "shape": list(a.shape) if a.shape is not None else None, "tensor": a.tensor, "dtype": a.dtype,
           "requires_grad": a.requires_grad, "grad": a.grad}
    if a.objects is not None:   # only where set: a key without object arguments keeps its digest
        out["objects"] = list(a.objects)
    return out


def grading_json(limits: Limits, grading: Grading) -> dict[str, Any]:
    """The key's "grading" object: the limits, then the fresh points and tolerances."""
    return {**{f.name: getattr(limits, f.name) for f in fields(limits)},
            **{f.name: getattr(grading, f.name) for f in fields(grading)
               if f.name != "ops" or grading.ops != DEFAULT_OPS}}   # a key of the default ops keeps its digest


def to_json(key: Key) -> dict[str, Any]:
    """The JSON form of `key` (see the module docstring), its digests included as the key holds them."""
    out: dict[str, Any] = {
        "schema": SCHEMA, "v": VERSION, "assignment": key.assignment, "title": key.title, "notebook": key.notebook,
        "torch_observed": key.torch_observed, "torch_version": key.torch_version, "sympy_version": key.sympy_version,
        "grading": grading_json(key.limits, key.grading),
        "parameters": {n: parameter_json(p) for n, p in key.parameters.items()},
        "exercises": [{"id": e.id, "title": e.title, "functions": list(e.functions), "args": [arg_json(a) for a in e.args],
                       **({"domain_points": e.domain_points} if e.domain_points is not None else {})}   # only where set
                      for e in key.exercises],
        "checks": [_check_json(c) for c in key.checks],
        "digest": key.digest,
    }
    if key.fresh_seed is not None:
        out["secret"] = key.fresh_seed
    if key.digest_salt and not key.public:
        out["digest_salt"] = key.digest_salt
    if key.public:
        hidden = key.hidden_checks or HiddenChecks(0, 0.0)
        out.update(hidden={"checks": hidden.checks, "points": hidden.points}, public=True,
                   public_digest=key.public_digest)
    return out


def with_digest(key: Key) -> Key:
    """`key` with its digest computed from its content (a full key)."""
    return replace(key, digest=digest_of(to_json(key)))


def public_key(key: Key) -> Key:
    """The public key of a full key: no hidden checks (their number and points are kept, so that the
    self-check can say that more is graded later), no fresh-point seed, no exercise's domain_points (release's
    alone); `digest` stays the full key's."""
    hidden = [c for c in key.checks if c.visibility == "hidden"]
    pub = replace(key, checks=tuple(c for c in key.checks if c.visibility == "public"), fresh_seed=None, public=True,
                  digest_salt="", exercises=tuple(replace(e, domain_points=None) for e in key.exercises),
                  hidden_checks=HiddenChecks(len(hidden), float(sum(c.points for c in hidden))))
    return replace(pub, public_digest=digest_of(to_json(pub)))


# ------------------------------------------------------------------------------------------------ from JSON

def answer_from(d: Any) -> Answer:
    """An `expect` object of a value as an Answer. Raises ValueError for another shape."""
    if d == {"none": True}:
        return NoneAnswer()
    if isinstance(d, dict) and set(d) == {"bool"} and isinstance(d["bool"], bool):
        return BoolAnswer(d["bool"])
    if isinstance(d, dict) and set(d) == {"expr"} and isinstance(d["expr"], str):
        return ExprAnswer(d["expr"])
    if isinstance(d, dict) and set(d) == {"seq"} and isinstance(d["seq"], list):
        return SeqAnswer(tuple(answer_from(i) for i in d["seq"]))
    if isinstance(d, dict) and set(d) == {"list"} and isinstance(d["list"], list):
        return SeqAnswer(tuple(answer_from(i) for i in d["list"]), "list")
    if isinstance(d, dict) and set(d) == {"class"} and isinstance(d["class"], str):
        return ClassAnswer(d["class"])
    if isinstance(d, dict) and set(d) == {"installed"} and isinstance(d["installed"], str):
        return InstalledAnswer(d["installed"])
    if isinstance(d, dict) and set(d) == {"dtype"} and isinstance(d["dtype"], str):
        return DtypeAnswer(d["dtype"])
    raise ValueError(f"not an answer: {str(d)[:80]}")


def _expectation_from(c: dict[str, Any]) -> Expectation:
    e = c["expect"]
    if "raises" in e:
        return RaisesExpectation(str(e["raises"]), str(e.get("phrase", "")), c.get("reference"))
    if "warns" in e:
        return WarnsExpectation(str(e["warns"]), str(e.get("phrase", "")))
    if c.get("convention"):
        return ConventionExpectation(answer_from(e), c.get("form"), str(c["convention"]), str(c.get("sympy") or ""))
    answer = answer_from(e)
    if any(isinstance(i, InstalledAnswer) for i in (answer.items if isinstance(answer, SeqAnswer) else (answer,))):
        return InstalledExpectation(answer, c.get("form"))
    return ValueExpectation(answer, c.get("form"))


def _check_from(c: dict[str, Any]) -> Check:
    cuda = c.get("on_cuda")
    on_cuda = OnCuda(answer_from(cuda["expect"]), str(cuda["why"])) if isinstance(cuda, dict) else None
    return Check(c["id"], c["exercise"], c["kind"], c["title"], _expectation_from(c), c["why"], float(c["points"]),
                 c.get("visibility", "public"), c.get("name"), c.get("function"), c.get("observe"), c.get("rtol"),
                 c.get("atol"), bool(c.get("version_sensitive", False)),
                 tuple(Misconception(str(m["id"]), str(m["name"]), answer_from(m["value"]), str(m["feedback"]),
                                     tuple(_sign_from(e) for e in m.get("evidence", ())),
                                     Overlap(float(m["overlap"]["share"]), str(m["overlap"]["why"]))
                                     if isinstance(m.get("overlap"), dict) else None)
                       for m in c.get("misconceptions", ())), on_cuda,
                 "tuple" if c.get("container") == "tuple" else None,
                 int(c["ops"]) if c.get("ops") is not None else None, c.get("dtype"))


def arg_from(a: dict[str, Any]) -> Arg:
    return Arg(a["name"], a.get("param"), tuple(a["params"]) if a.get("params") is not None else None,
               tuple(a["shape"]) if a.get("shape") is not None else None, bool(a.get("tensor", True)),
               a.get("dtype", "float32"), bool(a.get("requires_grad", True)), a.get("grad"),
               tuple(a["objects"]) if a.get("objects") is not None else None)


def parameter_from(d: dict[str, Any]) -> Parameter:
    if d["kind"] == "fixed":
        return Parameter("fixed", value=d["value"])
    if d["kind"] == "integer":
        return Parameter("integer", d["low"], d["high"])
    return Parameter("real", d["low"], d["high"], d.get("sign", "positive"), d.get("decimals", 2))


def from_json(data: dict[str, Any]) -> Key:
    """A Key from its JSON form. Raises ValueError for another schema or version, or a malformed key."""
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("v") != VERSION:
        raise ValueError(f"not an autograd-lab key v{VERSION}")
    try:
        g = data["grading"]
        limits = Limits(**{f.name: g[f.name] for f in fields(Limits) if f.name in g})     # as written: the
        grading = Grading(**{f.name: g[f.name] for f in fields(Grading) if f.name in g})  # digest covers them
        hidden = data.get("hidden")
        return Key(
            data["assignment"], data["title"], data["notebook"], data.get("torch_observed", ""), data["torch_version"],
            data.get("sympy_version", ""), limits, grading,
            {n: parameter_from(d) for n, d in data["parameters"].items()},
            tuple(Exercise(e["id"], e["title"], tuple(e["functions"]), tuple(arg_from(a) for a in e["args"]),
                           int(e["domain_points"]) if e.get("domain_points") is not None else None)
                  for e in data["exercises"]),
            tuple(_check_from(c) for c in data["checks"]), data.get("digest", ""), data.get("secret"),
            bool(data.get("public", False)),
            HiddenChecks(int(hidden["checks"]), float(hidden["points"])) if isinstance(hidden, dict) else None,
            data.get("public_digest", ""), "" if data.get("public") else str(data.get("digest_salt", "")))
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"a malformed autograd-lab key ({type(e).__name__}: {e})") from None


def load_key(path: str | Path) -> Key:
    """Read a key.json or public_key.json.

    Raises:
        OSError: the file cannot be read. ValueError: not JSON, another schema or version, a malformed
            key, or a digest that does not match its content (edited by hand: rebuild it with release).
    """
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("v") != VERSION:
        raise ValueError(f"{path}: not an autograd-lab key v{VERSION}")
    if digest_of(data) != (data.get("public_digest") if data.get("public") else data.get("digest")):
        raise ValueError(f"{path}: the key's digest does not match its content; rebuild it with autograder release")
    try:
        return from_json(data)
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None


# An assignment id: a folder name of solutions/, assignments/ and build/. Anything a notebook says is checked
# against it before it names a path (a notebook is a student's text: "../x" or "/x" would name any folder).
ASSIGNMENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]*(?:\.[A-Za-z0-9_-]+)*")


def is_assignment_id(text: object) -> bool:
    """Is `text` the shape of an assignment id (letters, digits, -, _ and inner dots; no / and no ..; at most 100)?"""
    return isinstance(text, str) and len(text) <= 100 and ASSIGNMENT_ID.fullmatch(text) is not None


def find_public_key(assignments: list[str], start: Path | None = None, beside: Path | None = None) -> Path | None:
    """Where a notebook's public_key.json is: $AUTOGRAD_LAB_KEY if set; else `beside/public_key.json`
    (the notebook's folder; default the current folder); else `assignments/<id>/public_key.json` in
    `start` (default the current folder) or a folder above it, for each id of `assignments` in order.
    None if there is none."""
    env = os.environ.get("AUTOGRAD_LAB_KEY")
    if env:
        return Path(env)
    here = Path.cwd() if start is None else start
    near = (beside if beside is not None else here) / "public_key.json"
    if near.exists():
        return near
    for aid in filter(is_assignment_id, assignments):
        for base in [here, *here.parents]:
            cand = base / "assignments" / aid / "public_key.json"
            if cand.exists():
                return cand
    return None
