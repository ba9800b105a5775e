"""Release's domain check (issue 44) on every shipped assignment: each solution judged against its own checks at
every point a student can draw (authoring.sweep, the budget `autograder release` uses), into a temporary folder. Per
assignment it prints what the check judged (checks, points, exercises enumerated whole, sandboxed runs), its time and
the whole release's time, with the machine's load beside them; then the target (about a minute per assignment), met
or not, and any assignment refused (which must be none).

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
            start = time.monotonic()
            try:
                r = release(ROOT / "solutions" / aid, Path(tmp) / "a", Path(tmp) / "b", worker=worker,
                            domain_budget=budget)
            except BuildError as e:
                refused.append(aid)
                print(f"{aid}: REFUSED\n{e}", flush=True)
                continue
            d = r.domain
            row = {"assignment": aid, "checks": d.checks, "points": d.points, "exercises": d.exercises,
                   "enumerated": d.enumerated, "runs": d.runs, "domain_seconds": round(d.seconds, 1),
                   "release_seconds": round(time.monotonic() - start, 1), "load_before": round(load, 2)}
            rows.append(row)
            print(f"{aid:32} {d.checks:3} checks {d.points:>10,} points  {d.enumerated}/{d.exercises} exercises "
                  f"enumerated  {d.runs:3} runs  domain check {d.seconds:6.1f} s  release {row['release_seconds']:6.1f} s"
                  f"  (load {load:.2f})", flush=True)
    total = sum(r["domain_seconds"] for r in rows)
    slow = [r["assignment"] for r in rows if r["domain_seconds"] > TARGET_SECONDS]
    print(f"\n{len(rows)} released, {len(refused)} refused{': ' + ', '.join(refused) if refused else ''}; domain "
          f"checks {total:.0f} s in all, {total / max(1, len(rows)):.0f} s an assignment on average")
    print(f"target: about {TARGET_SECONDS:.0f} s an assignment: "
          + ("met by every one" if not slow else f"not met by {', '.join(slow)}"))
    if args.json:
        print(json.dumps(rows, indent=1))
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
