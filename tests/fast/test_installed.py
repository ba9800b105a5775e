"""Facts of the installed torch (issue 47, assignment 13): what the probe reads of torch's source and version before
a learner's code runs, how a spec asks for them, how a key keeps them (it does not: only their names), and how the
judge grades a produce check against the facts of the run it judges. Real torch and real source; no sandbox."""
from __future__ import annotations

import inspect
import json
import textwrap

import pytest
import torch

from autograder import wire
from autograder.authoring.spec import SpecError, load_spec
from autograder.judging import judge
from autograder.judging.judge import Evidence, RunEnd
from autograder.keyfile import from_json, load_key, to_json
from autograder.model import InstalledAnswer, InstalledExpectation, SeqAnswer
from autograder.sandbox.inside import installed
from autograder.wire import CallResult, Observations

from conftest import ROOT

SPEC = ROOT / "solutions" / "13-source-contract"


def test_the_installed_sources_say_backward_accumulates_grad_returns_and_tensor_backward_delegates():
    # torch 2.13.0's torch/autograd/__init__.py: backward -> _engine_run_backward(..., accumulate_grad=True),
    # grad -> _engine_run_backward(..., accumulate_grad=False); Tensor.backward calls torch.autograd.backward
    assert installed.engine_flag(torch.autograd.backward) is True
    assert installed.engine_flag(torch.autograd.grad) is False
    assert installed.engine_flag(torch.Tensor.backward) is None
    assert installed.engine_flag(torch.autograd.functional.vjp) is None
    assert installed.engine_flag(len) is None   # no Python source: no engine call read


def test_the_older_engine_entry_is_read_too_and_a_flag_that_is_not_a_literal_is_not_guessed(tmp_path, monkeypatch):
    (tmp_path / "old_autograd.py").write_text(textwrap.dedent('''
        class Variable:
            pass

        def backward(tensors, accumulate):
            Variable._execution_engine.run_backward(tensors, allow_unreachable=True, accumulate_grad=True)

        def computed(tensors, accumulate):
            Variable._execution_engine.run_backward(tensors, accumulate_grad=accumulate)
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    import old_autograd

    assert installed.engine_flag(old_autograd.backward) is True
    assert installed.engine_flag(old_autograd.computed) is None


def test_a_dotted_name_is_read_as_code_reads_it():
    assert installed.resolve("torch.autograd.gradcheck") is torch.autograd.gradcheck   # the function, not its module
    assert installed.resolve("torch.Tensor.backward") is torch.Tensor.backward
    assert installed.resolve("torch.autograd.functional.vjp") is torch.autograd.functional.vjp
    with pytest.raises(LookupError, match="no torch.autograd.no_such_function"):
        installed.resolve("torch.autograd.no_such_function")


def test_the_probe_reads_the_version_and_the_flags_of_the_objects_a_request_passes():
    observe = [{"calls": [{"points": [{"args": [{"name": "fn", "object": "torch.autograd.grad"}]},
                                      {"args": [{"name": "fn", "object": "torch.Tensor.backward"}]},
                                      {"args": [{"name": "fn", "object": "torch.autograd.nope"}]}]}]}]
    facts, objects = installed.read(installed.object_names(observe))
    assert facts["torch.__version__"] == {"t": "str", "v": torch.__version__}
    assert facts["torch.version.git_version"] == {"t": "str", "v": torch.version.git_version}
    assert facts["engine_flag:torch.autograd.grad"] == {"t": "bool", "v": False}
    assert facts["engine_flag:torch.Tensor.backward"] == {"t": "none"}
    assert "engine_flag:torch.autograd.nope" not in facts and set(objects) == {"torch.autograd.grad",
                                                                               "torch.Tensor.backward"}


def _spec(tmp_path, exercise: str) -> str:
    text = (SPEC / "spec.toml").read_text()
    head = text.split("# ---------------------------------------------------------------- 1")[0].replace(
        "high = 5", "high = 1").replace("fresh_points = 5", "fresh_points = 1")
    (tmp_path / "spec.toml").write_text(head + exercise)
    return str(tmp_path)


FLAG_EXERCISE = '''
[[exercise]]
id = "1"
title = "flags"
functions = ["engine_flag"]
args = [{ name = "fn", param = "f", objects = ["torch.autograd.backward", "torch.autograd.grad"] }]

[[exercise.check]]
id = "predict.backward"
title = "predicted"
predict = "p1"
expect = "True"
why = "w"

[[exercise.check]]
id = "produce.flag"
title = "read"
observe = "returned"
installed = "engine_flag(fn)"
why = "w"
'''


MISCONCEPTION = ('\n[[exercise.misconception]]\nid = "m"\nname = "m"\nchecks = ["produce.flag"]\nvalue = "True"\n'
                 'feedback = "f"\n')


@pytest.mark.parametrize("edit, message", [
    (lambda t: t.replace('installed = "engine_flag(fn)"', 'installed = "torch.cuda"'),
     "installed = 'torch.cuda' is not a fact of the installed torch"),
    (lambda t: t.replace('installed = "engine_flag(fn)"', 'installed = "engine_flag(x)"'),
     "write one of 'torch.__version__', 'torch.version.git_version', 'engine_flag(fn)'"),
    (lambda t: t.replace('expect = "True"', 'installed = "torch.__version__"'), "goes with a produce check"),
    (lambda t: t.replace('"torch.autograd.grad"] }', '"torch.autograd.grad", "torch.autograd.functional.vjp"] }'),
     "its parameter 'f' must be { kind = \"integer\", low = 0, high = 2 }"),
    (lambda t: t.replace('"torch.autograd.grad"]', '"os.system"]'),
     "objects must be a list of distinct dotted names of torch"),
    (lambda t: t + MISCONCEPTION, "a misconception's value is fixed"),
    (lambda t: t.replace('observe = "returned"', 'observe = "fn.grad"'),
     "observe must be \"returned\" or \"returned.dtype\" (exercise '1' has no tensor argument whose .grad could be observed)"),
])
def test_a_spec_that_asks_for_an_installed_fact_wrongly_is_refused_with_the_fix(tmp_path, edit, message):
    with pytest.raises(SpecError) as e:
        load_spec(_spec(tmp_path, edit(FLAG_EXERCISE)))
    assert message in str(e.value)


def test_fresh_points_that_the_integer_parameters_cannot_make_all_different_are_refused(tmp_path):
    folder = _spec(tmp_path, FLAG_EXERCISE)
    spec = tmp_path / "spec.toml"
    spec.write_text(spec.read_text().replace("fresh_points = 1", "fresh_points = 2"))
    with pytest.raises(SpecError, match=r"fresh_points = 2 asks for 3 different points \(the student's own and 2 "
                                        r"fresh\), but the parameters allow 2: set fresh_points to at most 1"):
        load_spec(folder)


def test_a_spec_that_asks_for_installed_facts_rightly_loads(tmp_path):
    a = load_spec(_spec(tmp_path, FLAG_EXERCISE))
    assert a.checks[1].expectation == InstalledExpectation(InstalledAnswer("engine_flag(fn)"))
    assert a.exercises[0].where({"f": 1}) == "fn=torch.autograd.grad"


def test_the_key_keeps_the_facts_names_and_the_objects_never_a_value():
    key = load_key(ROOT / "assignments" / "13-source-contract" / "public_key.json")
    data = to_json(key)
    text = json.dumps(data)
    assert torch.version.git_version not in text and "+cpu" not in text
    check = key.check("2.produce.version")
    assert check.expectation == InstalledExpectation(SeqAnswer((InstalledAnswer("torch.__version__"),
                                                                InstalledAnswer("torch.version.git_version"))),
                                                     {"t": "seq", "kind": "tuple", "items": [{"t": "str"}, {"t": "str"}]})
    assert key.exercise("1").args[0].objects[2] == "torch.Tensor.backward"
    assert from_json(data) == key


def _judge(facts: dict, returned: dict, point_f: int = 1, check_id: str = "1.produce.flag") -> object:
    key = load_key(ROOT / "assignments" / "13-source-contract" / "public_key.json")
    check = key.check(check_id)
    fn = check.function
    obs = Observations("2.13.0", (), {}, {(fn, 0): CallResult(fn, 0, "returned", returned)}, True, installed=facts)
    return judge.judge_production(key, check, Evidence(obs, RunEnd(0, False)), [{"f": point_f}], set())


def test_a_produced_fact_is_graded_against_what_its_own_run_read_on_any_torch_release():
    other = {"torch.__version__": {"t": "str", "v": "2.14.1+cpu"}, "torch.version.git_version": {"t": "str", "v": "abc"}}
    right = {"t": "seq", "kind": "tuple", "items": [{"t": "str", "v": "2.14.1+cpu"}, {"t": "str", "v": "abc"}]}
    o = _judge(other, right, check_id="2.produce.version")
    assert o.status == "passed" and o.oracle.startswith("the installed torch, read before your code ran")
    quoted = {"t": "seq", "kind": "tuple", "items": [{"t": "str", "v": "2.13.0+cpu"}, {"t": "str", "v": "abc"}]}
    o = _judge(other, quoted, check_id="2.produce.version")
    assert o.status == "failed" and "item 0: '2.13.0+cpu' instead of '2.14.1+cpu'" in o.message


def test_an_engine_flag_is_judged_at_the_object_of_the_point():
    facts = {"engine_flag:torch.autograd.grad": {"t": "bool", "v": False}}
    assert _judge(facts, {"t": "bool", "v": False}).status == "passed"
    o = _judge(facts, {"t": "bool", "v": True})
    assert o.status == "failed" and "at fn=torch.autograd.grad" in o.message and "True instead of False" in o.message
    o = _judge({}, {"t": "bool", "v": False})   # a torch without the function: never a pass, and it says why
    assert o.status == "error" and o.message == ("engine_flag(fn) cannot be judged at fn=torch.autograd.grad: the "
                                                 "installed torch has no torch.autograd.grad, which this check reads")


def test_a_hello_with_installed_facts_is_read_and_a_forged_shape_is_dropped():
    hello = {"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION, "torch": "2.13.0", "cells": 0,
             "installed": {"torch.__version__": {"t": "str", "v": "2.13.0+cpu"},
                           "engine_flag:torch.autograd.grad": {"t": "bool", "v": False},
                           "bad": {"t": "tensor"}, "worse": 3}}
    obs = wire.parse_results((json.dumps(hello) + "\n" + json.dumps({"k": "done"}) + "\n").encode())
    assert obs.installed == {"torch.__version__": {"t": "str", "v": "2.13.0+cpu"},
                             "engine_flag:torch.autograd.grad": {"t": "bool", "v": False}}


def test_a_generated_argument_has_a_random_name_and_a_random_flag_that_only_its_source_tells():
    fns = [installed.resolve("<generated>") for _ in range(40)]
    assert len({f.__name__ for f in fns}) == 40 and all(f.__name__.startswith("replay_") for f in fns)
    flags = [installed.engine_flag(f) for f in fns]
    assert set(flags) == {True, False}   # 40 fair coins: both sides (a 2 * 2**-40 chance of a false alarm)
    assert all(f"accumulate_grad={flag}" in inspect.getsource(f) for f, flag in zip(fns, flags, strict=True))


def test_a_submissions_generated_function_is_the_same_in_its_runs_again_and_regrades_and_differs_between_submissions():
    from dataclasses import replace

    from autograder.grading import plan

    key = replace(load_key(ROOT / "assignments" / "13-source-contract" / "public_key.json"), fresh_seed="-secret")
    one = plan.probe_request(key, ["pass"], "ada", salt="abc")["generated"]
    assert one == plan.probe_request(key, ["pass"], "ada", salt="abc")["generated"]
    assert one != plan.probe_request(key, ["pass"], "ada", salt="abd")["generated"]
    assert one != plan.probe_request(replace(key, fresh_seed="-other"), ["pass"], "ada", salt="abc")["generated"]
    a, b = (installed.read(["<generated>"], one) for _ in range(2))
    assert a[0] == b[0] and a[1]["<generated>"].__name__ == b[1]["<generated>"].__name__
    assert "generated" not in plan.probe_request(load_key(ROOT / "assignments" / "01-backward-vs-grad" /
                                                          "public_key.json"), ["pass"], "ada")
