"""Hand-in under load: N students hand in 01-backward-vs-grad to a course service within one minute while
`grade --service --follow` grades each hand-in as it arrives; how long a hand-in takes to be acknowledged, how long
after the last hand-in the last report is back on the service, and how long the class view takes to load.

It starts `autograder serve` (SQLite in a temporary folder, or --db URL), adds N students and a staff user,
publishes 01 for the course (build/01-backward-vs-grad/key.json), writes N varied notebooks (benchmarks/batch.py's
mix; its cut-off files are replaced by the released notebook, not attempted: the service refuses a file that is not
a notebook), starts `grade --follow`, and has each student hand in at a seeded random moment within --window
seconds (one thread each). Then it waits until every student's hand-in that counts has its report on the service,
and times GET /assignments/<id>/stats (the class view: made again whenever a hand-in or a report arrived, else
the page made last) and the gradebook.

Run (after `autograder release solutions/01-backward-vs-grad`):
    .venv/bin/python benchmarks/handin.py                 # N = 300 within 60 s
    .venv/bin/python benchmarks/handin.py --n 60 --window 15
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "01-backward-vs-grad"
sys.path.insert(0, str(ROOT / "benchmarks"))

from batch import make_submissions  # noqa: E402


class Service:
    """`autograder serve` in its own process group on a free port of 127.0.0.1, its output in `log`."""

    def __init__(self, folder: Path, db: str | None, args: tuple[str, ...]) -> None:
        folder.mkdir(parents=True)
        self.folder, self.db, self.log = folder, db or f"sqlite:///{folder / 'course.db'}", folder / "serve.log"
        port = folder / "port"
        self.proc = subprocess.Popen([sys.executable, "-m", "autograder", "serve", "--db", self.db, "--port", "0",
                                      "--port-file", str(port), *args], cwd=folder, stdout=self.log.open("w"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        while not port.exists() or not port.read_text().strip():
            if self.proc.poll() is not None:
                raise SystemExit(f"the service did not start: {self.log.read_text()[-2000:]}")
            time.sleep(0.1)
        self.url = f"http://127.0.0.1:{int(port.read_text())}"

    def add(self, *names: str, staff: bool = False) -> dict[str, str]:
        done = subprocess.run([sys.executable, "-m", "autograder", "course", "add", *names, "--db", self.db,
                               *(["--staff"] if staff else [])], capture_output=True, text=True, check=True)
        return dict(line.split("\t") for line in done.stdout.splitlines())

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(60)


def call(url: str, token: str, method: str = "GET", raw: bytes | None = None, timeout: float = 120) -> tuple[int, Any]:
    """One request with the token: (status, the answer's JSON)."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, data=raw, method=method, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    q = statistics.quantiles(values, n=20, method="inclusive") if len(values) > 1 else values * 19
    return f"median {1000 * statistics.median(values):.0f} ms, p95 {1000 * q[18]:.0f} ms, max {1000 * max(values):.0f} ms"


def _page(url: str, token: str) -> tuple[int, float]:
    """GET a page (HTML or CSV) with the token: (status, seconds)."""
    import urllib.error
    import urllib.request

    req = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            r.read()
            return r.status, time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300, help="students (default 300)")
    ap.add_argument("--window", type=float, default=60.0, help="seconds within which they hand in (default 60)")
    ap.add_argument("--db", help="a database URL for the service (default: SQLite in a temporary folder)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    key_path = ROOT / "build" / ASSIGNMENT / "key.json"
    if not key_path.exists():
        print(f"no key at {key_path}: run `autograder release solutions/{ASSIGNMENT}` first", file=sys.stderr)
        return 2
    from autograder.service.commands import publish

    work = Path(tempfile.mkdtemp(prefix="autograd-lab-handin-"))
    svc = Service(work / "service", db=args.db, args=("--rate", "1000", "--burst", "5000"))
    try:
        staff = svc.add("prof", staff=True)["prof"]
        students = [f"s{i:04d}" for i in range(args.n)]
        tokens = svc.add(*students)
        released = ROOT / "assignments" / ASSIGNMENT / "backward-vs-grad.ipynb"
        publish(key_path, svc.url, work / "student", "token", released, token=staff)
        (work / "subs").mkdir()
        kinds = make_submissions(args.n, work / "subs")
        bodies = {}
        for s in students:
            data = (work / "subs" / f"{s}.ipynb").read_bytes()
            try:
                nbformat.reads(data.decode(), as_version=4)
            except Exception:   # a cut-off file: the student hands in the released notebook instead
                nb = nbformat.read(released, as_version=4)
                for cell in nb.cells:
                    if cell.metadata.get("nbgrader", {}).get("grade_id") == "student-id":
                        cell.source = f'STUDENT_ID = "{s}"'
                data = nbformat.writes(nb).encode()
            bodies[s] = data
        print(f"{args.n} students ({', '.join(f'{v} {k}' for k, v in sorted(kinds.items()))}), hand-ins of "
              f"{statistics.mean(map(len, bodies.values())) / 1000:.0f} kB on average, within {args.window:g} s; "
              f"service: {'SQLite' if not args.db else args.db.split(':')[0]} on {svc.url}")

        out = work / "out"
        env = {**os.environ, "AUTOGRAD_LAB_TOKEN": staff}
        grader = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "--service", svc.url, "--assignment",
                                   ASSIGNMENT, "--key", str(key_path), "--out", str(out), "--follow", "30"],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=open(work / "grade.log", "w"))
        rng = random.Random(args.seed)
        moments = {s: rng.uniform(0, args.window) for s in students}
        latency: list[float] = []
        acked: dict[str, tuple[int, float]] = {}
        refused: list[str] = []
        stats_during: list[float] = []
        lock = threading.Lock()
        start = time.monotonic()

        def hand_in(s: str) -> None:
            time.sleep(max(0.0, start + moments[s] - time.monotonic()))
            t0 = time.monotonic()
            status, answer = call(f"{svc.url}/api/v1/assignments/{ASSIGNMENT}/handins", tokens[s], "POST",
                                  raw=bodies[s], timeout=120)
            t1 = time.monotonic()
            with lock:
                if status == 201:
                    latency.append(t1 - t0)
                    acked[s] = (answer["id"], t1 - start)
                else:
                    refused.append(f"{s}: {status} {answer}")

        threads = [threading.Thread(target=hand_in, args=(s,)) for s in students]
        for t in threads:
            t.start()
        stats_url = f"{svc.url}/api/v1/assignments/{ASSIGNMENT}/stats"
        while any(t.is_alive() for t in threads):   # the class view while hand-ins arrive and reports come back
            if svc.proc.poll() is not None:
                raise SystemExit(f"the service stopped ({svc.proc.returncode}): {svc.log.read_text()[-3000:]}")
            status, took = _page(stats_url, staff)
            if status == 200:
                stats_during.append(took)
            time.sleep(2.0)
        for t in threads:
            t.join()
        last_in = max((w for _, w in acked.values()), default=0.0)

        def missing() -> int:
            handins = call(f"{svc.url}/api/v1/assignments/{ASSIGNMENT}/handins", staff, timeout=120)[1]["handins"]
            return sum(1 for h in handins if h["counts"] and not h["graded"])

        while missing() and grader.poll() is None and time.monotonic() - start < args.window + 900:
            time.sleep(0.25)
        last_back = time.monotonic() - start
        left = missing()
        loads = [_page(stats_url, staff)[1] for _ in range(5)]
        gradebook = _page(f"{svc.url}/api/v1/assignments/{ASSIGNMENT}/gradebook?format=csv", staff)[1]
        grader.terminate()
        grader.wait(60)
        rounds = (work / "grade.log").read_text().count("new sent to the course service")
        print(f"hand-ins acknowledged: {len(acked)} of {args.n} ({len(refused)} refused{': ' + refused[0] if refused else ''})")
        print(f"hand-in round trip: {_ms(latency)}")
        print(f"last hand-in at {last_in:.1f} s; last report back on the service at {last_back:.1f} s "
              f"({last_back - last_in:.1f} s after the last hand-in); {left} hand-in(s) without a report; "
              f"grade --follow graded in {rounds} round(s)")
        print(f"class view (GET /stats, {args.n - left} graded reports): made anew {1000 * loads[0]:.0f} ms, then "
              f"unchanged {_ms(loads[1:])}; while hand-ins arrived: {_ms(stats_during)} ({len(stats_during)} loads); "
              f"gradebook CSV {1000 * gradebook:.0f} ms")
        print(json.dumps({"n": args.n, "window_s": args.window, "acked": len(acked), "handin_median_ms":
                          round(1000 * statistics.median(latency), 1) if latency else None,
                          "last_report_after_last_handin_s": round(last_back - last_in, 1),
                          "stats_new_ms": round(1000 * loads[0], 1),
                          "stats_unchanged_median_ms": round(1000 * statistics.median(loads[1:]), 1), "without_report": left}))
        return 0 if not left and not refused else 1
    finally:
        svc.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
