"""Hand-in under load: N students hand in 01-backward-vs-grad to a course service within one minute while
`grade --service --follow` grades each hand-in as it arrives; how long a hand-in takes to be acknowledged, how long
after the last hand-in the last report is back on the service, and how long the class view takes to load.

It starts `autograder serve` (SQLite in a temporary folder, or --db URL), adds N students and a staff user,
publishes 01 for the course (build/01-backward-vs-grad/key.json), writes N varied notebooks (benchmarks/batch.py's
mix; its cut-off files are replaced by the released notebook, not attempted: the service refuses a file that is not
a notebook), starts `grade --follow`, and has each student hand in at a seeded random moment within --window
seconds (one thread each). Then it waits until every student's hand-in that counts has its report on the service,
and times GET /assignments/<id>/stats (the class view, made from the reports at each request) and the gradebook.

Run (after `autograder release solutions/01-backward-vs-grad`):
    .venv/bin/python benchmarks/handin.py                 # N = 300 within 60 s
    .venv/bin/python benchmarks/handin.py --n 60 --window 15
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
ASSIGNMENT = "01-backward-vs-grad"
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))

from batch import make_submissions  # noqa: E402
from servers.course import Service, call  # noqa: E402


def _ms(values: list[float]) -> str:
    if not values:
        return "-"
    q = statistics.quantiles(values, n=20) if len(values) > 1 else values * 19
    return f"median {1000 * statistics.median(values):.0f} ms, p95 {1000 * q[18]:.0f} ms, max {1000 * max(values):.0f} ms"


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
            t0 = time.monotonic()
            status, _ = call(stats_url, staff, timeout=120)
            if status == 200:
                stats_during.append(time.monotonic() - t0)
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
        loads = []
        for _ in range(5):
            t0 = time.monotonic()
            status, page = call(stats_url, staff, timeout=120)
            loads.append(time.monotonic() - t0)
        t0 = time.monotonic()
        call(f"{svc.url}/api/v1/assignments/{ASSIGNMENT}/gradebook?format=csv", staff, timeout=120)
        gradebook = time.monotonic() - t0
        grader.terminate()
        grader.wait(60)
        rounds = (work / "grade.log").read_text().count("new sent to the course service")
        print(f"hand-ins acknowledged: {len(acked)} of {args.n} ({len(refused)} refused{': ' + refused[0] if refused else ''})")
        print(f"hand-in round trip: {_ms(latency)}")
        print(f"last hand-in at {last_in:.1f} s; last report back on the service at {last_back:.1f} s "
              f"({last_back - last_in:.1f} s after the last hand-in); {left} hand-in(s) without a report; "
              f"grade --follow graded in {rounds} round(s)")
        print(f"class view (GET /stats, {args.n - left} graded reports): {_ms(loads)}; while hand-ins arrived: "
              f"{_ms(stats_during)} ({len(stats_during)} loads); gradebook CSV {1000 * gradebook:.0f} ms")
        print(json.dumps({"n": args.n, "window_s": args.window, "acked": len(acked), "handin_median_ms":
                          round(1000 * statistics.median(latency), 1) if latency else None,
                          "last_report_after_last_handin_s": round(last_back - last_in, 1),
                          "stats_median_ms": round(1000 * statistics.median(loads), 1), "without_report": left}))
        return 0 if not left and not refused else 1
    finally:
        svc.stop()


if __name__ == "__main__":
    sys.exit(main())
