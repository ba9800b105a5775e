"""Example submissions of 06-autograd-off: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig


def predictions(p: dict) -> dict[str, str]:
    x, c, a, s, k = p["x0"], p["c"], p["a"], p["s"], p["k"]
    return {
        "ex1-predict": f"p1_requires_grad = False\np1_is_leaf = True\np1_grad = {sig(x * math.cos(x))}",
        "ex2-predict": (f"p2_requires_grad = False\np2_grad_fn = None\np2_backward = \"RuntimeError\"\n"
                        f"p2_late = {sig(3 * c * x * x)}"),
        "ex3-predict": f"p3_inference = \"RuntimeError\"\np3_no_grad = {sig(c * x)}",
        "ex4-predict": f"p4_a_version = {k}\np4_x_version = 0\np4_grad = {sig(c ** k)}",
        "ex5-predict": f"p5_version = 1\np5_backward = \"RuntimeError\"\np5_scaled = {c!r}",
        "ex6-predict": f"p6_data = {sig(2 * (x + a))}\np6_no_grad = \"RuntimeError\"",
        "ex7-predict": f"p7_hook = {sig(s * 3 * x * x)}\np7_removed = {sig(3 * x * x)}\np7_grad = {sig(s * 3 * x * x)}",
        "ex8-predict": f"p8_int = \"RuntimeError\"\np8_cast = False\np8_float = {3 * k * k}",
    }


CODE = {
    "ex1-produce": ("def ex1_flags(x):\n    d = (x * x).detach()\n    return (d.requires_grad, d.is_leaf)\n\n\n"
                    "def ex1_stop(x):\n    (x.detach() * torch.sin(x)).backward()"),
    "ex2-produce": ("def ex2_flags(x, c):\n    with torch.no_grad():\n        z = x * c\n    return (z.requires_grad, z.grad_fn)\n\n\n"
                    "def ex2_backward(x, c):\n    with torch.no_grad():\n        z = x * c\n    z.backward()\n\n\n"
                    "def ex2_late(x, c):\n    y = c * x**3\n    with torch.no_grad():\n        y.backward()"),
    "ex3-produce": ("def ex3_inference(x, c):\n    with torch.inference_mode():\n        y = x * c\n    (y * x).backward()\n\n\n"
                    "def ex3_no_grad(x, c):\n    with torch.no_grad():\n        y = x * c\n    (y * x).backward()"),
    "ex4-produce": ("def ex4(x, c, k):\n    a = x.clone()\n    for _ in range(k):\n        a.mul_(c)\n    a.backward()\n"
                    "    return (a._version, x._version)"),
    "ex5-produce": ("def ex5_modify(x, c):\n    y = torch.exp(x)\n    y.add_(1)\n    return y._version\n\n\n"
                    "def ex5_backward(x, c):\n    y = torch.exp(x)\n    y.add_(1)\n    y.backward()\n\n\n"
                    "def ex5_scaled(x, c):\n    y = x * c\n    y.add_(1)\n    y.backward()"),
    "ex6-produce": ("def ex6_data(x, a):\n    y = x ** 2\n    x.data.add_(a)\n    y.backward()\n\n\n"
                    "def ex6_no_grad(x, a):\n    y = x ** 2\n    with torch.no_grad():\n        x.add_(a)\n    y.backward()"),
    "ex7-produce": ("def ex7_hook(x, s):\n    x.register_hook(lambda g: g * s)\n    (x ** 3).backward()\n\n\n"
                    "def ex7_removed(x, s):\n    h = x.register_hook(lambda g: g * s)\n    h.remove()\n    (x ** 3).backward()\n\n\n"
                    "def ex7_grad(x, s):\n    x.register_hook(lambda g: g * s)\n    return torch.autograd.grad(x ** 3, x)[0]"),
    "ex8-produce": ("def ex8_int(x, k):\n    return torch.tensor(k, requires_grad=True)\n\n\n"
                    "def ex8_cast(x, k):\n    return x.long().requires_grad\n\n\n"
                    "def ex8_float(x, k):\n    t = torch.tensor(float(k), requires_grad=True)\n    (t ** 3).backward()\n    return t.grad"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    p = params("ben")
    x, s = p["x0"], p["s"]
    wrong = predictions(p)
    wrong["ex1-predict"] = (f"p1_requires_grad = False\np1_is_leaf = True\n"
                            f"p1_grad = {sig(math.sin(x) + x * math.cos(x))}   # product rule")
    wrong["ex2-predict"] = ("p2_requires_grad = False\np2_grad_fn = None\n"
                            "p2_backward = None   # I think backward just does nothing here\n"
                            "p2_late = None   # no_grad blocks backward too")
    wrong["ex6-predict"] = f"p6_data = {sig(2 * x)}   # d(x**2)/dx = 2x\np6_no_grad = \"RuntimeError\""
    wrong["ex7-predict"] = (f"p7_hook = {sig(s * 3 * x * x)}\np7_removed = {sig(3 * x * x)}\n"
                            f"p7_grad = {sig(3 * x * x)}   # hooks only change .grad")
    wrong["ex8-predict"] = f"p8_int = \"RuntimeError\"\np8_cast = True\np8_float = {3 * p['k'] ** 2}"
    out["ben"] = ("calculus instead of autograd in the predictions (detach, .data, hooks), right code",
                  {**wrong, **CODE},
                  {"1.predict.grad": "failed:product-rule-as-usual", "2.predict.backward": "failed:backward-does-nothing",
                   "2.predict.late": "failed:no-grad-blocks-backward", "6.predict.data": "failed:calculus-value",
                   "7.predict.grad": "failed:hooks-only-change-grad",
                   "8.predict.cast": "failed:cast-keeps-requires-grad"})

    p = params("cleo")
    pred = predictions(p)
    pred["ex4-predict"] = (f"p4_a_version = {p['k']}\np4_x_version = {p['k']}   # a is x\n"
                           f"p4_grad = {sig(p['c'] ** p['k'])}")
    code = dict(CODE, **{"ex4-produce": (
        "def ex4(x, c, k):\n    a = x   # no need to copy\n    for _ in range(k):\n        a.mul_(c)\n    a.backward()\n"
        "    return (a._version, x._version)")})
    out["cleo"] = ("works in place on the leaf itself instead of a clone", {**pred, **code},
                   {"4.predict.x_version": "failed:clone-shares-the-counter", "4.produce.versions": "error", "4.produce.grad": "error"})

    p = params("dev")
    code = dict(CODE, **{"ex7-produce": CODE["ex7-produce"].replace(
        "    h.remove()\n", "    h.remove   # forgot the parentheses: the hook stays\n")})
    out["dev"] = ("calls h.remove without parentheses, so the hook stays", {**predictions(p), **code},
                  {"7.produce.removed": "failed:hook-still-runs"})

    p = params("eve")
    code = dict(CODE, **{
        "ex2-produce": CODE["ex2-produce"].replace(
            "    z.backward()\n", "    try:\n        z.backward()\n    except RuntimeError as e:\n"
                                  "        print('backward failed:', e)\n"),
        "ex3-produce": CODE["ex3-produce"].replace(
            "        y = x * c\n    (y * x).backward()\n\n\n",
            "        y = x * c\n    try:\n        (y * x).backward()\n    except RuntimeError:\n        pass\n\n\n", 1),
        "ex5-produce": CODE["ex5-produce"].replace(
            "    y.add_(1)\n    y.backward()\n\n\n", "    y.add_(1)\n    try:\n        y.backward()\n"
                                                    "    except RuntimeError:\n        return None\n\n\n")})
    out["eve"] = ("catches the exceptions she was asked to let escape", {**predictions(p), **code},
                  {"2.produce.backward": "failed", "3.produce.inference": "failed", "5.produce.backward": "failed"})

    p = params("finn")
    code = dict(CODE, **{"ex6-produce": CODE["ex6-produce"].replace(
        "    with torch.no_grad():\n        x.add_(a)\n", "    x.data.add_(a)   # same thing as no_grad, shorter\n")})
    out["finn"] = ("uses .data where no_grad was asked: the error that would have warned him never comes",
                   {**predictions(p), **code}, {"6.produce.no_grad": "failed"})
    return out
