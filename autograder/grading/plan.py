"""plan: each student's parameters and the probe request (what to call, with which arguments).

It never holds an expected value: a `ProbePlan` is the part of a key the observation needs, and a request
is exactly what may enter the untrusted process. Used by the grader, by key building and by the
in-notebook self-check.

May import: stdlib, autograder.model.
"""
from __future__ import annotations

import functools
import hashlib
import random
from dataclasses import dataclass
from typing import Any

from autograder.model import Exercise, Key, Number, Parameter, nest, student_key

PLACEHOLDER_ID = "your-student-id"   # what a released notebook's STUDENT_ID cell holds


@dataclass(frozen=True)
class ProbePlan:
    """What observing a submission needs of a key, and nothing it expects: the parameters and how many
    fresh points to draw (with the full key's seed, if any), the exercises and their functions' arguments,
    the prediction variables of each exercise, and the cell and call time limits (seconds)."""

    assignment: str
    parameters: dict[str, Parameter]
    exercises: tuple[Exercise, ...]
    names: tuple[tuple[str, str], ...]      # (exercise id, prediction variable) of every predict check
    fresh_points: int
    fresh_seed: str
    call_timeout: float
    cell_timeout: float

    @classmethod
    def of(cls, key: Key | ProbePlan) -> ProbePlan:
        """The plan of a key (a plan is returned as it is)."""
        if isinstance(key, ProbePlan):
            return key
        return cls(key.assignment, key.parameters, key.exercises,
                   tuple((c.exercise, c.name) for c in key.checks if c.kind == "predict" and c.name),
                   int(key.grading.fresh_points), key.fresh_seed or "", float(key.limits.call_timeout),
                   float(key.limits.cell_timeout))


def _rng(assignment: str, student: str, stream: str, name: str) -> random.Random:
    # a student id from a file name need not be UTF-8 (os.fsdecode gives it lone surrogates): its own bytes seed it
    # ids that differ only in case are one student (model.student_key): they draw the same parameters
    seed = hashlib.sha256(f"{assignment}\0{student_key(student)}\0{stream}\0{name}".encode("utf-8", "surrogateescape")).digest()
    return random.Random(int.from_bytes(seed[:8], "big"))


def draw_point(parameters: dict[str, Parameter], assignment: str, student: str, stream: str) -> dict[str, Number]:
    """Draw one value per parameter, reproducibly.

    Args:
        parameters: name -> how it is drawn (model.Parameter).
        assignment, student: the seed; `stream` is "own" for the student's own point and
            "fresh-1", "fresh-2", ... for the fresh points the grader also calls.
    Returns:
        name -> int or float; a real is rounded to `decimals`, so its repr is its exact decimal.
    """
    point: dict[str, Number] = {}
    for name, dist in parameters.items():
        if dist.kind == "fixed":
            point[name] = dist.value
            continue
        rng = _rng(assignment, student, stream, name)
        if dist.kind == "integer":
            point[name] = rng.randint(int(dist.low), int(dist.high))
            continue
        magnitude = round(rng.uniform(float(dist.low), float(dist.high)), int(dist.decimals))
        negative = dist.sign == "negative" or (dist.sign == "any" and rng.random() < 0.5)
        point[name] = -magnitude if negative else magnitude
    return point


def submission_salt(data: bytes) -> str:
    """What makes a graded submission's fresh points its own: sha256 of the handed-in file's bytes (hex, 16
    characters). The same bytes are graded at the same points again (a batch resumes, a regrade agrees); any
    change to the file gives other points, so what one graded feedback showed is no help for the next."""
    return hashlib.sha256(data).hexdigest()[:16]


def points_for(key: Key | ProbePlan, student: str, salt: str = "") -> list[dict[str, Number]]:
    """The student's own point (index 0) followed by `fresh_points` fresh points, each differing from the
    earlier points in every real parameter (so that a number hard-coded for one point is caught at the
    others).

    The full key holds a random seed (made at release, never shipped to students) for the graded fresh
    points, so that they cannot be worked out, or read off a self-check, in advance; a graded run adds the
    submission's own `salt` (`submission_salt`), so that they differ from one submission to the next. The
    public key has no seed, and self-checks use other fresh points.
    """
    plan = ProbePlan.of(key)
    try:
        frozen = tuple(plan.parameters.items())
        hash(frozen)
    except TypeError:   # parameters that cannot be a cache's key: drawn each time
        return _points(plan.parameters, plan.assignment, plan.fresh_points, plan.fresh_seed, student, salt)
    return [dict(p) for p in _points_kept(frozen, plan.assignment, plan.fresh_points, plan.fresh_seed, student, salt)]


@functools.lru_cache(maxsize=4096)
def _points_kept(parameters: tuple[tuple[str, Parameter], ...], assignment: str, fresh_points: int, fresh_seed: str,
                 student: str, salt: str) -> tuple[dict[str, Number], ...]:
    """`_points`, kept: the course service judges each of a student's checks at the same points."""
    return tuple(_points(dict(parameters), assignment, fresh_points, fresh_seed, student, salt))


def _points(params: dict[str, Parameter], aid: str, fresh_points: int, fresh_seed: str, student: str,
            salt: str) -> list[dict[str, Number]]:
    points = [draw_point(params, aid, student, "own")]
    reals = [n for n, d in params.items() if d.kind == "real"]
    for i in range(1, fresh_points + 1):
        for attempt in range(50):   # a fresh point must differ from the earlier ones in every real parameter
            stream = f"fresh-{i}{fresh_seed}" + (f"-{salt}" if salt and fresh_seed else "")
            point = draw_point(params, aid, student, stream + (f"-{attempt}" if attempt else ""))
            if all(point[n] != q[n] for n in reals for q in points) and (reals or point not in points):
                break
        points.append(point)
    return points


# What in a notebook's cells makes a run pay one of torch's first-use costs (probe.WARM_UPS): the sandbox's
# worker and the self-check pay it once, before the run, rather than inside a produce call's time limit.
WARM_TRIGGERS: dict[str, tuple[str, ...]] = {
    "dynamo": ("optim", "torch.func", "functorch", "vmap", "jacrev", "hessian", "checkpoint", "compile",
               "functional_call"),
    "forward": ("jvp", "jacfwd", "forward_ad", "make_dual", "dual_level", "hessian"),
    "gradcheck": ("gradcheck",),
}


def warm_ups(cells: list[str]) -> list[str]:
    """The warm-ups (probe.WARM_UPS names) that `cells` (code cell sources) may need: those whose trigger words
    appear in them. Only a speed hint: a word missed costs the first call that time; one too many costs the
    warm worker a second or two, once."""
    text = "\n".join(cells)
    return [name for name, words in WARM_TRIGGERS.items() if any(w in text for w in words)]


def call_args(exercise: Exercise, point: dict[str, Number]) -> list[dict[str, Any]]:
    """The argument descriptions of one produce call at one point (see `probe.make_args`)."""
    args = []
    for arg in exercise.args:
        if arg.objects:
            args.append({"name": arg.name, "object": arg.objects[int(point[arg.param])]})
            continue
        if arg.params:
            args.append({"name": arg.name, "tensor": {
                "value": nest([point[p] for p in arg.params], list(arg.shape or (len(arg.params),))),
                "dtype": arg.dtype, "requires_grad": bool(arg.requires_grad), "grad": None}})
            continue
        value = point[arg.param]
        if arg.tensor:
            args.append({"name": arg.name, "tensor": {
                "value": value, "dtype": arg.dtype, "requires_grad": bool(arg.requires_grad),
                "grad": point[arg.grad] if arg.grad else None}})
        else:
            args.append({"name": arg.name, "number": value})
    return args


def arg_template(exercise: Exercise) -> list[dict[str, Any]]:
    """The arguments of the exercise's calls without their values, as a sweep request's "columns" carry them (the
    probe's `_point_args` makes, at each point, what `call_args` writes there). Raises ValueError for an object
    argument (the sweep calls no exercise that has one)."""
    out: list[dict[str, Any]] = []
    for arg in exercise.args:
        if arg.objects:
            raise ValueError(f"exercise {exercise.id}: argument {arg.name!r} is an object of torch")
        if arg.params:
            out.append({"name": arg.name, "params": list(arg.params), "shape": list(arg.shape or (len(arg.params),)),
                        "dtype": arg.dtype, "requires_grad": bool(arg.requires_grad)})
        elif arg.tensor:
            out.append({"name": arg.name, "param": arg.param, "tensor": True, "dtype": arg.dtype,
                        "requires_grad": bool(arg.requires_grad), "grad": arg.grad})
        else:
            out.append({"name": arg.name, "param": arg.param})
    return out


def observation(plan: ProbePlan, exercise: Exercise, points: list[dict[str, Number]], after: int) -> dict[str, Any]:
    """One exercise's observation in a request: its prediction variables, and a call of each of its
    functions at each point, made after code cell `after`."""
    return {"exercise": exercise.id, "after": after,
            "names": sorted({name for eid, name in plan.names if eid == exercise.id}),
            "calls": [{"call": fn, "function": fn, "points": [{"args": call_args(exercise, p)} for p in points]}
                      for fn in exercise.functions]}


def probe_request(key: Key | ProbePlan, cells: list[str], student: str, exercises: list[str] | None = None,
                  positions: dict[str, int] | None = None, skip: dict[int, str] | None = None,
                  salt: str = "") -> dict[str, Any]:
    """Build the request the probe gets: cells to run, and after which cell to observe each exercise.

    Args:
        key: a key or its ProbePlan.
        cells: the source of each code cell, in order.
        student: the student id the parameters are drawn for.
        exercises: restrict to these exercise ids (None: all).
        positions: exercise id -> the code cell after which it is observed (`sources.Facts.positions`;
            default: after the last cell).
        skip: code cell index -> why it is not run (it ended an earlier run of the same submission).
        salt: the submission's salt for its graded fresh points (`points_for`).
    Returns:
        A JSON-native dict, version 2: v, cells, skip ({"<index>": reason}), observe ([{exercise, after,
        names, calls}], in notebook order), parameters (the student's own point), call_timeout and
        cell_timeout (seconds), warm (the warm-ups its cells may need: `warm_ups`), and, where an argument is an
        object, generated (the seed of a function written for the run). It contains no expected value.
    """
    plan = ProbePlan.of(key)
    points = points_for(plan, student, salt)
    wanted = [e for e in plan.exercises if exercises is None or e.id in exercises]
    last = len(cells) - 1
    observe = [observation(plan, e, points, (positions or {}).get(e.id, last)) for e in wanted]
    observe.sort(key=lambda entry: entry["after"])   # stable: the key's order among exercises at one cell
    request = {"v": 2, "cells": cells, "skip": {str(i): why for i, why in (skip or {}).items()}, "observe": observe,
               "parameters": points[0], "call_timeout": plan.call_timeout, "cell_timeout": plan.cell_timeout,
               "warm": warm_ups(cells)}
    if any(a.objects for e in wanted for a in e.args):   # a function written for the run (sandbox.inside.installed)
        # is drawn as the fresh points are: the same for a submission's runs again and its regrades
        request["generated"] = hashlib.sha256(f"{plan.fresh_seed}\0{student_key(student)}\0{salt}".encode(
            "utf-8", "surrogateescape")).hexdigest()[:16]
    return request
