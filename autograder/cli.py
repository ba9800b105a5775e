"""cli: the `autograder` command. Subcommands -> API calls -> exit codes; no grading logic here.
Everything heavy is imported inside the subcommand that needs it, so that `--help` stays fast.

Exit codes: 0 success (for `check`: every check passed); 1 `check` found a check that did not pass
or the notebook is not gradable; 2 usage, spec, key or build error (the message says what to fix).

May import: stdlib, autograder.version, autograder.model; inside a subcommand: autograder.sandbox.cgroup (the usable
cores), autograder.keyfile,
autograder.report, autograder.grading.notebook, autograder.grading.intake, autograder.grading.grade, autograder.grading.batch, autograder.grading.overrides,
autograder.grading.identity, autograder.authoring.release, autograder.authoring.spec, autograder.authoring.scaffold,
autograder.authoring.sweep (release's domain budgets), autograder.student.selfcheck,
autograder.render.terminal, autograder.render.gradebook, autograder.render.html, autograder.render.gradescope,
autograder.integrations.nbgrader, autograder.integrations.gradescope, autograder.integrations.dask,
autograder.sandbox.client (to start the worker early), autograder.service.commands, autograder.judging.worked (its
time limit, as release's default), autograder.authoring.collusion, autograder.render.collusion.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from autograder.model import limits_help

LIMIT_HELP = "override a limit of the key's [grading] table (repeatable): " + limits_help()
EXAMPLES = {
    "release": "examples:\n  autograder release solutions/01-backward-vs-grad\n"
               "  autograder release solutions/01-backward-vs-grad --json",
    "check": "examples:\n  autograder check assignments/01-backward-vs-grad/backward-vs-grad.ipynb\n"
             "  autograder check my-work.ipynb --student s1234567 --json",
    "grade": "examples:\n  autograder grade examples/submissions/01-backward-vs-grad --out out/\n"
             "  autograder grade a.ipynb b.ipynb --out out/ --assignment 01-backward-vs-grad --jobs 2\n"
             "  autograder grade --nbgrader ~/course --assignment 01-backward-vs-grad\n"
             "  autograder grade subs/ --out out/ --feedback --gradescope results.json\n"
             "  autograder grade subs/ --out out/ --scheduler tcp://scheduler-host:8786\n"
             "  autograder grade subs/ --out out/ --stats\n"
             "  autograder grade --service http://127.0.0.1:8750 --assignment 01-backward-vs-grad --out out/ "
             "--follow 600",
    "stats": "examples:\n  autograder stats out/\n  autograder stats out/ --key build/01-backward-vs-grad/key.json --json",
    "collusion": "examples:\n  autograder collusion out/ --submissions submissions/\n"
                 "  autograder collusion out/ --key build/01-backward-vs-grad/key.json --submissions submissions/",
}
EXAMPLES["gradescope-bundle"] = ("examples:\n  autograder gradescope-bundle 01-backward-vs-grad\n"
                                 "  autograder gradescope-bundle 01-backward-vs-grad --out ~/upload/01.zip")
EXAMPLES["new"] = ("examples:\n  autograder new 13-hooks\n  autograder new 13-hooks --title \"Hooks on tensors\"\n"
                   "  autograder release solutions/13-hooks")
EXIT_CODES = {
    "new": "exit codes: 0 the folder was written; 2 a bad id, or the folder exists",
    "gradescope-bundle": "exit codes: 0 the zip was written; 2 a usage or key error",
    "release": "exit codes: 0 released; 2 a spec or build error (the message says what to fix), or the machine could "
               "not finish (the sandbox did not start, or tracing the predictions ran out of --trace-timeout twice); "
               "nothing is written then",
    "check": "exit codes: 0 every check passed (or is sealed: a prediction written down, not yet committed); 1 a "
             "check did not pass, or the notebook is not gradable; 2 a usage or key error",
    "grade": "exit codes: 0 every report was written (whatever the scores, not-gradable submissions included); "
             "2 a usage or key error, the sandbox could not start, or an override of --overrides could not be used",
    "stats": "exit codes: 0 the class view was written; 2 no reports there, or reports of several assignments",
    "collusion": "exit codes: 0 the collusion view was written (whatever it found); 2 no reports there, reports of "
                 "several assignments, or no key",
    "serve": "exit codes: 0 stopped by Ctrl-C or SIGTERM; 2 the database cannot be opened, or the port is taken",
    "course": "exit codes: 0 done; 2 a bad name or roster, or no course database there",
    "login": "exit codes: 0 the token was saved; 2 no token, or the service refused it",
    "submit": "exit codes: 0 handed in (the receipt is printed); 2 not handed in (the message says why)",
}
EXAMPLES["serve"] = ("examples:\n  autograder serve\n  autograder serve --db postgresql+psycopg://lab@db.example/lab --port 8750\n"
                     "  autograder serve --hub --staff alice     (as a JupyterHub service: docs/course.md)")
EXAMPLES["course"] = ("examples:\n  autograder course add --staff alice\n"
                      "  autograder course add --roster roster.csv --tokens tokens.csv\n  autograder course list\n"
                      "  autograder course revoke amy\n"
                      "  autograder course release-feedback 01-backward-vs-grad --service http://127.0.0.1:8750\n"
                      "  autograder course export 01-backward-vs-grad --service http://127.0.0.1:8750 --csv grades.csv\n"
                      "  autograder course override 01-backward-vs-grad amy 2.predict.returns --score 1 --why 'a fair "
                      "appeal' --service http://127.0.0.1:8750")
EXAMPLES["submit"] = "examples:\n  autograder submit ~/amy-01/backward-vs-grad.ipynb"
EXAMPLES["login"] = ("examples:\n  autograder login --service http://127.0.0.1:8750\n"
                     "  autograder login     (in an assignment's folder: the service course.json names)")


def _epilog(command: str) -> str:
    return f"{EXIT_CODES[command]}\n\n{EXAMPLES[command]}"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="autograder", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Release, self-check and batch-grade autograd-lab assignments.",
        epilog="exit codes: 0 ok; 1 a check did not pass (check); 2 usage, spec, key or build error\n\n"
               + "examples:\n" + "\n".join(e.split("\n", 1)[1] for e in EXAMPLES.values()))
    p.add_argument("--version", action="store_true", help="print the version and exit")
    sub = p.add_subparsers(dest="command", metavar="{new,release,check,grade,stats,collusion,gradescope-bundle,serve,course,login,submit}")
    fmt = argparse.RawDescriptionHelpFormatter
    n = sub.add_parser("new", help="start an assignment: a spec and a solution notebook that release as they are",
                       epilog=_epilog("new"), formatter_class=fmt,
                       description="Write solutions/<id>/spec.toml and solutions/<id>/<name>.ipynb: one exercise "
                       "(a prediction, a PRODUCE function, a misconception) that releases at once. Names, points and "
                       "expectations go in the spec; release writes the nbgrader metadata, placeholders, stubs and "
                       "check cells.")
    n.add_argument("assignment", help="the new assignment's id, lower case with hyphens (13-hooks)")
    n.add_argument("--solutions", default="solutions", help="the folder of solution folders (default: solutions/)")
    n.add_argument("--title", help="the assignment's title (default: from the id)")
    r = sub.add_parser("release", help="build the key and write the student notebook", epilog=_epilog("release"),
                       formatter_class=fmt, description="Build the answer key from a solution folder (spec.toml + "
                       "notebook); refuse if sympy and the reference torch run disagree, the solution scores below "
                       "100 % or the blank copy above 0; write assignments/<id>/ and build/<id>/key.json.")
    r.add_argument("solution", help="solutions/<assignment> folder")
    r.add_argument("--assignments", help="where to write the student folder (default: assignments/ beside solutions/)")
    r.add_argument("--build", help="where to write the full key (default: build/ beside solutions/)")
    r.add_argument("--force", action="store_true", help="release although it changes what the students of the key "
                   "already released see or are graded on (parameters, checks, expectations, points)")
    r.add_argument("--json", action="store_true", help="print what was written and measured as JSON")
    r.add_argument("--trace-timeout", type=_seconds, metavar="SECONDS",
                   help="seconds to check, per sample student, that the solution's predictions are worked out "
                   "(default: 10; release tries once more with three times as long before it gives up, which is a "
                   "busy machine's fault, never the spec's)")
    r.add_argument("--domain", choices=("full", "quick"), default="full",
                   help="check the solution at every point a student can draw (full: enumerated up to a million "
                   "points per exercise, else 100,000 draws plus the edges and the points near poles; its time is "
                   "the solution's own calls over the cores: from seconds to minutes) or at a few thousand (quick: "
                   "for drafts; release with full before students get it)")
    r.add_argument("--jobs", type=_jobs, metavar="N", help="sandboxed runs of the domain check at once (default: one "
                   "per core this process may use, its CPU quota counted, and at most one per GiB of free memory)")
    r.add_argument("--course", metavar="URL", help="also release for the course service at URL: upload the full key "
                   "(a staff token: $AUTOGRAD_LAB_TOKEN or `autograder login`) and write the course's student folder, "
                   "build/<id>/course/: the notebook and course.json, with no answer in it")
    r.add_argument("--hub", action="store_true", help="with --course: students sign in through JupyterHub")
    c = sub.add_parser("check", help="self-check a notebook (public checks), open report", epilog=_epilog("check"),
                       formatter_class=fmt, description="Run a notebook in the sandbox and print the open report of "
                       "its public checks. Exit 0 only if every check passes.")
    c.add_argument("notebook")
    c.add_argument("--key", help="public_key.json (default: beside the notebook, else assignments/<id>/)")
    c.add_argument("--student", help="student id (default: the notebook's STUDENT_ID)")
    c.add_argument("--exercise", action="append", help="only this exercise (repeatable)")
    c.add_argument("--json", action="store_true", help="print the canonical report JSON instead of text")
    c.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help=LIMIT_HELP)
    g = sub.add_parser("grade", help="batch-grade submissions into reports and a gradebook", epilog=_epilog("grade"),
                       formatter_class=fmt, description="Grade notebooks (files, or folders searched for *.ipynb). "
                       "Writes OUT/reports/<submission>.json and OUT/gradebook.csv and prints a summary. The "
                       "student id is each file's name without .ipynb (or, for a file that kept the released notebook's "
                       "name, its folder's name). A submission whose report is already in OUT with the same "
                       "content, student, key and grader version is not graded again (a killed batch resumes); "
                       "--force grades everything again. Each submission runs in a fresh sandboxed process forked "
                       "from one warm worker.")
    g.add_argument("paths", nargs="*", help="notebooks, or folders searched for *.ipynb")
    g.add_argument("--out", help="output folder (required, except with --nbgrader: COURSE/autograd-lab/<assignment>)")
    g.add_argument("--nbgrader", metavar="COURSE", help="grade an nbgrader course directory's "
                   "submitted/<student>/<assignment>/ (with --assignment), and write its autograded/ and feedback/ "
                   "folders and the scores into its gradebook.db")
    g.add_argument("--feedback", action="store_true", help="also write OUT/feedback/<submission>.html, one page each")
    g.add_argument("--gradescope", metavar="FILE", help="also write Gradescope's results.json to FILE (one "
                   "submission), or FILE/<submission>.json for each of several")
    g.add_argument("--key", help="key.json (default: build/<assignment>/key.json)")
    g.add_argument("--assignment", help="assignment id (default: from the notebooks' metadata or folder names)")
    g.add_argument("--jobs", type=_jobs, help="submissions graded at once (default: the cores this process may use; "
                   "with --scheduler, the Dask workers' threads decide)")
    g.add_argument("--ids", choices=("file", "notebook"), default="file", help="whose parameters each "
                   "submission is graded with: the file's (or its folder's) name (default), or the notebook's own "
                   "STUDENT_ID (for downloads renamed by a learning platform)")
    g.add_argument("--student", help="grade the one notebook given as this student id (whatever the file, its "
                   "folder or its STUDENT_ID say)")
    g.add_argument("--force", action="store_true", help="grade again even submissions whose report is up to date")
    g.add_argument("--scheduler", metavar="ADDRESS", help="grade on a running Dask cluster (tcp://host:8786), or on "
                   "a LocalCluster of N worker processes started for this batch (local:N, N from 1 to 256); needs "
                   "pip install 'autograd-lab[dask]'. Reports are written here, as without it")
    g.add_argument("--limit", action="append", default=[], metavar="NAME=VALUE", help=LIMIT_HELP)
    g.add_argument("--stats", action="store_true", help="also write the class view of this batch: OUT/stats.html, "
                   "OUT/stats.json and OUT/item-analysis.csv (as `autograder stats OUT`)")
    g.add_argument("--json", action="store_true", help="print the reports as one JSON list instead of the summary")
    g.add_argument("--service", metavar="URL", help="a course's batch: grade each prediction with the commit the course "
                   "service recorded (a staff token), never with the notebook's own records; with no paths: grade the "
                   "hand-in that counts of each student (into OUT/handins/) and send the reports back")
    g.add_argument("--overrides", metavar="FILE.csv", help="staff's scores for single checks, applied to the reports "
                   "as adjustments the student sees with the reason: a CSV with the columns student, check, score, why "
                   "(and who); a batch without the course service (docs/staff.md)")
    g.add_argument("--follow", type=float, metavar="SECONDS", help="with --service and no paths: keep grading hand-ins "
                   "as they arrive, until none came for SECONDS (or Ctrl-C)")
    t = sub.add_parser("stats", help="the class view of a graded batch: plots, item analysis, misconceptions",
                       epilog=_epilog("stats"), formatter_class=fmt,
                       description="Read the reports a `grade --out OUT` wrote (those its gradebook lists) and write "
                       "OUT/stats.html (score distribution, pass rate per check, named misconceptions, per check: "
                       "counts per status, difficulty, discrimination, misconception counts and the most common "
                       "unnamed wrong answers), OUT/stats.json and OUT/item-analysis.csv. Not-gradable submissions "
                       "are counted apart, never as zeros.")
    t.add_argument("out", help="a folder `autograder grade --out` wrote (it holds reports/)")
    t.add_argument("--key", help="the assignment's key, to list every misconception, also those no submission showed "
                   "(default: build/<assignment>/key.json if it is there)")
    t.add_argument("--json", action="store_true", help="print stats.json's content instead of the summary")
    cu = sub.add_parser("collusion", help="evidence of copying in a graded batch (never changes a score)",
                        epilog=_epilog("collusion"), formatter_class=fmt,
                        description="Read the reports a `grade --out OUT` wrote and write OUT/collusion.html, "
                        "OUT/collusion.csv and OUT/collusion.json: pairs of students where one's wrong predictions are "
                        "right at the other's point (with the chance of that), and pairs whose produce functions are "
                        "the same code after renaming (with --submissions). Evidence only: no score changes.")
    cu.add_argument("out", help="a folder `autograder grade --out` wrote (it holds reports/)")
    cu.add_argument("--key", help="the assignment's full key (default: build/<assignment>/key.json)")
    cu.add_argument("--submissions", metavar="FOLDER", help="the folder that was graded, to compare produce cells "
                    "(default: OUT/handins/ when `grade --service` wrote it)")
    b = sub.add_parser("gradescope-bundle", help="write the zip that runs this grader on Gradescope",
                       epilog=_epilog("gradescope-bundle"), formatter_class=fmt,
                       description="Write Gradescope's autograder zip for an assignment (setup.sh, run_autograder, "
                       "the FULL key and this package's source): upload it as the assignment's autograder. It "
                       "holds the answers: give it to nobody but Gradescope.")
    b.add_argument("assignment", help="assignment id (its key is build/<id>/key.json)")
    b.add_argument("--key", help="the full key.json (default: build/<assignment>/key.json)")
    b.add_argument("--out", help="the zip to write (default: build/<assignment>/gradescope-<assignment>.zip)")
    b.add_argument("--json", action="store_true", help="print the path written as JSON")
    v = sub.add_parser("serve", help="run the course service: it keeps the answers and records each commit first",
                       epilog=_epilog("serve"), formatter_class=fmt, description="Serve the course (docs/course.md): "
                       "kernels of the course's notebooks send each exercise's predictions here, which are committed "
                       "with this service's clock before anything is judged, then their observations, which are judged "
                       "here with the full key. The database is made or migrated first.")
    v.add_argument("--db", help="SQLAlchemy URL of the database (default: $AUTOGRAD_LAB_DB, else sqlite:///course.db); "
                   "PostgreSQL: postgresql+psycopg://user:password@host/dbname")
    v.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: put TLS or the hub's "
                   "proxy in front)")
    v.add_argument("--port", type=int, default=8750, help="port (default 8750; 0 picks a free one)")
    v.add_argument("--port-file", help="write the port listened on to this file once it listens")
    v.add_argument("--hub", action="store_true", help="run as a JupyterHub service: users are the Hub's (its "
                   "$JUPYTERHUB_API_TOKEN and $JUPYTERHUB_API_URL, as the Hub sets them for a service)")
    v.add_argument("--staff", action="append", metavar="NAME", help="with --hub: a Hub user who is staff (repeatable; "
                   "Hub admins are staff too)")
    v.add_argument("--behind-proxy", nargs="?", const="x-forwarded-for", choices=("x-forwarded-for", "x-real-ip"),
                   default="", metavar="HEADER",
                   help="read client addresses from the header the proxy in front sets itself: x-forwarded-for (the "
                        "default: its last address, the one the proxy added; JupyterHub's proxy, Caddy, nginx with "
                        "$proxy_add_x_forwarded_for) or x-real-ip (nginx with proxy_set_header X-Real-IP)")
    v.add_argument("--config", metavar="COURSE.TOML", help="the course's deadlines, extensions and late policy "
                   "(docs/course.md), read again whenever the file changes")
    v.add_argument("--rate", type=float, default=5.0, help="requests per second each user may send on average "
                   "(default 5; a check is two)")
    v.add_argument("--burst", type=int, default=40, help="requests each user may send at once (default 40)")
    v.add_argument("--workers", type=int, default=1, metavar="N", help="serve with N processes on the one port (default "
                   "1; for a course's deadline, as many as the machine's cores: docs/course.md, 'Sizing a course for a "
                   "deadline'): every rule is in the database, so they act as one, and so do services on other "
                   "machines given the same --db")
    co = sub.add_parser("course", help="the course: its roster and tokens (on the service's machine), its "
                                       "gradebook and feedback (by the service's URL)",
                        epilog=_epilog("course"), formatter_class=fmt)
    cs = co.add_subparsers(dest="course_command", metavar="{add,list,revoke,release-feedback,export,override,overrides}")
    ca = cs.add_parser("add", help="add users and issue each a token (shown once)")
    ca.add_argument("names", nargs="*", help="user names (course ids) to add")
    ca.add_argument("--roster", help="a CSV with a column name (or student, username, login)")
    ca.add_argument("--staff", action="store_true", help="they are staff (release, batch grading, everyone's records)")
    ca.add_argument("--tokens", help="write name,role,token to this CSV (mode 600) instead of printing them")
    ca.add_argument("--db", help="the service's database URL (as for serve)")
    cr = cs.add_parser("revoke", help="withdraw every token of these users (their records stay)")
    cr.add_argument("names", nargs="+")
    cr.add_argument("--db", help="the service's database URL (as for serve)")
    cf = cs.add_parser("release-feedback", help="let students see their graded feedback of an assignment")
    cf.add_argument("assignment", help="the assignment id, such as 01-backward-vs-grad")
    cf.add_argument("--service", required=True, metavar="URL", help="the course service (a staff token: "
                    "$AUTOGRAD_LAB_TOKEN)")
    ce = cs.add_parser("export", help="the gradebook: CSV for an LMS, and into an nbgrader course's gradebook.db")
    ce.add_argument("assignment", help="the assignment id, such as 01-backward-vs-grad")
    ce.add_argument("--service", required=True, metavar="URL", help="the course service (a staff token: "
                    "$AUTOGRAD_LAB_TOKEN)")
    ce.add_argument("--csv", metavar="FILE", help="write the gradebook (student, status, score, max_score, "
                    "submitted_at, late_by, penalty, final_score, late, handin, overrides) here")
    ce.add_argument("--nbgrader", metavar="COURSE", help="put the scores and hand-in times into COURSE/gradebook.db")
    ce.add_argument("--key", help="the full key (default: build/<assignment>/key.json)")
    co_o = cs.add_parser("override", help="set one check's score for one student, with the reason they read "
                         "(kept on the service, with who and when; --clear takes it back)")
    co_o.add_argument("assignment", help="the assignment id, such as 01-backward-vs-grad")
    co_o.add_argument("student", help="the student's id")
    co_o.add_argument("check", help="the check id, as the reports name it (2.predict.returns)")
    co_o.add_argument("--score", type=float, help="the points (from 0 to the check's points)")
    co_o.add_argument("--why", help="the reason, which the student reads in their feedback")
    co_o.add_argument("--clear", action="store_true", help="take the check's override back: the grader's score counts")
    co_o.add_argument("--service", required=True, metavar="URL", help="the course service (a staff token: "
                      "$AUTOGRAD_LAB_TOKEN)")
    co_l = cs.add_parser("overrides", help="every override of an assignment, with its state (those to confirm last)")
    co_l.add_argument("assignment", help="the assignment id, such as 01-backward-vs-grad")
    co_l.add_argument("--service", required=True, metavar="URL", help="the course service (a staff token: "
                      "$AUTOGRAD_LAB_TOKEN)")
    cl = cs.add_parser("list", help="the roster: names and roles")
    cl.add_argument("--db", help="the service's database URL (as for serve)")
    lo = sub.add_parser("login", help="keep your course token for your notebooks (asks for it)",
                        epilog=_epilog("login"), formatter_class=fmt)
    su = sub.add_parser("submit", help="hand in a course's saved notebook (course.json beside it); prints the receipt",
                        epilog=_epilog("submit"), formatter_class=fmt)
    su.add_argument("notebook", help="the saved .ipynb, in the course's folder (course.json beside it names the "
                    "service; the token is $AUTOGRAD_LAB_TOKEN or the one `autograder login` saved)")
    su.add_argument("--json", action="store_true", help="print the receipt (or the refusal) as JSON")
    lo.add_argument("--service", help="the course service's URL, which checks the token first (default: the one in "
                    "course.json in this folder)")
    return p


def _selfcheck_parser() -> argparse.ArgumentParser:
    s = argparse.ArgumentParser(prog="autograder _selfcheck")
    s.add_argument("--key")
    s.add_argument("--student")
    s.add_argument("--exercise", action="append")
    s.add_argument("--serve", action="store_true")
    return s


def _jobs(text: str) -> int:
    """argparse's type of a number of runs at once: a whole number above 0."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number above 0")
    return int(text)


def _seconds(text: str) -> float:
    """argparse's type of a time in seconds: a positive number."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds above 0")
    return value


def _fail(msg: str) -> int:
    print(f"autograder: {msg}", file=sys.stderr)
    return 2


def _find_public_key(notebook: Path, nb: Any) -> Path | None:
    from autograder.keyfile import find_public_key
    from autograder.grading.notebook import declared_assignment

    ids = [aid for aid in (declared_assignment(nb), notebook.resolve().parent.name) if aid]
    return find_public_key(ids, beside=notebook.parent)


def _check(args: argparse.Namespace) -> int:
    from autograder.keyfile import find_public_key
    from autograder.sandbox.client import WorkerStart

    path = Path(args.notebook)
    if not path.is_file():
        return _fail(f"no such file: {path}")
    key_path = Path(args.key) if args.key else find_public_key([], beside=path.parent)   # no notebook read yet
    if key_path is None:
        from autograder.grading.notebook import NotebookError, read_notebook

        try:
            key_path = _find_public_key(path, read_notebook(path))
        except NotebookError as e:
            print(f"NOT GRADED: {e}")
            return 1
        if key_path is None:
            if (path.parent / "course.json").exists():   # a course's notebook: the answers are on its service
                return _fail(f"{path} is a course's notebook (course.json beside it): its answers are on the "
                             f"course service, so check it in the notebook, with its lab.check cells")
            return _fail(f"no public_key.json beside {path}, nor in an assignments/ folder for it here or "
                         f"above; pass --key")
    # The sandbox's worker takes most of a check's time (its torch import): it starts first, and the key, the
    # notebook and sympy are read meanwhile.
    with WorkerStart(_conceal_for(key_path)) as start:
        return _check_with(args, path, key_path, start)


def _check_with(args: argparse.Namespace, path: Path, key_path: Path, start: Any) -> int:
    from autograder.grading.grade import grade_notebook, prepare_grading
    from autograder.render.terminal import render

    key = _load_key(key_path, args.limit)
    if key is None:
        return 2
    known = [e.id for e in key.exercises]
    unknown = [e for e in args.exercise or [] if e not in known]
    if unknown:
        return _fail(f"no exercise {', '.join(unknown)}; the exercises are {', '.join(known)}")
    prepare_grading(key)
    try:
        worker = start.get()
    except OSError:
        worker = None   # grade_notebook tries to start one, and says why it could not, in a not-graded report
    report = grade_notebook(path, key, args.student, args.exercise, conceal=_conceal_for(key_path), selfcheck=True,
                            worker=worker)
    print(json.dumps(report.to_dict(), indent=1) if args.json else render(report))
    # the exit code is what was judged: a prediction sealed (written down, not yet committed) is not a failure
    ok = report.status == "graded" and all(o.status in ("passed", "sealed") for o in report.outcomes)
    return 0 if ok else 1


def _conceal_for(key_path: Path) -> list[str]:
    """Folders a submission must not see besides the working folder: the key's folder, the project
    that holds it (<project>/build/<id>/key.json or <project>/assignments/<id>/public_key.json),
    and ./solutions."""
    key_path = key_path.resolve()
    conceal = [str(key_path.parent)]
    parents = key_path.parents
    if len(parents) > 2 and parents[1].name in ("build", "assignments"):
        conceal.append(str(parents[2]))
    if Path("solutions").is_dir():
        conceal.append(str(Path("solutions").resolve()))
    return conceal


def _load_key(path: Path, limits: list[str] = ()) -> Any:
    """The model.Key at `path` with `--limit NAME=VALUE` overrides; None (after saying why) if it cannot be used."""
    from autograder.keyfile import load_key

    if not path.is_file():
        _fail(f"no key at {path}")
        return None
    try:
        key = load_key(path)
        overrides = {}
        for item in limits:
            name, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"--limit {item!r}: write NAME=VALUE, e.g. --limit call_timeout=10")
            try:
                overrides[name.strip()] = float(value) if "timeout" in name else int(value)
            except ValueError:
                raise ValueError(f"--limit {item!r}: the value must be a {'number' if 'timeout' in name else 'whole number'}") from None
        return key.with_limits(overrides)
    except (OSError, ValueError) as e:
        _fail(str(e))
        return None


def _infer_assignment(paths: list[str]) -> tuple[str | None, str]:
    """The assignment of the notebooks given, when `grade` is not told: the one their `Lab(...)` lines (or the
    release's metadata) name, among released assignments (build/<id>/key.json here), read from up to 50 of
    them through the intake; else a folder of theirs named after one. A notebook is a student's text, so what
    it says only picks among the keys staff released, and notebooks that name different ones stop the batch.
    Returns (the id or None, why not)."""
    from collections import Counter

    from autograder.grading import intake
    from autograder.grading.notebook import NotebookError, declared_assignment, parse_notebook
    from autograder.keyfile import is_assignment_id

    try:
        found = [f for f in intake.find(paths) if not f.problem]
    except FileNotFoundError:
        return None, ""
    named: Counter[str] = Counter()
    for f in found[:50]:
        try:
            aid = declared_assignment(parse_notebook(intake.read(f), f.path.name, outputs=False))
        except (NotebookError, intake.Refused):
            continue
        if aid and (Path("build") / aid / "key.json").is_file():
            named[aid] += 1
    if len(named) > 1:
        listed = ", ".join(f"{aid} ({n} notebooks)" for aid, n in named.most_common())
        return None, (f"the notebooks name several released assignments: {listed}; pass --assignment ID (a batch "
                      f"grades one assignment, and a notebook of another is not gradable)")
    if named:
        return next(iter(named)), ""
    for f in found:
        for part in reversed(Path(os.path.abspath(f.path)).parts[:-1]):
            if is_assignment_id(part) and (Path("build") / part / "key.json").exists():
                return part, ""
    return None, ""


def _grade(args: argparse.Namespace) -> int:
    args.handins = None
    if args.service and not args.paths and not args.nbgrader:   # the course's hand-ins, from its service
        return _grade_handins(args)
    if args.follow is not None:
        return _fail("--follow grades a course's hand-ins as they come: use it with --service URL and no paths")
    return _grade_paths(args)


FOLLOW_POLL = 2.0   # seconds between two looks at the service's hand-ins (grade --follow)


def _grade_handins(args: argparse.Namespace) -> int:
    """`grade --service URL --assignment ID --out OUT` with no paths: the hand-in that counts of each student, into
    OUT/handins/, graded, and each new report sent back to the service. With --follow: again whenever a hand-in
    arrives, until none came for that many seconds (or Ctrl-C)."""
    import time

    from autograder.service.commands import fetch_handins

    if not (args.out and (args.assignment or args.key)):
        return _fail("grading a course's hand-ins needs --out OUTPUT_FOLDER and --assignment ID")
    aid = args.assignment or json.loads(Path(args.key).read_text()).get("assignment", "")
    folder = Path(args.out) / "handins"
    args.paths, args.assignment = [str(folder)], aid
    rc, rounds, quiet_since = 0, 0, time.monotonic()
    if args.follow is not None:
        print(f"autograder: following the hand-ins of {aid} on {args.service}: each is graded as it arrives, until "
              f"none came for {args.follow:g} s (Ctrl-C stops)", file=sys.stderr)
    try:
        while True:
            try:
                args.handins = fetch_handins(args.service, aid, folder)
            except RuntimeError as e:
                if args.follow is None:
                    return _fail(str(e))
                print(f"autograder: {e}; trying again in {FOLLOW_POLL:g} s", file=sys.stderr)
                args.handins = None
            if args.handins is not None and not args.handins.ids and args.follow is None:
                return _fail(f"nobody has handed in {aid} yet")
            new = args.handins is not None and (args.handins.changed or None in args.handins.graded.values())
            if args.handins is not None and args.handins.ids and (new or rounds == 0):
                rc = _grade_paths(args)
                rounds += 1
                quiet_since = time.monotonic()
                if rc != 0 and args.follow is None:
                    return rc
            if args.follow is None:
                return rc
            if time.monotonic() - quiet_since > args.follow:
                print(f"autograder: no new hand-in for {args.follow:g} s: stopped following", file=sys.stderr)
                return rc
            time.sleep(FOLLOW_POLL)
    except KeyboardInterrupt:
        print("autograder: stopped following (Ctrl-C); every report sent so far is on the service", file=sys.stderr)
        return rc


def _grade_paths(args: argparse.Namespace) -> int:
    if args.key:
        key_path = Path(args.key)
    else:
        from autograder.keyfile import is_assignment_id

        aid, why = (args.assignment, "") if args.assignment else _infer_assignment(args.paths)
        if why:
            return _fail(why)
        if not aid:
            return _fail("cannot tell which assignment these are; pass --assignment ID or --key build/ID/key.json")
        if not is_assignment_id(aid):
            return _fail(f"{aid!r} is not an assignment id (a folder name of build/, such as 01-backward-vs-grad)")
        key_path = Path("build") / aid / "key.json"
        if not key_path.exists():
            if Path("solutions", aid).is_dir():
                return _fail(f"no key at {key_path}: run `autograder release solutions/{aid}` first, or pass --key")
            known = sorted(spec.parent.name for spec in Path("solutions").glob("*/spec.toml"))
            return _fail(f"no key at {key_path}: run grade from the project folder after `autograder release "
                         f"solutions/{aid}`, or pass --key"
                         + (f" (assignments here: {', '.join(known)})" if known else ""))
    started = None
    if args.out and args.paths and not args.nbgrader and args.scheduler is None and \
            (args.force or not (Path(args.out) / "reports").is_dir()):   # a batch that grades for sure: the
        from autograder.sandbox.client import WorkerStart                        # worker's torch import overlaps ours
        paths = [p for p in map(Path, args.paths) if p.exists()]
        try:
            (Path(args.out) / "reports").mkdir(parents=True, exist_ok=True)   # bwrap conceals only what exists
        except OSError:
            pass   # the batch says why, as it would have
        else:
            started = WorkerStart([*_conceal_for(key_path), str(Path(args.out).resolve()),
                                   *sorted({str(p.resolve() if p.is_dir() else p.resolve().parent) for p in paths})])
    try:
        return _grade_with(args, key_path, started)
    finally:
        if started is not None:
            started.close()


def _grade_with(args: argparse.Namespace, key_path: Path, started: Any) -> int:
    from autograder.grading import intake
    from autograder.grading.batch import find_submissions, grade_batch
    from autograder.grading.identity import is_id_note
    from autograder.render.gradebook import summary

    key = _load_key(key_path, args.limit)
    if key is None:
        return 2
    overrides = None
    if args.overrides:
        if args.service:
            return _fail("--overrides is for a batch without the course service; a course's overrides are kept by "
                         "the service: autograder course override ID STUDENT CHECK --score S --why TEXT --service URL")
        overrides = _read_overrides(args.overrides, key)
        if isinstance(overrides, int):
            return overrides
    after: list[str] = []   # what was left out, said after the batch's table (where staff look)
    if args.nbgrader:
        from autograder.integrations import nbgrader as course

        if not course.is_course(args.nbgrader):
            return _fail(f"{args.nbgrader} is not an nbgrader course directory (no nbgrader_config.py or submitted/)")
        ignored: list[str] = []
        subs = course.submissions(args.nbgrader, key.assignment, ignored)
        if ignored:
            after.append(f"nbgrader: not graded, not work on {key.assignment} beside a notebook that is: "
                         + "; ".join(ignored[:20]) + (" …" if len(ignored) > 20 else ""))
        if not subs:
            return _fail(f"no notebooks in {Path(args.nbgrader) / 'submitted'}/*/{key.assignment}/")
        args.out = args.out or str(Path(args.nbgrader) / "autograd-lab" / key.assignment)
    else:
        if not args.out:
            return _fail("pass --out OUTPUT_FOLDER (or --nbgrader COURSE)")
        if not args.paths:
            return _fail("give the notebooks or folders to grade (or --nbgrader COURSE)")
        ignored = []
        try:
            subs = find_submissions(args.paths, key, args.ids, ignored)
        except FileNotFoundError as e:
            return _fail(str(e))
        if ignored:
            after.append(f"not graded, not work on {key.assignment} beside a notebook of the same student that is: "
                         + "; ".join(ignored[:20]) + (" …" if len(ignored) > 20 else ""))
        others = intake.other_files(args.paths)
        if others:   # a hand-in in another form is not no hand-in: staff see what was left out
            after.append(f"not graded, not notebooks ({len(others)}{'+' if len(others) >= 1000 else ''} file(s)): "
                         + ", ".join(others[:20]) + (" …" if len(others) > 20 else ""))
        if args.student is not None:
            if len(subs) != 1:
                return _fail(f"--student names the student of one notebook; {len(subs)} were given")
            subs = [replace(subs[0], source=replace(subs[0].source, rule="given", given=args.student))]
    if not subs:
        return _fail("no .ipynb files found in " + " ".join(args.paths))
    out = Path(args.out)
    course_commits = None
    if args.service:
        from autograder.service.commands import fetch_commits, fetch_roster

        try:
            # grading hand-ins: a commit made after the hand-in that counts is not part of it
            course_commits = fetch_commits(args.service, key.assignment, by_hand_in=args.handins is not None)
            roster = set(fetch_roster(args.service))
        except RuntimeError as e:
            return _fail(str(e))
        if not args.json:
            print(f"commits: the course service's ({sum(map(len, course_commits.values()))} commit(s) of "
                  f"{len(course_commits)} student(s)); the notebooks' own records are not read, and a prediction "
                  f"the service did not record scores nothing", file=sys.stderr)
    elif not args.json:
        print("commits: each notebook's own records (self-study; a course's batch passes --service URL)",
              file=sys.stderr)
    grid = None
    if args.scheduler is not None:   # connected before anything is graded: an unusable cluster grades nothing
        if not args.scheduler.strip():
            return _fail("--scheduler needs an address (tcp://host:8786) or local:N")
        import signal

        signal.signal(signal.SIGPIPE, signal.SIG_IGN)   # Dask's sockets expect Python's default: EPIPE, not a kill
        try:
            from autograder.integrations import dask as cluster
        except ImportError as e:
            return _fail(f"--scheduler needs Dask ({e}): pip install 'autograd-lab[dask]' (in this project's "
                         "folder: pip install -e '.[dask]')")
        try:
            grid = cluster.Grid(args.scheduler, say=lambda line: print(line, file=sys.stderr, flush=True))
        except cluster.ClusterError as e:
            return _fail(str(e))
        if not args.json:
            print(cluster.describe(grid), file=sys.stderr)
    if started is not None:   # while the worker imports torch: sympy, the key's expressions, nbformat's reader
        from autograder.grading.grade import prepare_grading

        prepare_grading(key)
    try:
        from autograder.sandbox import cgroup

        result = grade_batch(subs, key, out, args.jobs or cgroup.usable_cores(), conceal=_conceal_for(key_path), force=args.force, grid=grid,
                             started=started, course_commits=course_commits, overrides=overrides)
    except OSError as e:
        return _fail(f"not graded: the sandbox could not start ({e}); this is not the students' fault")
    except Exception as e:
        if grid is not None and isinstance(e, cluster.ClusterError):   # a worker cannot grade: nothing was graded
            return _fail(str(e))
        raise
    finally:
        if grid is not None:
            grid.close()
    _write_views(args, key, subs, result.reports, out)
    if args.handins:   # each report back to the service, for the hand-in it grades
        from autograder.service.commands import send_reports

        try:
            sent = send_reports(args.service, args.handins, list(result.reports))
        except RuntimeError as e:
            return _fail(f"graded, but {e}")
        if not args.json:
            from autograder.service.commands import not_handed_in

            print(f"reports: {sent} new sent to the course service (students see them once the feedback is released: "
                  f"autograder course release-feedback {key.assignment} --service {args.service}; after a release, "
                  f"at once)", file=sys.stderr)
            print(f"late penalties are the course service's: {out / 'gradebook.csv'} and {out / 'grades.csv'} hold the "
                  f"scores before them; the final scores: autograder course export {key.assignment} --service "
                  f"{args.service} --csv FILE", file=sys.stderr)
            try:
                missing = not_handed_in(args.service, key.assignment)
            except RuntimeError:
                missing = []
            if missing:
                print(f"not handed in: {len(missing)} student(s) of the roster, not graded (never as 0): "
                      f"{', '.join(missing[:40])}{' and more' if len(missing) > 40 else ''}", file=sys.stderr)
            _say_course_overrides(args.service, key.assignment)
    if course_commits is not None and not args.json:
        from autograder.model import student_key

        strangers = sorted({r.student for r in result.reports if student_key(r.student) not in roster})
        if strangers:
            from autograder.render.terminal import printable

            print(printable(f"note: not on the course's roster: {', '.join(strangers[:10])}"
                            f"{' …' if len(strangers) > 10 else ''} (the service holds no commit of theirs)"),
                  file=sys.stderr)
    if args.stats:
        from autograder.grading.batch import write_stats

        try:
            write_stats(out, list(result.reports), key)
        except ImportError as e:
            return _fail(f"the reports and gradebook are written, but the class view needs matplotlib ({e}): "
                         f"pip install 'autograd-lab[stats]', then run autograder stats {out}")
        if not args.json:
            print(f"class view: {out / 'stats.html'} (and stats.json, item-analysis.csv)", file=sys.stderr)
    if args.json:
        print(json.dumps([r.to_dict() for r in result.reports], indent=1))
        return _say_overrides(args.overrides, result.overrides, quiet=True) if overrides is not None else 0
    print(summary(list(result.reports), shown=is_id_note))
    n = len(result.reports)
    kept = f" ({result.reused} unchanged since the last run, kept; --force grades them again)" if result.reused else ""
    print(f"\n{n} submission{'s' if n != 1 else ''} in {result.seconds:.1f} s{kept} · reports in {out / 'reports'} · "
          f"gradebook {result.gradebook}")
    waiting = sorted({r.student for r in result.reports if r.choose_among})
    from autograder.render.terminal import printable

    if waiting:
        print(printable(f"choose: {len(waiting)} student(s) handed in more than one graded submission and none counts "
                        f"yet ({', '.join(waiting[:5])}{' …' if len(waiting) > 5 else ''}): write yes into the counts "
                        f"column of the one that counts in {result.gradebook}, or a line student,submission into "
                        f"{out / 'choices.csv'}, then grade again"))
    if result.identical:
        print(printable(f"note: {len(result.identical)} student(s) handed in the same file more than once, which counts "
                        f"once: {', '.join(result.identical[:5])}{' …' if len(result.identical) > 5 else ''}"))
    if result.ignored_choices:
        print(printable(f"note: {out / 'choices.csv'} names no graded submission for "
                        f"{', '.join(result.ignored_choices[:5])}{' …' if len(result.ignored_choices) > 5 else ''}: "
                        f"those choices choose nothing (check the names against {result.gradebook})"))
    if result.stale:
        print(printable(f"note: {len(result.stale)} older report(s) in {out / 'reports'} are not from this run and not "
                        f"in this gradebook: {', '.join(result.stale[:5])}{' …' if len(result.stale) > 5 else ''}"))
    for line in after:
        print(printable(line), file=sys.stderr)
    if overrides is not None:
        return _say_overrides(args.overrides, result.overrides, reports=result.reports)
    return 0


def _say_course_overrides(service: str, assignment: str) -> None:
    """After a course's regrade: how many of the service's overrides apply, and which wait for staff to confirm
    (their check changed in a re-release)."""
    from autograder.render.terminal import printable
    from autograder.service.commands import confirm_line, list_overrides

    try:
        rows = list_overrides(service, assignment)
    except RuntimeError as e:
        print(f"autograder: {e}", file=sys.stderr)
        return
    applied = sum(1 for r in rows if r["state"] == "applied")
    if applied:
        print(f"overrides: {applied} of staff's overrides apply to these reports (the service applies them to the "
              f"feedback and the gradebook: autograder course overrides {assignment} --service {service})",
              file=sys.stderr)
    waiting = confirm_line(rows, assignment, service)
    if waiting:
        print(printable(waiting), file=sys.stderr)


def _read_overrides(path: str, key: Any) -> Any:
    """The overrides of `grade --overrides FILE.csv` (grading.overrides.read_csv: by the user who runs grade, at the
    file's time), or 2 after saying what is wrong with the file (nothing is graded then)."""
    import datetime as dt
    import getpass

    from autograder.grading.overrides import OverrideError, read_csv

    try:
        when = dt.datetime.fromtimestamp(Path(path).stat().st_mtime, dt.timezone.utc).replace(microsecond=0)
        return read_csv(path, key, getpass.getuser(), when.isoformat())
    except OSError as e:
        return _fail(f"{path}: the overrides cannot be read ({e.strerror or e})")
    except OverrideError as e:
        return _fail(str(e))


def _say_overrides(path: str, given: Any, quiet: bool = False, reports: Any = ()) -> int:
    """The summary's lines on a batch's overrides: which applied (student, check, staff's score, and "1 -> 1: no
    change" where the grader gave that score already (`reports`: the batch's); not with `quiet`, for --json's
    stdout) and which could not, each with the file's line and the fix (on stderr); 2 when any could not (never a
    silent skip), else 0."""
    from autograder.model import student_key
    from autograder.render.terminal import printable
    from autograder.report import points

    machine = {(student_key(r.student), o.check_id): o.adjusted.machine_score for r in reports for o in r.adjusted()}

    def said(o: Any) -> str:
        same = machine.get((student_key(o.student), o.check)) == o.score
        return f"{o.student} {o.check} = {points(o.score)}" + (f" ({points(o.score)} -> {points(o.score)}: no change)"
                                                                if same else "")

    applied = [o for o, why in given if not why]
    if not quiet:
        print(printable(f"overrides: {len(applied)} of {len(given)} from {path} applied"
                        + (": " + "; ".join(said(o) for o in applied[:20])
                           + (" …" if len(applied) > 20 else "") if applied else "")))
    failed = [(o, why) for o, why in given if why]
    for o, why in failed:
        print(printable(f"autograder: {o.where}: not applied: {why}"), file=sys.stderr)
    return 2 if failed else 0


def _write_views(args: argparse.Namespace, key: Any, subs: list[Any], reports: Any, out: Path) -> None:
    """The other views of the reports a batch wrote: feedback pages, nbgrader's folders and database."""
    from autograder.grading.batch import report_file

    if args.feedback:
        from autograder.render.html import to_html
        from autograder.report import write_text_atomic

        for sub, report in zip(subs, reports, strict=True):
            page = report_file(sub.name).removesuffix(".json") + ".html"   # only the suffix: "kim.json.ipynb" is a name
            write_text_atomic(out / "feedback" / page, to_html(report))
    if args.gradescope:
        from autograder.render.gradescope import to_results
        from autograder.report import write_json_atomic

        target = Path(args.gradescope)
        for sub, report in zip(subs, reports, strict=True):
            write_json_atomic(target if len(subs) == 1 else target / report_file(sub.name), to_results(report))
    if args.nbgrader:
        from autograder.integrations import nbgrader as course

        for sub, report in zip(subs, reports, strict=True):
            if report.superseded_by or report.choose_among:   # only the one that counts has the folder
                continue
            try:   # one submission's folder that cannot be written costs no one else their score
                course.write_autograded(args.nbgrader, sub, report, key.notebook)
                course.write_feedback(args.nbgrader, report, key.notebook)
            except (OSError, ValueError) as e:
                from autograder.render.terminal import printable

                print(printable(f"nbgrader: {report.student}'s autograded/ or feedback/ was not written ({e}); "
                                f"the score still goes into gradebook.db"), file=sys.stderr)
        times, unread = {}, []
        for sub, r in zip(subs, reports, strict=True):
            try:
                if (t := course.hand_in_time(sub)) is not None:
                    times[r.student] = t
            except ValueError as e:   # there, but not a time (nbgrader warns or fails): staff should know
                unread.append(f"{r.student} ({e})")
        recorded = course.record_scores(args.nbgrader, key, list(reports), times)
        if unread:
            from autograder.render.terminal import printable

            print(printable(f"nbgrader: timestamp.txt is not a hand-in time for {'; '.join(unread[:20])}"
                            f"{' …' if len(unread) > 20 else ''}: graded; the hand-in time gradebook.db had for them (if "
                            f"any) stays, and with it any late penalty; check when they handed in"), file=sys.stderr)
        n = len(recorded or [])
        late = [(s, secs, pen) for s, secs, pen in recorded or [] if secs > 0]
        if late:
            from autograder.render.terminal import duration, printable

            print(printable("nbgrader: late (by the hand-in time in timestamp.txt, against the assignment's due date): "
                            + "; ".join(f"{s} {duration(secs)} late" + (f", penalty {pen:g}" if pen else "")
                                        for s, secs, pen in late[:20])
                            + (" …" if len(late) > 20 else "")))
        print(f"nbgrader: wrote autograded/ and feedback/ in {args.nbgrader}; scores of {n} submission(s) in its "
              f"gradebook.db" if recorded is not None else f"nbgrader: wrote autograded/ and feedback/ in {args.nbgrader} (no gradebook.db "
              f"that knows {key.assignment}: run `nbgrader generate_assignment {key.assignment}` there to "
              f"see the scores in formgrader)", file=sys.stderr)


def _new(args: argparse.Namespace) -> int:
    from autograder.authoring.scaffold import ScaffoldError, new

    try:
        spec, notebook = new(args.assignment, args.solutions, args.title)
    except ScaffoldError as e:
        return _fail(str(e))
    print(f"wrote {spec}\n      {notebook}\nnext: autograder release {spec.parent}\n"
          f"(then write your exercises: the first release after that replaces the scaffold's key as it is; once you "
          f"have released your own exercises, a release that alters their numbers or checks needs --force, which "
          f"release says first, before it runs anything)")
    return 0


def _release(args: argparse.Namespace) -> int:
    from autograder.authoring import sweep
    from autograder.authoring.release import BuildError, release
    from autograder.authoring.spec import SpecError
    from autograder.judging.worked import MAX_SECONDS

    start = time.monotonic()

    def progress(step: str) -> None:   # on stderr, so that --json's stdout stays JSON
        print(f"release: {step} ({time.monotonic() - start:.1f} s)", file=sys.stderr, flush=True)

    try:
        r = release(args.solution, args.assignments, args.build, force=args.force, progress=progress,
                    trace_timeout=args.trace_timeout or MAX_SECONDS,
                    domain_budget=replace({"full": sweep.FULL, "quick": sweep.QUICK}[args.domain],
                                          parallel=args.jobs or 0))
    except (SpecError, BuildError) as e:
        return _fail(f"not released: {e}")
    except OSError as e:   # the sandbox that grades the solution could not start: the machine's fault
        return _fail(f"not released: the sandbox could not start ({e}); see docs/security.md for what it needs")
    course = None
    if args.course:
        from autograder.service.commands import publish

        folder = Path(r.key).parent / "course"
        try:
            course, digest = publish(r.key, args.course, folder, "hub" if args.hub else "token", r.student_notebook)
        except (RuntimeError, ValueError, OSError) as e:
            return _fail(f"released for self-study, but not for the course: {e}")
        r = replace(r, course=str(course))
    if args.json:
        from dataclasses import asdict

        print(json.dumps({**asdict(r), "seconds": round(time.monotonic() - start, 3)}, indent=1))
        return 0
    print(f"released {r.assignment}: {r.checks} checks, solution {r.solution_score:g}/{r.max_score:g} points, "
          f"blank copy {r.blank_score:g}/{r.max_score:g} ({time.monotonic() - start:.1f} s)\n"
          f"  misconceptions    {r.misconceptions.text}\n"
          f"  {r.domain.text.replace('domain check: ', 'domain check      ', 1)}\n"
          + (f"  completed         {'; '.join(r.completed)} (from the spec: see {Path(r.key).parent / 'source'})\n"
             if r.completed else "") +
          f"  student notebook  {r.student_notebook}\n  public key        {r.public_key}\n  full key          {r.key}"
          + (f"\n  course folder     {Path(course).parent} (the notebook and course.json, no answers: hand this out; "
             f"the key is on {args.course})" if course else ""))
    return 0


def _stats(args: argparse.Namespace) -> int:
    from autograder.grading.batch import batch_reports, write_stats

    out = Path(args.out)
    try:
        reports, unusable, earlier = batch_reports(out)
    except (FileNotFoundError, ValueError) as e:
        return _fail(str(e))
    if unusable:
        from autograder.render.terminal import printable

        print(printable(f"note: {len(unusable)} file(s) in {out / 'reports'} are not usable reports and were left "
                        f"out: {', '.join(unusable[:5])}{' …' if len(unusable) > 5 else ''}"), file=sys.stderr)
    if not reports:
        return _fail(f"no usable report in {out / 'reports'}")
    key = None
    assignments = sorted({r.assignment for r in reports})
    from autograder.keyfile import is_assignment_id

    named = assignments[0] if is_assignment_id(assignments[0]) else "?"   # a report's text: never a path
    key_path = Path(args.key) if args.key else Path("build") / named / "key.json"
    if args.key or (len(assignments) == 1 and named != "?" and key_path.is_file()):
        key = _load_key(key_path, [])
        if key is None:
            return 2
        digests = {r.key_digest for r in reports if r.key_digest}
        if digests and key.digest not in digests:
            return _fail(f"{key_path} (digest {key.digest}) is not the key these reports were graded with "
                         f"({', '.join(sorted(digests))}): pass the key of that release with --key")
    elif len(assignments) == 1:
        print(f"note: no key at {key_path}: the misconceptions no submission showed are not listed (pass --key)",
              file=sys.stderr)
    try:
        stats = write_stats(out, reports, key)
    except ValueError as e:
        return _fail(str(e))
    except ImportError as e:
        return _fail(f"the class view needs matplotlib ({e}): pip install 'autograd-lab[stats]' (in this project's "
                     f"folder: pip install -e '.[stats]')")
    if args.json:
        print(json.dumps(stats.to_dict(), indent=1))
        return 0
    named = sum(m.count for c in stats.checks for m in c.misconceptions)
    kinds = len({m.id for c in stats.checks for m in c.misconceptions if m.count})
    mean = f", mean score {stats.mean:.1f} / {stats.max_score:g}" if stats.mean is not None else ""
    print(f"{stats.assignment}: {stats.counted} counted submissions{mean}; {stats.superseded} superseded, "
          f"{stats.not_gradable} not gradable (apart, never 0); a named misconception {named} times ({kinds} different)"
          + (f"; {earlier} report(s) of earlier runs (not in the last gradebook) left out" if earlier else "")
          + f"\n  {out / 'stats.html'}\n  {out / 'stats.json'}\n  {out / 'item-analysis.csv'}")
    return 0


def _were_graded(data: bytes, sub: Any, report: Any, key: Any, record: dict[str, str] | None) -> bool:
    """Are `data` (submission `sub`'s bytes as read now) the bytes `report` was graded from? Yes when the batch's
    graded-bytes.json names their sha256 with the report's fingerprint, or (a batch graded before it was written) when
    the fingerprint made from them, as a batch of this folder makes it, is the report's."""
    import dataclasses
    import hashlib

    from autograder.grading.batch import fingerprint

    if not report.fingerprint:
        return False
    if record is not None and record["fingerprint"] == report.fingerprint:
        return hashlib.sha256(data).hexdigest() == record["sha256"]
    return any(fingerprint(data, key, dataclasses.replace(sub.source, rule=rule)) == report.fingerprint
               for rule in ("file", "notebook"))


def _collusion(args: argparse.Namespace) -> int:
    """`autograder collusion OUT`: the collusion view of a graded batch (autograder.authoring.collusion)."""
    from autograder.authoring.collusion import collusion, named as names_of
    from autograder.grading import intake
    from autograder.grading.batch import find_submissions, graded_bytes
    from autograder.grading.batch import batch_reports
    from autograder.keyfile import is_assignment_id
    from autograder.render.collusion import to_csv, to_html
    from autograder.render.terminal import printable
    from autograder.report import write_json_atomic, write_text_atomic

    out = Path(args.out)
    try:
        reports, unusable, _ = batch_reports(out)
    except (FileNotFoundError, ValueError) as e:
        return _fail(str(e))
    if not reports:
        return _fail(f"no usable report in {out / 'reports'}")
    assignments = sorted({r.assignment for r in reports})
    if len(assignments) > 1:
        return _fail(printable(f"the reports in {out / 'reports'} are of {len(assignments)} assignments "
                               f"({', '.join(assignments)}): grade each into its own folder"))
    named = assignments[0] if is_assignment_id(assignments[0]) else "?"   # a report's text: never a path
    key_path = Path(args.key) if args.key else Path("build") / named / "key.json"
    if not key_path.is_file():
        return _fail(f"no key at {key_path}: the collusion view needs the assignment's full key (pass --key)")
    key = _load_key(key_path, [])
    if key is None:
        return 2
    digests = {r.key_digest for r in reports if r.key_digest}
    if digests and key.digest not in digests:
        return _fail(f"{key_path} (digest {key.digest}) is not the key these reports were graded with "
                     f"({', '.join(sorted(digests))}): pass the key of that release with --key")
    folder = Path(args.submissions) if args.submissions else out / "handins"
    notebooks: dict[str, bytes] = {}
    notes: list[str] = []
    if args.submissions or folder.is_dir():
        try:
            found = find_submissions([str(folder)], key)
        except FileNotFoundError as e:
            return _fail(str(e))
        of = {r.submission: r for r in reports}
        record = graded_bytes(out)
        other = []
        for sub in found:
            report = of.get(sub.name)
            if report is None or (sub.found is not None and sub.found.problem):
                continue
            try:
                data = sub.read()
            except intake.Refused:
                continue
            if _were_graded(data, sub, report, key, record.get(sub.name)):
                notebooks[sub.name] = data
            else:
                other.append(sub.name)
        if other:
            notes.append(printable(f"{len(other)} notebook(s) in {folder} are not the bytes their report was graded "
                                   f"from (changed since, or another file of that name), and were not compared: "
                                   f"{names_of(sorted(other))}."))
    try:
        view = collusion(reports, key, notebooks, notes)
    except ValueError as e:
        return _fail(str(e))
    write_json_atomic(out / "collusion.json", view.to_dict())
    write_text_atomic(out / "collusion.csv", to_csv(view))
    write_text_atomic(out / "collusion.html", to_html(view))
    print(printable(f"{view.assignment}: {view.students} counted submissions compared; {len(view.flagged)} pair(s) of "
                    f"wrong predictions unlikely by chance ({len(view.prediction_pairs)} with any match), "
                    f"{len(view.cell_pairs)} pair(s) with the same produce code ({view.cells_read} notebooks read). "
                    f"Evidence only: no score changed."
                    + (f" {len(unusable)} unusable report file(s) left out." if unusable else "")
                    + f"\n  {out / 'collusion.html'}\n  {out / 'collusion.csv'}\n  {out / 'collusion.json'}"))
    return 0


def _gradescope_bundle(args: argparse.Namespace) -> int:
    from autograder.integrations.gradescope import make_bundle

    key_path = Path(args.key or Path("build") / args.assignment / "key.json")
    if not key_path.is_file():
        return _fail(f"no key at {key_path}: run `autograder release solutions/{args.assignment}` first, or pass --key")
    key = _load_key(key_path)
    if key is None:
        return 2
    if key.public or key.fresh_seed is None:
        return _fail(f"{key_path} is a public key; the bundle needs the full key (build/<id>/key.json)")
    if key.assignment != args.assignment:
        return _fail(f"{key_path} is the key of {key.assignment!r}, not of {args.assignment!r}")
    out = Path(args.out or key_path.parent / f"gradescope-{args.assignment}.zip")
    path = make_bundle(key_path, out, Path(__file__).resolve().parent.parent)
    if args.json:
        print(json.dumps({"bundle": str(path), "assignment": args.assignment}))
    else:
        print(f"wrote {path}: upload it as the autograder of {args.assignment} on Gradescope (it holds the full "
              f"key: keep it private)")
    return 0


def _selfcheck(argv: list[str]) -> int:
    # Internal: the in-notebook self-check's helper (autograder.student.selfcheck): the key and the comparison stay
    # out of the student's kernel. One request: prints one report JSON. With --serve: answers requests
    # until stdin closes.
    from autograder.student import selfcheck

    args = _selfcheck_parser().parse_args(argv)
    if args.serve:
        return selfcheck.serve(sys.stdin.buffer, sys.stdout.buffer)
    print(json.dumps(selfcheck.judge_once(args.key, args.student, args.exercise, sys.stdin.buffer.read())))
    return 0


TERMINAL = "AUTOGRAD_LAB_TERMINAL_ENCODING"   # the terminal's own encoding, kept across _utf8_names' restart


def _utf8_names() -> None:
    """File names are bytes, and the course's are UTF-8 (a folder `zoë`); a machine whose locale is another encoding
    (ISO-8859-1) made Python read them as `zoÃ«`, not the student. Such a process starts again at once in Python's
    UTF-8 mode (-X utf8: names read as UTF-8, bytes that are not kept as they are), remembering the terminal's own
    encoding for `_terminal_text`. Source: PEP 540 (Python's UTF-8 mode); nbgrader #1297."""
    import locale

    if sys.flags.utf8_mode or sys.getfilesystemencoding().lower().replace("-", "") == "utf8" or \
            os.environ.get(TERMINAL):
        return
    env = {**os.environ, TERMINAL: locale.getpreferredencoding(False) or "ascii"}
    os.execve(sys.executable, [sys.executable, "-X", "utf8", "-m", "autograder", *sys.argv[1:]], env)


def _terminal_text() -> None:
    """Write to the terminal in its own encoding, escaping what it cannot show (`\\u2014`), instead of ending in a
    UnicodeEncodeError."""
    encoding = os.environ.get(TERMINAL)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace", **({"encoding": encoding} if encoding else {}))
        except (AttributeError, LookupError, ValueError):   # not a text stream of its own (a test's), or no codec
            pass


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # `autograder check nb.ipynb | head` ends quietly
    if argv is None:
        _utf8_names()
    _terminal_text()
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["_selfcheck"]:   # internal: the in-notebook self-check's comparison process
        return _selfcheck(argv[1:])
    args = _parser().parse_args(argv)
    if args.version:
        from autograder.version import __version__
        print(__version__)
        return 0
    if args.command is None:
        _parser().print_help()
        return 2
    if args.command in ("serve", "course", "login", "submit"):
        from autograder.service import commands

        if args.command == "course":
            if args.course_command is None:
                _parser().parse_args(["course", "--help"])
            return {"add": commands.course_add, "list": commands.course_list, "revoke": commands.course_revoke,
                    "release-feedback": commands.feedback_release, "export": commands.export,
                    "override": commands.override, "overrides": commands.overrides}[args.course_command](args)
        return {"serve": commands.serve, "login": commands.login, "submit": commands.submit}[args.command](args)
    return {"new": _new, "release": _release, "check": _check, "grade": _grade, "stats": _stats, "collusion": _collusion,
            "gradescope-bundle": _gradescope_bundle}[args.command](args)
