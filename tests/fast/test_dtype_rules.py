"""Issue 44, round three: tolerances by dtype, dtypes as answers (read against a fixed vocabulary, never evaluated),
and a dtype misconception of a value check. Real torch for its facts; no sandbox."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from autograder import wire
from autograder.authoring.spec import SpecError, load_spec
from autograder.judging import judge
from autograder.judging.compare import compare_predicted, compare_produced, show
from autograder.keyfile import digest_of, from_json, to_json
from autograder.model import (DTYPE_EPS, Arg, Check, DtypeAnswer, Exercise, ExprAnswer, Grading, Key, Limits,
                              Misconception, Parameter, Tolerance, ValueExpectation)
from autograder.sandbox.inside.probe import encode

ROOT = Path(__file__).resolve().parents[2]


def test_each_dtype_eps_is_torch_finfo_eps():
    for name, eps in DTYPE_EPS.items():
        assert eps == torch.finfo(getattr(torch, name)).eps, name
    assert DTYPE_EPS["bfloat16"] == 2 ** -7 == 0.0078125


def test_default_tolerances_by_dtype_keep_float32_and_float64_and_follow_eps_for_half():
    g = Grading()
    assert g.ops == 4
    assert g.default("float32") == Tolerance(1e-5, 1e-5) == g.default("complex64") == g.default("int64")
    assert g.default("float64") == Tolerance(1e-9, 1e-9) == g.default("complex128")
    assert g.default("bfloat16") == Tolerance(0.03125, 0.03125)              # 4 * 2**-7
    assert g.default("float16") == Tolerance(4 * 2 ** -10, 4 * 2 ** -10)    # 0.00390625
    assert g.default("bfloat16", ops=20) == Tolerance(20 * 2 ** -7, 20 * 2 ** -7)
    assert g.default("float32", ops=200) == Tolerance(200 * 2 ** -23, 200 * 2 ** -23)   # above the floor of 1e-5
    assert g.default("float32", ops=80) == Tolerance(1e-5, 1e-5)                         # 80 * 2**-23 < 1e-5


def _check(**kw) -> Check:
    return Check("1.c", "1", kw.pop("kind", "produce"), "t", ValueExpectation(ExprAnswer("x")), "w",
                 function="f", observe="returned", **kw)


def test_a_check_s_rtol_atol_ops_and_declared_dtype_set_its_tolerance():
    g = Grading()
    assert g.produced(_check(), "bfloat16") == Tolerance(0.03125, 0.03125)
    assert g.produced(_check(), "float32") == Tolerance(1e-5, 1e-5)
    assert g.produced(_check(rtol=1e-3), "bfloat16") == Tolerance(1e-3, 0.03125)   # each given one replaces its default
    assert g.produced(_check(ops=8), "bfloat16") == Tolerance(0.0625, 0.0625)
    # a float32 value computed in bfloat16 (autocast, then .float()): bfloat16's, the looser
    assert g.produced(_check(dtype="bfloat16"), "float32") == Tolerance(0.03125, 0.03125)
    assert g.produced(_check(dtype="bfloat16"), "float64") == Tolerance(0.03125, 0.03125)   # .item() of it
    assert g.prediction(_check(kind="predict")) == Tolerance(2e-3, 1e-6)
    assert g.prediction(_check(kind="predict", dtype="bfloat16")) == Tolerance(0.03125, 0.03125)
    assert g.prediction(_check(kind="predict", dtype="float32")) == Tolerance(2e-3, 1e-5)


@pytest.mark.parametrize("text, name", [
    ("bfloat16", "bfloat16"), ("torch.bfloat16", "bfloat16"), (" torch.float16 ", "float16"), ("torch.half", "float16"),
    ("float", "float32"), ("double", "float64"), ("torch.long", "int64"), ("complex128", "complex128"),
    ("BFloat16", None), ("bf16", None), ("torch.bfloat16()", None), ("torch.Tensor", None), ("__import__('os')", None),
    ("", None), ("torch.", None),
])
def test_a_learner_s_dtype_string_is_read_against_the_fixed_names(text, name):
    assert wire.dtype_name(text) == name


def test_every_dtype_name_is_torch_s():
    for name in wire.DTYPE_NAMES:
        assert str(getattr(torch, name)) == f"torch.{name}"
    for alias, name in wire.DTYPE_ALIASES.items():
        assert getattr(torch, alias) is getattr(torch, name)


def test_the_probe_sends_a_dtype_as_plain_json():
    v = encode(torch.bfloat16)
    assert v == {"t": "dtype", "name": "bfloat16"} and json.loads(json.dumps(v)) == v
    wire.check_value(v)
    assert encode((torch.float32, torch.half)) == {"t": "seq", "kind": "tuple", "truncated": False, "items": [
        {"t": "dtype", "name": "float32"}, {"t": "dtype", "name": "float16"}]}
    for bad in ({"t": "dtype"}, {"t": "dtype", "name": ""}, {"t": "dtype", "name": "float32; rm"},
                {"t": "dtype", "name": "x" * 41}):
        with pytest.raises(wire.WireError):
            wire.check_value(bad)


BF16 = {"t": "dtype", "name": "bfloat16"}


def test_a_predicted_dtype_may_be_the_dtype_or_its_name_and_is_compared_by_name():
    tol = Tolerance(2e-3, 1e-6)
    assert compare_predicted(BF16, {"t": "dtype", "name": "bfloat16"}, tol).ok
    assert compare_predicted(BF16, {"t": "str", "v": "torch.bfloat16"}, tol).ok
    assert compare_predicted(BF16, {"t": "str", "v": "bfloat16"}, tol).ok
    wrong = compare_predicted(BF16, {"t": "dtype", "name": "float32"}, tol)
    assert (wrong.ok, wrong.reason, wrong.detail) == (False, "dtype", "torch.float32 instead of torch.bfloat16")
    assert compare_predicted(BF16, {"t": "str", "v": "half"}, tol).detail == "torch.float16 instead of torch.bfloat16"
    unknown = compare_predicted(BF16, {"t": "str", "v": "bf16"}, tol)
    assert unknown.reason == "kind" and "write a dtype, torch.float32, or its name as a string" in unknown.detail
    assert compare_predicted(BF16, {"t": "int", "v": 2}, tol).detail == "expected the dtype torch.bfloat16, got 2"
    assert show(BF16) == "torch.bfloat16"


def test_an_observed_dtype_is_compared_strictly():
    tol = lambda dtype: Tolerance(1e-5, 1e-5)
    assert compare_produced(BF16, {"t": "dtype", "name": "bfloat16"}, tol).ok
    assert compare_produced(BF16, {"t": "dtype", "name": "float32"}, tol).detail == \
        "torch.float32 instead of torch.bfloat16"
    assert compare_produced(BF16, {"t": "str", "v": "bfloat16"}, tol).reason == "kind"   # a produced value is strict


def _tensor(dtype: str, *data: float) -> dict:
    return {"t": "tensor", "dtype": dtype, "shape": [len(data)], "data": list(data), "requires_grad": False,
            "is_leaf": True, "grad_fn": None, "truncated": False}


FORGOT = Misconception("forgot-autocast", "forgot autocast", DtypeAnswer("float32"), "Compute it inside autocast.")
DOUBLED = Misconception("doubled", "doubled", ExprAnswer("Matrix([2*x, 2*y])"), "Once is enough.")
FORM = {**_tensor("bfloat16"), "shape": [2]}
VALUE = Check("1.produce.y", "1", "produce", "y", ValueExpectation(ExprAnswer("Matrix([x, y])"), FORM), "why",
              function="f", observe="returned", misconceptions=(FORGOT, DOUBLED))
KEY = Key("t", "T", "t.ipynb", "2.13.0", "2.13.0", "1.14", Limits(), Grading(),
          {"x": Parameter("real", 0.5, 2.0), "y": Parameter("real", 0.5, 2.0)},
          (Exercise("1", "one", ("f",), (Arg("a", "x"), Arg("b", "y"))),), (VALUE,))
AT = {"x": 1.25, "y": 0.75}


def test_a_dtype_misconception_of_a_value_check_names_the_right_numbers_with_that_dtype():
    tol = judge.misconception_tolerance(KEY, VALUE, _tensor("float32", 1.25, 0.75))
    assert tol == Tolerance(0.03125, 0.03125)   # the loosest of the dtypes involved: bfloat16's
    named = judge.diagnose(VALUE, AT, _tensor("float32", 1.25, 0.75), tol, "x=1.25")
    assert named.id == "forgot-autocast" and named.formula == "the right value as torch.float32"
    assert named.evidence == "that thinking gives the right value as torch.float32 = tensor([1.25, 0.75]) at x=1.25, " \
                             "which is your value"
    assert judge.diagnose(VALUE, AT, _tensor("float32", 1.5, 0.75), tol, "") is None   # wrong numbers: not this one
    assert judge.diagnose(VALUE, AT, _tensor("float64", 1.25, 0.75), tol, "") is None  # another dtype
    assert judge.diagnose(VALUE, AT, _tensor("float32", 2.5, 1.5), tol, "").id == "doubled"
    usable, left_out = judge.misconception_values(VALUE, AT, tol)   # it never coincides with the right answer
    assert [m.id for m, _ in usable] == ["forgot-autocast", "doubled"] and left_out == []


def test_a_spec_declares_dtype_answers_observations_arguments_ops_and_dtype(tmp_path):
    (tmp_path / "spec.toml").write_text(SPEC)
    a = load_spec(tmp_path)
    checks = {c.id: c for c in a.checks}
    assert checks["1.predict.dtype"].expectation.answer == DtypeAnswer("bfloat16")
    assert checks["1.produce.dtype"].observe == "b.grad.dtype"
    assert (checks["1.produce.grad"].ops, checks["1.produce.grad"].dtype) == (6, "bfloat16")
    assert a.exercises[0].args[0].dtype == "bfloat16" and a.grading.ops == 5
    assert [m.answer for m in checks["1.predict.dtype"].misconceptions] == [DtypeAnswer("float32")]
    assert checks["1.produce.grad"].misconceptions[0].answer == DtypeAnswer("float32")


SPEC = '''
[assignment]
id = "t"
title = "T"
notebook = "t.ipynb"

[grading]
ops = 5

[parameters]
b0 = { kind = "real", low = 0.5, high = 2.0 }

[[exercise]]
id = "1"
title = "one"
functions = ["ex1"]
args = [{ name = "b", param = "b0", dtype = "bfloat16" }]

[[exercise.check]]
id = "predict.dtype"
title = "b.grad's dtype"
predict = "p1"
expect = "torch.bfloat16"
why = "because"

[[exercise.check]]
id = "produce.dtype"
title = "b.grad's dtype"
observe = "b.grad.dtype"
expect = "torch.bfloat16"
why = "because"

[[exercise.check]]
id = "produce.grad"
title = "b.grad"
observe = "b.grad"
expect = "diff(b**3, b)"
ops = 6
dtype = "bfloat16"
why = "because"

[[exercise.misconception]]
id = "promoted"
name = "grads are float32"
checks = ["predict.dtype", "produce.grad"]
value = "torch.float32"
feedback = "A leaf's grad has its dtype."
'''


@pytest.mark.parametrize("old, new, phrase", [
    ('expect = "torch.bfloat16"\nwhy', 'expect = "torch.bf16"\nwhy', "'torch.bf16' is not a dtype of torch; write one of"),
    ('observe = "b.grad.dtype"\nexpect = "torch.bfloat16"', 'observe = "b.grad.dtype"\nexpect = "2*b"',
     "observe = 'b.grad.dtype' is a dtype: write expect = \"torch.float32\""),
    ('observe = "b.grad.dtype"', 'observe = "b.grad"', "is a dtype, and 'b.grad' is a tensor or None: observe "
                                                       "\"b.grad.dtype\""),
    ('dtype = "bfloat16" }', 'dtype = "int64" }', "dtype must be one of 'float16', 'bfloat16', 'float32', 'float64'"),
    ("ops = 6", "ops = 0", "ops must be a whole number >= 1"),
    ("ops = 6", "ops = 2.5", "ops must be a whole number >= 1"),
    ('dtype = "bfloat16"\nwhy', 'dtype = "bf16"\nwhy', "dtype = 'bf16': write the floating dtype its value is computed in"),
    ("[grading]\nops = 5", "[grading]\nops = 2.5", "[grading]: ops must be a whole number >= 1"),
    ("has its dtype.\"", 'has its dtype."\n[[exercise.check]]\nid = "predict.value"\ntitle = "v"\npredict = "p2"\n'
     'expect = "b"\nwhy = "w"\n[[exercise.misconception]]\nid = "m2"\nname = "m2"\nchecks = ["predict.value"]\n'
     'value = "torch.float64"\nfeedback = "f"', "'predict.value' is not about a dtype"),
])
def test_a_bad_dtype_spec_is_refused_with_the_fix(tmp_path, old, new, phrase):
    assert old in SPEC
    (tmp_path / "spec.toml").write_text(SPEC.replace(old, new, 1))
    with pytest.raises(SpecError) as e:
        load_spec(tmp_path)
    assert phrase in str(e.value), str(e.value)


def test_the_shipped_keys_keep_their_digests_and_a_dtype_key_round_trips():
    """The new fields are written only where set: every committed public key's digest is what it was."""
    for path in sorted((ROOT / "assignments").glob("*/public_key.json")):
        data = json.loads(path.read_text())
        assert digest_of(to_json(from_json(data))) == data["public_digest"], path
    (key_json := to_json(KEY)).update(checks=[{**to_json(KEY)["checks"][0], "ops": 6, "dtype": "bfloat16"}])
    again = from_json(key_json)
    assert again.checks[0].misconceptions[0].answer == DtypeAnswer("float32") and again.checks[0].ops == 6
    assert again.checks[0].dtype == "bfloat16" and to_json(again) == key_json
    assert "ops" not in to_json(KEY)["grading"]
    assert to_json(KEY)["checks"][0]["misconceptions"][0]["value"] == {"dtype": "float32"}
    assert math.isclose(from_json({**to_json(KEY), "grading": {**to_json(KEY)["grading"], "ops": 9}}).grading
                        .default("bfloat16").rtol, 9 * 2 ** -7)


def test_the_instructor_guide_s_bfloat16_worked_example_holds_on_this_torch():
    """docs/instructor.md, "Tolerances by dtype": its numbers, computed here."""
    guide = (ROOT / "docs" / "instructor.md").read_text()
    b = torch.tensor(1.08, dtype=torch.bfloat16, requires_grad=True)
    (b ** 3).backward()
    assert b.item() == 1.078125 and b.grad.item() == 3.5 and b.grad.dtype == torch.bfloat16
    tol = Grading().default("bfloat16")
    allowed = tol.atol + tol.rtol * 3 * 1.08 ** 2
    assert round(allowed, 4) == 0.1406 and abs(3.5 - 3 * 1.08 ** 2) <= allowed
    assert compare_produced({"t": "float", "v": 3 * 1.08 ** 2}, {"t": "float", "v": 3.5}, lambda d: tol).ok
    assert not compare_produced({"t": "float", "v": 3 * 1.08 ** 2}, {"t": "float", "v": 3.5},
                                lambda d: Grading().default("float32")).ok
    x, w = torch.tensor([[1.22, 1.45, 0.98]], requires_grad=True), torch.tensor([[0.6], [1.13], [0.52]])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
    y.sum().backward()
    assert y.dtype == torch.bfloat16 and x.grad.dtype == torch.float32 and x.grad[0, 0].item() == 0.6015625
    for claim in ("holds 1.078125", "b.grad = tensor(3.5000, dtype=torch.bfloat16)", "3.4992", "= 0.1406",
                  "(0.6015625 for 0.6)", "| bfloat16 | 2^-7 = 0.0078125 | 0.03125 |", "| float16 | 2^-10 = 0.000977 | 0.00390625 |"):
        assert claim in guide, claim
