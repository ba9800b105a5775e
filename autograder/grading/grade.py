"""grade: one submission, end to end: read the notebook, resolve whose it is, build the probe request, run
it in the sandbox (again after a fatal call, for the calls after it), judge, and make the Report. Only
orchestration: the grading semantics are `judge`'s. Never raises for a student's fault; a fault of the
grader gives a "not graded" report that says so.

May import: stdlib, autograder.version, autograder.model, autograder.grading.plan, autograder.judging.judge,
autograder.judging.commit, autograder.grading.identity, autograder.grading.intake, autograder.judging.sources, autograder.grading.notebook,
autograder.report, autograder.sandbox.client, autograder.wire, autograder.judging.compare,
autograder.judging.analytic, autograder.judging.worked (its time for a request), autograder.profile.
"""
from __future__ import annotations

import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from autograder import profile, wire
from autograder.version import __version__
from autograder.judging import analytic, commit, judge, sources, worked
from autograder.grading import identity, intake, plan
from autograder.sandbox import client as sandbox
from autograder.judging.compare import short
from autograder.judging.judge import Evidence, RunEnd
from autograder.model import Key, student_key
from autograder.grading.notebook import (METADATA_KEY, NotebookError, prepare_reading, code_beyond_reading, code_cell_labels, code_cells,
                                        declared_assignment, declared_student_id, parse_notebook, restore_cell_types)
from autograder.report import Report, installed_torch

MAX_NOTES = 20                       # notes kept per report (keeps a report small)
SELF_STUDY = ("self-study: predictions are on your honour (the commit records are this notebook's own; in a graded "
              "course, the course service records them)")   # the last note of every report judged with a public key
MIN_RERUN_SECONDS = 2.0              # a run again for the calls after a fatal one needs at least this much time
Rerun = Callable[[dict[str, Any], float], sandbox.ProbeRun]   # (request, wall seconds) -> a new probe run


def prepare_grading(key: Key) -> None:
    """Import nbformat and sympy and parse and compile the key's answer expressions now (all cached), for a caller
    that has time to spare while the sandbox's worker imports torch (`autograder check`, and `grade` before its
    batch: otherwise its first submissions pay about 0.3 s for them, one at a time, after the worker is ready)."""
    prepare_reading()
    point = plan.draw_point(key.parameters, key.assignment, "", "own")
    for check in key.checks:
        values = key.exercise(check.exercise).values(point)
        for text in judge.expressions(check):
            try:
                analytic.evaluate(text, values.keys(), values)
            except (ValueError, TypeError, ArithmeticError):   # judging says so, in its own words
                pass


def end_of(run: sandbox.ProbeRun) -> RunEnd:
    """How a probe run ended, as the judge reads it."""
    return RunEnd(run.exit_code, run.timed_out, run.results_cut, run.stalled, run.over_memory)


def grade_notebook(path: str | Path, key: Key, student: str | None = None,
                   exercises: list[str] | None = None, conceal: list[str] | None = None,
                   worker: sandbox.Worker | None = None, source: identity.Source | None = None,
                   selfcheck: bool = False, data: bytes | None = None,
                   course_commits: dict[str, list[dict[str, Any]]] | None = None) -> Report:
    """Grade one submission notebook against `key`.

    Args:
        path: the .ipynb file (with `data`: only its name, never opened). data: the file's bytes, as the intake
            read them (a batch, Dask, Gradescope, nbgrader); without it the file is read through the intake
            (`intake.given`: a link or a special file is not read). key: a full or public key.
        student: the id whose parameters are used; None: the notebook's STUDENT_ID, else the file name's
            stem (identity rule "self"). source: where a batch found the submission, and the identity rule
            its id is found by (instead of `student`). exercises: restrict to these exercise ids. conceal:
            folders the submission must not see (besides the working folder; see sandbox.Worker), used
            when no `worker` (a warm sandbox.Worker shared by a batch) is given. selfcheck: a learner's
            `autograder check`: commit records are also read from (and new ones written to) the Store beside
            the notebook, and an exercise whose predictions are not committed shows no expected value.
        course_commits: a course's batch: student -> the commit records the course service holds (`grade
            --service`); they are the only records read (the notebook's own are evidence the course outranks).
    Returns:
        A Report: status "graded" with one Outcome per check, or "not_gradable" (score None) with the
        reason. Never raises: a fault of the grader itself becomes a "not_gradable" report that says so
        (no points). Every text of the report can be printed (`Report.encodable`).
    """
    start = time.monotonic()
    try:
        report = _grade_notebook(Path(path), key, student, exercises, conceal, worker, source, selfcheck, data,
                                 course_commits)
        with profile.stage("report: encodable"):
            return report.encodable()
    except Exception as e:
        return _not_gradable(key, Path(path).name, student or intake.notebook_stem(Path(path).name), grader_fault(e), {}, start).encodable()


def _grade_notebook(path: Path, key: Key, student: str | None, exercises: list[str] | None,
                    conceal: list[str] | None, worker: sandbox.Worker | None,
                    source: identity.Source | None, selfcheck: bool = False, data: bytes | None = None,
                    course_commits: dict[str, list[dict[str, Any]]] | None = None) -> Report:
    start = time.monotonic()
    key = key.only(exercises)
    if student is None and source is not None:   # before the notebook is read: by the rules, without STUDENT_ID
        student = identity.resolve(source, key.notebook, key.assignment, None).student
    try:
        with profile.stage("notebook: read and validate"):
            if data is None:
                data = intake.read(intake.given(path))
            nb = parse_notebook(data, path.name, outputs=False)
            restored = restore_cell_types(nb)
    except (NotebookError, intake.Refused) as e:
        return _not_gradable(key, path.name, student or intake.notebook_stem(path.name), str(e), {}, start)
    salt = plan.submission_salt(data) if key.fresh_seed else ""
    other = declared_assignment(nb)
    if other and other != key.assignment:
        return _not_gradable(key, path.name, student or intake.notebook_stem(path.name),
                             f"this notebook is assignment {other!r}, not {key.assignment!r}: grade it with the key "
                             f"of {other!r} (a batch grades one assignment)", {}, start)
    declared = declared_student_id(nb)
    declared = declared and short(declared, 100)
    if source is None:
        source = identity.Source(path, None, "given" if student is not None else "self", student)
    who = identity.resolve(source, key.notebook, key.assignment, declared)
    if who.problem:
        return _not_gradable(key, path.name, who.student, who.problem, {}, start)
    with profile.stage("notebook: cells' syntax trees"):
        cells = code_cells(nb)
        too_much = code_beyond_reading(cells)
        if too_much:   # the grader reads the code as syntax trees, on the host: within bounds, or not at all
            return _not_gradable(key, path.name, who.student, f"{path.name} {too_much}", {}, start)
        facts = sources.Facts.of(cells)
        positions = facts.positions(key, exercises)
    with profile.stage("request"):
        request = plan.probe_request(key, cells, who.student, exercises, {e: p.after for e, p in positions.items()},
                                     salt=salt)
    if profile.enabled():
        request["profile"] = {}

    def run(req: dict[str, Any], seconds: float) -> sandbox.ProbeRun:   # the key's limits, in the time left
        with profile.stage("sandbox"):
            return sandbox.run_probe(req, key.limits.with_seconds(seconds), conceal, worker)
    try:
        first = run(request, key.limits.submission_timeout)
    except OSError as e:
        return _not_gradable(key, path.name, who.student, f"not graded: the grader could not start the sandbox ({e}); "
                             "this is not the student's fault", request["parameters"], start)
    with profile.stage("commit records"):
        if course_commits is not None:   # the course's records, never the notebook's own
            records = [r for r in map(commit.read, course_commits.get(student_key(who.student), [])) if r is not None]
            store = None
        else:
            records = commit.in_notebook(nb)
            store = commit.Store(path.parent) if selfcheck else None
        if store is not None:
            records += [r for ex in key.exercises if (r := commit.read(store.get(key.assignment, who.student, ex.id)))]
        commits = commit.choose(records, key.assignment, who.student)
    released, released_note = released_with(nb, key)
    meta = nb.get("metadata") if isinstance(nb, dict) else None
    meta = meta.get(METADATA_KEY) if isinstance(meta, dict) else None
    handed_out = meta.get("course") if isinstance(meta, dict) else None   # the student's text: a note, never a point
    if course_commits is None and isinstance(handed_out, str) and handed_out:   # a course's notebook, graded alone
        released_note = [*released_note, f"this notebook was handed out by the course service at "
                                         f"{short(handed_out, 100)}: grade it with --service, which holds its commits "
                                         f"(here its own records were read, which a student can edit)"]
    report = _finish(key, path.name, who.student, first, [*who.notes, *intake.saved_as_note(path.name), *restored, *released_note], start,
                     code_cell_labels(nb), request, run, facts, positions, commits=commits, seal=selfcheck, salt=salt,
                     course_commits=course_commits is not None)
    return replace(report, released_key=released) if released and report.status == "graded" else report


def released_with(nb: Any, key: Key) -> tuple[str, list[str]]:
    """The key digest the notebook says it was released with, when it is not `key`'s ("" otherwise), and the note
    that says so: the assignment was released again since (its numbers or checks may differ from those the student
    worked with). The notebook's metadata is the student's text: it adds a note and a gradebook column, never a
    point."""
    meta = nb.get("metadata", {}).get(METADATA_KEY, {})
    recorded = meta.get("key_digest") if isinstance(meta, dict) else None
    if not (isinstance(recorded, str) and re.fullmatch(r"[0-9a-f]{16}", recorded)) or recorded == key.digest:
        return "", []
    return recorded, [f"this notebook was released with key {recorded}, and it is graded with key {key.digest}: the "
                      f"assignment was released again since, so its parameters or checks may differ from those the "
                      f"student worked with"]


Step = tuple   # ("cell", i) | ("name", name) | ("call", function, point)


def _steps(request: dict[str, Any]) -> list[Step]:
    """The steps of a request in the order the probe takes them: each code cell, and after it the names
    and calls of the exercises observed there."""
    out: list[Step] = []
    for i in range(-1, len(request["cells"])):
        if i >= 0:
            out.append(("cell", i))
        for entry in request["observe"]:
            if entry["after"] == i:
                out += [("name", n) for n in entry["names"]]
                out += [("call", c["call"], p) for c in entry["calls"] for p in range(len(c["points"]))]
    return out


def _culprit(request: dict[str, Any], obs: wire.Observations) -> Step | None:
    """The step a run that stopped was taking: the first step of `request` the results do not report
    (None when the run finished)."""
    if obs.complete:
        return None
    seen_cells = {c.index for c in obs.cells}
    for step in _steps(request):
        done = (step[1] in seen_cells if step[0] == "cell" else step[1] in obs.names if step[0] == "name"
                else (step[1], step[2]) in obs.calls)
        if not done:
            return step
    return None


def _rest(request: dict[str, Any], culprit: Step, obs: wire.Observations, end: RunEnd) -> dict[str, Any]:
    """The request for a run again after `culprit` ended a run: the culprit cell is skipped; names and calls
    already reported, and the culprit call's function, are not asked for again."""
    skip = dict(request["skip"])
    if culprit[0] == "cell":
        skip[str(culprit[1])] = "this cell ended an earlier run of this notebook, so it was not run again"
    observe = []
    for entry in request["observe"]:
        names = [n for n in entry["names"] if n not in obs.names and ("name", n) != culprit]
        calls = []
        for c in entry["calls"]:
            if culprit[0] == "call" and c["call"] == culprit[1]:
                continue   # its later points are not retried: one fatal call is enough
            if all((c["call"], p) in obs.calls for p in range(len(c["points"]))):
                continue
            calls.append(c)
        if names or calls:
            observe.append({**entry, "names": names, "calls": calls})
    return {**request, "skip": skip, "observe": observe}


def _attempts(key: Key, request: dict[str, Any], obs: wire.Observations, run: sandbox.ProbeRun,
              rerun: Rerun | None, labels: tuple[str, ...] | list[str] = ()
              ) -> tuple[wire.Observations, sandbox.ProbeRun, dict[Step, RunEnd], list[str]]:
    """A run that stopped during one step (a cell, reading a prediction, a call: the process ended, the
    worker stopped a step that outlasted its alarm, or the run outgrew its memory budget) costs that step
    only: the step is named (`stopped`), and the notebook is run again, within what is left of the
    submission's time limit, without it, for what was not observed yet. A run stopped at the
    submission's own time limit is not run again.

    Returns the merged observations (each later run adds the names and calls it was asked for, and its
    cell records), the last run (it decides about steps never reached), the stopped steps and notes."""
    limit = float(key.limits.submission_timeout)
    stopped: dict[Step, RunEnd] = {}
    notes: list[str] = []
    cells = {c.index: c for c in obs.cells}
    names, calls, duplicated, rejected = dict(obs.names), dict(obs.calls), set(obs.duplicated), obs.rejected
    current, last, spent, latest = request, run, run.seconds, obs
    while (culprit := _culprit(current, latest)) is not None:
        end = end_of(last)
        stopped[culprit] = end
        what = (f"during {labels[culprit[1]] if culprit[1] < len(labels) else f'code cell {culprit[1] + 1}'}"
                if culprit[0] == "cell" else f"while reading {culprit[1]}"
                if culprit[0] == "name" else f"while {culprit[1]} was running ({judge.point_label(culprit[2])})")
        tail = " ".join(last.output_tail.strip().splitlines()[-3:])
        tail = f"; its last output: {short(tail, 300)}" if tail and not key.fresh_seed else ""   # graded: what it
        # printed may show the fresh points (judge.FRESH_HIDDEN), so a graded report keeps none of it
        if last.results_cut:
            notes.append(f"the submission wrote more than {wire.MAX_RESULT_BYTES // 10**6} MB of results {what}, so "
                         f"the grader stopped reading")
            break
        if last.timed_out:
            notes.append(f"the {limit:g} s limit was reached {what}{tail}")
            break
        left = limit - spent
        following = _rest(current, culprit, latest, end)
        more = rerun is not None and left >= MIN_RERUN_SECONDS and (
            following["observe"] or culprit[0] != "cell")
        notes.append(f"the run ended {what}: {judge.how_it_ended(end, key.limits)}{tail}"
                     + ("; the notebook was run again without it for what came after" if more else ""))
        if not more:
            break
        current = following
        last = rerun(current, left)
        spent += last.seconds
        try:
            latest = wire.parse_results(last.results)
        except wire.WireError:
            break
        wanted_names = {n for e in current["observe"] for n in e["names"]}
        wanted_calls = {(c["call"], q) for e in current["observe"] for c in e["calls"] for q in range(len(c["points"]))}
        cells.update({c.index: c for c in latest.cells})
        names.update({k: v for k, v in latest.names.items() if k in wanted_names})
        calls.update({k: v for k, v in latest.calls.items() if k in wanted_calls})
        duplicated |= {d for d in latest.duplicated if d in wanted_names or d in wanted_calls}
        rejected += latest.rejected
    merged = replace(obs, cells=tuple(cells[i] for i in sorted(cells)), names=names, calls=calls,
                     duplicated=frozenset(duplicated), rejected=rejected)
    return merged, last, stopped, notes


def _cell_faults(key: Key, obs: wire.Observations, stopped: dict[Step, RunEnd]) -> dict[int, tuple[str, str]]:
    """Code cell index -> (status, what went wrong), for each cell that raised, ran past its limit or ended
    a run."""
    faults: dict[int, tuple[str, str]] = {}
    for c in obs.cells:
        if c.status == "error":
            faults[c.index] = ("error", f"raised {c.ename}: {short(judge.cell_error(c.evalue), 200)}"
                                        + (judge.MODULE_HINT if c.ename == "ModuleNotFoundError" else ""))
        elif c.status == "timeout":
            faults[c.index] = ("timeout", f"ran past its {key.limits.cell_timeout:g} s limit and was stopped")
    for step, end in stopped.items():
        if step[0] == "cell":
            faults[step[1]] = judge.ended_fault(end, key.limits)
    return faults


def grader_fault(e: BaseException) -> str:
    """The reason of a "not graded" report after a fault of the grader itself (`e`)."""
    return (f"not graded: internal grader error ({type(e).__name__}: {short(str(e), 200)}); this is not the "
            f"student's fault: please report it")


def _cuda(obs: wire.Observations) -> dict[str, str]:
    """What a report says of the run's device: "cuda": "available" or "not available" (every report of a run)."""
    return {} if obs.cuda is None else {"cuda": "available" if obs.cuda else "not available"}


def _versions(key: Key) -> dict[str, str]:
    return {"torch_key": key.torch_version, "sympy": analytic.sympy_version(), "grader": __version__}


def _not_gradable(key: Key, submission: str, student: str, reason: str, parameters: dict[str, Any],
                  start: float) -> Report:
    return Report(key.assignment, submission, student, "not_gradable", None, key.max_score, reason=reason,
                  parameters=parameters, versions={"torch": installed_torch(), **_versions(key)}, key_digest=key.digest,
                  seconds=round(time.monotonic() - start, 3))


def not_gradable_report(key: Key, submission: str, student: str, reason: str) -> Report:
    """A "not_gradable" report (score None) of `submission` for `student`, saying `reason`: for a
    submission that never reached a sandbox (a file a batch could not read, a task a cluster lost). A
    reason that starts with "not graded:" marks a grader fault (graded again by the next batch)."""
    return _not_gradable(key, submission, student, reason, {}, time.monotonic()).encodable()


def _parameters_shown(key: Key, point: dict[str, Any]) -> dict[str, Any]:
    """The student's parameters a report shows: all of them, or, for a report of some exercises only (a check cell's),
    those these exercises use (their arguments' and their expected values'), so that a check of 12's exercise 8 does
    not list all 27 (issue 46)."""
    scoped = {c.exercise for c in key.checks}
    if scoped >= {e.id for e in key.exercises}:
        return point
    used: set[str] = set()
    for ex in (e for e in key.exercises if e.id in scoped):
        for a in ex.args:
            used.update(n for n in (a.param, a.grad, *(a.params or ())) if n)
    for check in key.checks:
        used.update(w for text in judge.expressions(check) for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text))
    return {n: v for n, v in point.items() if n in used}


def _finish(key: Key, submission: str, student: str, run: sandbox.ProbeRun, notes: list[str], start: float,
            labels: tuple[str, ...] | list[str] = (), request: dict[str, Any] | None = None,
            rerun: Rerun | None = None, facts: sources.Facts | None = None,
            positions: dict[str, sources.Position] | None = None, cell_notes: bool = True,
            commits: dict[str, commit.Commit | str] | None = None, cells: list[str] | None = None,
            seal: bool = False, salt: str = "", commit_now: bool = True, course: bool = False,
            course_commits: bool = False, predicting: frozenset[str] | None = None) -> Report:
    """The report of a run. `course`: judged by the course service (a public key without the self-study note). `commits`: per exercise, its commit record or why none is trusted. `cells` (an
    in-notebook self-check's, with `facts`): an exercise whose predictions are all filled in and have no
    commit record is committed now. With `seal`, an exercise without a commit shows no expected value
    (judge.sealed). `salt`: the submission's, for its graded fresh points (plan.points_for). `commit_now` False:
    no new commit (a self-check while STUDENT_ID is the placeholder: its numbers are not the student's).
    `course_commits`: `commits` are the course service's (a prediction without one scores nothing). `predicting`: the
    exercises with predictions in the whole key (the course service judges with the public checks only)."""
    points = plan.points_for(key, student, salt)
    commits = dict(commits or {})
    try:
        with profile.stage("results: parse and validate"):
            obs = wire.parse_results(run.results)
        profile.probe(obs.timing)
    except wire.WireError as e:
        why = ("the sandboxed run ended before it started the notebook" if not run.results else f"its results were malformed ({e})")
        return _not_gradable(key, submission, student, f"not graded: {why}; exit code {run.exit_code}. "
                             + ("" if key.fresh_seed else f"Output: {run.output_tail[-400:]}"), points[0], start)
    try:
        first_obs, first_run = obs, run
        stopped: dict[Step, RunEnd] = {}
        resumed: list[str] = []
        if request is not None:
            obs, run, stopped, resumed = _attempts(key, request, obs, run, rerun, labels)
        if cells is not None and commit_now:
            commits.update(_commit_now(key, student, Evidence(obs, end_of(run), facts=facts, positions=positions or {},
                                                              labels=tuple(labels)), cells, commits))
        evidence = Evidence(obs, end_of(run), {(s[1], s[2]): e for s, e in stopped.items() if s[0] == "call"},
                            {s[1]: e for s, e in stopped.items() if s[0] == "name"},
                            _cell_faults(key, obs, stopped), facts, positions or {}, tuple(labels), commits,
                            sealed=seal, course=course_commits, predicting=predicting, seal_produce=course)
        with profile.stage("judge"):
            outcomes = judge.outcomes(key, evidence, points)
    except Exception as e:  # a grader fault: say so, give no points, never blame the student
        return _not_gradable(key, submission, student, grader_fault(e), points[0], start)
    with profile.stage("notes"):
        notes = _notes(key, evidence, first_obs, first_run, obs, labels, cell_notes, notes, resumed, course)
    return Report(key.assignment, submission, student, "graded", float(sum(o.score for o in outcomes)), key.max_score,
                  outcomes, parameters=_parameters_shown(key, points[0]), notes=tuple(notes), versions={"torch": obs.torch_version, **_cuda(obs), **_versions(key)},
                  key_digest=key.digest, seconds=round(time.monotonic() - start, 3), isolation=run.isolation,
                  commits={ex: c.record for ex, c in commits.items() if isinstance(c, commit.Commit) and c.record})


def _notes(key: Key, evidence: Evidence, first_obs: wire.Observations, first_run: sandbox.ProbeRun,
           obs: wire.Observations, labels: tuple[str, ...] | list[str], cell_notes: bool, notes: list[str],
           resumed: list[str], course: bool = False) -> list[str]:
    """The report's notes: identity's, the run's, the reruns', the exercises' and the commits'; at most MAX_NOTES;
    then, with a public key, the hidden checks' and (unless judged by the course service) SELF_STUDY."""
    notes = notes + judge.notes(key, Evidence(replace(first_obs, rejected=obs.rejected), end_of(first_run)), labels,
                                cell_notes) + resumed
    notes += judge.exercise_notes(key, evidence) + judge.commit_notes(key, evidence)
    if len(notes) > MAX_NOTES:
        notes = notes[:MAX_NOTES] + [f"… and {len(notes) - MAX_NOTES} more notes"]
    hidden = key.hidden_checks.checks if key.hidden_checks else 0
    if key.public and hidden:
        notes.append(f"{hidden} hidden check(s) worth {key.hidden_checks.points:g} point(s) are graded later, "
                     f"not in this self-check")
    if key.public and not course:
        notes.append(SELF_STUDY)
    return notes


def _commit_now(key: Key, student: str, evidence: Evidence, cells: list[str],
                commits: dict[str, commit.Commit | str]) -> dict[str, commit.Commit]:
    """New commit records for the exercises with no record whose predictions are all filled in: their values,
    now, a hash of the cells that set them, and which of them those cells obtained by running code."""
    out = {}
    for ex in key.exercises:
        if ex.id in commits or ex.id not in evidence.positions:
            continue
        values = judge.filled(key, ex.id, evidence.observations)
        if values is None:
            continue
        after = evidence.positions[ex.id].after
        facts = evidence.facts
        setting = sorted({c for n in values if facts and (c := facts.defining_cell(n, after)) is not None})
        computed = {c.name: m for c in key.checks if c.exercise == ex.id and c.name in values
                    if (m := judge.ran(key, evidence, c)) is not None}
        record = commit.make(key.assignment, student, ex.id, values, [cells[i] for i in setting], computed=computed)
        out[ex.id] = commit.read(record)
    return out


SELF_CHECK = "self-check of your notebook as it runs (nothing is handed in)"   # a kernel's report: no file, no hand-in


def report_from_results(key: Key, results: bytes, student: str, exercises: list[str] | None = None,
                        submission: str = SELF_CHECK, cells: list[str] | None = None,
                        labels: list[str] | None = None, records: list[Any] | None = None,
                        seal: bool = True, commit_now: bool = True, course: bool = False,
                        predicting: frozenset[str] | None = None) -> Report:
    """Grade a results stream observed elsewhere (the in-notebook self-check observes in the student's
    kernel and sends the stream here, to a separate process that holds the key). `cells`: the source of
    each cell the kernel ran before the check, in order (the stream has a record of each); the exercises
    were observed after the last of them. `labels`: how the student finds those cells. `records`: the commit
    records the notebook holds (see autograder.judging.commit); with `cells`, an exercise whose predictions are all
    filled in is committed now (the report's `commits` holds the new record) and one without a commit
    shows no expected value (unless not `seal`). `commit_now` False: no new commit is made here (the course
    service commits first, with `commit_from_results`, and judges with the record it stored). `course`: judged by the
    course service: no self-study note, and until an exercise is committed its produce checks say nothing either).
    `predicting`: the exercises with predictions in the whole key (when `key` holds only the public checks)."""
    key = key.only(exercises)
    run = sandbox.ProbeRun(results[: wire.MAX_RESULT_BYTES], "", 0, False, 0.0,
                           isolation="none: a self-check observes your code in your own notebook kernel")
    facts = positions = None
    if cells is not None:   # no cells (a check outside IPython): nothing to read the predictions' cells from
        facts = sources.Facts.of([str(c) for c in cells]) if cells else None
        if facts is not None and course:   # one request of many: a shorter time to trace its predictions
            facts.scratch["worked.seconds"] = worked.REQUEST_SECONDS
        positions = {e.id: sources.Position(len(cells) - 1, "check cell") for e in key.exercises
                     if exercises is None or e.id in exercises}
    found = [r for r in (commit.read(x) for x in records or []) if r is not None]
    notes = identity.notes(student, student)
    placeholder = student == identity.PLACEHOLDER_ID   # predictions worked out for the placeholder's numbers
    if placeholder and notes:
        notes[0] += "; until then, a check commits no prediction and shows no expected value"
    return _finish(key, submission, student, run, notes, time.monotonic(),
                   [str(label) for label in labels or []], facts=facts, positions=positions,
                   cell_notes=False, commits=commit.choose(found, key.assignment, student),
                   cells=[str(c) for c in cells] if cells is not None else None,
                   seal=seal and cells is not None, commit_now=commit_now and not placeholder,
                   course=course, predicting=predicting).encodable()


def commit_from_results(key: Key, results: bytes, student: str, exercise: str, cells: list[str],
                        labels: list[str] | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """The commit record of one exercise's predictions as a results stream shows them (the kernel observed only
    the prediction variables), made now (this process's clock), without judging anything: no expected value is
    computed. Returns (record or None, the prediction variables that are not filled in yet); the record is None
    when one is missing, or while `student` is the placeholder id.

    Raises:
        wire.WireError: the stream is malformed. ValueError: no such exercise."""
    key = key.only([exercise])
    obs = wire.parse_results(results[: wire.MAX_RESULT_BYTES])
    names = [c.name for c in key.checks if c.kind == "predict" and c.name]
    missing = [n for n in names if (v := obs.names.get(n)) is None or v["t"] in ("undefined", "ellipsis")]
    if student == identity.PLACEHOLDER_ID:
        return None, missing
    cells = [str(c) for c in cells]
    facts = sources.Facts.of(cells) if cells else None
    if facts is not None:   # one request of many (the course service's): a shorter time to trace its predictions
        facts.scratch["worked.seconds"] = worked.REQUEST_SECONDS
    positions = {exercise: sources.Position(len(cells) - 1, "check cell")} if cells else {}
    evidence = Evidence(obs, RunEnd(0, False), facts=facts, positions=positions,
                        labels=tuple(str(label) for label in labels or []))
    made = _commit_now(key, student, evidence, cells, {})
    found = made.get(exercise)
    return (found.record if found is not None else None), missing
