"""Does the sandbox contain runaway submissions and keep what was observed before a kill?"""
from autograder import sandbox, wire

X = {"name": "x", "tensor": {"value": 1.5, "dtype": "float32", "requires_grad": True, "grad": None}}


def request(cells, calls=(), names=(), call_timeout=1.0, cell_timeout=1.0):
    return {"v": 1, "cells": list(cells), "names": list(names), "parameters": {},
            "calls": [{"call": f, "function": f, "points": [{"args": [X]}] * 3} for f in calls],
            "call_timeout": call_timeout, "cell_timeout": cell_timeout}


def test_infinite_loops_in_a_cell_and_a_call_are_stopped_and_the_rest_still_runs():
    run = sandbox.run_probe(request(["while True: pass", "def f(x):\n    while True: pass",
                                     "def g(x):\n    return x * 2"], calls=["f", "g"]))
    obs = wire.parse_results(run.results)
    assert obs.complete and not run.timed_out
    assert [c.status for c in obs.cells] == ["timeout", "ok", "ok"]
    assert obs.calls[("f", 0)].status == "timeout" and obs.calls[("f", 1)].status == "skipped"
    assert obs.calls[("g", 0)].returned["data"] == [3.0]


def test_the_wall_limit_kills_the_process_group_and_keeps_earlier_records():
    cells = ["x = 1", "import time\ntry:\n    time.sleep(60)\nexcept BaseException:\n    time.sleep(60)"]
    run = sandbox.run_probe(request(cells, names=["x"], cell_timeout=30), sandbox.Limits(wall_seconds=6))
    assert run.timed_out and run.seconds < 15
    obs = wire.parse_results(run.results)
    assert not obs.complete and obs.cells[0].status == "ok" and "x" not in obs.names


def test_an_exit_from_student_code_does_not_stop_the_probe():
    run = sandbox.run_probe(request(["import sys\nsys.exit(3)", "y = 2"], names=["y"]))
    obs = wire.parse_results(run.results)
    assert obs.complete and obs.cells[0].status == "error" and obs.names["y"] == {"t": "int", "v": 2}


def test_the_submission_runs_in_a_fresh_empty_directory_with_a_scrubbed_environment():
    run = sandbox.run_probe(request(["import os\ncwd = os.listdir('.')\nhome = os.environ.get('HOME', '')\n"
                                     "leak = [k for k in os.environ if 'TOKEN' in k or 'KEY' in k]"],
                                    names=["cwd", "leak"]))
    obs = wire.parse_results(run.results)
    assert obs.names["cwd"] == {"t": "seq", "kind": "list", "items": [], "truncated": False}
    assert obs.names["leak"]["items"] == []
