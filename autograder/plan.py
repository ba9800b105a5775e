"""plan: each student's parameters and the probe request (what to call, with which arguments).

Stdlib only, and it never holds an expected value: its output is exactly what may enter the
untrusted process. Used by the grader, by key building and by the in-notebook self-check.
"""
from __future__ import annotations

import hashlib
import random
from typing import Any

Number = int | float
PLACEHOLDER_ID = "your-student-id"   # what a released notebook's STUDENT_ID cell holds


def _rng(assignment: str, student: str, stream: str, name: str) -> random.Random:
    seed = hashlib.sha256(f"{assignment}\0{student}\0{stream}\0{name}".encode()).digest()
    return random.Random(int.from_bytes(seed[:8], "big"))


def draw_point(parameters: dict[str, dict[str, Any]], assignment: str, student: str, stream: str) -> dict[str, Number]:
    """Draw one value per parameter, reproducibly.

    Args:
        parameters: name -> distribution, as in a key's "parameters" table:
            {"kind": "real", "low": float, "high": float, "sign": "positive"|"negative"|"any", "decimals": int}
            or {"kind": "integer", "low": int, "high": int} (both ends included)
            or {"kind": "fixed", "value": number} (the same for everyone: a kink an exercise is about).
        assignment, student: the seed; `stream` is "own" for the student's own point and
            "fresh-1", "fresh-2", ... for the fresh points the grader also calls.
    Returns:
        name -> int or float; a real is rounded to `decimals`, so its repr is its exact decimal.
    """
    point: dict[str, Number] = {}
    for name, dist in parameters.items():
        if dist["kind"] == "fixed":
            point[name] = dist["value"]
            continue
        rng = _rng(assignment, student, stream, name)
        if dist["kind"] == "integer":
            point[name] = rng.randint(int(dist["low"]), int(dist["high"]))
            continue
        magnitude = round(rng.uniform(float(dist["low"]), float(dist["high"])), int(dist.get("decimals", 2)))
        sign = dist.get("sign", "positive")
        negative = sign == "negative" or (sign == "any" and rng.random() < 0.5)
        point[name] = -magnitude if negative else magnitude
    return point


def points_for(key: dict[str, Any], student: str) -> list[dict[str, Number]]:
    """The student's own point (index 0) followed by `grading.fresh_points` fresh points, each
    differing from the earlier points in every real parameter (so that a number hard-coded for one
    point is caught at the others).

    The full key holds a random `secret` (made at release, never shipped to students) that seeds
    the graded fresh points, so that they cannot be worked out, or read off a self-check, in
    advance; the public key has none, and self-checks use other fresh points.
    """
    params, aid = key["parameters"], key["assignment"]
    fresh = int(key["grading"]["fresh_points"])
    salt = key.get("secret", "")
    points = [draw_point(params, aid, student, "own")]
    reals = [n for n, d in params.items() if d["kind"] == "real"]
    for i in range(1, fresh + 1):
        for attempt in range(50):   # a fresh point must differ from the earlier ones in every real parameter
            point = draw_point(params, aid, student, f"fresh-{i}{salt}" + (f"-{attempt}" if attempt else ""))
            if all(point[n] != q[n] for n in reals for q in points) and (reals or point not in points):
                break
        points.append(point)
    return points


def call_args(exercise: dict[str, Any], point: dict[str, Number]) -> list[dict[str, Any]]:
    """The argument descriptions of one produce call at one point (see `probe.make_args`)."""
    args = []
    for arg in exercise["args"]:
        if arg.get("params"):
            args.append({"name": arg["name"], "tensor": {
                "value": _nest([point[p] for p in arg["params"]], list(arg["shape"])),
                "dtype": arg.get("dtype", "float32"), "requires_grad": bool(arg.get("requires_grad", True)),
                "grad": None}})
            continue
        value = point[arg["param"]]
        if arg.get("tensor", True):
            args.append({"name": arg["name"], "tensor": {
                "value": value, "dtype": arg.get("dtype", "float32"),
                "requires_grad": bool(arg.get("requires_grad", True)),
                "grad": point[arg["grad"]] if arg.get("grad") else None}})
        else:
            args.append({"name": arg["name"], "number": value})
    return args


def _nest(flat: list[Number], shape: list[int]) -> Any:
    """Row-major `flat` as nested lists of `shape` ([1, 2, 3, 4], [2, 2] -> [[1, 2], [3, 4]])."""
    if len(shape) <= 1:
        return flat
    step = len(flat) // shape[0]
    return [_nest(flat[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def probe_request(key: dict[str, Any], cells: list[str], student: str,
                  exercises: list[str] | None = None) -> dict[str, Any]:
    """Build the request the probe gets: cells to run, names to read, calls to make.

    Args:
        key: a key or public key (only its parameters, exercises, checks' prediction names and
            grading limits are read).
        cells: the source of each code cell, in order.
        student: the student id the parameters are drawn for.
        exercises: restrict to these exercise ids (None: all).
    Returns:
        A JSON-native dict; it contains no expected value.
    """
    points = points_for(key, student)
    wanted = [e for e in key["exercises"] if exercises is None or e["id"] in exercises]
    ids = {e["id"] for e in wanted}
    names = sorted({c["name"] for c in key["checks"] if c["kind"] == "predict" and c["exercise"] in ids})
    calls = [{"call": fn, "function": fn, "points": [{"args": call_args(e, p)} for p in points]}
             for e in wanted for fn in e["functions"]]
    g = key["grading"]
    return {"v": 1, "cells": cells, "names": names, "calls": calls,
            "parameters": points[0], "call_timeout": g["call_timeout"], "cell_timeout": g["cell_timeout"]}
