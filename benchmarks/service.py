"""The course service under a deadline rush (issue 42): N students start within a window, and each does what a
kernel does in course mode for 01-backward-vs-grad: for each of the six exercises, its predictions as written
(POST /predictions) and then what its PRODUCE functions did (POST /check); some students then revise one
exercise's predictions after its answers were shown and check it again; then each hands in the notebook
(POST /assignments/01-backward-vs-grad/handins). On SQLite or on PostgreSQL (a server of its own, fsync on), with
one or more service processes (`autograder serve --workers N`).

Each student's requests are made by running that student's notebook in this process, with the kernel's own code
(autograder.student.lab's observation and the probe): the values, cells and results streams are the ones a
kernel would send. The students are varied as in benchmarks/batch.py (right, partly wrong, raising).

It prints, per route, p50 / p95 / p99 / max latency; requests per second; the service's CPU per request (all of
its processes, over the rush; and, request by request on an idle service, each route's median); every answer
that was not 2xx; and a final count, read back from the staff routes, of acknowledged commits and hand-ins that
are missing (lost) or kept twice (duplicated). Then issue 42's targets, each met or not.

Run (after `autograder release solutions/01-backward-vs-grad`):
    .venv/bin/python benchmarks/service.py --students 1000 --window 60 --db sqlite --workers 2
    .venv/bin/python benchmarks/service.py --students 3000 --window 300 --db postgresql --workers 2
    .venv/bin/python benchmarks/service.py --matrix     # 1000 in 60 s: SQLite and PostgreSQL, 1 and 2 processes
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import csv
import io
import json
import multiprocessing
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "01-backward-vs-grad"
KEY = ROOT / "build" / ASSIGNMENT / "key.json"
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tests"))

# The kinds of students, as in benchmarks/batch.py (by example scenario); broken notebooks that cannot be read are
# left out: a kernel cannot run them either.
SCENARIOS = {"ada": "right", "jade": "right", "ben": "partly wrong", "cleo": "partly wrong", "dev": "partly wrong",
             "eve": "partly wrong", "finn": "raising", "gus": "raising"}
PREDICT_WAIT, CHECK_WAIT, HANDIN_WAIT = 15.0, 60.0, 120.0   # the kernel's waits (lab.COMMIT_WAIT, JUDGE_WAIT)
ROUTES = ("predictions", "check", "handin")
TARGETS = {"p99_ms": 300.0, "cpu_ms": 3.0}


# ------------------------------------------------------------------------------------------------ the students


def _session(task: tuple[str, str, str, bool]) -> dict[str, Any]:
    """What one student's kernel sends (run in a pool process): (exercise, predictions body, check body) for each
    exercise, a revision of one exercise when `revise`, and the notebook's bytes to hand in."""
    from autograder.grading import plan
    from autograder.student import lab as labmod

    student, scenario, course_json, revise = task
    from make_submissions import answered, every_scenario, load_scenarios

    from autograder.grading.plan import draw_point
    from autograder.keyfile import load_key

    key = load_key(ROOT / "assignments" / ASSIGNMENT / "public_key.json")
    params = draw_point(key.parameters, ASSIGNMENT, student, "own")
    _, sources, _ = every_scenario(load_scenarios(ASSIGNMENT), lambda _name, p=params: p)[scenario]
    nb = answered(ROOT / "assignments" / ASSIGNMENT / key.notebook, student, sources)
    os.environ["AUTOGRAD_LAB_COURSE"] = course_json
    ns: dict[str, Any] = {"__name__": "__main__"}
    cells: list[dict[str, Any]] = []
    exercises = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        label = f"the cell run as In [{len(cells) + 1}]"
        m = re.fullmatch(r'\s*lab\.check\("(\w+)"\)\s*', cell.source)
        if m and "lab" in ns:
            lab = ns["lab"]
            ex = next(e for e in lab._plan.exercises if e.id == m.group(1))
            entry = plan.observation(lab._plan, ex, plan.points_for(lab._plan, student), len(cells) - 1)
            body = {"assignment": ASSIGNMENT, "exercise": ex.id, "student": student,
                    "cells": [c["source"] for c in cells], "labels": [c["label"] for c in cells]}
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                names = labmod._observe(ns, {**entry, "calls": []}, lab._plan.call_timeout, cells)
                stream = labmod._observe(ns, entry, lab._plan.call_timeout, cells)
            exercises.append((ex.id, {**body, "results": names.decode("utf-8", "surrogateescape")},
                              {**body, "results": stream.decode("utf-8", "surrogateescape")}))
            cells.append({"source": cell.source, "record": {"status": "ok"}, "label": label})
            continue
        record: dict[str, Any] = {"status": "ok"}
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                exec(compile(cell.source, f"<cell {len(cells) + 1}>", "exec"), ns)   # noqa: S102 (the example's own code)
        except Exception as e:
            record = {"status": "error", "ename": type(e).__name__, "evalue": str(e)[:500]}
        cells.append({"source": cell.source, "record": record, "label": label})
    revision = None
    if revise and exercises:
        ex, pred, check = exercises[random.Random(student).randrange(len(exercises))]
        changed = re.sub(r'("k": "name", .*?"t": "float", "v": )(-?[0-9.e+-]+)',
                         lambda m: m.group(1) + repr(round(float(m.group(2)) * 1.5 + 1.0, 3)), pred["results"])
        revision = (ex, {**pred, "results": changed}, check)
    import nbformat

    return {"student": student, "scenario": scenario, "exercises": exercises, "revision": revision,
            "handin": nbformat.writes(nb).encode()}


def sessions(n: int, course_json: Path, revise: float, seed: int = 7) -> list[dict[str, Any]]:
    """The sessions of students s0000 ... s<n-1> (two processes make them)."""
    rng = random.Random(seed)
    order = list(SCENARIOS)
    tasks = [(f"s{i:04d}", order[i % len(order)], str(course_json), rng.random() < revise) for i in range(n)]
    with multiprocessing.get_context("fork").Pool(max(1, min(2, os.cpu_count() or 1))) as pool:
        out = pool.map(_session, tasks, chunksize=16)
    for s in out:   # encoded once here: the rush sends bytes
        s["exercises"] = [(ex, _json(p), _json(c)) for ex, p, c in s["exercises"]]
        if s["revision"]:
            ex, p, c = s["revision"]
            s["revision"] = (ex, _json(p), _json(c))
    return out


def _json(body: dict[str, Any]) -> bytes:
    return json.dumps(body, allow_nan=False).encode()


# ------------------------------------------------------------------------------------------------ the service


class Served:
    """`autograder serve` (with `workers` processes) on `db`, in `folder`; stops it on close."""

    def __init__(self, folder: Path, db: str, workers: int, args: tuple[str, ...] = (), database: int = 0) -> None:
        self.folder, self.db = folder, db
        folder.mkdir(parents=True, exist_ok=True)
        port_file, extra = folder / "port", args
        self.database = database   # the database server's process (PostgreSQL's postmaster), 0: none
        self.log = open(folder / "serve.log", "ab")
        args = [sys.executable, "-m", "autograder", "serve", "--db", db, "--port", "0", "--port-file", str(port_file)]
        if workers != 1:
            args += ["--workers", str(workers)]
        args += list(extra)
        self.proc = subprocess.Popen(args, cwd=folder, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        end = time.monotonic() + 120
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > end:
                raise SystemExit(f"the service did not start: {(folder / 'serve.log').read_text()[-2000:]}")
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{int(port_file.read_text())}"
        time.sleep(1.0)   # every process is listening

    def pids(self) -> list[int]:
        """The service's processes: the one started and its children."""
        return [self.proc.pid, *_children(self.proc.pid)]

    def cpu(self) -> float:
        return sum(_cpu(p) for p in self.pids())

    def database_cpu(self) -> float:
        """CPU seconds of the database server's processes so far (0 for SQLite, which runs in the service)."""
        if not self.database:
            return 0.0
        fields = _stat(self.database)   # and what its processes that have ended took (a closed connection's backend)
        ended = (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK") if len(fields) > 14 else 0.0
        return ended + sum(_cpu(p) for p in _descendants(self.database))

    def user_system(self) -> tuple[float, float]:
        """User and system CPU seconds of the service's processes so far (clock ticks: for a whole rush)."""
        user = system = 0.0
        for pid in self.pids():
            fields = _stat(pid)
            if len(fields) > 12:
                user += int(fields[11]) / os.sysconf("SC_CLK_TCK")
                system += int(fields[12]) / os.sysconf("SC_CLK_TCK")
        return user, system

    def add(self, names: list[str], staff: bool = False) -> dict[str, str]:
        roster = self.folder / "roster.csv"
        roster.write_text("name\n" + "\n".join(names) + "\n")
        tokens = self.folder / "tokens.csv"
        subprocess.run([sys.executable, "-m", "autograder", "course", "add", "--roster", str(roster), "--tokens",
                        str(tokens), "--db", self.db, *(["--staff"] if staff else [])], cwd=self.folder, check=True,
                       capture_output=True)
        with tokens.open() as f:
            return {r["name"]: r["token"] for r in csv.DictReader(f)}

    def close(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, 15)
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
        self.log.close()


def _stat(pid: int) -> list[bytes]:
    """The fields of /proc/<pid>/stat after the command's name (state, ppid, ...: field 3 on is index 0 on), or []
    when the process is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _parents() -> dict[int, list[int]]:
    """Every process's children, from one pass over /proc."""
    out: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        fields = _stat(int(name)) if name.isdigit() else []
        if len(fields) > 1:
            out.setdefault(int(fields[1]), []).append(int(name))
    return out


def _children(pid: int) -> list[int]:
    return _parents().get(pid, [])


def _descendants(pid: int) -> list[int]:
    """`pid` and every process under it (PostgreSQL's backends are its postmaster's children, and the postmaster may
    be the child of the command that started it as the server's user)."""
    tree, out, todo = _parents(), [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += tree.get(p, [])
    return out


def _cpu(pid: int) -> float:
    """CPU seconds of process `pid` so far: its live threads' time on a CPU (/proc/<pid>/task/*/schedstat, in ns:
    the clock ticks of /proc/<pid>/stat are 10 ms, too coarse for one request; the service's threads live as long
    as it does); 0 when it is gone."""
    total = 0.0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0]) / 1e9
            except (OSError, ValueError, IndexError):
                pass
    except OSError:
        return 0.0
    return total


# ------------------------------------------------------------------------------------------------ the rush


async def _send(client: Any, url: str, token: str, body: bytes, timeout: float) -> tuple[int, Any, float]:
    """(status, the answer's JSON or text, seconds). Status 599: no answer (refused, reset, or timed out)."""
    import aiohttp

    t0 = time.monotonic()
    try:
        async with client.post(url, data=body, headers={"Authorization": f"token {token}",
                                                        "Content-Type": "application/json"},
                               timeout=aiohttp.ClientTimeout(total=timeout)) as answer:
            status, text = answer.status, await answer.read()
    except (aiohttp.ClientError, OSError, asyncio.TimeoutError) as e:
        status, text = 599, (str(e) or type(e).__name__).encode()
    took = time.monotonic() - t0
    try:
        return status, json.loads(text), took
    except ValueError:
        return status, text[:200].decode("utf-8", "replace"), took


async def rush(url: str, students: list[dict[str, Any]], tokens: dict[str, str], window: float, seed: int = 11
               ) -> dict[str, Any]:
    """Every student's session, each starting at a random moment within `window` seconds. Returns the requests
    ({route, status, seconds, at, error}) and what was acknowledged (commits, hand-ins)."""
    import aiohttp

    # a new connection for each request, as a kernel's urllib makes it (aiohttp: its HTTP parser is in C, so that this
    # generator, on the same machine, takes less of the CPU the service is measured with)
    client = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0, force_close=True))
    rng = random.Random(seed)
    moments = {s["student"]: rng.uniform(0, window) for s in students}
    requests: list[dict[str, Any]] = []
    commits: dict[tuple[str, str], Any] = {}
    handins: dict[str, dict[str, Any]] = {}
    start = time.monotonic()
    api = url + "/api/v1"

    async def one(route: str, s: str, body: bytes, timeout: float) -> tuple[int, Any]:
        path = {"predictions": "/predictions", "check": "/check",
                "handin": f"/assignments/{ASSIGNMENT}/handins"}[route]
        status, answer, took = await _send(client, api + path, tokens[s], body, timeout)
        requests.append({"route": route, "status": status, "seconds": took, "at": time.monotonic() - start,
                         "error": answer.get("error") if isinstance(answer, dict) else
                         (answer if status >= 300 else None)})
        return status, answer

    async def student(session: dict[str, Any]) -> None:
        s = session["student"]
        await asyncio.sleep(max(0.0, start + moments[s] - time.monotonic()))
        steps = list(session["exercises"]) + ([session["revision"]] if session["revision"] else [])
        for ex, pred, check in steps:
            status, answer = await one("predictions", s, pred, PREDICT_WAIT)
            if status == 200 and isinstance(answer, dict) and answer.get("commit"):
                commits.setdefault((s, ex), answer["commit"])
            await one("check", s, check, CHECK_WAIT)
        status, answer = await one("handin", s, session["handin"], HANDIN_WAIT)
        if status in (200, 201) and isinstance(answer, dict):
            handins.setdefault(s, answer)   # the first acknowledged receipt (one hand-in per student here)

    await asyncio.gather(*(student(s) for s in students))
    await client.close()
    return {"requests": requests, "commits": commits, "handins": handins, "seconds": time.monotonic() - start}


def verify(url: str, staff: str, done: dict[str, Any]) -> dict[str, int]:
    """Read back, through the staff routes, what was acknowledged: commits missing or different (lost), commits kept
    twice for one exercise; hand-ins missing; students with the same notebook kept twice (duplicated)."""
    from autograder.student.service_client import Client

    client = Client(url, staff, timeout=300)
    held = client.get(f"/assignments/{ASSIGNMENT}/commits")["commits"]
    lost_commits = dup_commits = 0
    for records in held.values():
        seen = [r["exercise"] for r in records]
        dup_commits += len(seen) - len(set(seen))
    for (student, ex), commit in done["commits"].items():
        kept = [r for r in held.get(student, []) if r["exercise"] == ex]
        if not kept or kept[0]["values"] != commit["values"]:
            lost_commits += 1
    handins = client.get(f"/assignments/{ASSIGNMENT}/handins")["handins"]
    by_id = {h["id"]: h for h in handins}
    lost_handins = sum(1 for s, r in done["handins"].items()
                       if r["id"] not in by_id or by_id[r["id"]]["digest"] != r["digest"] or by_id[r["id"]]["student"] != s)
    per_student: dict[str, list[str]] = {}
    for h in handins:
        per_student.setdefault(h["student"], []).append(h["digest"])
    dup_handins = sum(1 for digests in per_student.values() if len(digests) != len(set(digests)))
    return {"lost commits": lost_commits, "duplicated commits": dup_commits, "lost hand-ins": lost_handins,
            "duplicated hand-ins": dup_handins}


def serial_cpu(served: Served, sessions_: list[dict[str, Any]], tokens: dict[str, str], n: int = 40
               ) -> dict[str, float]:
    """Each route's median CPU per request (ms, all the service's processes), one request at a time on an idle
    service: students who have not taken part yet (their first check of each exercise)."""
    import urllib.error
    import urllib.request

    per: dict[str, list[float]] = {r: [] for r in ROUTES}
    api = served.url + "/api/v1"
    for session in sessions_[:n]:
        s = session["student"]
        steps = [("predictions", "/predictions", session["exercises"][0][1]),
                 ("check", "/check", session["exercises"][0][2]),
                 ("handin", f"/assignments/{ASSIGNMENT}/handins", session["handin"])]
        for route, path, body in steps:
            before = served.cpu()
            req = urllib.request.Request(api + path, data=body, method="POST",
                                         headers={"Authorization": f"token {tokens[s]}"})
            try:
                urllib.request.urlopen(req, timeout=120).read()
            except urllib.error.HTTPError as e:
                e.read()
            time.sleep(0.05)   # the process's CPU time is counted in clock ticks: let it settle
            per[route].append(1000 * (served.cpu() - before))
    # The floor under every route: a request to no route (tornado's handling, the log line) and GET /me (that and a
    # token's identity and rate: two statements on one connection); and under any tornado service, a bare one.
    for route, path, token in (("no route", "/nothing", None), ("GET /me", "/api/v1/me", tokens[sessions_[0]["student"]])):
        per[route] = []
        for _ in range(n):
            before = served.cpu()
            req = urllib.request.Request(served.url + path, headers={"Authorization": f"token {token}"} if token else {})
            try:
                urllib.request.urlopen(req, timeout=120).read()
            except urllib.error.HTTPError as e:
                e.read()
            time.sleep(0.05)
            per[route].append(1000 * (served.cpu() - before))
    per["bare tornado"] = _bare_tornado(n, int(statistics.median(len(s["exercises"][0][2]) for s in sessions_[:n])))
    return {r: statistics.median(v) for r, v in per.items() if v}


_BARE = """
import tornado.httpserver, tornado.ioloop, tornado.netutil, tornado.web
class Hello(tornado.web.RequestHandler):
    def post(self):
        self.write({"ok": True})
sockets = tornado.netutil.bind_sockets(0, "127.0.0.1")
tornado.httpserver.HTTPServer(tornado.web.Application([("/", Hello)])).add_sockets(sockets)
print(sockets[0].getsockname()[1], flush=True)
tornado.ioloop.IOLoop.current().start()
"""


def _bare_tornado(n: int, size: int) -> list[float]:
    """The floor under any tornado service on this machine, measured as the routes are: the CPU (ms) of a bare
    tornado app (one handler answering {"ok": true}, no log line, no database) per POST of `size` bytes (a check's),
    one at a time, each on a new connection."""
    import urllib.request

    proc = subprocess.Popen([sys.executable, "-c", _BARE], stdout=subprocess.PIPE, text=True)
    try:
        url = f"http://127.0.0.1:{int(proc.stdout.readline())}/"
        body = b"x" * size
        out = []
        for i in range(n + 5):
            before = _cpu(proc.pid)
            urllib.request.urlopen(urllib.request.Request(url, data=body, method="POST"), timeout=60).read()
            time.sleep(0.05)
            if i >= 5:   # its first requests import and warm what the rest use
                out.append(1000 * (_cpu(proc.pid) - before))
        return out
    finally:
        proc.kill()
        proc.wait()


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    q = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else [values[0]] * 99
    return (f"p50 {1000 * q[49]:.0f}  p95 {1000 * q[94]:.0f}  p99 {1000 * q[98]:.0f}  max {1000 * max(values):.0f} ms")


def one_run(args: argparse.Namespace, db: str, workers: int, work: Path, students: list[dict[str, Any]],
            course_folder: Path, database: int = 0) -> dict[str, Any]:
    """Start a service, add the students, publish the key, rush, verify; print and return the numbers."""
    from autograder.service.commands import publish

    label = f"{'PostgreSQL' if db.startswith('postgresql') else 'SQLite'}, {workers} process(es), " \
            f"{len(students)} students within {args.window:g} s"
    print(f"\n== {label}", flush=True)
    served = Served(work, db, workers, database=database)
    try:
        staff = served.add(["prof"], staff=True)["prof"]
        tokens = served.add([s["student"] for s in students] + [f"idle{i:03d}" for i in range(40)])
        publish(KEY, served.url, course_folder, "token", ROOT / "assignments" / ASSIGNMENT / "backward-vs-grad.ipynb",
                token=staff)
        cpu0, t0, mine0, us0 = served.cpu(), time.monotonic(), time.process_time(), served.user_system()
        db0 = served.database_cpu()
        spy = _profile(served, args.window + 30, work / "profile.txt") if args.profile else None
        done = asyncio.run(rush(served.url, students, tokens, args.window))
        if spy is not None:
            spy.wait()
            print(_top(work / "profile.txt"))
        cpu = served.cpu() - cpu0
        wall = time.monotonic() - t0
        mine = time.process_time() - mine0
        dbcpu = served.database_cpu() - db0
        user, system = (b - a for a, b in zip(us0, served.user_system(), strict=True))
        reqs = done["requests"]
        for route in ROUTES:
            print(f"{route:12s} {len([r for r in reqs if r['route'] == route]):6d} requests  "
                  f"{_ms([r['seconds'] for r in reqs if r['route'] == route])}")
        allx = [r["seconds"] for r in reqs]
        print(f"{'all':12s} {len(reqs):6d} requests  {_ms(allx)}")
        bad: dict[tuple[str, int, str], int] = {}
        for r in reqs:
            if r["status"] >= 300:
                k = (r["route"], r["status"], str(r["error"])[:120])
                bad[k] = bad.get(k, 0) + 1
        print(f"{len(reqs) / wall:.1f} requests/s over {wall:.1f} s; the service's CPU {cpu:.1f} s "
              f"({1000 * cpu / max(1, len(reqs)):.2f} ms per request, its processes together; {100 * system / max(1e-9, user + system):.0f}% of it "
              f"in the operating system's kernel); this load generator's CPU {mine:.1f} s" +
              (f"; PostgreSQL's CPU {dbcpu:.1f} s" if served.database else ""))
        print("not 2xx: " + ("none" if not bad else "; ".join(f"{n} x {route} {status} ({why})"
                                                               for (route, status, why), n in sorted(bad.items()))))
        counts = verify(served.url, staff, done)
        print("read back: " + ", ".join(f"{k} {v}" for k, v in counts.items()) +
              f" (of {len(done['commits'])} commits and {len(done['handins'])} hand-ins acknowledged)")
        idle_students = [{**s, "student": f"idle{i:03d}"} for i, s in enumerate(students[:40])]
        serial = serial_cpu(served, _renamed(idle_students), tokens) if args.serial else {}
        if serial:
            print("CPU per request, one at a time on the idle service (median): " +
                  ", ".join(f"{r} {v:.2f} ms" for r, v in serial.items()))
        p99 = statistics.quantiles(allx, n=100, method="inclusive")[98] * 1000 if len(allx) > 1 else 0.0
        fives = sum(1 for r in reqs if r["status"] >= 500)
        return {"label": label, "p99_ms": p99, "five_xx": fives, "not_2xx": sum(bad.values()), **counts,
                "cpu_ms_per_request": 1000 * cpu / max(1, len(reqs)), "rps": len(reqs) / wall,
                "serial_cpu_ms": serial}
    finally:
        served.close()


def _profile(served: Served, seconds: float, out: Path) -> subprocess.Popen:
    """py-spy (pip install py-spy) sampling the service's last process for `seconds` (the thread that holds the
    GIL: where its Python time goes), its raw stacks to `out`."""
    spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))
    pids = served.pids()
    return subprocess.Popen([spy, "record", "--pid", str(pids[-1]), "--duration", str(int(seconds)), "--rate", "250",
                             "--format", "raw", "--output", str(out), "--nonblocking", "--gil"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _top(raw: Path, n: int = 40) -> str:
    """The functions where the samples were (own and with callees; and in the event loop's callbacks), from py-spy's
    raw output, by function whatever its line."""
    lines = [(stack, int(count)) for stack, _, count in (line.rpartition(" ") for line in raw.read_text().splitlines())
             if count.isdigit()]
    own: dict[str, int] = {}
    total: dict[str, int] = {}
    loop: dict[str, int] = {}
    samples = 0
    for stack, c in lines:
        frames = [re.sub(r":\d+\)$", ")", f) for f in stack.split(";")]
        samples += c
        own[frames[-1]] = own.get(frames[-1], 0) + c
        for f in set(frames):
            total[f] = total.get(f, 0) + c
        first = next((i for i, f in enumerate(frames) if f.startswith("Handle._run")), None)
        if first is not None:
            for f in set(frames[first + 1:]):
                loop[f] = loop.get(f, 0) + c
    out = [f"py-spy: {samples} samples; by own time:"]
    for title, table in (("", own), ("with what they call:", total),
                         ("in the event loop's callbacks, with what they call:", loop)):
        out += [title] if title else []
        out += [f"  {100 * v / samples:5.1f}%  {k[:150]}" for k, v in sorted(table.items(), key=lambda kv: -kv[1])[:n]]
    return "\n".join(out)


def _renamed(sessions_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Sessions made for other students, with each body's student and STUDENT_ID set to the session's own name (their
    values are then another student's: judged, and mostly wrong, which costs the judge as much)."""
    out = []
    for s in sessions_:
        name = s["student"]

        def swap(body: bytes, name: str = name) -> bytes:
            data = json.loads(body)
            data["student"] = name
            return _json(data)
        out.append({**s, "exercises": [(ex, swap(p), swap(c)) for ex, p, c in s["exercises"]],
                    "handin": re.sub(rb'STUDENT_ID = \\"s\d{4}\\"', f'STUDENT_ID = \\\\"{name}\\\\"'.encode(),
                                     s["handin"])})
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=1000)
    ap.add_argument("--window", type=float, default=60.0, help="seconds within which the students start (default 60)")
    ap.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    ap.add_argument("--workers", type=int, default=1, help="service processes (autograder serve --workers)")
    ap.add_argument("--revise", type=float, default=0.3, help="the share of students who revise one exercise")
    ap.add_argument("--matrix", action="store_true", help="SQLite and PostgreSQL, 1 and 2 processes, in one run")
    ap.add_argument("--serial", action="store_true", help="also measure each route's CPU one request at a time")
    ap.add_argument("--profile", action="store_true", help="sample the service with py-spy during the rush (its "
                                                           "last process) and print where the time went")
    args = ap.parse_args()
    if not KEY.exists():
        sys.exit(f"no {KEY}: run `autograder release solutions/{ASSIGNMENT}` first")
    print(f"machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    work = Path(tempfile.mkdtemp(prefix="autograd-lab-service-bench-"))
    pg = None
    try:
        course_folder = work / "student"
        from autograder.grading import coursefile
        from autograder.keyfile import load_key

        course_folder.mkdir()
        coursefile.write(course_folder / coursefile.FILE, load_key(KEY), "http://127.0.0.1:1", "token")
        t0 = time.monotonic()
        students = sessions(args.students, course_folder / coursefile.FILE, args.revise)
        kinds: dict[str, int] = {}
        for s in students:
            kinds[SCENARIOS[s["scenario"]]] = kinds.get(SCENARIOS[s["scenario"]], 0) + 1
        print(f"{len(students)} students ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))}; "
              f"{sum(1 for s in students if s['revision'])} revise an exercise), made in {time.monotonic() - t0:.0f} s "
              f"by running each one's notebook with the kernel's code", flush=True)
        configs = [(d, w) for d in ("sqlite", "postgresql") for w in (1, 2)] if args.matrix else \
            [(args.db, args.workers)]
        results = []
        for i, (kind, workers) in enumerate(configs):
            if kind == "postgresql":
                from servers.postgres import start

                if pg is not None:
                    pg.stop()
                pg = start(work / f"pg{i}", durable=True)
                url = pg.url
            else:
                url = f"sqlite:///{work / f'run{i}' / 'course.db'}"
            results.append(one_run(args, url, workers, work / f"run{i}", students, course_folder,
                                   pg.process.pid if kind == "postgresql" and pg is not None else 0))
        print(f"\ntargets (docs/measured.md; {args.students} students within {args.window:g} s):")
        for r in results:
            met = (r["p99_ms"] <= TARGETS["p99_ms"] and r["five_xx"] == 0 and not any(
                r[k] for k in ("lost commits", "duplicated commits", "lost hand-ins", "duplicated hand-ins")))
            print(f"- {r['label']}: p99 {r['p99_ms']:.0f} ms (at most {TARGETS['p99_ms']:g}), {r['five_xx']} x 5xx, "
                  f"lost/duplicated {r['lost commits']}/{r['duplicated commits']} commits and "
                  f"{r['lost hand-ins']}/{r['duplicated hand-ins']} hand-ins: {'met' if met else 'not met'}; "
                  f"CPU {r['cpu_ms_per_request']:.2f} ms per request on average")
            if r["serial_cpu_ms"]:
                routes = [v for k, v in r["serial_cpu_ms"].items() if k in ROUTES]
                print(f"  CPU per request one at a time (median of the routes' medians) "
                      f"{statistics.median(routes):.2f} ms (at most {TARGETS['cpu_ms']:g}): "
                      f"{'met' if statistics.median(routes) <= TARGETS['cpu_ms'] else 'not met'}")
        print("as JSON: " + json.dumps(results))
        return 0
    finally:
        if pg is not None:
            pg.stop()
        shutil.rmtree(work, ignore_errors=True) if not os.environ.get("KEEP") else print("kept", work)


if __name__ == "__main__":
    sys.exit(main())
