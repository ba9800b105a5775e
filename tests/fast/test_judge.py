"""Does the judge decide every status from hand-built observations, as the grading rules say? No torch, no
sandbox: a key and the probe's observations written out by hand (milliseconds per test)."""
from __future__ import annotations

from dataclasses import replace

import pytest

from autograder.judging import judge
from autograder.judging.judge import Evidence, RunEnd
from autograder.model import (Arg, BoolAnswer, Check, ClassAnswer, ConventionExpectation, Misconception, Exercise, ExprAnswer, Grading, Key, Limits, NoneAnswer,
                              Parameter, RaisesExpectation, SeqAnswer, ValueExpectation, WarnsExpectation)
from autograder.wire import CallResult, CellResult, Observations

SCALAR = {"t": "tensor", "dtype": "float32", "shape": [], "data": [], "requires_grad": False, "is_leaf": True,
          "grad_fn": None, "truncated": False}
POINTS = [{"x0": 1.5}, {"x0": 2.0}, {"x0": -0.5}]   # the student's own point, then two fresh points
TORCH_RAISED = {"type": "RuntimeError", "mro": ["RuntimeError", "Exception"], "origin": "torch.autograd.graph",
                "message": "element 0 of tensors does not require grad and does not have a grad_fn",
                "statement": False}


def check(cid: str, kind: str, expectation, **kw) -> Check:
    return Check(f"1.{cid}", "1", kind, f"title of {cid}", expectation, f"why of {cid}", **kw)


KEY = Key(
    "t-assignment", "T", "t.ipynb", "2.13.0", "2.13.0", "1.14", Limits(), Grading(),
    {"x0": Parameter("real", 0.5, 2.5, "any", 2)},
    (Exercise("1", "one", ("ex1", "ex1_err", "ex1_warn"), (Arg("x", "x0"),)),),
    (check("predict.grad", "predict", ValueExpectation(ExprAnswer("diff(x*x, x)")), name="p1_grad"),
     check("predict.err", "predict", RaisesExpectation("RuntimeError", ""), name="p1_err"),
     check("produce.returns", "produce", ValueExpectation(SeqAnswer((ExprAnswer("2*x"),)),
                                                          {"t": "seq", "kind": "tuple", "items": [SCALAR]}),
           function="ex1", observe="returned"),
     check("produce.grad", "produce", ValueExpectation(NoneAnswer(), None), function="ex1", observe="x.grad",
           version_sensitive=True),
     check("produce.err", "produce", RaisesExpectation("RuntimeError", "does not require grad",
                                                       {"exception": TORCH_RAISED}), function="ex1_err",
           observe="returned"),
     check("produce.warn", "produce", WarnsExpectation("UserWarning", "not a leaf"), function="ex1_warn",
           observe="returned"),
     check("predict.kink", "predict", ConventionExpectation(ExprAnswer("0"), None, "relu'(0) = 0",
                                                            "Heaviside(x)"), name="p1_kink"),
     check("produce.hidden", "produce", ValueExpectation(NoneAnswer(), None), function="ex1", observe="x.grad",
           visibility="hidden")),
    digest="abc")


def tensor(v: float) -> dict:
    return {**SCALAR, "data": [v]}


def call(fn: str, p: int, status: str = "returned", returned=None, grad=None, exception=None, warnings=()) -> CallResult:
    return CallResult(fn, p, status, returned, exception,
                      {"x": {"grad": grad if grad is not None else {"t": "none"}, "requires_grad": True, "is_leaf": True}},
                      tuple(warnings))


def right_calls() -> dict:
    calls = {}
    for p, point in enumerate(POINTS):
        calls[("ex1", p)] = call("ex1", p, returned={"t": "seq", "kind": "tuple", "items": [tensor(2 * point["x0"])]})
        calls[("ex1_err", p)] = call("ex1_err", p, "raised", exception=TORCH_RAISED)
        calls[("ex1_warn", p)] = call("ex1_warn", p, returned={"t": "none"}, warnings=[
            {"category": "UserWarning", "message": "The .grad of a tensor that is not a leaf", "mro": ["UserWarning"]}])
    return calls


def observations(names=None, calls=None, **kw) -> Observations:
    names = {"p1_grad": {"t": "float", "v": 3.0}, "p1_err": {"t": "str", "v": "RuntimeError"},
             "p1_kink": {"t": "int", "v": 0}} if names is None else names
    return Observations(kw.pop("torch", "2.13.0"), kw.pop("cells", (CellResult(0, "ok"),)), names,
                        right_calls() if calls is None else calls, kw.pop("complete", True), 1, **kw)


def judged(obs: Observations, end: RunEnd = RunEnd(0, False), stopped=None, key: Key = KEY) -> dict:
    return {o.check_id: o for o in judge.outcomes(key, Evidence(obs, end, stopped or {}), POINTS)}


def test_a_right_submission_passes_every_check_with_its_oracle():
    got = judged(observations())
    assert {o.status for o in got.values()} == {"passed"}
    assert got["1.predict.grad"].message == "p1_grad = 3.0" and got["1.predict.grad"].expected == "3.0"
    assert got["1.predict.grad"].oracle == "sympy: diff(x*x, x) at x=1.5"
    assert got["1.produce.returns"].oracle == "sympy: (2*x,) at x=1.5; form from reference torch 2.13.0 run"
    assert got["1.produce.grad"].oracle == "API contract; reference torch 2.13.0 run agrees"
    assert got["1.produce.err"].oracle == "reference torch 2.13.0 run; API contract"
    assert got["1.produce.returns"].message == "returned by ex1(x) at x=1.5: (tensor(3.),)"
    assert sum(o.score for o in got.values()) == 8.0


def test_predictions_are_missing_wrong_or_tampered_each_with_its_own_message():
    got = judged(observations(names={"p1_grad": {"t": "ellipsis"}, "p1_err": {"t": "str", "v": "ValueError"},
                                     "p1_kink": {"t": "float", "v": 0.5}}, duplicated=frozenset({"p1_err"})))
    assert got["1.predict.grad"].status == "missing" and got["1.predict.grad"].message == "p1_grad is still ...: write your prediction"
    assert got["1.predict.err"].status == "error" and "reached the grader twice" in got["1.predict.err"].message
    kink = got["1.predict.kink"]
    assert kink.status == "failed" and kink.message == "p1_kink: 0.5 instead of 0 (abs diff 0.5)"
    assert kink.convention.startswith("relu'(0) = 0 — torch 2.13.0 gives 0; sympy's Heaviside(x) gives 1.0.")
    assert kink.why == "why of predict.kink"
    got = judged(observations(names={"p1_grad": {"t": "float", "v": 2.8}}))
    assert got["1.predict.grad"].message == "p1_grad: 2.8 instead of 3.0 (abs diff 0.2)"
    assert got["1.predict.err"].status == "error" and "exit code 0" in got["1.predict.err"].message


def test_a_number_right_only_at_the_students_own_point_fails_at_a_fresh_point_with_a_hint():
    calls = right_calls()
    calls[("ex1", 1)] = call("ex1", 1, returned={"t": "seq", "kind": "tuple", "items": [tensor(3.0)]})
    o = judged(observations(calls=calls))["1.produce.returns"]
    assert o.status == "failed" and o.score == 0
    assert o.message == ("returned by ex1(x) at x=2.0 (fresh point 1): item 0: 3.0 instead of 4.0 (abs diff 1) — it is "
                         "right at your own point but not at fresh point 1: is a value hard-coded, or is the code "
                         "right only at some points?")


@pytest.mark.parametrize("rec, status, phrase", [
    (call("ex1", 0, "raised", exception={"type": "ValueError", "mro": ["ValueError"], "message": "boom"}), "error",
     "ex1(x) raised ValueError at x=1.5: boom"),
    (call("ex1", 0, "raised", exception={"type": "NotImplementedError", "mro": [], "message": ""}), "missing",
     "ex1 is not written yet (it raises NotImplementedError)"),
    (call("ex1", 0, "undefined"), "missing", "ex1 is not defined: run its cell, or check its name (a Markdown "
                                               "or Raw cell never runs: its cell must be Code)"),
    (call("ex1", 0, "timeout"), "timeout", "ex1(x) did not return within 5 s at x=1.5"),
])
def test_a_call_that_does_not_return_a_value_is_error_missing_or_timeout(rec, status, phrase):
    calls = right_calls()
    calls[("ex1", 0)] = rec
    o = judged(observations(calls=calls))["1.produce.returns"]
    assert o.status == status and o.message == phrase and o.score == 0


def test_a_call_that_raises_at_a_shown_fresh_point_says_which_point_it_is():
    """A new user's trial (issue 47): a FAILED line named its fresh point, an ERROR line did not."""
    calls = right_calls()
    calls[("ex1", 1)] = call("ex1", 1, "raised", exception={"type": "ValueError", "mro": ["ValueError"],
                                                            "message": "boom"})
    o = judged(observations(calls=calls))["1.produce.returns"]
    assert o.status == "error" and o.message == "ex1(x) raised ValueError at x=2.0 (fresh point 1): boom"


def test_a_run_that_stopped_names_the_call_it_stopped_in_and_what_it_never_reached():
    calls = {k: v for k, v in right_calls().items() if k[0] != "ex1" or k[1] == 0}
    got = judged(observations(calls=calls, complete=False), RunEnd(-9, False), {("ex1", 1): RunEnd(-9, False)})
    assert got["1.produce.returns"].status == "error"
    assert got["1.produce.returns"].message == ("the submission's process ended (exit code -9) while ex1(x) was "
                                                "running at x=2.0 (fresh point 1)")
    got = judged(observations(calls=calls, complete=False), RunEnd(-9, True), {("ex1", 1): RunEnd(-9, True)})
    assert got["1.produce.returns"].status == "timeout" and "120 s limit was reached" in got["1.produce.returns"].message
    got = judged(observations(names={}, calls={}, complete=False), RunEnd(0, False, results_cut=True))
    assert got["1.predict.grad"].status == "error" and "more than 2 MB of results" in got["1.predict.grad"].message


def test_an_exception_must_come_from_torch_with_its_key_phrase():
    calls = right_calls()
    own = {**TORCH_RAISED, "origin": "__main__", "statement": True}
    calls[("ex1_err", 0)] = call("ex1_err", 0, "raised", exception=own)
    o = judged(observations(calls=calls))["1.produce.err"]
    assert o.status == "failed" and "raised by your own code (__main__), not by torch" in o.message
    assert o.expected.startswith("RuntimeError whose message contains 'does not require grad' (reference run raised")
    calls[("ex1_err", 0)] = call("ex1_err", 0, returned={"t": "none"})
    o = judged(observations(calls=calls))["1.produce.err"]
    assert o.status == "failed" and o.observed == "returned None"


def test_a_warning_check_needs_the_warning_and_other_warnings_are_information_only():
    calls = right_calls()
    calls[("ex1_warn", 0)] = call("ex1_warn", 0, returned={"t": "none"})
    o = judged(observations(calls=calls))["1.produce.warn"]
    assert o.status == "failed" and o.message.endswith("expected a UserWarning; the call emitted no warning")
    calls = right_calls()
    calls[("ex1", 0)] = replace(calls[("ex1", 0)], warnings=({"category": "DeprecationWarning", "message": "old",
                                                              "mro": ["DeprecationWarning"]},))
    got = judged(observations(calls=calls))
    assert got["1.produce.returns"].status == "passed"
    assert got["1.produce.returns"].details == ("warning (information, not graded): DeprecationWarning: old",)
    assert got["1.produce.grad"].details == ()   # shown once, on the function's first check


def test_a_warning_that_a_check_grades_is_never_labelled_not_graded():
    """12's exercise 1 showed "warning (information, not graded)" right above the graded 1.produce.warning row (issue
    44): a warning that a warns check of the same function grades says which check grades it."""
    calls = right_calls()
    old = {"category": "DeprecationWarning", "message": "old", "mro": ["DeprecationWarning"]}
    calls[("ex1_warn", 0)] = replace(calls[("ex1_warn", 0)], warnings=calls[("ex1_warn", 0)].warnings + (old,))
    o = judged(observations(calls=calls))["1.produce.warn"]
    assert o.status == "passed"
    assert o.details == ("warning (graded in 1.produce.warn): UserWarning: The .grad of a tensor that is not a leaf",
                         "warning (information, not graded): DeprecationWarning: old")
    hidden = replace(KEY, checks=tuple(replace(c, visibility="hidden") if c.id == "1.produce.warn" else c
                                       for c in KEY.checks))
    assert judge.warning_details(hidden, "ex1_warn", calls[("ex1_warn", 0)].warnings) == (
        "warning: UserWarning: The .grad of a tensor that is not a leaf",   # names nothing a hidden check expects
        "warning (information, not graded): DeprecationWarning: old")
    assert judge.warning_details(KEY, "ex1", calls[("ex1_warn", 0)].warnings) == (   # another function's check
        "warning (information, not graded): UserWarning: The .grad of a tensor that is not a leaf",
        "warning (information, not graded): DeprecationWarning: old")


def test_a_version_sensitive_check_is_flagged_on_another_torch_and_a_hidden_check_shows_only_its_status():
    got = judged(observations(torch="2.12.0"))
    assert got["1.produce.grad"].version_note.startswith("version-sensitive: this behaviour was observed on torch "
                                                         "2.13.0, and this run used torch 2.12.0")
    assert got["1.produce.returns"].version_note is None
    calls = right_calls()
    calls[("ex1", 0)] = replace(calls[("ex1", 0)], tensors={"x": {"grad": tensor(1.0), "requires_grad": True,
                                                                  "is_leaf": True}})
    hidden = judged(observations(calls=calls))["1.produce.hidden"]
    assert (hidden.status, hidden.message, hidden.expected, hidden.observed, hidden.why) == ("failed", "failed", None,
                                                                                              None, None)


def test_each_expectation_kind_gives_its_own_release_advice():
    advice = {c.id: judge.handler(c).advice(KEY, c) for c in KEY.checks}
    assert "fix the expect expression if the notebook is right" in advice["1.predict.grad"]
    assert "if sympy is right, fix the solution" in advice["1.produce.returns"]
    assert advice["1.produce.err"].startswith("Make raises = and phrase = match")
    assert advice["1.produce.warn"].startswith("Make warns = and phrase = match")
    assert "sympy's value goes in sympy = ..." in advice["1.predict.kink"]


def test_notes_name_cells_that_raised_lines_the_probe_did_not_write_and_another_torch():
    obs = observations(cells=(CellResult(0, "error", "NameError", "name 'y' is not defined"),), complete=False,
                       torch="2.12.0", rejected=2)
    obs = replace(obs, cell_count=3)
    notes = judge.notes(KEY, Evidence(obs, RunEnd(1, False)), ["cell 2", "cell 4 ('ex1-predict')"])
    assert notes == ["cell 2 raised NameError: name 'y' is not defined",
                     "2 line(s) in the results channel were not written by the grader's probe and were ignored",
                     "this run used torch 2.12.0, but the key was observed on torch 2.13.0: version-sensitive checks "
                     "may differ"]


MISCONCEIVED = replace(KEY, checks=tuple(
    replace(c, misconceptions=(Misconception("one-x", "one x", ExprAnswer("x"), "feedback one"),
                               Misconception("x-squared", "x squared", ExprAnswer("x**2"), "feedback two"),
                               Misconception("none-is-zero", "None is zero", ExprAnswer("0"), "not zero")))
    if c.id in ("1.predict.grad", "1.produce.grad", "1.produce.hidden") else
    replace(c, misconceptions=(Misconception("not-a-tuple", "a bare number", ExprAnswer("2*x"), "a tuple"),
                               Misconception("a-list", "a list", SeqAnswer((ExprAnswer("2*x"),), "list"), "tuple!"),
                               Misconception("doubled", "twice", SeqAnswer((ExprAnswer("4*x"),)), "once")))
    if c.id == "1.produce.returns" else
    replace(c, misconceptions=(Misconception("no-error", "it just returns None", NoneAnswer(), "it raises"),
                               Misconception("value-error", "a ValueError", ClassAnswer("ValueError"), "Runtime")))
    if c.id in ("1.predict.err", "1.produce.err") else c for c in KEY.checks))


def test_a_wrong_value_that_a_misconception_predicts_is_named_with_its_feedback():
    got = judged(observations(names={"p1_grad": {"t": "float", "v": 1.501}, "p1_err": {"t": "str", "v": "ValueError"},
                                     "p1_kink": {"t": "int", "v": 0}}), key=MISCONCEIVED)
    d = got["1.predict.grad"].misconception
    assert got["1.predict.grad"].status == "failed" and (d.id, d.name, d.feedback) == ("one-x", "one x", "feedback one")
    assert (d.formula, d.value, d.where) == ("x", "1.5", "x=1.5")   # within the prediction's 2e-3
    assert d.evidence == "that thinking gives x = 1.5 at x=1.5, which is your value"
    assert got["1.predict.err"].misconception.id == "value-error"
    assert got["1.predict.kink"].misconception is None and got["1.produce.grad"].misconception is None   # passed
    got = judged(observations(names={"p1_grad": {"t": "float", "v": 2.0}}), key=MISCONCEIVED)
    assert got["1.predict.grad"].status == "failed" and got["1.predict.grad"].misconception is None   # no model's value


def test_a_produced_value_is_matched_at_the_point_where_it_failed_with_the_checks_tolerance():
    calls = right_calls()
    calls[("ex1", 0)] = call("ex1", 0, returned=tensor(3.0), grad=tensor(2.25))
    got = judged(observations(calls=calls), key=MISCONCEIVED)
    assert got["1.produce.returns"].misconception.id == "not-a-tuple"
    assert got["1.produce.grad"].misconception.id == "x-squared" and got["1.produce.grad"].misconception.value == "2.25"
    calls[("ex1", 0)] = call("ex1", 0, returned={"t": "seq", "kind": "list", "items": [tensor(3.0)]},
                             grad=tensor(2.25 * (1 + 1e-3)))   # outside float32's 1e-5: no misconception
    got = judged(observations(calls=calls), key=MISCONCEIVED)
    assert got["1.produce.returns"].misconception.id == "a-list" and got["1.produce.grad"].misconception is None
    calls = right_calls()
    calls[("ex1", 1)] = call("ex1", 1, returned={"t": "seq", "kind": "tuple", "items": [tensor(4.0)]}, grad=tensor(0.0))
    got = judged(observations(calls=calls), key=MISCONCEIVED)
    # right at the student's own point: a misconception that gives the value at a fresh point explains nothing of
    # their work there, so none is named (data-x #25), and the message says a number may be hard-coded
    assert got["1.produce.grad"].misconception is None and "fresh point 1" in got["1.produce.grad"].message
    assert "it is right at your own point" in got["1.produce.grad"].message
    # a float32 tensor in a tuple is matched with float32's tolerance (the reference run's form), not float64's
    calls[("ex1", 0)] = call("ex1", 0, returned={"t": "seq", "kind": "tuple", "items": [tensor(6.0 * (1 + 3e-6))]})
    assert judged(observations(calls=calls), key=MISCONCEIVED)["1.produce.returns"].misconception.id == "doubled"
    calls = right_calls()
    calls[("ex1_err", 0)] = call("ex1_err", 0, returned={"t": "none"})
    assert judged(observations(calls=calls), key=MISCONCEIVED)["1.produce.err"].misconception.id == "no-error"


def test_a_misconception_that_coincides_with_the_answer_or_another_one_at_a_point_is_not_used_there():
    one = KEY.exercise("1").values({"x0": 1.0})   # x = x**2 = 1 here, and 2x = 2
    check = MISCONCEIVED.check("1.predict.grad")
    usable, left_out = judge.misconception_values(check, one, MISCONCEIVED.grading.prediction(check))
    assert [m.id for m, _ in usable] == ["none-is-zero"] and left_out == ["one-x", "x-squared"]
    two = KEY.exercise("1").values({"x0": 2.0})   # x**2 = 4 = 2x, the answer
    usable, left_out = judge.misconception_values(check, two, MISCONCEIVED.grading.prediction(check))
    assert [m.id for m, _ in usable] == ["one-x", "none-is-zero"] and left_out == ["x-squared"]
    points = [{"x0": 1.0}, {"x0": 2.0}, {"x0": -0.5}]
    got = {o.check_id: o for o in judge.outcomes(MISCONCEIVED, Evidence(observations(
        names={"p1_grad": {"t": "float", "v": 1.0}}), RunEnd(0, False)), points)}
    assert got["1.predict.grad"].status == "failed" and got["1.predict.grad"].misconception is None


def test_a_hidden_or_sealed_check_never_names_its_misconception():
    calls = right_calls()
    calls[("ex1", 0)] = call("ex1", 0, returned=tensor(3.0), grad=tensor(2.25))
    got = judged(observations(calls=calls), key=MISCONCEIVED)
    assert got["1.produce.hidden"].status == "failed" and got["1.produce.hidden"].misconception is None
    sealed = {o.check_id: o for o in judge.outcomes(MISCONCEIVED, Evidence(observations(calls=calls), RunEnd(0, False),
                                                                           sealed=True), POINTS)}
    assert sealed["1.produce.grad"].status == "failed" and sealed["1.produce.grad"].misconception is None


def test_with_cuda_a_device_dependent_check_expects_its_cuda_value_and_says_so():
    """10's GradScaler() without a device: on a machine with CUDA it is enabled and emits no warning (issue "Right
    grades ... round two"). A check with on_cuda expects that value where the run had CUDA, names no CPU
    misconception there, and is flagged; without CUDA nothing changes."""
    from autograder.model import BoolAnswer, OnCuda

    enabled = check("produce.enabled", "produce", ValueExpectation(BoolAnswer(False), {"t": "bool", "v": None}),
                    function="ex1_warn", observe="returned", version_sensitive=True,
                    misconceptions=(Misconception("on-any-device", "works anywhere", BoolAnswer(True), "no"),),
                    on_cuda=OnCuda(BoolAnswer(True), "With CUDA, GradScaler() is enabled."))
    warned = check("produce.warning", "produce", WarnsExpectation("UserWarning", "CUDA is not available"),
                   function="ex1_warn", observe="returned", version_sensitive=True,
                   on_cuda=OnCuda(BoolAnswer(True), "With CUDA there is no warning."))
    key = replace(KEY, checks=(enabled, warned))
    calls = {("ex1_warn", p): call("ex1_warn", p, returned={"t": "bool", "v": True}) for p in range(3)}
    got = judged(observations(calls=calls, cuda=True), key=key)
    assert {o.status for o in got.values()} == {"passed"}
    assert got["1.produce.enabled"].why == "With CUDA, GradScaler() is enabled."
    assert got["1.produce.enabled"].details[0].startswith("CUDA was available in this run, so this check expects")
    assert got["1.produce.enabled"].version_note.startswith(
        "version-sensitive: this behaviour was observed on torch 2.13.0 without CUDA, and this run had CUDA")
    without = judged(observations(calls=calls, cuda=False), key=key)   # the same values on a CPU-only machine
    assert without["1.produce.enabled"].status == "failed" and without["1.produce.enabled"].version_note is None
    assert without["1.produce.enabled"].misconception.id == "on-any-device"
    assert without["1.produce.warning"].status == "failed"


def _paired(**kw) -> Key:
    """KEY with a pair the exercise asks for: predicted (p1_pair) and produced (ex1 returns it)."""
    pair = SeqAnswer((ExprAnswer("2*x"), NoneAnswer()))
    form = {"t": "seq", "kind": "tuple", "items": [SCALAR, None]}
    wrong = Misconception("grad-of-x", "the derivative of x", SeqAnswer((ExprAnswer("1"), NoneAnswer())), "fb")
    return replace(KEY, checks=(
        check("predict.pair", "predict", ValueExpectation(pair), name="p1_pair", misconceptions=(wrong,), **kw),
        check("produce.pair", "produce", ValueExpectation(pair, form), function="ex1", observe="returned",
              misconceptions=(wrong,), **kw)))


def _pair_calls(kind: str, first=lambda x0: 2 * x0) -> dict:
    return {("ex1", p): call("ex1", p, returned={"t": "seq", "kind": kind, "items": [tensor(first(pt["x0"])),
                                                                                     {"t": "none"}]})
            for p, pt in enumerate(POINTS)}


def test_a_pair_written_as_a_list_passes_unless_the_tuple_is_the_lesson_and_the_outcome_shows_what_was_written():
    """issue 44: [a, b] is (a, b) where the exercise only asks for two values; with container = "tuple" (or a one-item
    tuple, or a misconception that is the list) the container is graded too."""
    as_list = {"p1_pair": {"t": "seq", "kind": "list", "items": [{"t": "float", "v": 3.0}, {"t": "none"}]}}
    got = judged(observations(names=as_list, calls=_pair_calls("list")), key=_paired())
    assert got["1.predict.pair"].status == "passed" and got["1.predict.pair"].message == "p1_pair = [3.0, None]"
    assert got["1.produce.pair"].status == "passed"
    assert got["1.produce.pair"].message == "returned by ex1(x) at x=1.5: [tensor(3.), None]"
    got = judged(observations(names=as_list, calls=_pair_calls("list")), key=_paired(container="tuple"))
    assert got["1.predict.pair"].status == got["1.produce.pair"].status == "failed"
    assert got["1.predict.pair"].message == "p1_pair: expected a tuple of 2 items, got a list of 2 items"
    # a list with a misconception's values is named as that misconception, as its tuple is
    wrong = {"p1_pair": {"t": "seq", "kind": "list", "items": [{"t": "int", "v": 1}, {"t": "none"}]}}
    got = judged(observations(names=wrong, calls=_pair_calls("list", lambda x0: 1.0)), key=_paired())
    o = got["1.predict.pair"]
    assert o.status == "failed" and o.message == "p1_pair: item 0: 1 instead of 3.0 (abs diff 2)"
    assert o.misconception.id == "grad-of-x" and got["1.produce.pair"].misconception.id == "grad-of-x"


def test_a_numpy_bool_prediction_passes_as_the_bool_it_is_and_shows_as_numpy_wrote_it():
    key = replace(KEY, checks=(check("predict.leaf", "predict", ValueExpectation(BoolAnswer(False)), name="p1_leaf"),))
    np_false = {"t": "array", "dtype": "bool", "shape": [], "data": [False], "truncated": False}
    got = judged(observations(names={"p1_leaf": np_false}, calls={}), key=key)
    assert got["1.predict.leaf"].status == "passed" and got["1.predict.leaf"].message == "p1_leaf = array(False, dtype=bool)"
    two = {"t": "array", "dtype": "bool", "shape": [2], "data": [False, False], "truncated": False}
    got = judged(observations(names={"p1_leaf": two}, calls={}), key=key)
    assert got["1.predict.leaf"].status == "failed"
    assert got["1.predict.leaf"].message == "p1_leaf: expected False, got array([False, False], dtype=bool)"
