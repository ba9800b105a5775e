"""Every command of the documents runs as written: each ```bash block of README.md and docs/*.md, in order, in
a copy of the project (its own home folder; `/tmp/` is the copy's own), with the exit code and output a user
would see. A block is run as one bash script, so `cd` carries to its next lines. Servers a block starts
(Jupyter, a Dask scheduler and worker) run in the background until the block ends, and must answer.

Only these differ from a user's session, each for a stated reason:
- `substitute`: placeholders of the documents (`/path/to/autograd-lab`, a host name, `~`, `/tmp/`) and the
  benchmark's sizes;
- Jupyter is started with `--no-browser --allow-root --port=<free> --ServerApp.token=...` (no browser here; CI
  runs as root, as docs/student.md says; a port and a token the test can reach);
- the venv's bin/ is not on PATH until a block runs `source .venv/bin/activate` (as in a user's terminal, it
  stays so for the blocks after it);
- IN_CI: README's set-up and demo, which `.ci/run` runs from a fresh clone (this test checks that it does);
- BY_HAND: a command that installs several GB, or administers a database server of the machine, named with where
  its result is recorded or what tests it instead;
- a file block (a ```python block whose first line is `# <path>`) is written to that path, as a user would;
- BEFORE: what happens between blocks in a course (students hand in) is done by the test.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
VENV = Path(sys.executable).parent.parent
IN_CI = ("bash scripts/demo.sh", "bash scripts/setup.sh && .venv/bin/python -m pytest -q -n 3 --dist loadfile")
BY_HAND = {"scripts/other_torch.py --torch 2.14.1":
           "installs torch 2.14.1 (a 5.5 GB CUDA build) into a new venv; its result is in docs/measured.md",
           "sudo -u postgres createuser": "makes a role and a database in the machine's own PostgreSQL as its "
                                          "administrator; tests/test_service_scale.py serves a course from a real "
                                          "PostgreSQL server of its own"}
SERVERS = (r"jupyter lab\b", r"dask scheduler\b", r"dask worker\b", r"autograder serve\b")


def blocks(path: Path) -> list[tuple[str, str]]:
    """The fenced blocks of a Markdown file: (info string, text)."""
    return [(m.group(1), m.group(2)) for m in re.finditer(r"^```(\w*)\n(.*?)^```", path.read_text(), re.S | re.M)]


def test_every_document_is_found_and_has_commands():
    names = {p.name for p in DOCS}
    assert {"README.md", "student.md", "instructor.md", "staff.md", "grading.md", "security.md", "measured.md"} <= names
    assert all(any(info == "bash" for info, _ in blocks(p)) for p in DOCS if p.name not in ("grading.md", "security.md"))


def test_the_readme_commands_ci_runs_are_in_ci():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    readme = [text.strip() for info, text in blocks(ROOT / "README.md") if info == "bash"]
    for command in IN_CI:
        assert command in readme, command
        steps = command.split(" && ")
        assert all(step in ci for step in steps), f".ci/run does not run {command!r}"
        assert [ci.index(step) for step in steps] == sorted(ci.index(step) for step in steps), command


def test_each_document_starts_with_whom_it_is_for():
    for path in DOCS[1:]:
        intro = path.read_text().split("\n\n")[1]
        assert intro.startswith("For **"), f"{path.name} does not start with whom it is for: {intro[:80]!r}"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the project as a user has it after set-up: its files and the venv (linked, not copied; it runs the
    checkout's package, installed editable)."""
    ws = tmp_path_factory.mktemp("docs") / "autograd-lab"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src, dst = ROOT / name, ws / name
        # not the package: the venv's editable install is the checkout's, and a second copy would be another one
        if src.is_file() and not name.startswith(("tests/", ".ci/", "autograder/")):
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    (ws / ".venv").symlink_to(VENV)
    (ws.parent / "home").mkdir()
    (ws.parent / "tmp").mkdir()
    return ws


def substitute(text: str, ws: Path) -> str:
    home, tmp = ws.parent / "home", ws.parent / "tmp"
    text = re.sub(r"(?<![\w.])/tmp/", f"{tmp}/", text)   # first: the paths put in below lie under /tmp too
    text = text.replace("~/", f"{home}/").replace("~ ", f"{home} ")
    text = text.replace("/path/to/autograd-lab", str(ws)).replace("host-a", "127.0.0.1")
    # the benchmark's sizes, cut so the suite stays fast (the full run's numbers are in docs/measured.md)
    text = text.replace("benchmarks/intake.py --mb 10 40 63 70", "benchmarks/intake.py --mb 1 70")
    text = text.replace("benchmarks/release_domain.py", "benchmarks/release_domain.py --budget quick --assignment "
                        "03-leaves")   # every assignment's full domain check: an hour and more here
    return text.replace("--n 200 --nbgrader-n 20 --cold 5", "--n 12 --nbgrader-n 2 --cold 1 --rounds 1")


RELEASE = re.compile(r"^\s*(?:\.venv/bin/)?autograder release (solutions/[\w.-]+)\s*(?:#.*)?$")
_RELEASED: dict[Path, str] = {}   # a project copy's solution folder -> the digest of what its last release read


def _solution_digest(folder: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(f.relative_to(folder).as_posix().encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


def released_once(script: str, ws: Path) -> str:
    """`script` with each `autograder release solutions/X` that this project copy already ran on the same solution
    (and whose build is still there) made a no-op: the guides repeat it so that each section stands alone, and a
    second release of the same files builds the same assignment (the first one is the test of the command)."""
    out = []
    for line in script.split("\n"):
        m = RELEASE.match(line)
        if m:
            folder = ws / m.group(1)
            digest = _solution_digest(folder) if folder.is_dir() else ""
            built = (ws / "build" / folder.name / "key.json").is_file()
            if digest and built and _RELEASED.get(folder) == digest:
                line = f": {line.strip()!r} ran already on these files in this project copy"
            _RELEASED[folder] = digest
        out.append(line)
    return "\n".join(out)


def environment(ws: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "AUTOGRAD_LAB"))}
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if Path(p) != VENV / "bin")
    return {**env, "HOME": str(ws.parent / "home"), "PATH": path,
            "TMPDIR": str(ws.parent / "tmp"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            # pip's own cache stays the machine's (what set-up downloaded), as it would for this user
            "PIP_CACHE_DIR": os.environ.get("PIP_CACHE_DIR", str(Path.home() / ".cache" / "pip"))}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port: int, proc: subprocess.Popen, log: Path, seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        assert proc.poll() is None, f"the server stopped: exit {proc.returncode}\n{log.read_text()[-3000:]}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"nothing answered on port {port} within {seconds} s")


class Session:
    """A user's terminal: runs blocks, keeps the servers they start, stops them at the end."""

    def __init__(self, ws: Path):
        self.ws, self.env, self.servers = ws, environment(ws), []

    def run(self, text: str, expect: int = 0, timeout: float = 900) -> subprocess.CompletedProcess:
        """Run a block: its lines up to a server as one script, then the server in the background, then the
        rest. The last script's exit code must be `expect` (the others' 0)."""
        segments, current = [], []
        for line in substitute(text, self.ws).split("\n"):
            command = line.split("  #")[0].strip()
            if any(re.search(p, command) for p in SERVERS):
                segments += [("script", current), ("server", command)]
                current = []
            else:
                current.append(line)
        segments.append(("script", current))
        scripts = [i for i, (kind, body) in enumerate(segments) if kind == "script" and any(x.strip() for x in body)]
        if "source .venv/bin/activate" in text:   # from here on, as in the user's terminal
            self.env = {**self.env, "PATH": f"{self.ws / '.venv' / 'bin'}{os.pathsep}{self.env['PATH']}",
                        "VIRTUAL_ENV": str(self.ws / ".venv")}
        done = None
        for i, (kind, body) in enumerate(segments):
            if kind == "server":
                self._start(body)
            elif i in scripts:
                script = released_once("\n".join(body), self.ws)
                want = expect if i == scripts[-1] else 0
                done = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=self.ws, env=self.env,
                                      capture_output=True, text=True, timeout=timeout)
                assert done.returncode == want, f"exit {done.returncode} (expected {want}) for\n{script}\n" \
                                                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    def _start(self, command: str) -> None:
        port = free_port()
        if "jupyter lab" in command:   # no browser here; as root (CI) Jupyter must be told it may run
            self.jupyter = (port, "docs-test")
            command += f" --no-browser --allow-root --port={port} --ServerApp.token=docs-test"
        elif "dask scheduler" in command:
            port = 8786   # the port the documents name
        elif "autograder serve" in command:
            port = int(re.search(r"--port (\d+)", command).group(1))   # the port the document names
        else:
            port = None
        log = self.ws.parent / "tmp" / f"server-{len(self.servers)}.log"
        with log.open("w") as out:
            proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=self.ws, env=self.env, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        self.servers.append(proc)
        if port is not None:
            wait_for(port, proc, log)
        else:   # a Dask worker: it has registered when the scheduler's log says so
            end = time.monotonic() + 120
            while "Register worker" not in (self.ws.parent / "tmp" / "server-0.log").read_text():
                assert proc.poll() is None and time.monotonic() < end, log.read_text()[-3000:]
                time.sleep(0.3)

    def close(self) -> None:
        for proc in reversed(self.servers):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        self.servers.clear()


def run_document(name: str, ws: Path, before: dict | None = None, expect: dict | None = None,
                 after: dict | None = None) -> Session:
    """Run every bash block of docs/`name` in order; `before`/`after`: {a phrase of a block: f(session)}, `expect`:
    {a phrase of a block: its exit code}. Returns the session (its servers still running) for more checks."""
    session = Session(ws)
    unused = {*(before or {}), *(expect or {}), *(after or {})}   # every hook must meet its block: none is skipped
    try:
        for info, text in blocks(ROOT / name):
            if info == "python" and text.startswith("# ") and text.split("\n")[0].endswith(".py"):
                path = Path(substitute(text.split("\n")[0][2:].strip(), ws))
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(substitute(text, ws))
                continue
            if info != "bash" or text.strip() in IN_CI:
                continue
            if any(phrase in text for phrase in BY_HAND):
                continue
            unused -= {phrase for phrase in unused if phrase in text}
            for phrase, hook in (before or {}).items():
                if phrase in text:
                    hook(session)
            code = next((c for phrase, c in (expect or {}).items() if phrase in text), 0)
            done = session.run(text, code)
            for phrase, hook in (after or {}).items():
                if phrase in text:
                    hook(session, done)
        assert not unused, f"{name}: no command block holds {sorted(unused)}: the test's checks of it did not run"
    except BaseException:
        session.close()
        raise
    return session


def test_the_student_guide(project):
    def jupyter_shows_the_learners_folder_only(session, _):
        port, token = session.jupyter
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=30) as r:
            names = {item["name"] for item in json.load(r)["content"]}
        assert names == {"01-backward-vs-grad"}, names   # the learner's own folder: no solutions/, no project
        url = f"http://127.0.0.1:{port}/api/contents/01-backward-vs-grad?token={token}"
        with urllib.request.urlopen(url, timeout=30) as r:
            inside = {item["name"] for item in json.load(r)["content"]}
        assert {"backward-vs-grad.ipynb", "public_key.json"} <= inside
        session.close()

    def an_environment_with_its_own_torch(session):
        env = project.parent / "learner-env"
        subprocess.run([sys._base_executable, "-m", "venv", str(env)], check=True)   # a plain Python, not our venv
        subprocess.run([str(env / "bin" / "pip"), "install", "-q", "torch==2.13.0"], check=True, env=session.env,
                       capture_output=True)
        session.env = {**session.env, "PATH": f"{env / 'bin'}{os.pathsep}{session.env['PATH']}"}

    def the_learners_torch_is_unchanged(session, _):
        env = project.parent / "learner-env"
        p = subprocess.run([str(env / "bin" / "python"), "-c", "import torch, autograder; print(torch.__version__)"],
                           capture_output=True, text=True, env=session.env, check=True)
        assert p.stdout.strip() == "2.13.0+cpu"
        session.env = environment(project)

    def a_blank_notebook_is_checked(session, done):
        assert "missing" in done.stdout and "score 0 / 26" in done.stdout, done.stdout[-2000:]

    session = run_document("docs/student.md", project,
                           before={"pip install /path/to/autograd-lab": an_environment_with_its_own_torch},
                           expect={"autograder check": 1},
                           after={"jupyter lab": jupyter_shows_the_learners_folder_only,
                                  "pip install /path/to/autograd-lab": the_learners_torch_is_unchanged,
                                  "autograder check": a_blank_notebook_is_checked})
    session.close()


def test_the_instructor_guide(project):
    run_document("docs/instructor.md", project).close()
    assert (project / "build" / "01-backward-vs-grad" / "key.json").is_file()
    assert (project / "assignments" / "01-backward-vs-grad" / "public_key.json").is_file()


def test_the_staff_guide(project):
    home = project.parent / "home"

    def students_hand_in(session):
        for student in ("ada", "ben", "gus"):
            folder = home / "course" / "submitted" / student / "01-backward-vs-grad"
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copy(project / "examples" / "submissions" / "01-backward-vs-grad" / f"{student}.ipynb",
                        folder / "backward-vs-grad.ipynb")

    def the_batch_is_graded(session, done):
        rows = (project / "out" / "gradebook.csv").read_text().splitlines()
        assert len(rows) == 15 and rows[0].startswith("submission,student,status,score"), rows[:2]
        assert "not graded, not notebooks" not in done.stdout + done.stderr   # the notebooks only were copied

    def the_class_view_is_written(session, done):
        assert {"stats.html", "stats.json", "item-analysis.csv"} <= {p.name for p in (project / "out").iterdir()}

    def the_course_has_scores(session, done):
        from nbgrader.api import Gradebook

        with Gradebook(f"sqlite:///{home / 'course' / 'gradebook.db'}") as gb:
            got = {s: gb.find_submission("01-backward-vs-grad", s).score for s in ("ada", "ben", "gus")}
        assert got == {"ada": 26, "ben": 20, "gus": 0}

    def gradescope_results(session, done):
        results = json.loads((home / "gs" / "results" / "results.json").read_text())
        assert results["score"] == 26 and len(results["tests"]) == 26

    def bens_override_is_applied(session, done):
        assert "overrides: 1 of 1 from overrides.csv applied: ben 2.predict.returns = 1" in done.stdout, done.stdout
        ben = json.loads((project / "out" / "reports" / "ben.json").read_text())
        check = next(o for o in ben["outcomes"] if o["check_id"] == "2.predict.returns")
        assert (ben["score"], check["status"], check["adjusted"]["machine_score"]) == (21, "failed", 0)

    run_document("docs/staff.md", project, before={"nbgrader autograde": students_hand_in},
                 after={"grade submissions/ --out out/ --assignment 01-backward-vs-grad\n": the_batch_is_graded,
                        "--overrides overrides.csv": bens_override_is_applied,
                        "--stats": the_class_view_is_written,
                        "grade --nbgrader": the_course_has_scores,
                        "run_autograder": gradescope_results}).close()


def test_the_course_guide(project):
    """docs/course.md from a roster to a graded batch; the student's part (a session in the notebook) is the test's."""
    home = project.parent / "home"

    def the_roster_is_in(session, done):
        lines = done.stdout.splitlines()   # each `course add` confirms on stdout, then `course list` lists
        assert lines[0].startswith("added 1 staff member; their tokens are in ") and lines[1].startswith(
            "added 2 students; their tokens are in "), done.stdout
        assert " ".join(lines[2:]).split() == ["amy", "student", "ben", "student", "prof", "staff"], done.stdout

    def the_course_folder_has_no_key(session, done):
        assert done.stdout.split()[-2:] == ["backward-vs-grad.ipynb", "course.json"], done.stdout
        assert "course folder" in done.stdout

    def amy_works_in_her_notebook_and_saves_it(session):
        """amy copies the course's folder, sets STUDENT_ID, predicts wrongly, checks (the service commits and shows
        the answer), writes the answer in, checks again, and saves her notebook."""
        _as_amy(session, f"""
shutil.copytree({str(project / "build" / "01-backward-vs-grad" / "course")!r}, folder)
nb = nbformat.read(folder + "/backward-vs-grad.ipynb", as_version=4)
cell = lambda g: next(c for c in nb.cells if c.metadata.get("nbgrader", {{}}).get("grade_id") == g)
cell("student-id").source = 'STUDENT_ID = "amy"'
for grad in ("1.0", "2 * P.x0"):
    cell("ex1-predict").source = "p1_returns = None\\np1_grad = " + grad
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={{"metadata": {{"path": folder}}}}).execute()
nbformat.write(nb, folder + "/backward-vs-grad.ipynb")
""")

    def _as_amy(session, code: str) -> str:
        script = project.parent / "tmp" / "amy.py"
        script.write_text("import shutil, nbformat\nfrom nbclient import NotebookClient\n"
                          f"folder = {str(home / 'amy-01')!r}\n" + code)
        return subprocess.run([str(VENV / "bin" / "python"), str(script)], env=session.env, check=True, timeout=600,
                              capture_output=True, text=True).stdout

    def the_receipt_says_when_and_what_counts(session, done):
        assert done.stdout.startswith("handed in 01-backward-vs-grad as amy at "), done.stdout + done.stderr
        # the due time in the course's time zone (course.toml: Europe/Berlin), as staff wrote it
        assert "due 2027-06-30T23:59:00+02:00" in done.stdout and "It is the hand-in that counts now." in done.stdout

    def graded_with_the_services_commit(session, done):
        assert "commits: the course service's (1 commit(s) of 1 student(s))" in done.stderr, done.stderr[-2000:]
        assert "reports: 1 new sent to the course service" in done.stderr
        report = json.loads((home / "course" / "graded" / "reports" / "amy.json").read_text())
        grad = next(o for o in report["outcomes"] if o["check_id"] == "1.predict.grad")
        assert grad["status"] == "failed" and grad["observed"] == "1.0" and "revised after the answer" in grad["commit"]

    def amy_reads_her_feedback_in_the_notebook(session, done):
        shown = _as_amy(session, """
nb = nbformat.read(folder + "/backward-vs-grad.ipynb", as_version=4)
upto = next(i for i, c in enumerate(nb.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "setup")
nb.cells = nb.cells[: upto + 1] + [nbformat.v4.new_code_cell("lab.feedback()")]
NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": folder}}).execute()
print("".join(o.get("data", {}).get("text/plain", "") for o in nb.cells[-1].outputs))
""")
        report = json.loads((home / "course" / "graded" / "reports" / "amy.json").read_text())
        assert f"on time; score {report['score']:g} / 26" in shown, shown

    def the_class_view_counts_amy(session, done):
        page = (home / "course" / "stats.html").read_text()
        assert 'id="counted"><strong>1</strong> graded and counted' in page, page[:3000]
        assert "1 of the roster&#39;s 2 students has not handed in (not counted, never as 0): ben." in page, page[:3000]

    def the_gradebook_has_amys_row(session, done):
        import csv

        amy, ben = list(csv.DictReader((home / "course" / "grades.csv").open()))   # the whole roster: ben too
        assert (amy["student"], amy["status"], amy["penalty"], amy["late"]) == ("amy", "graded", "0.0", "on time")
        assert (ben["student"], ben["status"], ben["score"], ben["final_score"]) == ("ben", "not handed in", "", "")
        assert amy["overrides"] == "1.predict.grad 0 -> 1 by prof: a fair appeal: exercise 1's wording allowed this answer"

    def amys_override_is_kept(session, done):
        assert done.stdout.startswith("amy 1.predict.grad: 0 -> 1 by prof (applied): a fair appeal"), done.stdout
        assert "[applied]" in done.stdout.splitlines()[-1], done.stdout

    def the_backup_holds_the_commit(session, done):
        import sqlite3

        with sqlite3.connect(home / "course" / "backup.db") as db:
            assert db.execute("select student, exercise from commits").fetchall() == [("amy", "1")]

    run_document("docs/course.md", project, before={"autograder submit": amy_works_in_her_notebook_and_saves_it},
                 after={"autograder course list": the_roster_is_in, "ls build/01-backward-vs-grad/course":
                        the_course_folder_has_no_key, "autograder submit": the_receipt_says_when_and_what_counts,
                        "autograder grade": graded_with_the_services_commit,
                        "release-feedback": amy_reads_her_feedback_in_the_notebook,
                        "stats.html": the_class_view_counts_amy, "grades.csv": the_gradebook_has_amys_row,
                        "backup(": the_backup_holds_the_commit, "course override": amys_override_is_kept}).close()


def test_the_measured_numbers_page(project):
    def the_benchmark_printed_its_numbers(session, done):
        assert "submissions/s" in done.stdout + done.stderr, done.stdout[-2000:]
        assert "- 12-submission rate against the code at --against REV: - (target at least 2x): not measured" \
               in done.stdout and "- empty run, median: " in done.stdout, done.stdout[-2000:]

    def the_intake_refused_what_it_must(session, done):
        assert "refused: crafted.ipynb is 66.8 MiB, more than the 64 MiB" in done.stdout, done.stdout[-2000:]
        assert "read: 31 cells" in done.stdout

    def nothing_acknowledged_was_lost(session, done):
        out = done.stdout + done.stderr
        assert "read back: lost commits 0, duplicated commits 0, lost hand-ins 0, duplicated hand-ins 0" in out, out[-3000:]
        assert "not 2xx: none" in out and "40 students within 10 s" in out, out[-3000:]
        floor = re.search(r"no route ([0-9.]+) ms, GET /me ([0-9.]+) ms, bare tornado ([0-9.]+) ms", out)
        assert floor and all(float(v) > 0 for v in floor.groups()), out[-3000:]   # --serial: each route's CPU, the floor

    def every_hand_in_got_its_report(session, done):
        assert "hand-ins acknowledged: 40 of 40 (0 refused)" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
        assert "0 hand-in(s) without a report" in done.stdout and "class view (GET /stats, 40 graded" in done.stdout

    def the_domain_check_passed(session, done):
        assert "1 released, 0 refused" in done.stdout and "03-leaves" in done.stdout, done.stdout[-2000:]

    run_document("docs/measured.md", project, after={"benchmarks/batch.py": the_benchmark_printed_its_numbers,
                                                     "benchmarks/release_domain.py": the_domain_check_passed,
                                                     "benchmarks/intake.py": the_intake_refused_what_it_must,
                                                     "benchmarks/handin.py": every_hand_in_got_its_report,
                                                     "benchmarks/service.py": nothing_acknowledged_was_lost}).close()


def test_the_readme(project):
    """README's own commands: the demo and the whole suite are CI's; the fast tier runs here (in the real
    checkout: it needs the tests)."""
    fast = [text for info, text in blocks(ROOT / "README.md") if info == "bash" and "tests/fast" in text]
    assert fast == [".venv/bin/python -m pytest -q tests/fast\n"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST")}
    p = subprocess.run([str(VENV / "bin" / "python"), "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/fast"],
                       cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0 and " passed" in p.stdout, p.stdout[-3000:]
