"""Release's domain check (issue 44) on every shipped assignment: each solution judged against its own checks at
every point a student can draw (authoring.sweep, the budget `autograder release` uses), into a temporary folder. Per
assignment it prints what the check judged (checks, points, exercises enumerated whole, sandboxed runs), its time and
the whole release's time, with the machine's load beside them, and the CPU the release used in the sandbox (its
worker's cgroup, cpu.stat) and in the grader's own process, with the wall time that CPU would take on idle cores
(CPU / cores: the check is CPU-bound, so this does not depend on what else the machine runs); then the target (about a
minute per assignment), met or not by each measure, and any assignment refused (which must be none).

Run: .venv/bin/python benchmarks/release_domain.py [--assignment ID ...] [--budget full|quick] [--json]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_SECONDS = 60.0   # issue 44: "within about a minute per assignment"


def main() -> int:
    from autograder.authoring import sweep
    from autograder.authoring.release import BuildError, release
    from autograder.sandbox.client import Worker

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assignment", nargs="*", help="assignment ids (default: every one in solutions/)")
    ap.add_argument("--budget", choices=("full", "quick"), default="full")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON too")
    args = ap.parse_args()
    budget = sweep.FULL if args.budget == "full" else sweep.QUICK
    ids = args.assignment or sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / "spec.toml").is_file())
    rows, refused = [], []
    with tempfile.TemporaryDirectory() as tmp, Worker([str(ROOT / "solutions"), tmp]) as worker:
        for aid in ids:
            load = os.getloadavg()[0]
            cpu0, own0 = worker.cpu_seconds(), time.process_time()
            start = time.monotonic()
            try:
                r = release(ROOT / "solutions" / aid, Path(tmp) / "a", Path(tmp) / "b", worker=worker,
                            domain_budget=budget)
            except BuildError as e:
                refused.append(aid)
                print(f"{aid}: REFUSED\n{e}", flush=True)
                continue
            d = r.domain
            cpu1 = worker.cpu_seconds()
            sandbox_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
            own = time.process_time() - own0
            idle = None if sandbox_cpu is None else max((sandbox_cpu + own) / budget.jobs(), own)
            row = {"assignment": aid, "checks": d.checks, "points": d.points, "exercises": d.exercises,
                   "enumerated": d.enumerated, "runs": d.runs, "domain_seconds": round(d.seconds, 1),
                   "release_seconds": round(time.monotonic() - start, 1), "load_before": round(load, 2),
                   "sandbox_cpu_seconds": None if sandbox_cpu is None else round(sandbox_cpu, 1),
                   "grader_cpu_seconds": round(own, 1), "idle_estimate_seconds": None if idle is None else round(idle, 1)}
            rows.append(row)
            cpu = ("" if sandbox_cpu is None else f"  release's CPU: sandbox {sandbox_cpu:6.1f} s, grader {own:5.1f} s: "
                   f"about {idle:4.0f} s on {budget.jobs()} idle cores")
            print(f"{aid:32} {d.checks:3} checks {d.points:>10,} points  {d.enumerated}/{d.exercises} exercises "
                  f"enumerated  {d.runs:3} runs  domain check {d.seconds:6.1f} s  release {row['release_seconds']:6.1f} s"
                  f"  (load {load:.2f}){cpu}", flush=True)
    total = sum(r["domain_seconds"] for r in rows)
    slow = [r["assignment"] for r in rows if r["domain_seconds"] > TARGET_SECONDS]
    print(f"\n{len(rows)} released, {len(refused)} refused{': ' + ', '.join(refused) if refused else ''}; domain "
          f"checks {total:.0f} s in all, {total / max(1, len(rows)):.0f} s an assignment on average")
    print(f"target: about {TARGET_SECONDS:.0f} s an assignment: "
          + ("met by every one" if not slow else f"not met by {', '.join(slow)}"))
    estimated = [r for r in rows if r["idle_estimate_seconds"] is not None]
    if estimated:
        slow_idle = [r["assignment"] for r in estimated if r["idle_estimate_seconds"] > TARGET_SECONDS]
        print("on idle cores (CPU / cores): " + ("met by every one" if not slow_idle else
                                                  f"not met by {', '.join(slow_idle)}"))
    if args.json:
        print(json.dumps(rows, indent=1))
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
