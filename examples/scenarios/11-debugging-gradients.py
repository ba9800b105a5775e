"""Example submissions of 11-debugging-gradients: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import numpy as np

from make_submissions import sig, vec, tup

# The solution's ex4_anomaly, which the scenarios below replace: anomaly mode around the forward line too.
ANOMALY_SOLUTION = ("def ex4_anomaly(a):\n    with torch.autograd.detect_anomaly():\n"
                    "        b = a * 2\n        c = b * b\n        b[1] = 2.0\n        try:\n"
                    "            c.sum().backward()\n        except RuntimeError:\n"
                    "            pass\n")


def numbers(p: dict) -> dict:
    """The numbers a student works out by hand."""
    r = p["w"] * p["u"] - p["y"]
    g0 = 2 * r * p["u"]
    w1 = p["w"] - 0.1 * g0
    g1 = 2 * (w1 * p["u"] - p["y"]) * p["u"]
    return {
        "round": round(p["x1"]), "ste": 2 * (round(p["x1"]) - p["t"]),
        "g2": 2 * r * p["u"], "g0": g0, "w1": w1, "g1": g1,
        "fixed": [8 * p["a0"], 0.0, 8 * p["a2"]],
        "cubic": 6 * p["c"] * p["x5"],
        "f32_grad": 2 * (float(np.float32(p["v"])) - p["v"]),
    }


def predictions(p: dict) -> dict[str, str]:
    n = numbers(p)
    return {
        "ex1-predict": (f"p1_round = 0.0\np1_argmax = False\np1_compare = \"RuntimeError\"\n"
                        f"p1_ste = {sig(n['ste'])}"),
        "ex2-predict": (f"p2_nodes = {p['k']}\np2_total = {sig(p['k'] * n['g2'])}\n"
                        f"p2_every = \"RuntimeError\""),
        "ex3-predict": (f"p3_step = {sig(n['w1'])}\np3_no_zero = {sig(n['g0'] + n['g1'])}\n"
                        f"p3_inplace = \"RuntimeError\"\np3_rebind = False"),
        "ex4-predict": (f"p4_version = (0, 1)\np4_error = \"RuntimeError\"\np4_line = 2\n"
                        f"p4_fixed = {vec(n['fixed'])}"),
        "ex5-predict": (f"p5_first_rg = False\np5_second = \"RuntimeError\"\np5_materialize = \"RuntimeError\"\n"
                        f"p5_unused = None\np5_helper = {tup([0.0, n['cubic']])}"),
        "ex6-predict": f"p6_mixed = False\np6_grad = {sig(n['f32_grad'])}",
    }


CODE = {
    "ex1-produce": ("def ex1_round(x, t):\n    loss = (torch.round(x) - t) ** 2\n    loss.backward()\n\n\n"
                    "def ex1_argmax(x, t):\n    scores = x * torch.tensor([1.0, 2.0, 3.0])\n    i = torch.argmax(scores)\n"
                    "    return (i.requires_grad, i.grad_fn)\n\n\n"
                    "def ex1_compare(x, t):\n    scores = x * torch.tensor([1.0, 2.0, 3.0])\n"
                    "    (scores > t).float().mean().backward()\n\n\n"
                    "def ex1_ste(x, t):\n    y = x + (torch.round(x) - x).detach()\n    ((y - t) ** 2).backward()\n"
                    "    return y.detach()"),
    "ex2-produce": ("def ex2_nodes(w, u, y, k):\n    running = 0.0\n    for _ in range(k):\n        loss = (w * u - y) ** 2\n"
                    "        running += loss\n    return graph_nodes(running).count(\"AddBackward0\")\n\n\n"
                    "def ex2_total(w, u, y, k):\n    running = 0.0\n    for _ in range(k):\n        loss = (w * u - y) ** 2\n"
                    "        running += loss\n    running.backward()\n\n\n"
                    "def ex2_every(w, u, y, k):\n    running = 0.0\n    for _ in range(k):\n        loss = (w * u - y) ** 2\n"
                    "        running += loss\n        running.backward()\n\n\n"
                    "def ex2_logged(w, u, y, k):\n    running = 0.0\n    for _ in range(k):\n        loss = (w * u - y) ** 2\n"
                    "        loss.backward()\n        running += loss.item()\n    return running"),
    "ex3-produce": ("def ex3_steps(w, u, y):\n    for _ in range(2):\n        loss = (w * u - y) ** 2\n        loss.backward()\n"
                    "        with torch.no_grad():\n            w -= 0.1 * w.grad\n            w.grad.zero_()\n"
                    "    return w.detach().clone()\n\n\n"
                    "def ex3_no_zero(w, u, y):\n    for _ in range(2):\n        loss = (w * u - y) ** 2\n        loss.backward()\n"
                    "        with torch.no_grad():\n            w -= 0.1 * w.grad\n\n\n"
                    "def ex3_inplace(w, u, y):\n    ((w * u - y) ** 2).backward()\n    w -= 0.1 * w.grad\n\n\n"
                    "def ex3_rebind(w, u, y):\n    ((w * u - y) ** 2).backward()\n    w = w - 0.1 * w.grad\n"
                    "    ((w * u - y) ** 2).backward()\n    return (w.is_leaf, w.grad)"),
    "ex4-produce": ("def ex4_version(a):\n    b = a * 2\n    c = b * b\n    before = b._version\n    b[1] = 2.0\n"
                    "    return (before, b._version)\n\n\n"
                    "def ex4_backward(a):\n    b = a * 2\n    c = b * b\n    b[1] = 2.0\n    c.sum().backward()\n\n\n"
                    "def ex4_anomaly(a):\n    with torch.autograd.detect_anomaly():\n        b = a * 2\n        c = b * b\n"
                    "        b[1] = 2.0\n        try:\n            c.sum().backward()\n        except RuntimeError:\n"
                    "            pass\n\n\n"
                    "def ex4_fixed(a):\n    b = a * 2\n    b[1] = 2.0\n    c = b * b\n    c.sum().backward()"),
    "ex5-produce": ("def ex5_second(x, c):\n    (d,) = torch.autograd.grad(c * x, x, create_graph=True)\n"
                    "    torch.autograd.grad(d, x)\n\n\n"
                    "def ex5_materialize(x, c):\n    (d,) = torch.autograd.grad(c * x, x, create_graph=True)\n"
                    "    torch.autograd.grad(d, x, materialize_grads=True)\n\n\n"
                    "def ex5_unused(x, c):\n    (d,) = torch.autograd.grad(c * x, x, create_graph=True)\n"
                    "    return torch.autograd.grad(d.requires_grad_(), x, allow_unused=True)[0]\n\n\n"
                    "def ex5_helper(x, c):\n    def second(f, x):\n"
                    "        (d,) = torch.autograd.grad(f(x), x, create_graph=True)\n        if not d.requires_grad:\n"
                    "            return torch.zeros_like(x)\n        return torch.autograd.grad(d, x)[0]\n\n"
                    "    return (second(lambda x: c * x, x), second(lambda x: c * x ** 3, x))"),
    "ex6-produce": ("def ex6_cast(v):\n    return torch.tensor(v).double()\n\n\n"
                    "def ex6_direct(v):\n    return torch.tensor(v, dtype=torch.float64)\n\n\n"
                    "def ex6_grad(v):\n    x = torch.tensor(v).double().requires_grad_()\n    ((x - v) ** 2).backward()\n"
                    "    return x.grad"),
}


def replaced(cell: str, old: str, new: str) -> str:
    """`cell` with `old` replaced by `new` once; `old` must be there (a scenario that changes nothing is a bug)."""
    assert old in cell, old
    return cell.replace(old, new, 1)


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}

    p = params("ben")
    n = numbers(p)
    pred = predictions(p)
    pred["ex1-predict"] = (f"p1_round = {sig(n['ste'])}   # round passes the gradient on\np1_argmax = False\n"
                           f"p1_compare = \"RuntimeError\"\np1_ste = 0.0   # y is round(x), and round is flat")
    code = dict(CODE, **{"ex1-produce": replaced(CODE["ex1-produce"], "y = x + (torch.round(x) - x).detach()",
                                                 "y = x + (torch.round(x) - x)   # the straight-through estimator")})
    out["ben"] = ("thinks torch.round passes the gradient through, and writes the straight-through estimator "
                  "without .detach(), so that its gradient is round's, 0",
                  {**pred, **code},
                  {"1.predict.round": "failed:round-passes-gradient", "1.predict.ste": "failed:ste-detach-ignored",
                   "1.produce.ste_grad": "failed:ste-detach-ignored"})

    p = params("jo")
    pred = predictions(p)
    pred["ex1-predict"] = replaced(replaced(replaced(
        pred["ex1-predict"], "p1_round = 0.0", "p1_round = None   # round is not differentiable: no gradient"),
        "p1_argmax = False", "p1_argmax = True   # the scores require grad, so everything made from them does"),
        "p1_compare = \"RuntimeError\"", "p1_compare = None   # the comparison just gives a zero gradient")
    code = dict(CODE, **{"ex1-produce": replaced(CODE["ex1-produce"], "    loss = (torch.round(x) - t) ** 2\n",
                                                 "    q = x + (torch.round(x) - x).detach()   # round, but with a gradient\n"
                                                 "    loss = (q - t) ** 2\n")})
    out["jo"] = ("expects every operation of a tensor that requires grad to be in the graph, a non-differentiable "
                 "one to give None, and \"fixes\" the rounding with the straight-through estimator where the "
                 "plain round was asked for",
                 {**pred, **code},
                 {"1.predict.round": "failed:round-cuts-graph", "1.predict.argmax": "failed:argmax-in-graph",
                  "1.predict.compare": "failed:comparison-gradient-zero",
                  "1.produce.round": "failed:round-passes-gradient"})

    p = params("cleo")
    n = numbers(p)
    pred = predictions(p)
    pred["ex2-predict"] = (f"p2_nodes = 1   # running is replaced at every +=\n"
                           f"p2_total = {sig(n['g2'])}   # the gradient of the loss\n"
                           f"p2_every = None   # backward can run every iteration")
    code = dict(CODE, **{"ex2-produce": replaced(CODE["ex2-produce"], "        running += loss.item()\n",
                                                 "        running += loss   # the loss, for the log\n")})
    out["cleo"] = ("logs the loss with running += loss, not loss.item(), and thinks the running total holds one "
                   "loss's graph at a time",
                   {**pred, **code},
                   {"2.predict.nodes": "failed:one-addition-kept", "2.predict.total": "failed:only-last-loss",
                    "2.predict.every": "failed:backward-any-number-of-times", "2.produce.logged": "failed"})

    p = params("dev")
    n = numbers(p)
    pred = predictions(p)
    pred["ex3-predict"] = replaced(pred["ex3-predict"], f"p3_no_zero = {sig(n['g0'] + n['g1'])}",
                                   f"p3_no_zero = {sig(n['g1'])}   # backward writes the new gradient")
    code = dict(CODE, **{"ex3-produce": replaced(CODE["ex3-produce"],
                                                 "            w -= 0.1 * w.grad\n            w.grad.zero_()\n",
                                                 "            w -= 0.1 * w.grad\n")})
    out["dev"] = ("thinks backward() replaces .grad, and leaves w.grad.zero_() out of the manual update",
                  {**pred, **code},
                  {"3.predict.no_zero": "failed:backward-overwrites", "3.produce.steps": "failed:grad-not-zeroed"})

    p = params("eve")
    n = numbers(p)
    pred = predictions(p)
    pred["ex3-predict"] = (f"p3_step = {sig(p['w'])}   # no_grad: nothing changes\np3_no_zero = {sig(n['g0'] + n['g1'])}\n"
                           f"p3_inplace = None   # -= is just an update\np3_rebind = True   # w is still the parameter")
    out["eve"] = ("thinks torch.no_grad() stops the update itself, that an in-place update of a leaf is allowed "
                  "anywhere, and that w = w - lr * w.grad keeps w a leaf",
                  {**pred, **CODE},
                  {"3.predict.step": "failed:no-grad-blocks-update", "3.predict.inplace": "failed:inplace-allowed",
                   "3.predict.rebind": "failed:still-the-leaf"})

    p = params("finn")
    n = numbers(p)
    pred = predictions(p)
    pred["ex4-predict"] = (f"p4_version = (0, 0)   # only methods ending in _ count\np4_error = \"RuntimeError\"\n"
                           f"p4_line = 3   # the edit\np4_fixed = {vec([8 * p['a0'], 8 * p['a1'], 8 * p['a2']])}")
    code = dict(CODE, **{"ex4-produce": replaced(CODE["ex4-produce"],
                                                 ANOMALY_SOLUTION,
                                                 "def ex4_anomaly(a):\n    b = a * 2\n    c = b * b\n    b[1] = 2.0\n"
                                                 "    try:\n        c.sum().backward()\n    except RuntimeError as e:\n"
                                                 "        print(e)   # the error is enough\n")})
    out["finn"] = ("expects the traceback to point at the edit, does not count an indexed assignment as in place, "
                   "and leaves anomaly mode out",
                   {**pred, **code},
                   {"4.predict.version": "failed:setitem-not-in-place", "4.predict.line": "failed:line-of-the-edit",
                    "4.predict.fixed": "failed:edit-keeps-gradient", "4.produce.anomaly": "failed"})

    p = params("kai")
    code = dict(CODE, **{"ex4-produce": replaced(CODE["ex4-produce"],
                                                 ANOMALY_SOLUTION,
                                                 "def ex4_anomaly(a):\n    b = a * 2\n    c = b * b\n    b[1] = 2.0\n"
                                                 "    with torch.autograd.detect_anomaly():   # around the line that fails\n"
                                                 "        try:\n            c.sum().backward()\n"
                                                 "        except RuntimeError:\n            pass\n")})
    out["kai"] = ("turns anomaly mode on around backward() only, where the error is raised: the warning names the "
                  "node, but the forward pass ran without anomaly mode, so it has no forward line to show",
                  {**predictions(p), **code},
                  {"4.produce.anomaly": "failed"})

    p = params("hana")
    n = numbers(p)
    pred = predictions(p)
    pred["ex5-predict"] = (f"p5_first_rg = False\np5_second = 0.0   # the second derivative of c * x\n"
                           f"p5_materialize = \"RuntimeError\"\np5_unused = 0.0   # calculus: 0\n"
                           f"p5_helper = {tup([None, n['cubic']])}")
    code = dict(CODE, **{"ex5-produce": replaced(CODE["ex5-produce"],
                                                 "        if not d.requires_grad:\n            return torch.zeros_like(x)\n"
                                                 "        return torch.autograd.grad(d, x)[0]\n",
                                                 "        return torch.autograd.grad(d.requires_grad_(), x, allow_unused=True)[0]\n")})
    out["hana"] = ("expects calculus' 0 from the second derivative of a linear function, and writes the helper "
                   "with the requires_grad_() and allow_unused=True workaround, which gives None",
                   {**pred, **code},
                   {"5.predict.second": "failed:second-is-zero", "5.predict.unused": "failed:unused-is-zero",
                    "5.predict.helper": "failed:helper-none-for-linear", "5.produce.helper": "failed:helper-none-for-linear"})

    p = params("ivo")
    pred = predictions(p)
    pred["ex6-predict"] = "p6_mixed = True   # the same number in both\np6_grad = 0.0   # x is v, the minimum"
    code = dict(CODE, **{"ex6-produce": replaced(CODE["ex6-produce"], "return torch.tensor(v, dtype=torch.float64)",
                                                 "return torch.tensor(v).double()   # float64")})
    out["ivo"] = ("makes float64 tensors with torch.tensor(v).double() and expects them to hold v",
                  {**pred, **code},
                  {"6.predict.mixed": "failed:compared-in-float32", "6.predict.grad": "failed:cast-restores-precision",
                   "6.produce.direct": "failed:made-in-float32"})
    return out
