"""grade: one submission, end to end: read the notebook, resolve whose it is, build the probe request, run
it in the sandbox (again after a fatal call, for the calls after it), judge, and make the Report. Only
orchestration: the grading semantics are `judge`'s. Never raises for a student's fault; a fault of the
grader gives a "not graded" report that says so.

May import: stdlib, autograder (its version), autograder.model, autograder.plan, autograder.judge,
autograder.identity, autograder.notebook, autograder.report, autograder.sandbox, autograder.wire,
autograder.compare, autograder.analytic.
"""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from autograder import __version__, analytic, identity, judge, plan, sandbox, wire
from autograder.compare import short
from autograder.judge import Call, Evidence, RunEnd
from autograder.model import Key
from autograder.notebook import (NotebookError, code_cell_labels, code_cells, declared_assignment, declared_student_id,
                                 read_notebook)
from autograder.report import Report

MAX_NOTES = 20                       # notes kept per report (keeps a report small)
MIN_RERUN_SECONDS = 2.0              # a run again for the calls after a fatal one needs at least this much time
Rerun = Callable[[dict[str, Any], float], sandbox.ProbeRun]   # (request, wall seconds) -> a new probe run


def end_of(run: sandbox.ProbeRun) -> RunEnd:
    """How a probe run ended, as the judge reads it."""
    return RunEnd(run.exit_code, run.timed_out, run.results_cut)


def grade_notebook(path: str | Path, key: Key, student: str | None = None,
                   exercises: list[str] | None = None, conceal: list[str] | None = None,
                   worker: sandbox.Worker | None = None) -> Report:
    """Grade one submission notebook against `key`.

    Args:
        path: the .ipynb file. key: a full or public key.
        student: the id whose parameters are used; None: the notebook's STUDENT_ID, else the file name's
            stem (identity rule "self"). exercises: restrict to these exercise ids. conceal: folders the
            submission must not see (besides the working folder; see sandbox.Worker), used when no
            `worker` (a warm sandbox.Worker shared by a batch) is given.
    Returns:
        A Report: status "graded" with one Outcome per check, or "not_gradable" (score None) with the
        reason. Never raises: a fault of the grader itself becomes a "not_gradable" report that says so
        (no points). Every text of the report can be printed (`Report.encodable`).
    """
    start = time.monotonic()
    try:
        return _grade_notebook(Path(path), key, student, exercises, conceal, worker).encodable()
    except Exception as e:
        return _not_gradable(key, Path(path).name, student or Path(path).stem, _grader_fault(e), {}, start).encodable()


def _grade_notebook(path: Path, key: Key, student: str | None, exercises: list[str] | None,
                    conceal: list[str] | None, worker: sandbox.Worker | None) -> Report:
    start = time.monotonic()
    key = key.only(exercises)
    try:
        nb = read_notebook(path)
    except NotebookError as e:
        return _not_gradable(key, path.name, student or path.stem, str(e), {}, start)
    other = declared_assignment(nb)
    if other and other != key.assignment:
        return _not_gradable(key, path.name, student or path.stem,
                             f"this notebook is assignment {other!r}, not {key.assignment!r}: grade it with the key "
                             f"of {other!r} (a batch grades one assignment)", {}, start)
    declared = declared_student_id(nb)
    declared = declared and short(declared, 100)
    who = identity.resolve(path, key.notebook, key.assignment, declared, "given" if student is not None else "self",
                           student)
    request = plan.probe_request(key, code_cells(nb), who.student, exercises)

    def rerun(req: dict[str, Any], seconds: float) -> sandbox.ProbeRun:   # the key's limits, in the time left
        return sandbox.run_probe(req, key.limits.with_seconds(seconds), conceal, worker)
    try:
        run = sandbox.run_probe(request, key.limits, conceal, worker)
    except OSError as e:
        return _not_gradable(key, path.name, who.student, f"not graded: the grader could not start the sandbox ({e}); "
                             "this is not the student's fault", request["parameters"], start)
    return _finish(key, path.name, who.student, run, list(who.notes), start, code_cell_labels(nb), request, rerun)


def _first_unobserved(request: dict[str, Any], obs: wire.Observations) -> Call | None:
    """The call the probe was making when its run stopped: the first call of `request` without a
    record, once every cell ran and every name was read (else None: the run stopped before the calls)."""
    if obs.complete or len(obs.cells) < obs.cell_count or any(n not in obs.names for n in request["names"]):
        return None
    return next(((c["call"], p) for c in request["calls"] for p in range(len(c["points"]))
                 if (c["call"], p) not in obs.calls), None)


def _resume(key: Key, request: dict[str, Any], obs: wire.Observations, run: sandbox.ProbeRun,
            rerun: Rerun | None) -> tuple[wire.Observations, sandbox.ProbeRun, dict[Call, RunEnd], list[str]]:
    """A run that stopped during a produce call costs that function's checks only: the call is named
    (`stopped`), and when the process ended (not at the time limit) the notebook is run again, within
    what is left of the submission's time limit, for the functions after it.

    Returns the observations with the calls of the later runs added (never their names, cells or
    calls that were not asked for), the last run (it decides about calls never reached), the
    stopped calls and notes."""
    limit = float(key.limits.submission_timeout)
    stopped: dict[Call, RunEnd] = {}
    notes: list[str] = []
    calls, duplicated, rejected = dict(obs.calls), set(obs.duplicated), obs.rejected
    current, last, spent = request, run, run.seconds
    latest = obs
    while (culprit := _first_unobserved(current, latest)) is not None:
        stopped[culprit] = end_of(last)
        fn, p = culprit
        if last.timed_out or last.results_cut:
            notes.append(f"the {limit:g} s limit was reached while {fn} was running ({judge.point_label(p)})")
            break
        names = [c["call"] for c in current["calls"]]
        after = current["calls"][names.index(fn) + 1:]
        left = limit - spent
        again = rerun is not None and after and left >= MIN_RERUN_SECONDS
        notes.append(f"the process ended (exit code {last.exit_code}) while {fn} was running ({judge.point_label(p)})"
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


def _grader_fault(e: Exception) -> str:
    return (f"not graded: internal grader error ({type(e).__name__}: {short(str(e), 200)}); this is not the "
            f"student's fault: please report it")


def _versions(key: Key) -> dict[str, str]:
    return {"torch_key": key.torch_version, "sympy": analytic.sympy_version(), "grader": __version__}


def _not_gradable(key: Key, submission: str, student: str, reason: str, parameters: dict[str, Any],
                  start: float) -> Report:
    return Report(key.assignment, submission, student, "not_gradable", None, key.max_score, reason=reason,
                  parameters=parameters, versions=_versions(key), key_digest=key.digest,
                  seconds=round(time.monotonic() - start, 3))


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
        stopped: dict[Call, RunEnd] = {}
        resumed: list[str] = []
        if request is not None:
            obs, run, stopped, resumed = _resume(key, request, obs, run, rerun)
        outcomes = judge.outcomes(key, Evidence(obs, end_of(run), stopped), points)
    except Exception as e:  # a grader fault: say so, give no points, never blame the student
        return _not_gradable(key, submission, student, _grader_fault(e), points[0], start)
    notes = notes + judge.notes(key, Evidence(replace(first_obs, rejected=obs.rejected), end_of(first_run)), labels,
                                first_run.output_tail) + resumed
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"… and {len(notes) - MAX_NOTES} more notes"]
    hidden = key.hidden_checks.checks if key.hidden_checks else 0
    if key.public and hidden:
        notes.append(f"{hidden} hidden check(s) worth {key.hidden_checks.points:g} point(s) are graded later, "
                     f"not in this self-check")
    return Report(key.assignment, submission, student, "graded", float(sum(o.score for o in outcomes)), key.max_score,
                  outcomes, parameters=points[0], notes=tuple(notes), versions={"torch": obs.torch_version, **_versions(key)},
                  key_digest=key.digest, seconds=round(time.monotonic() - start, 3), isolation=run.isolation)


def report_from_results(key: Key, results: bytes, student: str, exercises: list[str] | None = None,
                        submission: str = "notebook (self-check)") -> Report:
    """Grade a results stream observed elsewhere (the in-notebook self-check observes in the
    student's kernel and sends the stream here, to a separate process that holds the key)."""
    key = key.only(exercises)
    run = sandbox.ProbeRun(results[: wire.MAX_RESULT_BYTES], "", 0, False, 0.0,
                           isolation="none: a self-check observes your code in your own notebook kernel")
    return _finish(key, submission, student, run, identity.notes(student, student), time.monotonic()).encodable()
