"""lab: what a student's notebook imports. Shows the student's own parameters and runs the in-notebook
self-check: it observes the exercise in the kernel (with the probe's own observation code), then a
separate trusted process (`selfcheck`) judges it with the public key and returns the open report. The
comparison never runs in the kernel, and the kernel keeps only the key's ProbePlan (no expected value).

May import: stdlib, torch (its version), IPython (the kernel's namespace), autograder.model, autograder.keyfile,
autograder.grading.plan, autograder.grading.identity, autograder.sandbox.inside.probe, autograder.wire,
autograder.student.selfcheck, autograder.report, autograder.judging.commit, autograder.render.terminal,
autograder.render.html (only when Jupyter asks for the HTML view), autograder.grading.coursefile (course mode),
autograder.student.service_client (course mode), autograder.student.handin (course mode).
"""
from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Iterator

from autograder.grading import identity, plan


def inside_probe() -> bool:
    """True while the grader's probe runs this notebook (self-checks are then skipped)."""
    return os.environ.get("AUTOGRAD_LAB_PROBE") == "1"


PLACEHOLDER_ID = identity.PLACEHOLDER_ID


class Parameters(dict):
    """The student's own parameters: a dict whose entries are also attributes (`P.x0`)."""

    warning = ""

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"no parameter {name!r}; yours are {', '.join(self)}") from None

    def __repr__(self) -> str:
        text = "Your parameters: " + ", ".join(f"{k} = {v}" for k, v in self.items())
        return f"WARNING: {self.warning}\n{text}" if self.warning else text


REPORT_MIME = "application/vnd.autograd-lab.report+json"   # the report a check cell showed, in its output


class SelfCheck:
    """The result of `Lab.check`: shows as the open report, as text in a terminal and as HTML (a
    table per exercise, statuses in colour and in words) in Jupyter."""

    def __init__(self, text: str, report: Any = None, record: dict[str, Any] | None = None) -> None:
        self.text, self.report, self.record = text, report, record

    def __repr__(self) -> str:
        return self.text

    def _repr_html_(self) -> str | None:
        """Jupyter's rich view: the report as an HTML fragment (None without a report, e.g. while
        grading: Jupyter then shows the text)."""
        if self.report is None:
            return None
        from autograder.render.html import to_html_fragment

        return to_html_fragment(self.report)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """Everything Jupyter keeps of the check in the saved notebook: the text, the HTML table and the
        report itself (REPORT_MIME), which tools (and tests) read back exactly as it was shown, and the
        exercise's commit record (commit.COMMIT_MIME), which the grader reads."""
        from autograder.judging.commit import COMMIT_MIME

        bundle: dict[str, Any] = {"text/plain": self.text}
        if self.report is not None:
            bundle["text/html"] = self._repr_html_()
            bundle[REPORT_MIME] = self.report.to_dict()
        if self.record is not None:
            bundle[COMMIT_MIME] = self.record
        return bundle

    @property
    def passed(self) -> bool:
        """True when every check of the exercise passed."""
        return self.report is not None and all(o.status == "passed" for o in self.report.outcomes)


class Lab:
    """The notebook's handle on its assignment.

    Args:
        assignment: the assignment id, e.g. "01-backward-vs-grad".
        student_id: the id your course gave you; it seeds your parameters.
        key: the public_key.json (default: $AUTOGRAD_LAB_KEY, ./public_key.json, or
            assignments/<assignment>/public_key.json in this folder or above).
    Raises:
        FileNotFoundError: no public key found (outside the grader).
    """

    def __init__(self, assignment: str, student_id: str, key: str | Path | None = None) -> None:
        self.assignment, self.student = assignment, str(student_id).strip()
        if inside_probe():
            self.key_path = None
            self._plan: plan.ProbePlan | None = None
            self.parameters = Parameters(json.loads(os.environ.get("AUTOGRAD_LAB_PARAMETERS", "{}")))
            return
        if os.environ.get("NBGRADER_EXECUTION") == "autograde":   # nbgrader runs this kernel to grade it
            raise RuntimeError(NOT_IN_THIS_KERNEL)
        from autograder.keyfile import find_public_key, load_key

        self.course = None
        course = None if key else _find_course(assignment)
        if course is not None:   # course mode: the service keeps the answers and records each commit first
            from autograder.grading import coursefile

            self.course = coursefile.load(course)
            if self.course.assignment != assignment:
                raise ValueError(f"{course} is the course file of {self.course.assignment!r}, not of {assignment!r}: "
                                 f"open this notebook from its own assignment folder")
            self.key_path, self._plan = None, self.course.plan
            _watch_cells()
            self.folder = Path.cwd()
            self.parameters = Parameters(plan.draw_point(self._plan.parameters, assignment, self.student, "own"))
            if self.student == PLACEHOLDER_ID:
                self.parameters.warning = identity.placeholder_warning()
            return
        path = Path(key) if key else find_public_key([assignment])
        if path is None or not path.exists():
            raise FileNotFoundError(f"no public_key.json for {assignment}: keep it beside this notebook, or pass key=...")
        data = load_key(path)
        if data.assignment != assignment:
            raise ValueError(f"{path} is the key of {data.assignment!r}, not of {assignment!r}: "
                             f"open this notebook from its own assignment folder, or pass key=...")
        self.key_path = path
        self._plan = plan.ProbePlan.of(data)   # only what the observation needs: the expectations stay on disk
        _watch_cells()
        from autograder.judging import commit

        self.folder = Path.cwd()   # the notebook's folder: its commit records are kept here, whatever cwd becomes
        commit.seed_from_notebooks(self.folder, assignment, self.student)   # records a notebook carries in from elsewhere
        self.parameters = Parameters(plan.draw_point(data.parameters, assignment, self.student, "own"))
        if self.student == PLACEHOLDER_ID:
            self.parameters.warning = identity.placeholder_warning()

    def check(self, exercise: str | int, namespace: dict[str, Any] | None = None) -> SelfCheck:
        """Self-check one exercise against the public checks and return the open report.

        Calls your produce functions at your point and at fresh points, reads your predictions,
        and shows what passed and, for anything else, what was expected and why. Uses the
        notebook's current state: no need to save first. Returns a SelfCheck (shows as a
        table in Jupyter, as text elsewhere).
        """
        __tracebackhide__ = True
        exercise = str(exercise)
        if inside_probe():
            return SelfCheck(f"(self-check of exercise {exercise} skipped while grading)")
        with _progress(exercise):
            shown = self._check(exercise, namespace)
        _CHECKED[exercise] = time.time()   # lab.submit() says which checks are newer than the file it hands in
        return shown

    def _check(self, exercise: str, namespace: dict[str, Any] | None) -> SelfCheck:
        __tracebackhide__ = True
        if os.environ.get("NBGRADER_EXECUTION") == "autograde":   # nbgrader runs this kernel to grade it
            raise RuntimeError(NOT_IN_THIS_KERNEL)
        from autograder.judging import commit
        from autograder.student import selfcheck
        from autograder.render.terminal import render
        from autograder.report import Report

        if exercise not in {e.id for e in self._plan.exercises}:
            raise ValueError(f"no exercise {exercise!r}; the exercises are "
                             f"{', '.join(e.id for e in self._plan.exercises)}")
        ns = namespace if namespace is not None else _user_namespace()
        ex = next(e for e in self._plan.exercises if e.id == exercise)
        entry = plan.observation(self._plan, ex, plan.points_for(self._plan, self.student), len(_CELLS) - 1)
        validating = os.environ.get("NBGRADER_EXECUTION") == "validate"   # nbgrader's Validate: commits nothing
        if self.course is not None:
            return self._check_course(ex, ns, entry, validating)
        global _HELPER
        if _HELPER is None:
            _HELPER = selfcheck.ToolServer()
        stream = _observe(ns, entry, self._plan.call_timeout)
        store = commit.Store(self.folder)
        known = store.get(self.assignment, self.student, exercise)
        out = _HELPER.ask({"key": str(self.key_path), "student": self.student, "exercise": [exercise],
                           "cells": [c["source"] for c in _CELLS], "labels": [c["label"] for c in _CELLS],
                           "records": [known] if known else [], "commit": not validating}, stream)
        report = Report.from_dict(json.loads(out))
        if validating:
            return _validated(report, exercise)
        local = _local_modules(self.folder)
        if local:   # graded as seen: the graded run has only the notebook
            from dataclasses import replace

            report = replace(report, notes=(*report.notes, (
                f"this notebook imports {', '.join(local)} from its own folder; the grader sees only the notebook, "
                f"so there that import fails: put the code into the notebook")))
        record = report.commits.get(exercise)
        if record is not None:
            store.put(record)   # the first commit stays: a re-run, a restart or "Run all" shows it again
        return SelfCheck(render(report), report, record)

    def submit(self, notebook: str | Path | None = None) -> SelfCheck:
        """Hand in this notebook, as last saved (save it first), to the course service; shows the receipt: the
        course's time, the size, the digest, and whether it is the hand-in that counts. In self-study there is
        nothing to hand in to. `notebook`: the file (default: the one this kernel runs, as Jupyter says, else
        course.json's notebook in this folder)."""
        if inside_probe():
            return SelfCheck("(a hand-in does nothing while the notebook is graded)")
        if self.course is None:
            return SelfCheck("this is self-study: there is no course service to hand in to (hand in the saved "
                             "notebook the way your course says)")
        from autograder.student.handin import hand_in, receipt_text

        path = Path(notebook) if notebook else _this_notebook(self.folder, self.course.notebook)
        try:
            receipt = hand_in(path)
        except RuntimeError as e:
            return SelfCheck(f"{path.name} was not handed in: {str(e).removeprefix('not handed in: ')}")
        import time as _time

        mtime = path.stat().st_mtime
        saved = _time.strftime("%H:%M:%S", _time.localtime(mtime))
        later = sorted(ex for ex, when in _CHECKED.items() if when > mtime)
        newer = (f" You checked exercise{'s' if len(later) > 1 else ''} {', '.join(later)} after that save: what you "
                 f"handed in does not hold it; save and run lab.submit() again." if later else "")
        return SelfCheck(f"{receipt_text(receipt)} (the file as saved at {saved}: save again and hand in again to "
                         f"hand in later changes){newer}")

    def feedback(self) -> SelfCheck:
        """Your graded feedback of the hand-in that counts, once your course staff have released it (hidden checks
        included), with its hand-in time, any late penalty, and its history (a due time moved earlier after you
        handed in, for instance)."""
        if inside_probe():
            return SelfCheck("(feedback is not read while the notebook is graded)")
        if self.course is None:
            return SelfCheck("this is self-study: graded feedback comes from your course, not from this notebook")
        from autograder.report import Report
        from autograder.render.terminal import render
        from autograder.student.service_client import Client, ServiceError, find_token

        from autograder.model import student_key

        token = find_token(self.course.auth, self.course.service)
        try:   # the course's name for the student: ids that differ only in case are one (model.student_key)
            answer = Client(self.course.service, token).get(
                f"/students/{student_key(self.student)}/assignments/{self.assignment}/feedback")
            report = Report.from_dict(answer["report"])
        except ServiceError as e:
            if e.status == 404:
                return SelfCheck(f"no feedback yet: {e.reason}")
            return SelfCheck(f"your feedback could not be read now: {e.reason}; your hand-in is safe on the service")
        except (KeyError, TypeError, ValueError):
            return SelfCheck("the course service's feedback could not be read; tell your course staff")
        h = answer.get("handin", {})
        final = answer.get("final_score")
        if report.score is None:   # not gradable: never a 0, and the report says why
            line = f"your hand-in of {h.get('received')} was not graded: {report.reason or 'see below'}"
        else:
            line = (f"graded hand-in of {h.get('received')}: {h.get('why')}; score {report.score:g} / "
                    f"{report.max_score:g}" + (f", after the late penalty {final:g} / {report.max_score:g}"
                                               if final is not None and final != report.score else ""))
        from dataclasses import replace

        history = [f"{n.get('made')}: {n.get('text')}" for n in h.get("history", ()) if isinstance(n, dict)]
        report = replace(report, notes=(line, *history, *report.notes))
        return SelfCheck("\n".join([line, *history, render(report)]), report, None)

    def _check_course(self, ex: Any, ns: dict[str, Any], entry: dict[str, Any], validating: bool) -> SelfCheck:
        """A check in course mode: the predictions as written go to the course service, which commits them (its
        clock, in a transaction) before anything is judged; only then are the produce functions called, and the
        service judges what they did and answers with the report. Under nbgrader's Validate nothing is committed.
        The service unreachable: nothing is shown or lost, and the next check works when it is back."""
        __tracebackhide__ = True
        from autograder.report import Report
        from autograder.render.terminal import render
        from autograder.student.service_client import Client, ServiceError, find_token, saved_service

        course = self.course
        token = find_token(course.auth, course.service)
        if token is None:
            other = saved_service() if course.auth == "token" else None
            how = ("this notebook's server has no JupyterHub token ($JUPYTERHUB_API_TOKEN): open it from the course's "
                   "JupyterHub" if course.auth == "hub" else
                   (f"your saved token is for {other}, not for this notebook's course service; " if other else "")
                   + "run `autograder login` in a terminal in this folder (it asks for the token your course gave you), "
                   "then run this cell again")
            return _not_checked(f"exercise {ex.id} was not checked: the course service needs your token, and there is "
                                f"none here: {how}. Nothing was sent.", validating)
        client = Client(course.service, token)
        body = {"assignment": self.assignment, "exercise": ex.id, "student": self.student,
                "cells": [c["source"] for c in _CELLS], "labels": [c["label"] for c in _CELLS]}
        sent = None
        try:
            if not validating:   # the predictions first, as they stand: the service commits them before the calls
                names = _observe(ns, {**entry, "calls": []}, self._plan.call_timeout)
                sent = client.post("/predictions", {**body, "results": names.decode("utf-8", "surrogateescape")},
                                   timeout=COMMIT_WAIT)
            stream = _observe(ns, entry, self._plan.call_timeout)
            answer = client.post("/check", {**body, "results": stream.decode("utf-8", "surrogateescape")},
                                 timeout=JUDGE_WAIT)
            report = Report.from_dict(answer)
        except ServiceError as e:
            if e.unreachable:
                why = e.reason.split(": ", 1)[-1]
                late = "timed out" in why
                text = (f"exercise {ex.id} was not checked: the course service at {course.service} "
                        + ("did not answer in time" if late else f"cannot be reached right now ({why})")
                        + ". No answer is shown and nothing is lost: what you wrote stays in this notebook. "
                          "Run this cell again in a little while.")
                if sent is not None or late:
                    text += (" (Your predictions were sent before the connection was lost: the course may have "
                             "recorded them.)")
            else:
                text = f"exercise {ex.id} was not checked: the course service said: {e.reason}"
            return _not_checked(text, validating)
        except (ValueError, KeyError, TypeError) as e:
            return _not_checked(f"exercise {ex.id} was not checked: the course service's report could not be read "
                                f"({type(e).__name__}); tell your course staff", validating)
        if isinstance(sent, dict) and sent.get("commit") is None and sent.get("missing"):
            from dataclasses import replace

            missing = ", ".join(str(n) for n in sent["missing"][:20])
            report = replace(report, notes=(*report.notes, f"nothing of exercise {ex.id} is committed yet: the service "
                                                           f"commits once every prediction is filled in ({missing})"))
        if validating:
            return _validated(report, ex.id)
        return SelfCheck(render(report), report, report.commits.get(ex.id))


# A notebook's grade is never made in its own kernel (code the student wrote runs there and could set it):
# `nbgrader autograde` without our set-up runs the notebook in a kernel, so a check cell refuses there.
NOT_IN_THIS_KERNEL = (
    "autograd-lab does not grade in the notebook's own kernel (code in the notebook could set its own score). "
    "Grade the course with `autograder grade --nbgrader COURSE --assignment ID`, or set nbgrader_config.py up with "
    "autograder.integrations.nbgrader.configure(c, KEYS) so that `nbgrader autograde` grades in the sandbox "
    "(docs/staff.md, \"With nbgrader\").")


def _this_notebook(folder: Path, default: str) -> Path:
    """The notebook this kernel runs: Jupyter's `__session__` (JupyterLab and Notebook 7 set it to its path) or
    $JPY_SESSION_NAME, else `default` in `folder`."""
    ns = _user_namespace()
    for candidate in (ns.get("__session__"), os.environ.get("JPY_SESSION_NAME")):
        if isinstance(candidate, str) and candidate.endswith(".ipynb"):
            path = Path(candidate)
            path = path if path.is_absolute() else folder / path
            if path.is_file():
                return path
    return folder / default


def _find_course(assignment: str) -> Path | None:
    """The course.json of a notebook in course mode: $AUTOGRAD_LAB_COURSE, else course.json in the current folder
    (the notebook's), else assignments/<id>/course.json here or above. None: self-study (the public key)."""
    from autograder.grading.coursefile import FILE
    from autograder.keyfile import is_assignment_id

    env = os.environ.get("AUTOGRAD_LAB_COURSE")
    if env:
        return Path(env)
    here = Path.cwd()
    if (here / FILE).exists():
        return here / FILE
    if is_assignment_id(assignment):
        for base in [here, *here.parents]:
            if (base / "assignments" / assignment / FILE).exists():
                return base / "assignments" / assignment / FILE
    return None


def _observe(ns: dict[str, Any], entry: dict[str, Any], timeout: float,
             cells: list[dict[str, Any]] | None = None) -> bytes:
    """The results stream of one exercise observed in this kernel now (wire format: hello, a record per cell the
    kernel ran, the exercise's records, done), with the probe's own code: the grader observes each exercise with
    this same function, where its check cell stands. `cells`: the cells run so far ({source, record, label}),
    default those this kernel recorded (benchmarks/service.py passes its own)."""
    from autograder import wire
    from autograder.sandbox.inside import probe

    cells = _CELLS if cells is None else cells
    records: list[dict[str, Any]] = [{"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION,
                                      "torch": _torch_version(), "cells": len(cells),
                                      "cuda": probe.cuda_available(),
                                      "installed": probe.installed_facts([entry])}]
    records += [{"k": "cell", "i": i, **c["record"]} for i, c in enumerate(cells)]
    if entry["calls"]:   # torch's first-use imports, once per kernel, before the calls: not in a call's time limit
        probe.warm_up(plan.warm_ups([c["source"] for c in cells]))
    records += probe.observe_exercise(ns, entry, timeout)
    records.append({"k": "done"})
    return b"".join(json.dumps(r, allow_nan=False).encode() + b"\n" for r in records)


COMMIT_WAIT = 15.0   # seconds a check waits for the course service to record its predictions
JUDGE_WAIT = 60.0    # and to judge the calls (the first judging of an assignment imports sympy)


class NotValidated(AssertionError):
    """Raised by a check cell under nbgrader's Validate when a check of its exercise does not pass (or is not
    committed yet), so that Validate does not say "Success"."""


def _validated(report: Any, exercise: str) -> SelfCheck:
    """Under nbgrader's Validate: the report, or NotValidated naming each check that does not pass (by status only:
    Validate shows no expected value)."""
    __tracebackhide__ = True   # IPython shows the learner's cell and the message, not our frames
    from autograder.render.terminal import render

    bad = [o for o in report.outcomes if o.status != "passed"]
    if report.status != "graded" or bad:   # short lines: nbgrader shows each line of an error cut at 90 characters
        listed = [f"  {o.check_id}: {o.status}" for o in bad[:20]] or [f"  {report.reason[:80]}"]
        sealed = any(o.status == "sealed" for o in bad)
        final = any(o.kind == "predict" and o.status == "failed" and o.commit for o in bad)
        raise NotValidated("\n".join([f"exercise {exercise} does not pass:", *listed,
                                      "Its predictions are not committed: run its check cell first."
                                      if sealed else "Run its check cell in the notebook to see why.",
                                      *(["A committed prediction is graded as committed: a revision does not"
                                         " change it."] if final else [])]))
    return SelfCheck(render(report), report, None)


def _not_checked(text: str, validating: bool) -> SelfCheck:
    __tracebackhide__ = True
    if validating:   # short lines: nbgrader shows each line of an error cut at 90 characters
        import textwrap

        raise NotValidated("\n".join(textwrap.wrap(text, 80)))
    return SelfCheck(text)


def _local_modules(folder: Path) -> list[str]:
    """The modules this kernel imported from the notebook's own folder (or below it): a learner's helper module,
    which is not handed in with the notebook. The autograder package and installed packages are not counted."""
    try:
        here = folder.resolve()
        ours = Path(__file__).resolve().parents[1]   # the autograder package (this file: autograder/student/lab.py)
    except OSError:
        return []
    found = []
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or "site-packages" in path or not os.path.isabs(path):
            continue   # a relative __file__ is no file of this folder: torch.classes' is "_classes.py"
        try:
            p = Path(path).resolve()
        except OSError:
            continue
        if here in p.parents and ours not in p.parents and ours != p.parent:
            found.append(name)
    return sorted(found)


_HELPER = None   # the kernel's one self-check helper process (selfcheck.ToolServer), started at the first check
_CELLS: list[dict[str, Any]] = []   # each cell the kernel ran since the Lab was made: source and how it ran
_WATCHING = False


def _watch_cells() -> None:
    """Record, from now on, each cell the kernel runs (IPython's post_run_cell event): its source, and
    whether it raised. A self-check judges with them, as the grader judges with the notebook's cells: a
    prediction left unset because its cell raised is an error, not "missing". Once per kernel."""
    global _WATCHING
    if _WATCHING:
        return
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is None:
        return
    _WATCHING = True

    def record(result: Any) -> None:
        from autograder import wire

        source = getattr(result.info, "raw_cell", None) if result.info is not None else None
        if not isinstance(source, str):
            return
        err = result.error_before_exec or result.error_in_exec
        rec: dict[str, Any] = {"status": "ok"}
        if err is not None:
            try:
                text = str(err)
            except Exception:
                text = "<the message could not be read>"
            rec = {"status": "error", "ename": type(err).__name__, "evalue": wire.clip(text, 500)}
        count = getattr(result, "execution_count", None)
        cell_id = getattr(result.info, "cell_id", None)
        if cell_id and source.lstrip().startswith("lab.check("):   # a check cell run again (Jupyter says which
            for earlier in _CELLS:                                      # cell a run is): one cell, not a copy
                if earlier.get("cell_id") == cell_id and earlier["source"].lstrip().startswith("lab.check("):
                    earlier["source"] = "pass   # a check cell run again later"
        first = next((line.strip() for line in source.splitlines() if line.strip()), "")
        starts = f", which starts `{first[:60]}{'…' if len(first) > 60 else ''}`" if first else ""
        # the execution count alone goes stale after Restart & Run All: the cell's first line says which it is
        _CELLS.append({"source": source, "record": rec, "cell_id": cell_id,
                       "label": (f"the cell run as In [{count}]" if count else "a cell run earlier") + starts})

    shell.events.register("post_run_cell", record)


_CHECKED: dict[str, float] = {}   # exercise -> when this kernel last checked it (time.time())
SLOW_CHECK = 2.0   # seconds: a check that takes longer says it is still at work (12's exercise 8 takes about 5 s)


@contextlib.contextmanager
def _progress(exercise: str, after: float = SLOW_CHECK) -> Iterator[None]:
    """Say that the check of `exercise` is still at work once it has taken `after` seconds, and again every 5 s, on
    the cell's output (a line of its own above the report); nothing for a check that is quicker."""
    import threading

    done = threading.Event()
    start = time.monotonic()

    def say() -> None:
        while not done.wait(after if time.monotonic() - start < after else 5.0):
            print(f"checking exercise {exercise}: still at work after {time.monotonic() - start:.0f} s (its calls run "
                  f"your code at several points; the report follows)", file=sys.stdout, flush=True)

    threading.Thread(target=say, daemon=True, name="autograd-lab progress").start()
    try:
        yield
    finally:
        done.set()


def _torch_version() -> str:
    import torch
    return torch.__version__.split("+")[0]


def _user_namespace() -> dict[str, Any]:
    try:
        from IPython import get_ipython
        shell = get_ipython()
    except ImportError:
        shell = None
    if shell is not None:
        return shell.user_ns
    return sys._getframe(2).f_globals
