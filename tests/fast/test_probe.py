"""The probe's shortcuts through IPython (autograder.sandbox.inside.probe.prepare) change nothing: on every code cell of every
example submission and solution notebook, the cell text IPython's transforms make and whether the cell runs as
a coroutine are what IPython itself says; and a call draws the same random numbers as before, and leaves the
generators where they were."""
from __future__ import annotations

import random

import nbformat

from autograder.sandbox.inside import probe

from conftest import ROOT

def _code_cells(path) -> list[str]:
    try:
        return [c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "code"]
    except Exception:   # the examples include a truncated file
        return []


CELLS = sorted({c for p in [*(ROOT / "examples" / "submissions").glob("*/*.ipynb"),
                            *(ROOT / "solutions").glob("*/*.ipynb")] for c in _code_cells(p)})
ODD = ["%time x = 1", "x = !ls", "x?", "  y = 2\n  z = 3", ">>> a = 1", "In [1]: b = 2", "%%capture\nx = 1",
       "f(1,\n  2\n  , 3)", "x = (1\n/ 2)", "s = '100%'", "await asyncio.sleep(0)", "async with a: pass", "", "\n\nx = 1",
       # an escape the clean-up uncovers: behind a prompt it strips, or a form feed
       ">>> x = 1\n>>> /print 1", "In [1]: ,print a b", "\f;print z", "\n\n\f;print z", "... ;print z"]


def test_the_token_pass_is_left_out_only_where_it_changes_nothing():
    from IPython.core.inputtransformer2 import TransformerManager

    shell = probe.prepare()
    fast, full = shell.input_transformer_manager.transform_cell, TransformerManager().transform_cell
    assert fast.full is not None and len(CELLS) > 500
    for cell in [*CELLS, *ODD]:
        assert fast(cell) == full(cell), cell


def test_the_async_check_is_left_out_only_where_it_can_only_say_no():
    from IPython.core.interactiveshell import InteractiveShell

    shell = probe.prepare()
    for cell in [*CELLS, *ODD]:
        transformed = shell.transform_cell(cell)
        assert shell.should_run_async(cell, transformed_cell=transformed) == \
            InteractiveShell.should_run_async(shell, cell, transformed_cell=transformed), cell


def test_each_call_draws_from_a_seed_of_its_own_and_the_generators_are_put_back():
    import torch

    shell = probe.prepare()
    shell.user_ns["draw"] = lambda x: (torch.rand(()).item(), random.random())
    x = {"name": "x", "tensor": {"value": 1.0, "dtype": "float32", "requires_grad": True, "grad": None}}
    call = {"call": "draw", "function": "draw", "points": [{"args": [x]}] * 2}
    torch.manual_seed(3)
    random.seed(3)
    before = (torch.rand(()).item(), random.random())
    torch.manual_seed(3)
    random.seed(3)
    first = [r["returned"] for r in probe.observe_calls(shell.user_ns, [call], 5.0)]
    assert (torch.rand(()).item(), random.random()) == before   # as if the calls had not drawn at all
    again = [r["returned"] for r in probe.observe_calls(shell.user_ns, [call], 5.0)]
    assert first == again and first[0] != first[1]   # the same numbers every run; each point its own


def test_a_warnings_traceback_keeps_only_the_submissions_own_frames():
    """Anomaly mode's warning holds the whole forward stack: the grader's frames (Python's start-up, the worker, the
    probe) and the libraries' go, with their source lines, so that a clipped message still shows the learner's line."""
    import os
    import torch
    grader = os.path.join(os.path.dirname(probe.__file__), "worker.py")
    library = os.path.join(os.path.dirname(torch.__file__), "nn", "modules", "module.py")
    text = ("Error detected in MulBackward0. Traceback of forward call that caused the error:\n"
            '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
            f'  File "{grader}", line 457, in <module>\n    main(int(sys.argv[2]))\n'
            f'  File "{library}", line 1775, in _call_impl\n    return forward_call(*args, **kwargs)\n'
            '  File "<ipython-input-1-29bb0c656f13>", line 19, in ex4_anomaly\n    c = b * b\n'
            " (Triggered internally at /pytorch/torch/csrc/autograd/python_anomaly_mode.cpp:127.)")
    assert probe._own_frames(text) == (
        "Error detected in MulBackward0. Traceback of forward call that caused the error:\n"
        '  File "<ipython-input-1-29bb0c656f13>", line 19, in ex4_anomaly\n    c = b * b\n'
        " (Triggered internally at /pytorch/torch/csrc/autograd/python_anomaly_mode.cpp:127.)")
    assert probe._own_frames("a plain warning") == "a plain warning"


def test_release_s_lean_calls_come_back_as_columns_and_anything_else_as_its_own_call_record():
    """probe._lean_calls (release's sweep): values of one form as rows of numbers, in the Value a call record would
    hold (wire.Columns.record), a group per form; a string, a raise and a timeout each as a call record; after a
    timeout the function's later points are skipped."""
    import json
    import time

    import torch

    from autograder import wire

    shell = probe.prepare()

    def grad_of_square(x):
        if x.item() == 3.0:
            return "three"
        if x.item() == 4.0:
            raise ValueError("four")
        if x.item() == 6.0:
            time.sleep(3)
        if x.item() == 5.0:   # a NaN is a number: packed, written as a Value writes it
            x.grad = torch.tensor(float("nan"))
            return torch.tensor(float("nan"))
        (x * x).backward()
        return (x.grad.clone(), None, x.requires_grad)   # a bool is part of the form: no number

    shell.user_ns["f"] = grad_of_square
    arg = lambda v: {"args": [{"name": "x", "tensor": {"value": v, "dtype": "float32", "requires_grad": True,  # noqa: E731
                                                         "grad": None}}]}
    call = {"call": "f", "function": "f", "points": [arg(v) for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0)],
            "targets": ["returned", "x"]}
    recs = list(probe.observe_calls(shell.user_ns, [call], 0.5))
    data = b"".join(json.dumps(r).encode() + b"\n" for r in [
        {"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION, "torch": "2.13.0", "cells": 0}, *recs, {"k": "done"}])
    obs = wire.parse_results(data)
    cols, nan = obs.columns
    assert cols.points == (0, 1) and cols.rows == ([2.0, 2.0], [4.0, 4.0])   # the returned grad, then x.grad
    assert nan.points == (4,) and nan.rows == (["nan", "nan"],)   # another form: a group of its own
    assert cols.record(1).returned == probe.encode((torch.tensor(4.0), None, True))
    assert cols.record(1).tensors["x"] == {"grad": probe.encode(torch.tensor(4.0)), "requires_grad": True,
                                           "is_leaf": True}
    assert obs.calls[("f", 2)].returned == {"t": "str", "v": "three"}
    assert obs.calls[("f", 3)].status == "raised" and obs.calls[("f", 3)].exception["message"] == "four"
    assert obs.calls[("f", 5)].status == "timeout" and obs.calls[("f", 6)].status == "skipped"


def test_a_sweep_calls_columns_give_each_point_the_arguments_grading_gives_it():
    """Release's sweep sends a call's arguments as columns of parameter values (plan.arg_template); the probe's
    _point_args makes, at each point, exactly what plan.call_args writes there: for every exercise of every shipped
    spec (but those with an object argument, which the sweep does not call), at five students' points."""
    from autograder.authoring.spec import load_spec
    from autograder.grading import plan

    compared = 0
    for folder in sorted((ROOT / "solutions").iterdir()):
        if not (folder / "spec.toml").is_file():
            continue
        a = load_spec(folder)
        points = [plan.draw_point(a.parameters, a.id, f"s{i}", "own") for i in range(5)]
        for ex in a.exercises:
            if any(arg.objects for arg in ex.args):
                continue
            template = plan.arg_template(ex)
            named = {p for t in template for p in (t.get("params") or [t["param"]]) + ([t["grad"]] if t.get("grad")
                                                                                      else [])}
            call = {"columns": {"n": len(points), "args": template,
                                "values": {p: [pt[p] for pt in points] for p in named}}}
            count, at = probe._point_args(call)
            assert count == 5
            for i, pt in enumerate(points):
                assert at(i) == plan.call_args(ex, pt), (folder.name, ex.id)
                compared += 1
    assert compared == 5 * 90, compared   # the 90 shipped exercises without an object argument
