"""grade: submission -> sandboxed probe -> observations -> comparisons -> Report. Never raises for a
student's fault. Imports stdlib and autograder's analytic, compare, notebook, plan, report, sandbox
and wire; imports nothing the student wrote.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from autograder import __version__, analytic, plan, sandbox, wire
from autograder.compare import (Tolerance, compare_exception, compare_predicted, compare_produced, compare_warning,
                                short, show)
from autograder.notebook import (NotebookError, code_cell_labels, code_cells, declared_assignment, declared_student_id,
                                 read_notebook)
from autograder.report import Outcome, Report, Status

Key = dict[str, Any]
PLACEHOLDER_ID = plan.PLACEHOLDER_ID
TAMPERED = ("this result reached the grader twice: the submission wrote into the grader's results channel, "
            "so it cannot be trusted")
MAX_NOTES = 20                       # notes kept per report (keeps a report small)
MIN_RERUN_SECONDS = 2.0              # a run again for the calls after a fatal one needs at least this much time
Call = tuple[str, int]               # (produce function, point index)
Rerun = Callable[[dict[str, Any], float], sandbox.ProbeRun]   # (request, wall seconds) -> a new probe run


LIMIT_KEYS = ("submission_timeout", "call_timeout", "cell_timeout", "memory_mb", "processes", "output_mb", "disk_mb")


def limits_for(key: Key) -> sandbox.Limits:
    """Sandbox limits for one submission of this key's assignment (its [grading] table; a key made
    before a limit existed gets the default)."""
    from autograder.spec import Grading

    g = {**Grading().__dict__, **key["grading"]}
    wall = float(g["submission_timeout"])
    return sandbox.Limits(wall_seconds=wall, cpu_seconds=int(wall * 1.5) + 10, address_space=int(g["memory_mb"]) * 2**20,
                          file_size=int(g["output_mb"]) * 2**20, work_bytes=int(g["disk_mb"]) * 2**20,
                          processes=int(g["processes"]))


def with_limits(key: Key, overrides: dict[str, float]) -> Key:
    """`key` with some [grading] limits replaced (`grade --limit NAME=VALUE`); its digest is kept:
    limits change how long and how big a run may be, not what is expected.
    Raises ValueError for a name that is not in LIMIT_KEYS or a value that is not positive."""
    bad = sorted(set(overrides) - set(LIMIT_KEYS))
    if bad:
        raise ValueError(f"unknown limit(s) {', '.join(bad)}; known: {', '.join(LIMIT_KEYS)}")
    if any(not v > 0 for v in overrides.values()):
        raise ValueError("limits must be positive numbers")
    return {**key, "grading": {**key["grading"], **overrides}}


def _exercise(key: Key, eid: str) -> dict[str, Any]:
    return next(e for e in key["exercises"] if e["id"] == eid)


def _values(exercise: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    """Symbol -> value at a point: every parameter, and each argument name bound to its parameter."""
    values = dict(point)
    values.update({a["name"]: point[a["param"]] for a in exercise["args"] if a.get("param")})
    return values


def _arg_value(a: dict[str, Any], point: dict[str, Any]) -> Any:
    if a.get("params"):
        return plan._nest([point[p] for p in a["params"]], list(a["shape"]))
    return point[a["param"]]


def _where(exercise: dict[str, Any], point: dict[str, Any]) -> str:
    parts = [f"{a['name']}={_arg_value(a, point)}" for a in exercise["args"]]
    parts += [f"{a['name']}.grad preset to {point[a['grad']]}" for a in exercise["args"] if a.get("grad")]
    return ", ".join(parts)


def fill(form: dict[str, Any] | None, expect: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """The expected wire Value: the reference run's `form` with sympy's numbers at `values`.
    Without a form (predictions) numbers become floats and sequences tuples."""
    if "none" in expect:
        return {"t": "none"}
    if "bool" in expect:
        return {"t": "bool", "v": expect["bool"]}
    if "raises" in expect or "warns" in expect:
        return {"t": "class", "name": expect.get("raises") or expect["warns"]}
    if "seq" in expect:
        items = form["items"] if form else [None] * len(expect["seq"])
        return {"t": "seq", "kind": form["kind"] if form else "tuple",
                "items": [fill(f, e, values) for f, e in zip(items, expect["seq"], strict=True)]}
    nums = [wire.encode_float(x) for x in analytic.evaluate(expect["expr"], values.keys(), values)]
    if form is not None and form["t"] == "int" and len(nums) == 1:
        return {"t": "int", "v": int(round(float(nums[0])))}
    if form is None or form["t"] in ("float", "int"):
        if len(nums) == 1:
            if form is None and analytic.is_integer(expect["expr"], values.keys()):
                return {"t": "int", "v": int(round(float(nums[0])))}   # shown as 2, not 2.0
            return {"t": "float", "v": nums[0]}
        shape = [n for n in analytic.shape(expect["expr"], values.keys()) if n != 1] or [len(nums)]
        return {"t": "array", "dtype": "float64", "shape": shape, "data": nums}
    return {**form, "data": nums}


def _oracle(key: Key, check: dict[str, Any], where: str) -> str:
    ref = f"reference torch {key['torch_version']} run"
    e = check["expect"]
    if "raises" in e or "warns" in e:
        return f"{ref}; API contract"
    if check.get("convention"):
        return f"torch's convention, checked against the {ref}: {check['convention']}"
    items = [e] if "seq" not in e else e["seq"]
    if not any("expr" in i for i in items):
        return f"API contract; {ref} agrees"
    texts = [i["expr"] if "expr" in i else str(i["bool"]) if "bool" in i else "None" for i in items]
    shown = texts[0] if "seq" not in e else "(" + ", ".join(texts) + ("," if len(texts) == 1 else "") + ")"
    form = f"; form from {ref}" if check["kind"] == "produce" else ""
    return f"sympy: {short(shown, 160)} at {where}{form}"


def _tolerance(key: Key, check: dict[str, Any]):
    g = key["grading"]

    def tol(dtype: str) -> Tolerance:
        base = (g["float64_rtol"], g["float64_atol"]) if dtype == "float64" else (g["float32_rtol"], g["float32_atol"])
        return Tolerance(check.get("rtol") or base[0], check.get("atol") or base[1])
    return tol


class _Run:
    """What the probe run tells about checks it never reached. `stopped` maps a call to the run that
    stopped while making it (the process ended, or the submission's time limit was reached)."""

    def __init__(self, obs: wire.Observations, run: sandbox.ProbeRun, limit: float,
                 stopped: dict[Call, sandbox.ProbeRun] | None = None) -> None:
        self.obs, self.run, self.limit, self.stopped = obs, run, limit, stopped or {}

    def stopped_in(self, call: Call, call_text: str, where: str) -> tuple[Status, str] | None:
        """The outcome of a call during which the run stopped, or None."""
        run = self.stopped.get(call)
        if run is None:
            return None
        label = _point_label(call[1])
        if run.timed_out:
            return "timeout", (f"{call_text} was still running at {where} ({label}) when the submission's "
                               f"{self.limit:g} s limit was reached")
        return "error", (f"the submission's process ended (exit code {run.exit_code}) while {call_text} was running "
                         f"at {where} ({label})")

    def unreached(self) -> tuple[Status, str]:
        if self.run.results_cut:
            return "error", (f"the submission wrote more than {wire.MAX_RESULT_BYTES // 10**6} MB of results, "
                             f"so the grader stopped reading before this check")
        if self.run.timed_out:
            return "timeout", f"the submission ran past its {self.limit:g} s limit before this check was reached"
        return "error", f"the submission's process ended (exit code {self.run.exit_code}) before this check ran"


def _point_label(p: int) -> str:
    return "your point" if p == 0 else f"fresh point {p}"


def _predict(key: Key, check: dict[str, Any], r: _Run, point: dict[str, Any]) -> Outcome:
    ex = _exercise(key, check["exercise"])
    base = Outcome(check["id"], check["exercise"], check["title"], "predict", "passed", 0.0, check["points"],
                   check["visibility"], why=check["why"])
    value = r.obs.names.get(check["name"])
    if check["name"] in r.obs.duplicated:
        return replace(base, status="error", message=TAMPERED)
    if value is None:
        status, msg = r.unreached()
        return replace(base, status=status, message=msg)
    if value["t"] in ("undefined", "ellipsis"):
        state = "is not defined" if value["t"] == "undefined" else "is still ..."
        return replace(base, status="missing", message=f"{check['name']} {state}: write your prediction")
    expected = fill(None, check["expect"], _values(ex, point))
    tol = Tolerance(check.get("rtol") or key["grading"]["predict_rtol"], check.get("atol") or key["grading"]["predict_atol"])
    c = compare_predicted(expected, value, tol)
    oracle = _oracle(key, check, _where(ex, point))
    base = replace(base, convention=_convention(key, check, _values(ex, point), show(expected)),
                   version_note=_version_note(key, check, r.obs.torch_version))
    if c.ok:
        return replace(base, score=check["points"], message=f"{check['name']} = {show(value)}",
                       expected=show(expected), oracle=oracle, observed=show(value))
    return replace(base, status="failed", message=f"{check['name']}: {c.detail}", expected=show(expected),
                   oracle=oracle, observed=show(value))


def _convention(key: Key, check: dict[str, Any], values: dict[str, Any], torch_value: str) -> str | None:
    """For a convention check: the convention's name, torch's value (graded) and sympy's value under
    the stated formulation (shown, never graded)."""
    if not check.get("convention"):
        return None
    try:
        nums = analytic.evaluate(check["sympy"], values.keys(), values)
        sympy_value = show({"t": "float", "v": wire.encode_float(nums[0])}) if len(nums) == 1 else \
            "[" + ", ".join(show({"t": "float", "v": wire.encode_float(n)}) for n in nums) + "]"
    except (ValueError, TypeError) as e:
        sympy_value = f"no number ({short(str(e), 100)})"
    return (f"{check['convention']} — torch {key['torch_version']} gives {torch_value}; sympy's "
            f"{check['sympy']} gives {sympy_value}. Graded against torch's value; sympy's is shown for comparison.")


def _version_note(key: Key, check: dict[str, Any], run_version: str) -> str | None:
    """A version-sensitive check graded on another torch than the one it was observed on is flagged."""
    observed_on = key.get("torch_observed") or key["torch_version"]
    if not check.get("version_sensitive") or run_version == observed_on:
        return None
    return (f"version-sensitive: this behaviour was observed on torch {observed_on}, and this run used torch "
            f"{run_version}; if it changed, the check may be wrong, not you")


def _warning_line(w: dict[str, str]) -> str:
    message = w["message"].split(" (Triggered internally at")[0]
    return f"{w['category']}: {short(message, 300)}"


def _produce(key: Key, check: dict[str, Any], r: _Run, points: list[dict[str, Any]], warned: set[str]) -> Outcome:
    """Grade one produce check at every point; the first point that fails decides. A function's
    warnings (information, never a failure) are shown once, on its first check (`warned`)."""
    ex = _exercise(key, check["exercise"])
    fn, target = check["function"], check["observe"]
    call_text = f"{fn}({', '.join(a['name'] for a in ex['args'])})"
    what = "returned by " + call_text if target == "returned" else f"{target} after {call_text}"
    base = Outcome(check["id"], check["exercise"], check["title"], "produce", "passed", 0.0, check["points"],
                   check["visibility"], why=check["why"])
    warnings_seen: list[str] = []
    first: Outcome | None = None
    for p, point in enumerate(points):
        where = _where(ex, point)
        label = _point_label(p)
        rec = r.obs.calls.get((fn, p))
        if (fn, p) in r.obs.duplicated:
            return replace(base, status="error", message=TAMPERED)
        if rec is None:
            status, msg = r.stopped_in((fn, p), call_text, where) or r.unreached()
            return replace(base, status=status, message=msg)
        if p == 0 and fn not in warned:
            warned.add(fn)
            warnings_seen = list(dict.fromkeys(_warning_line(w) for w in rec.warnings))
        if rec.status == "undefined":
            return replace(base, status="missing", message=f"{fn} is not defined: run its cell, or check its name")
        if rec.status == "raised" and rec.exception and rec.exception["type"] == "NotImplementedError":
            return replace(base, status="missing", message=f"{fn} is not written yet (it raises NotImplementedError)")
        if rec.status in ("timeout", "skipped"):
            return replace(base, status="timeout",
                           message=f"{call_text} did not return within {key['grading']['call_timeout']:g} s at {where}")
        expect = check["expect"]
        if p == 0:
            base = replace(base, version_note=_version_note(key, check, r.obs.torch_version))
        if "warns" in expect:
            c = compare_warning(expect, rec.warnings)
            expected_text = f"{expect['warns']} whose message contains {expect['phrase']!r}"
            observed_text = "; ".join(_warning_line(w) for w in rec.warnings[:3]) or "no warning"
        elif "raises" in expect:
            ref_exc = (check.get("reference") or {}).get("exception") or {}
            ref_origin = ref_exc.get("origin", "")
            c = compare_exception(expect, rec.exception if rec.status == "raised" else None,
                                  library=ref_origin.split(".")[0] if ref_origin.startswith("torch") else "",
                                  called=not ref_origin.startswith("torch") and ref_exc.get("statement") is False)
            expected_text = f"{expect['raises']} whose message contains {expect['phrase']!r}"
            ref = check.get("reference") or {}
            observed_text = (f"{rec.exception['type']}: {short(rec.exception['message'], 200)}" if rec.status == "raised"
                             else f"returned {show(rec.returned)}")
            if ref.get("exception"):
                expected_text += f" (reference run raised {ref['exception']['type']}: {short(ref['exception']['message'], 120)})"
        else:
            if rec.status == "raised":
                e = rec.exception or {"type": "?", "message": ""}
                return replace(base, status="error", message=f"{call_text} raised {e['type']} at {where}: {short(e['message'], 300)}",
                               observed=f"{e['type']}: {short(e['message'], 300)}")
            observed = rec.returned if target == "returned" else rec.tensors.get(target.split(".")[0], {}).get("grad")
            if observed is None:
                return replace(base, status="error", message=f"{target} was not observed")
            expected = fill(check.get("form"), expect, _values(ex, point))
            c = compare_produced(expected, observed, _tolerance(key, check))
            expected_text, observed_text = show(expected), show(observed)
            if p == 0:
                base = replace(base, convention=_convention(key, check, _values(ex, point), expected_text))
        if c.ok:
            if p == 0:
                first = replace(base, score=check["points"], message=f"{what} at {where}: {observed_text}",
                                expected=expected_text, oracle=_oracle(key, check, where), observed=observed_text)
            continue
        hint = ("" if p == 0 else
                f" — it is right at your own point but not at {label}: is a number hard-coded, or is the code "
                f"right only at some points?" if first else "")
        return replace(base, status="failed", message=f"{what} at {where} ({label}): {c.detail}{hint}",
                       expected=expected_text, oracle=_oracle(key, check, where), observed=observed_text,
                       details=tuple(f"warning (information, not graded): {w}" for w in warnings_seen))
    assert first is not None
    return replace(first, details=tuple(f"warning (information, not graded): {w}" for w in warnings_seen))


def _for_report(o: Outcome) -> Outcome:
    if o.visibility == "public":   # keep a report small whatever a submission returns
        return replace(o, message=short(o.message, 1000), observed=o.observed and short(o.observed, 1000),
                       expected=o.expected and short(o.expected, 1000))
    return replace(o, message=o.status, expected=None, oracle=None, observed=None, why=None, details=(),
                   convention=None)


def outcomes_for(key: Key, obs: wire.Observations, run: sandbox.ProbeRun, student: str,
                 stopped: dict[Call, sandbox.ProbeRun] | None = None) -> tuple[Outcome, ...]:
    """Compare every check of `key` present in `obs`' request with its expectation at the
    student's points (`stopped`: see `_resume`). Pure but for sympy evaluation; never raises for a
    student's fault."""
    points = plan.points_for(key, student)
    r = _Run(obs, run, float(key["grading"]["submission_timeout"]), stopped)
    out = []
    warned: set[str] = set()
    for check in key["checks"]:
        o = (_predict(key, check, r, points[0]) if check["kind"] == "predict"
             else _produce(key, check, r, points, warned))
        out.append(_for_report(o))
    return tuple(out)


def _notes(obs: wire.Observations, run: sandbox.ProbeRun, key: Key, labels: tuple[str, ...] | list[str]) -> list[str]:
    label = lambda i: labels[i] if i < len(labels) else f"code cell {i + 1}"
    notes = []
    for cell in obs.cells:
        if cell.status == "error":
            notes.append(f"{label(cell.index)} raised {cell.ename}: {short(cell.evalue, 200)}")
        elif cell.status == "timeout":
            notes.append(f"{label(cell.index)} ran past {key['grading']['cell_timeout']:g} s and was stopped")
    if not obs.complete and not run.results_cut and len(obs.cells) < obs.cell_count:
        how = (f"the {key['grading']['submission_timeout']:g} s limit was reached" if run.timed_out
               else f"the process ended (exit code {run.exit_code})")
        tail = " ".join(run.output_tail.strip().splitlines()[-3:])
        notes.append(f"{how} while {label(len(obs.cells))} was running" + (f"; its last output: {short(tail, 300)}" if tail else ""))
    if obs.rejected:
        notes.append(f"{obs.rejected} line(s) in the results channel were not written by the grader's probe "
                     f"and were ignored")
    if obs.torch_version != key["torch_version"]:
        notes.append(f"this run used torch {obs.torch_version}, but the key was observed on torch "
                     f"{key['torch_version']}: version-sensitive checks may differ")
    return notes


def grade_notebook(path: str | Path, key: Key, student: str | None = None,
                   exercises: list[str] | None = None, hidden: list[str] | None = None,
                   worker: sandbox.Worker | None = None) -> Report:
    """Grade one submission notebook against `key`; see `_grade_notebook`. A fault of the grader
    itself becomes a "not_gradable" report that says so (no points), never an exception. Every text
    of the report can be printed (`Report.encodable`)."""
    start = time.monotonic()
    try:
        return _grade_notebook(path, key, student, exercises, hidden, worker).encodable()
    except Exception as e:
        return _not_gradable(key, Path(path).name, student or Path(path).stem, _grader_fault(e), {}, start).encodable()


def _grade_notebook(path: str | Path, key: Key, student: str | None, exercises: list[str] | None,
                    hidden: list[str] | None, worker: sandbox.Worker | None) -> Report:
    """Grade one submission notebook against `key`.

    Args:
        path: the .ipynb file. key: a key or public key (dict, see key.py).
        student: the id whose parameters are used; None: the notebook's STUDENT_ID, else the
            file name's stem. exercises: restrict to these exercise ids. hidden: folders the
            submission must not see (besides the working folder; see sandbox.Worker), used when
            no `worker` (a warm sandbox.Worker shared by a batch) is given.
    Returns:
        A Report: status "graded" with one Outcome per check, or "not_gradable" (score None)
        with the reason. Never raises for anything in the submission.
    """
    start = time.monotonic()
    path = Path(path)
    key = _only(key, exercises)
    try:
        nb = read_notebook(path)
    except NotebookError as e:
        return _not_gradable(key, path.name, student or path.stem, str(e), {}, start)
    other = declared_assignment(nb)
    if other and other != key["assignment"]:
        return _not_gradable(key, path.name, student or path.stem,
                             f"this notebook is assignment {other!r}, not {key['assignment']!r}: grade it with the key "
                             f"of {other!r} (a batch grades one assignment)", {}, start)
    declared = declared_student_id(nb)
    declared = declared and short(declared, 100)
    if student is None:
        student = declared or path.stem
    notes = _id_notes(declared, student)
    request = plan.probe_request(key, code_cells(nb), student, exercises)

    def rerun(req: dict[str, Any], seconds: float) -> sandbox.ProbeRun:   # the key's limits, in the time left
        return sandbox.run_probe(req, replace(limits_for(key), wall_seconds=seconds, cpu_seconds=int(seconds * 1.5) + 10),
                                 hidden, worker)
    try:
        run = sandbox.run_probe(request, limits_for(key), hidden, worker)
    except OSError as e:
        return _not_gradable(key, path.name, student, f"not graded: the grader could not start the sandbox ({e}); "
                             "this is not the student's fault", request["parameters"], start)
    return _finish(key, path.name, student, run, notes, start, code_cell_labels(nb), request, rerun)


def _first_unobserved(request: dict[str, Any], obs: wire.Observations) -> Call | None:
    """The call the probe was making when its run stopped: the first call of `request` without a
    record, once every cell ran and every name was read (else None: the run stopped before the calls)."""
    if obs.complete or len(obs.cells) < obs.cell_count or any(n not in obs.names for n in request["names"]):
        return None
    return next(((c["call"], p) for c in request["calls"] for p in range(len(c["points"]))
                 if (c["call"], p) not in obs.calls), None)


def _resume(key: Key, request: dict[str, Any], obs: wire.Observations, run: sandbox.ProbeRun,
            rerun: Rerun | None) -> tuple[wire.Observations, sandbox.ProbeRun, dict[Call, sandbox.ProbeRun], list[str]]:
    """A run that stopped during a produce call costs that function's checks only: the call is named
    (`stopped`), and when the process ended (not at the time limit) the notebook is run again, within
    what is left of the submission's time limit, for the functions after it.

    Returns the observations with the calls of the later runs added (never their names, cells or
    calls that were not asked for), the last run (it decides about calls never reached), the
    stopped calls and notes."""
    limit = float(key["grading"]["submission_timeout"])
    stopped: dict[Call, sandbox.ProbeRun] = {}
    notes: list[str] = []
    calls, duplicated, rejected = dict(obs.calls), set(obs.duplicated), obs.rejected
    current, last, spent = request, run, run.seconds
    latest = obs
    while (culprit := _first_unobserved(current, latest)) is not None:
        stopped[culprit] = last
        fn, p = culprit
        if last.timed_out or last.results_cut:
            notes.append(f"the {limit:g} s limit was reached while {fn} was running ({_point_label(p)})")
            break
        names = [c["call"] for c in current["calls"]]
        after = current["calls"][names.index(fn) + 1:]
        left = limit - spent
        again = rerun is not None and after and left >= MIN_RERUN_SECONDS
        notes.append(f"the process ended (exit code {last.exit_code}) while {fn} was running ({_point_label(p)})"
                     + ("; the notebook was run again to call the functions after it" if again else ""))
        if not again:
            break
        current = {**request, "names": [], "calls": after}
        last = rerun(current, left)
        spent += last.seconds
        try:
            latest = wire.parse_results(last.results)
        except wire.WireError:
            break
        wanted = {(c["call"], q) for c in after for q in range(len(c["points"]))}
        calls.update({k: v for k, v in latest.calls.items() if k in wanted})
        duplicated |= {d for d in latest.duplicated if d in wanted}
        rejected += latest.rejected
    return replace(obs, calls=calls, duplicated=frozenset(duplicated), rejected=rejected), last, stopped, notes


def _id_notes(declared: str | None, student: str) -> list[str]:
    if declared == PLACEHOLDER_ID:
        return [f"STUDENT_ID is still {PLACEHOLDER_ID!r}: set it to the id your course gave you, so that your "
                f"parameters are your own" + (f" (graded as {student!r})" if student != declared else "")]
    if declared and declared != student:
        return [f"the notebook says STUDENT_ID = {declared!r}, but it was graded as {student!r} (with the "
                f"parameters of {student!r})"]
    return []


def _only(key: Key, exercises: list[str] | None) -> Key:
    """The key restricted to the checks of `exercises` (None: all)."""
    return key if exercises is None else {**key, "checks": [c for c in key["checks"] if c["exercise"] in exercises]}


def _grader_fault(e: Exception) -> str:
    return (f"not graded: internal grader error ({type(e).__name__}: {short(str(e), 200)}); this is not the "
            f"student's fault: please report it")


def _versions(key: Key) -> dict[str, str]:
    return {"torch_key": key["torch_version"], "sympy": analytic.sympy_version(), "grader": __version__}


def _not_gradable(key: Key, submission: str, student: str, reason: str, parameters: dict[str, Any],
                  start: float) -> Report:
    return Report(key["assignment"], submission, student, "not_gradable", None,
                  float(sum(c["points"] for c in key["checks"])), reason=reason, parameters=parameters,
                  versions=_versions(key), key_digest=key["digest"], seconds=round(time.monotonic() - start, 3))


def _finish(key: Key, submission: str, student: str, run: sandbox.ProbeRun, notes: list[str], start: float,
            labels: tuple[str, ...] | list[str] = (), request: dict[str, Any] | None = None,
            rerun: Rerun | None = None) -> Report:
    points = plan.points_for(key, student)
    try:
        obs = wire.parse_results(run.results)
    except wire.WireError as e:
        why = ("the sandboxed run ended before it started the notebook" if not run.results else f"its results were malformed ({e})")
        return _not_gradable(key, submission, student, f"not graded: {why}; exit code {run.exit_code}. "
                             f"Output: {run.output_tail[-400:]}", points[0], start)
    try:
        first_obs, first_run = obs, run
        stopped: dict[Call, sandbox.ProbeRun] = {}
        resumed: list[str] = []
        if request is not None:
            obs, run, stopped, resumed = _resume(key, request, obs, run, rerun)
        outcomes = outcomes_for(key, obs, run, student, stopped)
    except Exception as e:  # a grader fault: say so, give no points, never blame the student
        return _not_gradable(key, submission, student, _grader_fault(e), points[0], start)
    notes = notes + _notes(replace(first_obs, rejected=obs.rejected), first_run, key, labels) + resumed
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"… and {len(notes) - MAX_NOTES} more notes"]
    hidden = key.get("hidden", {}).get("checks", 0)
    if key.get("public") and hidden:
        notes.append(f"{hidden} hidden check(s) worth {key['hidden']['points']:g} point(s) are graded later, "
                     f"not in this self-check")
    return Report(key["assignment"], submission, student, "graded",
                  float(sum(o.score for o in outcomes)), float(sum(c["points"] for c in key["checks"])), outcomes,
                  parameters=points[0], notes=tuple(notes), versions={"torch": obs.torch_version, **_versions(key)},
                  key_digest=key["digest"], seconds=round(time.monotonic() - start, 3), isolation=run.isolation)


def report_from_results(key: Key, results: bytes, student: str, exercises: list[str] | None = None,
                        submission: str = "notebook (self-check)") -> Report:
    """Grade a results stream observed elsewhere (the in-notebook self-check observes in the
    student's kernel and sends the stream here, to a separate process that holds the key)."""
    key = _only(key, exercises)
    run = sandbox.ProbeRun(results[: wire.MAX_RESULT_BYTES], "", 0, False, 0.0,
                           isolation="none: a self-check observes your code in your own notebook kernel")
    return _finish(key, submission, student, run, _id_notes(student, student), time.monotonic()).encodable()
