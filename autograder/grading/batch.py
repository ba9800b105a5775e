"""batch: many submissions -> one report each, written atomically, and a gradebook. Finds the notebooks
in files and folders, names each submission uniquely, decides its student id (`identity`), and grades
them in parallel through one warm sandbox worker; resumes a killed batch; records which bytes each report was
graded from (graded-bytes.json: the collusion view reads only those).

May import: stdlib, tqdm (lazily), autograder.version, autograder.model, autograder.keyfile,
autograder.grading.identity, autograder.grading.intake, autograder.grading.notebook, autograder.judging.compare, autograder.grading.grade,
autograder.report, autograder.grading.overrides, autograder.sandbox.client, autograder.render.class_stats, autograder.profile,
autograder.render.gradebook, autograder.render.terminal, autograder.render.stats (lazily).
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from autograder import profile
from autograder.version import __version__
from autograder.grading import identity, intake
from autograder.judging.compare import short
from autograder.grading.grade import grade_notebook, grader_fault, not_gradable_report
from autograder.grading.overrides import Override, apply, current, machine
from autograder.keyfile import grading_json
from autograder.model import Key, student_key
from autograder.render.gradebook import to_csv, to_nbgrader_csv
from autograder.render.terminal import printable
from autograder.report import STATUSES, Report, read_report, write_json_atomic, write_text_atomic


@dataclass(frozen=True)
class Submission:
    """One name to grade: its `path` (as found: never resolved), a unique `name` (path relative to the folder
    given, or the file name), where its student id comes from (`source`: its student folder and the identity
    rule; the id itself is resolved when it is graded, with the notebook's STUDENT_ID) and what the intake found
    there (`found`: its bytes are read through it; a link or a special file is refused there)."""

    path: str
    name: str
    source: identity.Source
    found: intake.Found | None = None

    def read(self) -> bytes:
        """The submission's bytes, through the intake (`intake.read`). Raises intake.Refused."""
        return intake.read(self.found if self.found is not None else intake.given(self.path))


@dataclass(frozen=True)
class BatchResult:
    """What a batch wrote: the reports (in submission order), the gradebook path, reports found in
    the output folder from earlier runs (not in this gradebook), the wall time in seconds, how
    many reports were kept from an earlier run (unchanged fingerprint), the choices of choices.csv that
    chose nothing ("student -> submission"), and the students who handed in one file more than once (`identical`,
    "student (submission, submission)": one counts; see `counted`)."""

    reports: tuple[Report, ...]
    gradebook: str
    stale: tuple[str, ...]
    seconds: float
    reused: int = 0
    ignored_choices: tuple[str, ...] = ()   # staff's choices that name no graded submission of that student
    identical: tuple[str, ...] = ()         # students whose graded submissions are one file handed in twice
    overrides: tuple[tuple[Override, str], ...] = ()   # each override given: (it, "" applied, else why it was not)


def find_submissions(paths: list[str], key: Key, ids: str = "file", ignored: list[str] | None = None) -> list[Submission]:
    """Every name the intake finds (`intake.find`: files as given, every *.ipynb under each folder, links and
    special files among them, none followed), each once and each its own submission. `ids`: "file" names each
    student by the student folder and the file name, "notebook" by the notebook's own STUDENT_ID (see
    identity.Rule). With `ignored` (a list to add to): in a student folder that also holds a worked notebook, one
    that is not work on the assignment (notebook.not_work: a scratch Untitled.ipynb, an untouched copy) is left out
    and named there with why, as an nbgrader course's are. Raises FileNotFoundError for a path that does not exist."""
    found = intake.find(paths)
    same_name = {n for n, count in Counter(f.name for f in found).items() if count > 1 and "/" not in n}
    subs: list[Submission] = []
    names: set[str] = set()
    files: set[str] = set()
    for f in found:
        name = f"{Path(os.path.abspath(f.path)).parent.name}/{f.name}" if f.name in same_name else f.name
        unique, n = name, 2
        while unique in names or report_file(unique) in files:
            unique, n = f"{name} ({n})", n + 1
        names.add(unique)
        files.add(report_file(unique))
        if f.root is not None:
            folder = identity.student_folder(f.parts(), key.assignment)
        else:   # a file given itself: its folder (nbgrader's: the one above the assignment's), as typed, names
            # its student only when its name cannot
            typed = Path(os.path.normpath(f.path)).parent.parts
            typed = typed[-2:] if typed and typed[-1] == key.assignment else typed[-1:]
            folder = (identity.student_folder(typed, key.assignment)
                      if identity.is_released_name(intake.notebook_stem(f.path.name), key.notebook) else None)
        source = identity.Source(f.path, folder, "notebook" if ids == "notebook" else "file")
        subs.append(Submission(str(f.path), unique, source, f))
    return subs if ignored is None else _leave_out_what_is_not_work(subs, ignored)


def _leave_out_what_is_not_work(subs: list[Submission], ignored: list[str]) -> list[Submission]:
    """`subs` less, in each student folder with more than one notebook and a worked one among them, those that are
    not work (notebook.not_work), which are named in `ignored`."""
    from autograder.grading.notebook import not_work

    folders: dict[tuple[str, str], list[Submission]] = {}
    for s in subs:
        if s.found is not None and s.found.root is not None and s.source.folder:
            folders.setdefault((str(s.found.root), s.source.folder), []).append(s)
    dropped: set[str] = set()
    for group in folders.values():
        if len(group) < 2:
            continue
        why = {}
        for s in group:
            try:
                why[s.name] = not_work(s.read(), Path(s.path).name)
            except intake.Refused:
                why[s.name] = ""
        if any(not w for w in why.values()):
            for s in group:
                if why[s.name]:
                    dropped.add(s.name)
                    ignored.append(f"{s.name} ({why[s.name]})")
    return [s for s in subs if s.name not in dropped]


def _modified(path: intake.Found | str | Path) -> str:
    """The file's modification time as its file system says (a zip or a student can set it: information for
    staff, never what decides), UTC, ISO 8601 to the second ("" if it cannot be read). A link's own time."""
    import datetime

    try:
        stamp = os.lstat(path.path if isinstance(path, intake.Found) else path).st_mtime
    except OSError:
        return ""
    return datetime.datetime.fromtimestamp(stamp, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


CHOICES = "choices.csv"   # in a batch's output folder: which submission counts, for students with several
GRADED_BYTES = "graded-bytes.json"   # in a batch's output folder: the sha256 of each submission's bytes graded
GRADED_BYTES_SCHEMA = "autograd-lab/graded-bytes"


def graded_bytes(out: str | Path) -> dict[str, dict[str, str]]:
    """What the last batch into `out` graded (GRADED_BYTES): submission name -> {"sha256": of the bytes it read,
    "fingerprint": the report's fingerprint made from them}; {} when there is none or it cannot be read."""
    try:
        data = json.loads((Path(out) / GRADED_BYTES).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    subs = data.get("submissions") if isinstance(data, dict) and data.get("schema") == GRADED_BYTES_SCHEMA else None
    if not isinstance(subs, dict):
        return {}
    return {n: e for n, e in subs.items() if isinstance(e, dict) and isinstance(e.get("sha256"), str)
            and isinstance(e.get("fingerprint"), str)}


def counted(reports: tuple[Report, ...], choices: dict[str, str] | None = None,
            contents: dict[str, str] | None = None) -> tuple[Report, ...]:
    """`reports` with, where one student has several graded ones, which one counts: the one staff chose
    (`choices`: student -> submission name); the others say which one counts instead (`superseded_by`). Without
    a choice none counts, and each names the others (`choose_among`): nothing a submission carries (its file's
    time, which a zip or a student can set; its name) decides. Except where they are one file handed in twice
    (`contents`: submission name -> sha256 of its bytes, all the same; "ada.ipynb" and "ada (1).ipynb"): there is
    nothing to choose, and the one with the shortest name counts (the file, not its copy). Not-gradable reports take no part."""
    contents = contents or {}
    choices = {student_key(s): n for s, n in (choices or {}).items()}
    by_student: dict[str, list[Report]] = {}   # ids that differ only in case are one student
    for r in reports:
        if r.status == "graded":
            by_student.setdefault(student_key(r.student), []).append(r)
    out = []
    for r in reports:
        who = student_key(r.student)
        group = by_student.get(who, []) if r.status == "graded" else []
        names = [g.submission for g in group]
        if len(group) < 2:
            out.append(replace(r, superseded_by="", choose_among=()))
        elif choices.get(who) in names or _one_file(names, contents):
            chosen = choices.get(who) if choices.get(who) in names else min(names, key=lambda n: (len(n), n))
            out.append(replace(r, superseded_by="" if r.submission == chosen else chosen, choose_among=()))
        else:
            out.append(replace(r, superseded_by="", choose_among=tuple(n for n in names if n != r.submission)))
    return tuple(out)


def _one_file(names: list[str], contents: dict[str, str]) -> bool:
    """Are the submissions `names` one file handed in more than once (the same bytes)?"""
    return len({contents.get(n) for n in names}) == 1 and bool(contents.get(names[0]))


def identical(reports: tuple[Report, ...], contents: dict[str, str]) -> list[str]:
    """The students whose graded submissions are one file handed in more than once, in words for the summary."""
    by_student: dict[str, list[str]] = {}
    for r in reports:
        if r.status == "graded":
            by_student.setdefault(student_key(r.student), []).append(r.submission)
    return [f"{student} ({', '.join(names)})" for student, names in by_student.items()
            if len(names) > 1 and _one_file(names, contents)]


def read_choices(out: Path, reports: tuple[Report, ...]) -> dict[str, str]:
    """Staff's choices of which submission counts, student -> submission: from `out/choices.csv` (columns student,
    submission), then from the last gradebook (`out/gradebook.csv`), where staff may have written "yes" into the
    counts column of one of the submissions of a student that awaited a choice ("choose: ..."). A gradebook edit
    that says yes to several of a student's submissions chooses nothing."""
    import csv

    from autograder.render.gradebook import cell

    chosen: dict[str, str] = {}
    try:   # "student,submission" lines, with or without that header (a spreadsheet's BOM too)
        with (out / CHOICES).open(encoding="utf-8-sig", newline="") as f:
            for row in csv.reader(f):
                cells = [c.strip() for c in row]
                if len(cells) >= 2 and cells[0] and cells[1] and cells[:2] != ["student", "submission"]:
                    chosen[cells[0]] = cells[1]
    except (OSError, UnicodeDecodeError, csv.Error):
        pass
    try:   # a spreadsheet may save it with a BOM
        with (out / "gradebook.csv").open(encoding="utf-8-sig", newline="") as f:
            said = {row.get("submission"): (row.get("counts") or "").strip().lower() for row in csv.DictReader(f)}
    except (OSError, UnicodeDecodeError, csv.Error):
        return chosen
    students: dict[str, list[str]] = {}
    for r in reports:
        if r.status == "graded":
            students.setdefault(student_key(r.student), []).append(r.submission)
    for student, names in students.items():
        yes = [n for n in names if said.get(cell(n)) == "yes"]
        was_waiting = any(said.get(cell(n), "").startswith("choose") for n in names)
        if len(names) > 1 and len(yes) == 1 and was_waiting:
            chosen[student] = yes[0]
    return chosen


def unmatched_choices(reports: tuple[Report, ...], choices: dict[str, str]) -> list[str]:
    """The choices (student -> submission) that name no graded submission of that student, in words: they choose
    nothing, and staff should hear it."""
    graded = {(student_key(r.student), r.submission) for r in reports if r.status == "graded"}
    return [f"{student} -> {name}" for student, name in sorted(choices.items())
            if (student_key(student), name) not in graded]


def write_choices(out: Path, reports: tuple[Report, ...], choices: dict[str, str]) -> None:
    """Keep the choices that still apply in `out/choices.csv` (so that a gradebook rebuilt later keeps them)."""
    import csv
    import io

    chosen = {student_key(s): n for s, n in choices.items()}
    live = {r.student: r.submission for r in reports if r.status == "graded"
            and chosen.get(student_key(r.student)) == r.submission and (r.superseded_by == "" and not r.choose_among)}
    if not live and not (out / CHOICES).exists():
        return
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["student", "submission"])
    for student in sorted(live):
        w.writerow([student, live[student]])
    write_text_atomic(out / CHOICES, buf.getvalue())


def report_file(name: str) -> str:
    """The report file name of a submission name: "mia/backward-vs-grad.ipynb" -> "mia__backward-vs-grad.json"
    (a name longer than 180 bytes: its first 120 bytes, "-" and 12 hex digits of its sha256)."""
    stem = (name[:-6] if name.endswith(".ipynb") else name).replace("/", "__")   # "x.ipynb.json" stays: it is a name
    if len(stem.encode("utf-8", "surrogateescape")) > 180:   # the file system's 255 bytes, with the temp name's
        digest = hashlib.sha256(stem.encode("utf-8", "surrogateescape")).hexdigest()[:12]
        stem = stem.encode("utf-8", "surrogateescape")[:120].decode("utf-8", "ignore") + "-" + digest
    return stem + ".json"


# How an id draws its parameters, in the fingerprint: a report made before ids were one student whatever their case
# (2026-12-03; the same grader version) is graded again, not kept.
IDS = "ids: model.student_key (str.lower)"


def fingerprint(content: bytes | str, key: Key, source: identity.Source, course: str = "") -> str:
    """What a report depends on: the submission's bytes as the intake read them (or, for a file it refused, why),
    where its id comes from (its name, student folder and identity rule), the key (its digest, its secret,
    which seeds the graded fresh points, and its limits), the grader version and how ids draw parameters (IDS),
    and, in a course's batch, the digest of
    the course service's commits (`course`); sha256, hex (64 chars)."""
    import json

    h = hashlib.sha256()
    for part in (__version__, IDS, key.digest, key.fresh_seed or "", json.dumps(grading_json(key.limits, key.grading), sort_keys=True),
                 source.path.name, source.folder or "", source.rule, source.given or "", course):
        h.update(part.encode("utf-8", "surrogateescape") + b"\0")
    h.update(content if isinstance(content, bytes) else b"refused\0" + content.encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _content(sub: Submission) -> bytes | str:
    """The submission's bytes through the intake, or why the intake refused it (never what it holds)."""
    try:
        return sub.read()
    except intake.Refused as e:
        return str(e)


def grade_content(sub: Submission, content: bytes | str, key: Key, worker: Any,
                  course_commits: dict[str, list[dict[str, Any]]] | None = None) -> Report:
    """Grade one submission from what the intake gave (`_content`): its bytes, or why it was refused (a
    not-gradable report under the student its name and folder give)."""
    if isinstance(content, str):
        student = identity.resolve(sub.source, key.notebook, key.assignment, None).student
        return not_gradable_report(key, sub.name, student, content)
    return grade_notebook(sub.path, key, worker=worker, source=sub.source, data=content, course_commits=course_commits)


def _reusable(path: Path, fp: str) -> Report | None:
    """The report at `path` if it was made from the same fingerprint and is a real result (a grader
    fault is graded again)."""
    try:
        report = read_report(path)
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if report.fingerprint != fp or report.reason.startswith("not graded:"):
        return None
    return report


class _Progress:
    """A tqdm bar on a terminal; one plain line per submission otherwise (logs, CI), its score with the batch's
    `overrides` applied (as the summary's table shows it)."""

    def __init__(self, total: int, enabled: bool, overrides: list[Override] | None = None) -> None:
        import threading

        self.enabled, self.bar, self.overrides = enabled, None, overrides or []
        self.lock = threading.Lock()   # the graders' threads report at once: one whole line each
        if enabled and sys.stderr.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="sub", file=sys.stderr, dynamic_ncols=True)

    def update(self, sub: Submission, report: Report, reused: bool) -> None:
        if self.bar is not None:
            with self.lock:
                self.bar.update(1)
            return
        if self.enabled:
            shown, used = apply(report, self.overrides)   # the machine's report when no override is for it
            done = "" if shown.score is None else f" {shown.score:g}/{shown.max_score:g}"
            if used:
                done += f" (with {len(used)} override{'s' if len(used) != 1 else ''}; the grader gave " \
                        f"{machine(shown).score:g})"
            why = f" ({short(report.reason, 120)})" if report.status == "not_gradable" else ""
            again = " (unchanged: kept its report)" if reused else ""
            line = f"graded {sub.name} ({report.student}): {report.status}{done}{why}{again}"
            with self.lock:   # one write of the line and its newline: print() writes them apart, and a line of
                sys.stderr.write(printable(line) + "\n")   # another thread could come between them
                sys.stderr.flush()   # names are data: escapes shown, never obeyed

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def grade_batch(subs: list[Submission], key: Key, out: str | Path, jobs: int = 1,
                progress: bool = True, conceal: list[str] | None = None, force: bool = False,
                grid: Any = None, started: Any = None,
                course_commits: dict[str, list[dict[str, Any]]] | None = None,
                overrides: list[Override] | None = None) -> BatchResult:
    """Grade `subs` with `jobs` at once; write `out/reports/<name>.json` (each atomically, as soon as
    it is graded), `out/gradebook.csv` (rebuilt from the reports) and `out/grades.csv` (the same
    scores in the columns of nbgrader's grades.csv export) and `out/graded-bytes.json` (GRADED_BYTES: the sha256 of
    each submission's bytes and the fingerprint made from them, so that the collusion view reads only the
    notebooks that were graded). A submission whose report is
    already there with the same fingerprint (content, student, key, grader version) is not graded
    again unless `force`: a batch killed at any point and run again finishes the rest, and loses or
    duplicates nothing. Each run happens in a fresh child of one warm sandbox.Worker and cannot see
    `conceal` (e.g. the key's folder), the output folder or the submissions' folders. With `grid` (an
    autograder.integrations.dask.Grid), the submissions that need grading are graded on its Dask cluster instead
    (`jobs` is then the cluster's affair: one per Dask worker thread) and their reports are written here, each as it
    completes. `started`: a sandbox.WorkerStart begun earlier by the caller (so that its seconds of torch import
    overlap the caller's own start), which must conceal what this would (`conceal`, `out` and the submissions'
    folders); it is used if anything needs grading, and closed by the caller. A submission's own faults are in
    its report; this never raises for them. `course_commits`: a course's batch (student -> the commit records the
    course service holds): they replace the notebooks' own records (with `grid` too: they travel with the key).
    `overrides`: staff's scores for single checks (`grade --overrides FILE.csv`, checked against the key already),
    applied to each graded report of their student as visible adjustments (overrides.apply); a report kept from an
    earlier run loses the adjustments of that run that this one does not give. BatchResult.overrides says which
    applied and why any did not (a student with no submission here, or none gradable).

    Raises:
        OSError: the sandbox worker could not start (a grader fault; nothing is graded).
    """
    def course(sub: Submission) -> str:   # the commits a report depends on: its student's, where the id is the file's
        if course_commits is None:
            return ""
        if sub.source.rule in ("notebook", "self"):   # the id is the notebook's own: any student's commits may apply
            held: Any = course_commits
        else:
            held = course_commits.get(student_key(identity.resolve(sub.source, key.notebook, key.assignment, None).student), [])
        return hashlib.sha256(json.dumps(held, sort_keys=True).encode()).hexdigest()

    out = Path(out)
    reports_dir = out / "reports"
    reports_dir.mkdir(parents=True, exist_ok=True)
    for tmp in reports_dir.glob(".*.tmp"):   # left by a batch killed while writing
        tmp.unlink(missing_ok=True)
    before = {p.name for p in reports_dir.glob("*.json")}
    start = time.monotonic()
    unseen = [*(conceal or []), str(out), *sorted({os.path.abspath(Path(s.path).parent) for s in subs})]
    if started is not None and not started.conceals(unseen):   # e.g. a submission linked from another folder
        started = None                                         # (the caller still closes the early one)
    fps: dict[str, str] = {}
    contents: dict[str, str] = {}   # submission -> sha256 of its bytes: one file handed in twice counts once
    for s in subs:   # read again to grade: see `one`
        content = _content(s)
        fps[s.name] = fingerprint(content, key, s.source, course(s))
        if isinstance(content, bytes):
            contents[s.name] = hashlib.sha256(content).hexdigest()
        del content
    kept = {s.name: None if force else _reusable(reports_dir / report_file(s.name), fps[s.name]) for s in subs}
    bar = _Progress(len(subs), progress, overrides)

    def done(sub: Submission, report: Report, fp: str) -> Report:   # a new report: written at once, atomically
        with profile.stage("report: write"):
            report = replace(report, submission=sub.name, fingerprint=fp, modified=_modified(sub.found or sub.path))
            try:
                report.write(reports_dir / report_file(sub.name))
            except (ValueError, TypeError) as e:   # a report JSON cannot hold: a grader fault, never the batch's end
                report = replace(not_gradable_report(key, sub.name, report.student, grader_fault(e)),
                                 fingerprint=fp, modified=report.modified)
                report.write(reports_dir / report_file(sub.name))
        bar.update(sub, report, False)
        return report

    def one(sub: Submission, worker: Any) -> Report:
        report = kept[sub.name]
        if report is None:
            profile.begin()
            profile.add("queue wait", time.monotonic() - start)
            cpu = time.thread_time()
            content = _content(sub)   # the bytes graded are the bytes the report's fingerprint names
            report = done(sub, grade_content(sub, content, key, worker, course_commits),
                          fingerprint(content, key, sub.source, course(sub)))
            profile.add("cpu: the grader's thread", time.thread_time() - cpu)
            profile.end(sub.name)
            return report
        bar.update(sub, report, True)
        return report

    try:
        todo = [s for s in subs if kept[s.name] is None]
        if grid is not None:
            for s in subs:
                if kept[s.name] is not None:
                    bar.update(s, kept[s.name], True)
            graded = {sub.name: done(sub, report, fingerprint(content, key, sub.source, course(sub)))
                      for sub, report, content in grid.grade(todo, key, unseen, _content, course_commits)}
            reports = tuple(kept[s.name] or graded[s.name] for s in subs)
        elif todo:
            from contextlib import nullcontext

            from autograder.sandbox.client import Worker

            with (nullcontext(started.get()) if started is not None else Worker(unseen)) as worker, \
                    ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
                reports = tuple(pool.map(lambda s: one(s, worker), subs))
        else:
            reports = tuple(one(s, None) for s in subs)
    finally:
        bar.close()
    choices = read_choices(out, reports)
    ignored = tuple(unmatched_choices(reports, choices))
    reports = counted(reports, choices, contents)
    write_choices(out, reports, choices)
    reports, given = _adjusted(reports, overrides or [])
    for sub, report in zip(subs, reports, strict=True):   # who counts, or an override, changed: the report says so
        path = reports_dir / report_file(sub.name)
        try:
            changed = read_report(path) != report
        except (OSError, ValueError, TypeError, KeyError):
            changed = True
        if changed:
            report.write(path)
    write_json_atomic(out / GRADED_BYTES, {"schema": GRADED_BYTES_SCHEMA, "v": 1, "submissions": {
        s.name: {"sha256": contents[s.name], "fingerprint": fps[s.name]} for s in subs if s.name in contents}})
    gradebook = out / "gradebook.csv"
    profile.begin()
    with profile.stage("gradebook: write (once per batch)"):
        write_text_atomic(gradebook, to_csv(list(reports)))
        write_text_atomic(out / "grades.csv", to_nbgrader_csv(list(reports)))   # nbgrader export's columns
    profile.end("(the batch)")
    written = {report_file(s.name) for s in subs}
    return BatchResult(reports, str(gradebook), tuple(sorted(before - written)), time.monotonic() - start,
                       sum(1 for r in kept.values() if r is not None), ignored, tuple(identical(reports, contents)),
                       given)


def _adjusted(reports: tuple[Report, ...], overrides: list[Override]
              ) -> tuple[tuple[Report, ...], tuple[tuple[Override, str], ...]]:
    """`reports` with `overrides` applied (each report from its machine form: none stacks), and each override that
    stands (overrides.current) with "" where it applied, else why not: its student has no submission in this batch,
    or none that could be graded (an override never gives a score to a submission that has none)."""
    out, applied = [], set()
    for r in reports:
        adjusted, used = apply(r, overrides)
        out.append(adjusted)
        applied |= {(student_key(o.student), o.check) for o in used}
    students = {student_key(r.student): r for r in reports}
    graded = {student_key(r.student) for r in reports if r.status == "graded"}
    given = []
    for k, o in current(overrides).items():
        if k in applied:
            given.append((o, ""))
        elif k[0] not in students:
            given.append((o, f"no submission of {o.student} in this batch: check the student id (as the gradebook "
                             f"names students), or grade their submission too"))
        elif k[0] not in graded:
            given.append((o, f"{o.student}'s submission is not gradable ({students[k[0]].reason}), so it has no "
                             f"check to adjust: fix what the reason says and grade again, or remove the line"))
        else:
            given.append((o, f"{o.student}'s report has no check {o.check}"))
    return tuple(out), tuple(given)


def batch_reports(out: str | Path) -> tuple[list[Report], list[str], int]:
    """The reports of the batch whose output folder is `out`: those of `out/reports/` that its gradebook.csv
    lists (the last run), or all of them when there is no gradebook; the names of the report files that could
    not be used (not a readable report of our schema, or one whose numbers are not finite: hand-edited,
    truncated); and how many good reports the gradebook does not list (from earlier runs).

    Raises:
        FileNotFoundError: `out/reports/` does not exist. ValueError: the gradebook cannot be read (not UTF-8).
    """
    import csv

    from autograder.render.gradebook import cell

    folder = Path(out) / "reports"
    if not folder.is_dir():
        raise FileNotFoundError(f"no reports in {out} (no {folder} folder): grade a batch into it first")
    listed = None
    gradebook = Path(out) / "gradebook.csv"
    if gradebook.is_file():
        try:
            with gradebook.open(encoding="utf-8", newline="") as f:
                listed = {row.get("submission") for row in csv.DictReader(f)}
        except (UnicodeDecodeError, csv.Error) as e:
            raise ValueError(f"{gradebook} cannot be read ({e}); delete it to read every report in {folder}") from None
    reports, unusable, earlier = [], [], 0
    for path in sorted(folder.glob("*.json")):
        report = _usable_report(path)
        if report is None:
            unusable.append(path.name)
        elif listed is not None and cell(report.submission) not in listed:   # as the gradebook wrote its name
            earlier += 1
        else:
            reports.append(report)
    return reports, unusable, earlier


def _usable_report(path: Path) -> Report | None:
    """The report at `path` if it is a regular file holding a report of our schema whose fields have their
    types and whose points are finite and at most a million; else None."""
    import math

    if not path.is_file() or path.stat().st_size > 50_000_000:   # a FIFO, a folder, or no report of ours
        return None
    try:
        r = read_report(path)
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError, UnicodeDecodeError):
        return None
    number = lambda x: isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and abs(x) <= 1e6
    texts = (r.assignment, r.submission, r.student, r.status, r.reason, r.superseded_by, r.modified)
    if not (all(isinstance(t, str) for t in texts) and number(r.max_score) and (r.score is None or number(r.score))
            and r.status in ("graded", "not_gradable")):
        return None
    for o in r.outcomes:
        if not (number(o.score) and number(o.max_score) and o.status in STATUSES and o.kind in ("predict", "produce")
                and all(isinstance(t, str) for t in (o.check_id, o.exercise, o.title, o.visibility))
                and all(t is None or isinstance(t, str) for t in (o.observed, o.expected))
                and (o.misconception is None or all(isinstance(t, str) for t in vars(o.misconception).values()))):
            return None
    return r


def write_stats(out: str | Path, reports: list[Report], key: Key | None = None) -> Any:
    """Write the class view of `reports` into `out`: stats.html (the page), stats.json (autograder.render.class_stats'
    ClassStats, schema "autograd-lab/stats" v1) and item-analysis.csv, each atomically. `key` lists every
    misconception of a check, also those no submission showed. Returns the ClassStats.

    Raises:
        ValueError: no report, or reports of several assignments (see stats.class_stats).
    """
    import json

    from autograder.render.stats import to_csv as items_csv
    from autograder.render.stats import to_html as stats_html
    from autograder.render.class_stats import class_stats

    stats = class_stats(reports, key=key)
    out = Path(out)
    write_text_atomic(out / "stats.json", json.dumps(stats.to_dict(), indent=1, allow_nan=False) + "\n")
    write_text_atomic(out / "item-analysis.csv", items_csv(stats))
    write_text_atomic(out / "stats.html", stats_html(stats))
    return stats
