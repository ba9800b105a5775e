"""Do benchmarks/batch.py (the code at a git revision against this tree) and benchmarks/selfcheck.py (a learner's
session in a kernel, self-study and course) print their numbers and the speed targets?"""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_batch_benchmark_grades_the_same_batch_with_the_code_at_a_revision_and_prints_the_targets():
    if not (ROOT / "build" / "01-backward-vs-grad" / "key.json").exists():   # what the benchmark's docs ask first
        subprocess.run([sys.executable, "-m", "autograder", "release", "solutions/01-backward-vs-grad"], cwd=ROOT,
                       check=True, capture_output=True, timeout=900)
    done = subprocess.run([sys.executable, "benchmarks/batch.py", "--n", "6", "--nbgrader-n", "0", "--cold", "0",
                           "--rounds", "2", "--against", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "(this tree): 6 submissions, median" in out and "(at HEAD): 6 submissions, median" in out, out
    assert "over 2 rounds" in out and "speed-up against HEAD: " in out
    assert "MiB PSS summed" in out and "the machine's cores busy" in out
    targets = out.split("\ntargets (issue 32;", 1)[1].splitlines()[1:]
    assert targets[0].startswith("- 6-submission rate against the code at --against REV: ") and \
        targets[0].endswith(("(target at least 2x): met", "(target at least 2x): not met"))
    assert targets[1] == "- against nbgrader autograde: - (target at least 250x): not measured"
    assert targets[2].startswith("- empty run, median: ")
    assert targets[3].endswith("(target at most 1.1x): not measured")
    assert targets[4].startswith("- peak memory of the whole tree, PSS summed: ")
    assert targets[5].startswith("- peak memory of the whole tree, RSS summed (each process counts the worker's ")
    assert targets[6].startswith("(the empty runs' worker: huge pages: ") and targets[6].endswith(" MiB of the warm "
                                                                                                 "worker)")   # THP
    with_bad = subprocess.run([sys.executable, "benchmarks/batch.py", "--n", "2", "--nbgrader-n", "0", "--cold", "0",
                               "--rounds", "1", "--against", "no-such-revision"], cwd=ROOT, capture_output=True,
                              text=True, timeout=900)
    assert with_bad.returncode != 0 and "--against no-such-revision: " in with_bad.stderr


def test_the_selfcheck_benchmark_times_a_learners_session_in_both_modes_and_prints_the_targets():
    if not (ROOT / "build" / "01-backward-vs-grad" / "key.json").exists():   # course mode publishes the full key
        subprocess.run([sys.executable, "-m", "autograder", "release", "solutions/01-backward-vs-grad"], cwd=ROOT,
                       check=True, capture_output=True, timeout=900)
    done = subprocess.run([sys.executable, "benchmarks/selfcheck.py", "--rounds", "1", "--json"], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("self-study: setup cell ") and "re-checks median " in lines[0] and " on " in lines[0]
    assert lines[1].startswith("course: setup cell ") and "(1 rounds; load " in lines[1]
    targets = done.stdout.split("targets (issue 46; on this project's 2-core machine):\n", 1)[1].splitlines()
    for line, mode, what in zip(targets, ("self-study", "self-study", "course", "course"),
                                ("first check of a session", "re-checks, median", "first check of a session",
                                 "re-checks, median"), strict=False):
        assert line.startswith(f"- {mode}: {what}") and line.endswith((": met", ": not met")), line
    results = json.loads(lines[-1])
    assert set(results) == {"self-study", "course"} and all(len(r["first_check_s"]) == 1 for r in results.values())
    assert all(0 < r["recheck_median_s"] < 60 for r in results.values())


def test_the_solution_calls_benchmark_prints_the_floor_under_the_domain_check():
    """benchmarks/solution_calls.py: the solution's own calls at the full domain check's points (issue 44's floor)."""
    done = subprocess.run([sys.executable, "benchmarks/solution_calls.py", "--assignment", "03-leaves", "--points", "20",
                           "--json"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    line, _, rest = done.stdout.partition("\n")
    rows = json.loads(rest[rest.index("["):])
    assert line.startswith("03-leaves") and " 8 functions     151,354 calls  the solution's own CPU " in line, line
    assert " on 2 cores, " in line and "(most: " in line
    assert len(rows) == 8 and sum(r["points"] for r in rows) == 151_354
    assert all(r["us_per_call"] > 0 and r["cpu_seconds"] >= 0 for r in rows)
    assert {r["exercise"] for r in rows} == {"1", "2", "3", "4", "5", "6"}
