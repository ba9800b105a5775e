"""The floor under release's domain check (issue 44): the CPU the solution's own function calls take at the points
the full check judges, with nothing of ours around them. Per assignment it builds the key (release, no domain check)
into a temporary folder, runs the solution's code cells in this process (IPython, as a kernel runs them, in a
temporary working folder; our own solutions, not a student's code), and for each exercise the check sweeps, times each swept function at its first
`--points` points of authoring.sweep's full budget (torch on one thread, as in the sandbox; the CPU of the processes a
call starts counted too) and multiplies by the number of points. The sum over 2 (this machine's cores) is the least
time the check can take here, whatever the grader does around the calls; over C cores it is the sum / C.

Run: .venv/bin/python benchmarks/solution_calls.py [--assignment ID ...] [--points 300] [--json]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (12's calls start two processes each)."""
    import resource

    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def floor(aid: str, sample: int) -> list[dict]:
    """Per swept function of assignment `aid`: its points and its own time per call (µs, median of the sample's
    mean over three passes)."""
    import torch
    from IPython.core.interactiveshell import InteractiveShell

    from autograder.authoring import sweep
    from autograder.authoring.release import code_cells, release
    from autograder.grading import plan
    from autograder.keyfile import load_key
    from autograder.sandbox.client import Worker
    from autograder.sandbox.inside.probe import make_args

    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp, Worker([str(ROOT / "solutions"), tmp]) as worker:
        r = release(ROOT / "solutions" / aid, Path(tmp) / "a", Path(tmp) / "b", worker=worker, domain_budget=None)
        key = load_key(r.key)
    import nbformat

    nb = nbformat.read(next((ROOT / "solutions" / aid).glob("*.ipynb")), as_version=4)
    shell = InteractiveShell.instance()
    here = os.getcwd()
    scratch = tempfile.mkdtemp(prefix="solution-calls-")   # what the cells and calls write (12's stores) goes here
    os.chdir(scratch)
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        for cell in code_cells(nb):
            shell.run_cell(cell, silent=True)
    ns = shell.user_ns
    base = plan.draw_point(key.parameters, key.assignment, "reference-a", "own")
    rows = []
    for t in sweep.targets(key, sweep.FULL, base):
        points = t.points(key, base, 0, min(t.n, sample))
        for fn in sweep._functions(t):
            best = float("inf")
            for _ in range(3):
                calls = [make_args(plan.call_args(t.exercise, p))[0] for p in points]
                start = _cpu()
                with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                    for args in calls:
                        try:
                            ns[fn](*args)
                        except Exception:   # noqa: BLE001 - a raise is what some exercises ask for
                            pass
                best = min(best, (_cpu() - start) / len(calls))
            rows.append({"assignment": aid, "exercise": t.exercise.id, "function": fn, "points": t.n,
                         "enumerated": t.exact, "us_per_call": round(best * 1e6, 1), "cpu_seconds": round(best * t.n, 1)})
    InteractiveShell.clear_instance()
    os.chdir(here)
    shutil.rmtree(scratch, ignore_errors=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--assignment", nargs="*", help="assignment ids (default: every one in solutions/)")
    ap.add_argument("--points", type=int, default=300, help="points timed per function (default 300)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    ids = args.assignment or sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / "spec.toml").is_file())
    out = []
    for aid in ids:
        rows = floor(aid, args.points)
        out += rows
        cpu = sum(r["cpu_seconds"] for r in rows)
        top = sorted(rows, key=lambda r: -r["cpu_seconds"])[:3]
        print(f"{aid:32} {len(rows):3} functions  {sum(r['points'] for r in rows):>10,} calls  the solution's own "
              f"CPU {cpu:6.0f} s: at least {cpu / 2:5.0f} s on 2 cores, {cpu / 8:5.0f} s on 8, {cpu / 16:5.0f} s on 16"
              + ("  (most: " + ", ".join(f"{r['function']} {r['points']:,} x {r['us_per_call']:.0f} µs" for r in top)
                 + ")" if top else ""), flush=True)
    if args.json:
        print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
