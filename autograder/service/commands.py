"""commands: the course service's command-line subcommands (`autograder serve`, `autograder course ...`,
`autograder login`, and the course part of `release --course`), as functions of parsed arguments returning exit
codes. autograder.cli parses; this does.

May import: stdlib, nbformat (the course's notebook), autograder.grading.notebook, autograder.grading.grade (its
warm-up), autograder.judging.judge, autograder.judging.analytic (imported ahead), autograder.service.app, autograder.service.rules, tornado (its
sockets and processes), autograder.service.db, autograder.service.store, autograder.service.hub,
autograder.student.service_client, autograder.student.handin, autograder.service.late,
autograder.integrations.nbgrader (export), autograder.report, autograder.keyfile, autograder.grading.coursefile, sqlalchemy (its URL),
autograder.render.terminal (printable).
"""
from __future__ import annotations

import argparse
import asyncio
import csv
import getpass
import json
import logging
import os
import re
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_PORT = 8750


def _fail(msg: str) -> int:
    print(f"autograder: {msg}", file=sys.stderr)
    return 2


def db_url(args: argparse.Namespace) -> str:
    """The database URL: --db, else $AUTOGRAD_LAB_DB, else sqlite:///course.db (in the current folder)."""
    from autograder.service import db

    return args.db or os.environ.get("AUTOGRAD_LAB_DB") or db.DEFAULT_URL


def _course(args: argparse.Namespace, create: bool = True) -> Any:
    """The course database of --db (migrated). A SQLite file that does not exist is made only with `create` (and
    said); otherwise RuntimeError names the file and the fix (a forgotten --db would open an empty course). A
    database that cannot be opened (a bad URL, a server that refuses the password or does not answer) is a
    RuntimeError that names it without its password, with the driver's one-line reason."""
    import sqlalchemy as sa

    from autograder.service import db
    from autograder.service.store import Course

    url = db_url(args)
    path = db.sqlite_path(url)
    if path is not None and not path.exists():
        if not create:
            raise RuntimeError(f"no course database at {path}: pass --db URL (the one `autograder serve` uses), or set "
                               f"$AUTOGRAD_LAB_DB")
        print(f"autograder: a new course database: {path.resolve()} (mode 600: it holds the answer keys)",
              file=sys.stderr)
    try:
        db.migrate(url)
        return Course(url)
    except (sa.exc.SQLAlchemyError, ValueError, ImportError) as e:   # (a wrong password: OperationalError)
        reason = "; ".join(line.strip() for line in str(getattr(e, "orig", None) or e).splitlines() if line.strip())
        raise RuntimeError(f"the course database {_safe(url)} cannot be opened: {type(e).__name__}: "
                           f"{reason[:400]}") from None


def serve(args: argparse.Namespace) -> int:
    """`autograder serve`: migrate the database, make the rules' tables, listen, then (with --workers N) fork N
    processes that all serve on that socket, and serve until SIGINT or SIGTERM (the processes end with the first)."""
    import tornado.netutil

    from autograder.service import app
    from autograder.service.app import Redact

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(message)s")
    for handler in logging.getLogger().handlers:   # tornado quotes a malformed header, a token too: never logged
        handler.addFilter(Redact())
    for noisy in ("tornado.access", "alembic"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.workers < 1:
        return _fail("--workers must be at least 1")
    try:
        course = _course(args)
        from autograder.service.rules import Rules

        Rules(course.engine)                 # the rules' tables, made once here, before any process serves
        _warm(course)                        # what judging needs, once, before any process is forked
        course.engine.dispose()              # nothing open is carried into the processes forked below
    except RuntimeError as e:   # no such SQLite file, or a database that cannot be opened: _course said which
        return _fail(str(e))
    except Exception as e:   # a bad URL, an unreachable database: say which, and stop
        return _fail(f"the course database {_safe(db_url(args))} cannot be opened: {type(e).__name__}: {e}")
    if args.config:
        from autograder.service import late

        try:
            late.load(args.config)
        except late.ConfigError as e:
            return _fail(str(e))
    try:
        sockets = tornado.netutil.bind_sockets(args.port, args.host)
    except OSError as e:
        return _fail(f"cannot listen on {args.host}:{args.port}: {e}")
    port = sockets[0].getsockname()[1]
    mode = "JupyterHub service" if args.hub else "tokens"
    print(f"autograd-lab course service on http://{args.host}:{port} ({mode}; database {_safe(db_url(args))}; "
          f"{args.workers} process{'es' if args.workers > 1 else ''}); stop with Ctrl-C", file=sys.stderr, flush=True)
    if args.port_file:
        Path(args.port_file).write_text(f"{port}\n")
    if args.workers > 1:
        import tornado.process

        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))   # the parent's end is each process's SIGTERM (below)
        try:
            tornado.process.fork_processes(args.workers, max_restarts=1000)   # returns in each process it forks
        except SystemExit:
            return 0
        _die_with_parent(signal.SIGTERM)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    identify = None
    course = type(course)(course.url)   # this process's own engine (and its own connections)
    if args.hub:
        from autograder.service import hub

        try:
            identify = hub.identifier(course, staff=args.staff or [])
        except (ImportError, RuntimeError) as e:
            return _fail(f"--hub: {e}")
    service = app.Service(course, identify, app.Limits(rate=args.rate, burst=args.burst),
                          behind_proxy=args.behind_proxy, config=args.config)
    import gc

    gc.collect()
    gc.freeze()   # what start-up made (modules, the key) stays out of every later collection: ~1 ms per request here

    async def main() -> None:
        prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", "") if args.hub else ""
        task = asyncio.ensure_future(app.serve(service, sockets, prefix))
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, task.cancel)
        try:
            await task
        except asyncio.CancelledError:
            pass

    asyncio.run(main())
    return 0


def _warm(course: Any) -> None:
    """Import what a check needs and compile each released key's answer expressions (grade.prepare_grading), in the
    process that forks the others: they start with it, shared, instead of paying for it in their first checks."""
    from autograder.grading import grade, notebook
    from autograder.judging import analytic, judge  # noqa: F401
    from autograder.service import app  # noqa: F401

    analytic.sympy_version()      # sympy and mpmath: imported once here, whether or not a key is released yet
    notebook.prepare_reading()    # nbformat, for hand-ins
    for assignment in course.assignment_ids():
        key = course.key(assignment)
        if key is not None:
            grade.prepare_grading(key)


def _die_with_parent(sig: int) -> None:
    """Ask the kernel to send this process `sig` when its parent ends (PR_SET_PDEATHSIG): a process forked by
    --workers ends with the one that was started, however that one ends."""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, int(sig), 0, 0, 0)
    if os.getppid() == 1:   # the parent ended before the request took effect
        os.kill(os.getpid(), sig)


def _safe(url: str) -> str:
    """A database URL without its password."""
    try:
        from sqlalchemy.engine import make_url

        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "(the given URL)"


def course_add(args: argparse.Namespace) -> int:
    """`autograder course add`: add users (names, or a roster CSV with a column `name` or `student`) and issue a
    token for each; the tokens go to --tokens (CSV name,role,token, readable by its owner only) or stdout."""
    names = list(args.names)
    if args.roster:
        try:
            with open(args.roster, newline="", encoding="utf-8") as f:
                rows = list(csv.DictReader(f))
        except (OSError, UnicodeDecodeError, csv.Error) as e:
            return _fail(f"cannot read the roster {args.roster}: {e}")
        column = next((c for c in ("name", "student", "username", "login") if rows and c in rows[0]), None)
        if column is None:
            return _fail(f"{args.roster} needs a column 'name' (or 'student', 'username', 'login')")
        names += [r[column].strip() for r in rows if r[column] and r[column].strip()]
    if not names:
        return _fail("name the users to add, or pass --roster FILE.csv")
    from autograder.service.store import roster_name_problem

    bad = [p for p in map(roster_name_problem, names) if p]
    if bad:
        return _fail(f"{bad[0]}; nobody was added" + (f" ({len(bad)} names are refused)" if len(bad) > 1 else ""))
    try:
        course = _course(args)
    except RuntimeError as e:
        return _fail(str(e))
    role = "staff" if args.staff else "student"
    issued, again = [], []
    for name in names:
        if course.tokens_of(name):
            again.append(name)
        issued.append((name, role, course.add_user(name, role)))
    if again:
        print(f"autograder: {', '.join(again[:10])}{' …' if len(again) > 10 else ''} had a token already; it still "
              f"works (withdraw old tokens with: autograder course revoke NAME, then add them again)", file=sys.stderr)
    if args.tokens:
        fd = os.open(args.tokens, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(["name", "role", "token"])
            w.writerows(issued)
        people = {("staff", True): "staff member", ("staff", False): "staff members", ("student", True): "student",
                  ("student", False): "students"}[(role, len(issued) == 1)]
        print(f"added {len(issued)} {people}; their tokens are in {args.tokens} (shown once: give each person "
              f"their own, and keep the file private)")
    else:
        for name, _, token in issued:
            print(f"{name}\t{token}")
    return 0


def course_revoke(args: argparse.Namespace) -> int:
    """`autograder course revoke`: withdraw every token of the named users (their records stay)."""
    try:
        course = _course(args, create=False)
        for name in args.names:
            n = course.revoke(name)
            print(f"{name}: {n} token(s) withdrawn")
    except (RuntimeError, ValueError) as e:
        return _fail(str(e))
    return 0


def course_list(args: argparse.Namespace) -> int:
    """`autograder course list`: the roster (names and roles; tokens are never shown again)."""
    try:
        course = _course(args, create=False)
    except RuntimeError as e:
        return _fail(str(e))
    for user in course.roster():
        print(f"{user.name}\t{user.role}")
    return 0


def login(args: argparse.Namespace) -> int:
    """`autograder login`: ask for the course token, check it with the service (--service, else the one course.json
    in this folder names), and keep it for the notebooks."""
    from autograder.grading import coursefile
    from autograder.student.service_client import Client, ServiceError, save_token

    service = args.service
    if not service and Path(coursefile.FILE).exists():
        try:
            service = coursefile.load(coursefile.FILE).service
        except (OSError, ValueError) as e:
            return _fail(str(e))
    if not service:
        return _fail("which course service? pass --service URL (the address in your assignment's course.json), or "
                     "run this in the assignment's folder")
    try:
        service = coursefile.check_url(service)
    except ValueError as e:
        return _fail(f"{e}; for example http://127.0.0.1:8750")
    token = sys.stdin.readline().strip() if not sys.stdin.isatty() else getpass.getpass("your course token: ").strip()
    if not token:
        return _fail("no token given")
    try:
        me = Client(service, token).get("/me")
    except ServiceError as e:
        return _fail(f"not saved: {e}")
    print(f"signed in to {service} as {me['name']} ({me['role']}): set STUDENT_ID = \"{me['name']}\" in your "
          f"notebooks")
    path = save_token(token, service)
    print(f"token saved in {path}: your course's notebooks use it at their next check")
    return 0


def publish(key_path: str | Path, service: str, out: str | Path, auth: str, notebook: str | Path,
            token: str | None = None) -> tuple[Path, str]:
    """The course part of `release --course`: upload the full key at `key_path` to the service (a staff token:
    $AUTOGRAD_LAB_TOKEN or `autograder login`'s file) and write the course's student folder `out`: the student
    notebook and course.json, which holds no answer. Returns (course.json's path, the digest the service holds).
    Raises RuntimeError (the message says what to do) when the service refuses or cannot be reached."""
    from autograder.grading import coursefile
    from autograder.keyfile import load_key
    from autograder.student.service_client import Client, ServiceError, find_token

    service = coursefile.check_url(service)
    token = token or find_token("token", service)
    if token is None:
        raise RuntimeError("a course release needs a staff token: set $AUTOGRAD_LAB_TOKEN or run `autograder login` "
                           "(tokens come from `autograder course add NAME --staff` on the service's machine)")
    data = json.loads(Path(key_path).read_text(encoding="utf-8"))
    key = load_key(key_path)
    try:
        answer = Client(service, token).put(f"/assignments/{key.assignment}/key", data)
    except ServiceError as e:
        raise RuntimeError(f"the service did not take the key: {e}") from None
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in out.glob("public_key.json"):
        stale.unlink()
    (out / Path(notebook).name).write_text(course_notebook(Path(notebook).read_text(encoding="utf-8"), service,
                                                           key.grading.prediction_policy), encoding="utf-8")
    path = coursefile.write(out / coursefile.FILE, key, service, auth)   # type: ignore[arg-type]
    return path, str(answer.get("digest", ""))


def _words(text: str) -> re.Pattern:
    return re.compile(r"\s+".join(map(re.escape, text.split())))


# The sentences of the released notebooks that send a learner to `autograder check` in a terminal (the assignments'
# shared wording), and what a course's copy says instead.
TERMINAL_CHECK = (_words("`autograder check` on the saved file gives the same report as the `lab.check` cells, for all "
                         "exercises at once."),
                  _words("From a terminal, `autograder check <this notebook>` shows the same report for the whole "
                         "notebook."))
IN_A_COURSE = "In this course the check cells are the self-check: the answers are on the course service."
KEPT_IN_OUTPUT = _words("(the record is kept in the check cell's output: keep the outputs when you hand in)")
KEPT_BY_SERVICE = "(the course service keeps the record, with its own time)"


def course_notebook(text: str, service: str = "", policy: str = "first") -> str:
    """The student notebook as a course hands it out: its Markdown no longer says that `autograder check` from a
    terminal gives the same report (in a course it cannot: the answers are on the service), but where the answers
    are; a course introduction after the first Markdown cell (the service keeps the record, what sealed means, how
    to hand in and read the feedback; `policy`: the key's prediction_policy) and, at the end, a `lab.submit()` cell
    and a `lab.feedback()` cell, each locked; its metadata names the `service` (so that a batch graded without it
    says so). Everything else is as released (the code cells, the other metadata, the ids)."""
    import nbformat

    from autograder.grading.notebook import METADATA_KEY

    nb = nbformat.reads(text, as_version=4)
    if service:
        nb.metadata.setdefault(METADATA_KEY, {})["course"] = service
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for sentence in TERMINAL_CHECK:
                cell.source = sentence.sub(IN_A_COURSE, cell.source)
            cell.source = KEPT_IN_OUTPUT.sub(KEPT_BY_SERVICE, cell.source)
    ids = {c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells}
    if "course-intro" not in ids:   # once: a course copy made again from a course copy stays as it is
        first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "markdown"), -1)
        nb.cells.insert(first + 1, _locked(nbformat.v4.new_markdown_cell(COURSE_INTRO.format(
            graded=COMMITTED_GRADED if policy == "first" else LAST_GRADED)), "course-intro"))
        nb.cells += [_locked(nbformat.v4.new_markdown_cell(HAND_IN), "hand-in-intro"),
                     _locked(nbformat.v4.new_code_cell("lab.submit()"), "hand-in"),
                     _locked(nbformat.v4.new_markdown_cell(FEEDBACK), "feedback-intro"),
                     _locked(nbformat.v4.new_code_cell("lab.feedback()"), "feedback")]
    return nbformat.writes(nb) + "\n"


def _locked(cell: Any, grade_id: str) -> Any:
    """`cell` as a locked, ungraded nbgrader cell with `grade_id` (and that cell id: the same at every publish)."""
    cell.id = grade_id
    cell.metadata["nbgrader"] = {"grade": False, "grade_id": grade_id, "locked": True, "schema_version": 3,
                                 "solution": False, "task": False}
    cell.metadata["editable"] = cell.metadata["deletable"] = False   # as nbgrader locks the released cells
    return cell


# The course copy's own cells (course_notebook): what a course changes for the learner, said where it matters.
COMMITTED_GRADED = ("A prediction changed after its commit is shown beside it, but the committed value is the one "
                    "graded.")
LAST_GRADED = ("In this assignment the predictions in the notebook you hand in are graded; the commit records when "
               "you first made them.")
COURSE_INTRO = """## In this course

A course service keeps the record of your work, not this notebook:

- **Checks.** `lab.check(...)` sends your predictions to the course service. The first check that finds all of an
  exercise's predictions filled in *commits* them: the service records them, with its own time, before it judges
  anything. Until then the exercise is **sealed**: its check says what is still missing and shows no expected value,
  for the predictions and the PRODUCE checks alike. {graded}
- **Hand in** before your course's due time, by saving the notebook and running the cell `lab.submit()` at the end.
  Its receipt gives the course's time, says whether the hand-in is late and whether it is the one that counts. What
  is graded is the notebook as you saved and handed it in: after later changes, save and hand in again.
- **Feedback.** Once your course staff release it, `lab.feedback()` (the last cell) shows your graded report, the
  hidden checks included, with its hand-in time and any late penalty.
"""
HAND_IN = """## Hand in

Save the notebook first (File › Save, or Ctrl+S): `lab.submit()` hands in the file as last saved, and its receipt says
when the course received it, whether it is the hand-in that counts, and whether you checked work after that save."""
FEEDBACK = """## Your feedback

After your course staff have graded the hand-ins and released the feedback, this cell shows your graded report."""


def submit(args: argparse.Namespace) -> int:
    """`autograder submit NOTEBOOK`: hand in the saved notebook to its course; prints the receipt."""
    from autograder.student.handin import hand_in, receipt_text

    try:
        receipt = hand_in(args.notebook)
    except RuntimeError as e:
        if args.json:
            print(json.dumps({"error": str(e)}))
        return _fail(str(e))
    if args.json:
        print(json.dumps(receipt, indent=1))
    else:
        print(receipt_text(receipt))
    return 0


def feedback_release(args: argparse.Namespace) -> int:
    """`autograder course release-feedback ID --service URL`: students see their graded feedback from now on."""
    from autograder.student.service_client import Client, ServiceError, find_token

    try:
        answer = Client(args.service, find_token("token", args.service)).put(f"/assignments/{args.assignment}/feedback", {})
    except ServiceError as e:
        return _fail(str(e))
    print(f"feedback of {args.assignment} released at {answer['released']}")
    return 0


def export(args: argparse.Namespace) -> int:
    """`autograder course export ID --service URL`: the gradebook (the hand-in that counts per student, when, how
    late, the penalty, the scores) as CSV for an LMS (--csv), and into an nbgrader course's gradebook.db with the
    hand-in times (--nbgrader COURSE)."""
    from autograder.student.service_client import Client, ServiceError, find_token

    client = Client(args.service, find_token("token", args.service))
    try:
        if args.csv:
            import io

            from autograder.service.app import NOT_HANDED_IN

            text = client.request_text("GET", f"/assignments/{args.assignment}/gradebook?format=csv")
            Path(args.csv).write_text(text, encoding="utf-8")
            statuses = [row["status"] for row in csv.DictReader(io.StringIO(text))]
            missing = statuses.count(NOT_HANDED_IN)
            print(f"gradebook: {args.csv} ({len(statuses)} student(s): {len(statuses) - missing} handed in, "
                  f"{missing} not)")
        if args.nbgrader:
            rows = [row for row in client.get(f"/assignments/{args.assignment}/gradebook")["rows"] if row["handin"]]
            n = _into_nbgrader(args, client, rows)
            print(f"nbgrader: {n} submission(s) with their hand-in times in {Path(args.nbgrader) / 'gradebook.db'}")
    except ServiceError as e:
        return _fail(str(e))
    except RuntimeError as e:
        return _fail(str(e))
    if not (args.csv or args.nbgrader):
        return _fail("pass --csv FILE and/or --nbgrader COURSE")
    return 0


def override(args: argparse.Namespace) -> int:
    """`autograder course override ID STUDENT CHECK --score S --why TEXT --service URL` (or `--clear`): keep staff's
    score for one check of one student on the service (who: the staff token's user), and say what it changed."""
    from autograder.report import points
    from autograder.student.service_client import Client, ServiceError, find_token

    if args.clear == (args.score is not None):
        return _fail("give --score S with --why TEXT (the reason the student reads), or --clear")
    if args.score is not None and not (args.why or "").strip():
        return _fail("an override needs --why TEXT: the reason the student reads in their feedback")
    body = {"student": args.student, "check": args.check, "why": args.why or ""}
    body.update({"clear": True} if args.clear else {"score": args.score})
    try:
        row = Client(args.service, find_token("token", args.service)).post(
            f"/assignments/{args.assignment}/overrides", body)
    except ServiceError as e:
        return _fail(f"not saved: {e}")
    if row["score"] is None:
        print(f"{row['student']} {row['check']}: override cleared by {row['who']}; the grader's score counts again")
    else:
        print(f"{row['student']} {row['check']}: {points(row['before'])} -> {points(row['score'])} by {row['who']} "
              f"({row['state']}): {row['why']}")
    return 0


def overrides(args: argparse.Namespace) -> int:
    """`autograder course overrides ID --service URL`: every override of an assignment, newest first (as the overrides
    page lists them), with its state; those that wait for staff to confirm (their check changed in a re-release) are
    said last, with the fix."""
    from autograder.render.terminal import printable

    try:
        rows = list_overrides(args.service, args.assignment)
    except RuntimeError as e:
        return _fail(str(e))
    if rows:
        print(f"overrides of {args.assignment}, newest first:")
    for r in reversed(rows):
        score = "cleared" if r["score"] is None else f"{_pts(r['before'])} -> {_pts(r['score'])}"
        print(printable(f"{r['made'][:16].replace('T', ' ')}  {r['student']}  {r['check']}  {score}  by {r['who']}  "
                        f"[{r['state']}]  {r['why']}"))
    if not rows:
        print(f"no override of {args.assignment} yet")
    waiting = confirm_line(rows, args.assignment, args.service)
    if waiting:
        print(waiting)
    return 0


def _pts(x: float | None) -> str:
    from autograder.report import points

    return "—" if x is None else points(x)


def list_overrides(service: str, assignment: str) -> list[dict[str, Any]]:
    """Every override of `assignment` on the service, marked with its state (a staff token). Raises RuntimeError."""
    from autograder.student.service_client import Client, ServiceError, find_token

    try:
        return list(Client(service, find_token("token", service)).get(f"/assignments/{assignment}/overrides")
                    ["overrides"])
    except (ServiceError, KeyError, TypeError) as e:
        raise RuntimeError(f"the overrides could not be read: {e}") from None


def confirm_line(rows: list[dict[str, Any]], assignment: str, service: str) -> str:
    """What staff read of the overrides that wait for them to confirm ("" when none): who, which check, the fix."""
    waiting = [r for r in rows if r["state"] == "to confirm"]
    if not waiting:
        return ""
    shown = ", ".join(f"{r['student']} {r['check']}" for r in waiting[:20]) + (" …" if len(waiting) > 20 else "")
    return (f"overrides to confirm: {len(waiting)} whose check changed in a re-release (the grader's score counts "
            f"until you confirm): {shown}; confirm with autograder course override {assignment} STUDENT CHECK --score S "
            f"--why TEXT --service {service}, or --clear")


def _into_nbgrader(args: argparse.Namespace, client: Any, rows: list[dict[str, Any]]) -> int:
    import datetime as dt

    from autograder.integrations import nbgrader as course
    from autograder.keyfile import load_key
    from autograder.report import Report

    key_path = Path(args.key or Path("build") / args.assignment / "key.json")
    if not key_path.exists():
        raise RuntimeError(f"no key at {key_path}: pass --key (the gradebook's notebook and grade cells come from it)")
    key = load_key(key_path)
    reports, times = [], {}
    for row in rows:
        answer = client.get(f"/students/{row['student']}/assignments/{args.assignment}/feedback")
        reports.append(Report.from_dict(answer["report"]))
        times[row["student"]] = dt.datetime.fromisoformat(row["submitted_at"]).astimezone(dt.timezone.utc).replace(tzinfo=None)
    return len(course.record_scores(args.nbgrader, key, reports, times) or [])


@dataclass(frozen=True)
class HandIns:
    """The hand-ins that count, as `fetch_handins` found them: student -> hand-in id; hand-in id -> the fingerprint
    of the graded report the service holds (None: not graded yet); how many notebook files changed on disk."""

    ids: dict[str, int]
    graded: dict[int, str | None]
    changed: int


def fetch_handins(service: str, assignment: str, folder: Path) -> HandIns:
    """Download the hand-in that counts of each student into `folder/<student>.ipynb` (a staff token), only where
    the file there is not already that hand-in (its sha256); each file's modification time is the hand-in's time
    on the service. Raises RuntimeError."""
    import datetime as dt
    import hashlib

    from autograder.student.service_client import Client, ServiceError, find_token

    client = Client(service, find_token("token", service))
    try:
        handins = [h for h in client.get(f"/assignments/{assignment}/handins")["handins"] if h.get("counts")]
        folder.mkdir(parents=True, exist_ok=True)
        ids, graded, changed = {}, {}, 0
        for h in handins:
            path = folder / f"{h['student']}.ipynb"
            try:
                same = hashlib.sha256(path.read_bytes()).hexdigest() == h["digest"]
            except OSError:
                same = False
            if not same:
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_bytes(client.download(f"/handins/{int(h['id'])}"))
                when = dt.datetime.fromisoformat(h["received"]).timestamp()
                os.utime(tmp, (when, when))   # the file's time is the service's hand-in time (the report's)
                tmp.replace(path)
                changed += 1
            ids[str(h["student"])] = int(h["id"])
            graded[int(h["id"])] = h.get("graded")
    except ServiceError as e:
        raise RuntimeError(f"the hand-ins could not be read: {e}") from None
    except OSError as e:
        raise RuntimeError(f"the hand-ins could not be written into {folder}: {e}") from None
    return HandIns(ids, graded, changed)


def send_reports(service: str, handins: HandIns, reports: list[Any]) -> int:
    """Send each report to the service, for the hand-in of its student (a staff token), unless the service holds
    this very report already (the same fingerprint); returns how many were sent. Raises RuntimeError."""
    from autograder.student.service_client import Client, ServiceError, find_token

    client = Client(service, find_token("token", service))
    sent = 0
    for report in reports:
        hid = handins.ids.get(report.student)
        if hid is None or (report.fingerprint and handins.graded.get(hid) == report.fingerprint):
            continue
        try:
            client.post(f"/handins/{hid}", report.to_dict())
        except ServiceError as e:
            raise RuntimeError(f"the report of {report.student} was not taken: {e}") from None
        sent += 1
    return sent


def not_handed_in(service: str, assignment: str) -> list[str]:
    """The roster's students with no hand-in of `assignment` (the service's gradebook; a staff token). Raises
    RuntimeError."""
    from autograder.service.app import NOT_HANDED_IN
    from autograder.student.service_client import Client, ServiceError, find_token

    try:
        rows = Client(service, find_token("token", service)).get(f"/assignments/{assignment}/gradebook")["rows"]
    except (ServiceError, KeyError, TypeError) as e:
        raise RuntimeError(f"the gradebook could not be read: {e}") from None
    return [r["student"] for r in rows if r.get("status") == NOT_HANDED_IN]


def fetch_roster(service: str) -> list[str]:
    """The course's user names (a staff token). Raises RuntimeError."""
    from autograder.student.service_client import Client, ServiceError, find_token

    try:
        answer = Client(service, find_token("token", service)).get("/users")
    except ServiceError as e:
        raise RuntimeError(f"the course's roster could not be read: {e}") from None
    return [str(u.get("name")) for u in answer.get("users", []) if isinstance(u, dict)]


def fetch_commits(service: str, assignment: str, by_hand_in: bool = False) -> dict[str, list[dict[str, Any]]]:
    """student -> their commit records, as the service holds them (a staff token; its names are lower case, as
    model.student_key gives them); with `by_hand_in`, only those made before each student's hand-in that counts.
    Raises RuntimeError."""
    from autograder.student.service_client import Client, ServiceError, find_token

    token = find_token("token", service)
    if token is None:
        raise RuntimeError("--service needs a staff token: set $AUTOGRAD_LAB_TOKEN or run `autograder login`")
    try:
        answer = Client(service, token).get(f"/assignments/{assignment}/commits" + ("?until=handin" if by_hand_in else ""))
    except ServiceError as e:
        raise RuntimeError(f"the service's commits could not be read: {e}") from None
    commits = answer.get("commits") if isinstance(answer, dict) else None
    if not isinstance(commits, dict):
        raise RuntimeError("the service's answer holds no commits")
    return {str(k): [r for r in v if isinstance(r, dict)] for k, v in commits.items() if isinstance(v, list)}
