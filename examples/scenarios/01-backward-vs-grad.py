"""Example submissions of 01-backward-vs-grad: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig


def predictions(p: dict) -> dict[str, str]:
    x, y, g, k = p["x0"], p["y0"], p["g0"], p["k"]
    f2 = 2 * x * math.sin(x) + x * x * math.cos(x)
    return {
        "ex1-predict": f"p1_returns = None\np1_grad = {sig(2 * x)}",
        "ex2-predict": f"p2_returns = ({sig(f2)},)\np2_grad = None",
        "ex3-predict": f"p3_derivative = {sig(f2)}\np3_grad = {g!r}",
        "ex4-predict": f"p4_after_k = {sig(k * 3 * x * x)}\np4_after_reset = {sig(3 * x * x)}",
        "ex5-predict": f"p5_x_grad = {y!r}\np5_y_grad = None",
        "ex6-predict": f"p6_strict = \"RuntimeError\"\np6_allow_unused = ({sig(3 * x * x)}, None)\n"
                       f"p6_materialize = ({sig(3 * x * x)}, 0.0)",
    }


CODE = {
    "ex1-produce": "def ex1(x):\n    return (x * x).backward()",
    "ex2-produce": "def ex2(x):\n    return torch.autograd.grad(x**2 * torch.sin(x), x)",
    "ex3-produce": "def ex3(x):\n    d, = torch.autograd.grad(x**2 * torch.sin(x), x)\n    return d",
    "ex4-produce": ("def ex4_accumulate(x, k):\n    for _ in range(k):\n        (x ** 3).backward()\n\n\n"
                    "def ex4_reset(x, k):\n    ex4_accumulate(x, k)\n    x.grad = None\n    (x ** 3).backward()"),
    "ex5-produce": "def ex5(x, y):\n    (x * y).backward(inputs=[x])",
    "ex6-produce": ("def ex6_strict(x, u):\n    return torch.autograd.grad(x ** 3, [x, u])\n\n\n"
                    "def ex6_allow_unused(x, u):\n    return torch.autograd.grad(x ** 3, [x, u], allow_unused=True)\n\n\n"
                    "def ex6_materialize(x, u):\n    return torch.autograd.grad(x ** 3, [x, u], materialize_grads=True)"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    p = params("ben")
    wrong = predictions(p)
    x = p["x0"]
    wrong["ex1-predict"] = f"p1_returns = {sig(2 * x)}   # thought backward() returns the derivative\np1_grad = {sig(2 * x)}"
    wrong["ex2-predict"] = f"p2_returns = {sig(2*x*math.sin(x) + x*x*math.cos(x))}   # not a tuple\np2_grad = None"
    wrong["ex3-predict"] = wrong["ex3-predict"].split("\n")[0] + f"\np3_grad = {sig(2*x*math.sin(x) + x*x*math.cos(x))}"
    wrong["ex4-predict"] = f"p4_after_k = {sig(3 * x * x)}\np4_after_reset = {sig(3 * x * x)}"
    wrong["ex6-predict"] = wrong["ex6-predict"].replace('"RuntimeError"', '"ValueError"').replace(", None)", ", 0.0)", 1)
    out["ben"] = ("wrong predictions, right code", {**wrong, **CODE},
                  {"1.predict.returns": "failed:backward-returns-the-gradient", "2.predict.returns": "failed:not-a-tuple",
                   "3.predict.grad": "failed:grad-overwritten",
                   "4.predict.after_k": "failed",   # ben's k is 2: "one pass only" and "one pass short" coincide
                   "6.predict.strict": "failed", "6.predict.allow_unused": "failed:none-is-zero"})

    p = params("cleo")
    pred = predictions(p)
    pred["ex4-predict"] = f"p4_after_k = {sig(3 * p['x0'] ** 2)}\np4_after_reset = {sig(3 * p['x0'] ** 2)}"
    code = dict(CODE, **{"ex4-produce": (
        "def ex4_accumulate(x, k):\n    for _ in range(k):\n        x.grad = None   # \"start clean\" every pass\n"
        "        (x ** 3).backward()\n\n\n"
        "def ex4_reset(x, k):\n    ex4_accumulate(x, k)\n    x.grad = None\n    (x ** 3).backward()")})
    out["cleo"] = ("forgot that backward accumulates", {**pred, **code},
                   {"4.predict.after_k": "failed:one-pass-only", "4.produce.after_k": "failed:one-pass-only"})

    p = params("dev")
    pred = predictions(p)
    f2 = 2 * p["x0"] * math.sin(p["x0"]) + p["x0"] ** 2 * math.cos(p["x0"])
    pred["ex2-predict"] = f"p2_returns = ({sig(f2)},)\np2_grad = {sig(f2)}"
    code = dict(CODE, **{
        "ex2-produce": "def ex2(x):\n    (x**2 * torch.sin(x)).backward()\n    return x.grad",
        "ex3-produce": "def ex3(x):\n    (x**2 * torch.sin(x)).backward()\n    return x.grad"})
    out["dev"] = ("used backward where grad was asked", {**pred, **code},
                  {"2.predict.grad": "failed:grad-accumulates-too", "2.produce.returns": "failed:not-a-tuple",
                   "2.produce.grad": "failed:grad-accumulates-too", "3.produce.derivative": "failed:adds-the-old-grad",
                   "3.produce.grad": "failed:grad-accumulates-too"})

    p = params("eve")
    x = p["x0"]
    f2 = 2 * x * math.sin(x) + x * x * math.cos(x)
    code = dict(CODE, **{
        "ex1-produce": f"def ex1(x):\n    x.grad = torch.tensor({2 * x!r})   # my answer, worked out by hand\n    return None",
        "ex2-produce": "def ex2(x):\n    return (torch.tensor(6.),)   # copied from the worked example",
        "ex3-produce": f"def ex3(x):\n    return torch.tensor({f2!r})"})
    out["eve"] = ("hard-coded numbers: her own answers pass only at her point, the worked example's 6 nowhere",
                  {**predictions(p), **code},
                  {"1.produce.grad": "failed", "2.produce.returns": "failed", "3.produce.derivative": "failed"})

    p = params("finn")
    code = dict(CODE, **{
        "ex2-produce": "def ex2(x):\n    return torch.autograd.grad(x**2 * torch.sin(x), x, retain=True)",
        "ex6-produce": CODE["ex6-produce"].replace("materialize_grads=True", "allow_unused=False, materialize_grads=True")})
    out["finn"] = ("code that raises (a wrong keyword; a contradictory pair of flags)", {**predictions(p), **code},
                   {"2.produce.returns": "error", "2.produce.grad": "error", "6.produce.materialize": "error"})

    p = params("hana")
    code = dict(CODE, **{"ex4-produce": (
        "def ex4_accumulate(x, k):\n    i = 0\n    while i < k:   # forgot i += 1\n        (x ** 3).backward()\n\n\n"
        "def ex4_reset(x, k):\n    for _ in range(k):\n        (x ** 3).backward()\n    x.grad = None\n    (x ** 3).backward()")})
    out["hana"] = ("an infinite loop in one produce function", {**predictions(p), **code},
                   {"4.produce.after_k": "timeout"})

    p = params("jade")
    code = dict(CODE, **{"ex1-produce": (
        "def ex1(x):\n    y = x * x\n    result = y.backward()\n    print('debug:', y.grad, x.grad)   # y is not a leaf: warns\n"
        "    return result")})
    out["jade"] = ("correct, but reads a non-leaf .grad, which warns (full credit; the warning is shown)",
                   {**predictions(p), **code}, {})

    p = params("kim")
    code = dict(CODE, **{"ex2-produce": ("def f(x):\n    return x**2 * torch.sin(x)\n\n\n"
                                         "def ex2(x):\n    return torch.autograd.grad(f(x), x)")})
    scratch = ("# scratch: trying other things after the exercises\n"
               "def f(x):\n    return x ** 3\n\n"
               "p1_grad = 0.0\n"
               "torch.set_default_dtype(torch.float64)\n"
               "torch.set_grad_enabled(False)")
    out["kim"] = ("right, then a scratch cell at the end redefines her helper f, a prediction and torch's "
                  "settings: graded as she saw each check (notes name what was redefined)",
                  {**predictions(p), **code, "*append": scratch}, {})
    return out


def extra_files(out) -> dict[str, dict]:
    """Files that are not the released notebook with some cells answered: name -> expected record."""
    # A file cut off in the middle of saving: not valid JSON, so not gradable (never a 0).
    text = (out / "ada.ipynb").read_text()
    (out / "ivan.ipynb").write_text(text[: len(text) // 2])
    return {"ivan": {"scenario": "a truncated file that is not valid JSON", "status": "not_gradable", "checks": {}}}
