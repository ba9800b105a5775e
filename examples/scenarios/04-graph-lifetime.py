"""Example submissions of 04-graph-lifetime: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for that
student's own parameters; code with a realistic mistake), and the statuses a correct grader must give
it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig


def predictions(p: dict) -> dict[str, str]:
    x, y, k, v0, v1 = p["x0"], p["y0"], p["k"], p["v0"], p["v1"]
    e = math.exp(x)
    d1, d2, d3 = (x * x + 2 * x) * e, (x * x + 4 * x + 2) * e, (x * x + 6 * x + 6) * e
    h = [[sig(6 * v0 * v1), sig(3 * v0 * v0)], [sig(3 * v0 * v0), sig(-math.cos(v1))]]
    return {
        "ex1-predict": f"p1_second = \"RuntimeError\"\np1_grad = {y!r}",
        "ex2-predict": "p2_sub_x = 2.0\np2_sub_y = -2.0\np2_scale = \"RuntimeError\"",
        "ex3-predict": f"p3_x_grad = {sig(k * 2 * x * y)}\np3_y_grad = {sig(k * x * x)}\np3_third = \"RuntimeError\"",
        "ex4-predict": f"p4_derivatives = ({sig(d1)}, {sig(d2)}, {sig(d3)})",
        "ex5-predict": "p5_flags = (True, False)\np5_second = \"RuntimeError\"",
        "ex6-predict": "p6_strict = \"RuntimeError\"\np6_allow_unused = (None, 1.0)\np6_materialize = (0.0, 1.0)",
        "ex7-predict": f"p7_hessian = [[{h[0][0]}, {h[0][1]}], [{h[1][0]}, {h[1][1]}]]",
        "ex8-predict": f"p8_warning = \"UserWarning\"\np8_grad = {sig(d1)}\np8_requires_grad = True",
    }


F7 = ('def f7(v):\n    """f(v) = v[0]**3 * v[1] + cos(v[1]) for a tensor v of shape (2,)."""\n'
      "    return v[0] ** 3 * v[1] + torch.cos(v[1])\n\n\n")

CODE = {
    "ex1-produce": "def ex1(x, y):\n    z = x * y\n    z.backward()\n    z.backward()",
    "ex2-produce": ("def ex2_sub(x, y, c):\n    z = x - y\n    z.backward()\n    z.backward()\n\n\n"
                    "def ex2_scale(x, y, c):\n    z = (x - y) * c\n    z.backward()\n    z.backward()"),
    "ex3-produce": ("def ex3_keep(x, y, k):\n    f = x**2 * y\n    for _ in range(k):\n        f.backward(retain_graph=True)\n\n\n"
                    "def ex3_then_free(x, y, k):\n    f = x**2 * y\n    f.backward(retain_graph=True)\n    f.backward()\n"
                    "    f.backward()"),
    "ex4-produce": ("def ex4(x):\n    f = x**2 * torch.exp(x)\n    d1, = torch.autograd.grad(f, x, create_graph=True)\n"
                    "    d2, = torch.autograd.grad(d1, x, create_graph=True)\n    d3, = torch.autograd.grad(d2, x)\n"
                    "    return d1, d2, d3"),
    "ex5-produce": ("def ex5_flags(x):\n    a, = torch.autograd.grad(x**2 * torch.exp(x), x, create_graph=True)\n"
                    "    b, = torch.autograd.grad(x**2 * torch.exp(x), x)\n    return a.requires_grad, b.requires_grad\n\n\n"
                    "def ex5_second(x):\n    b, = torch.autograd.grad(x**2 * torch.exp(x), x)\n"
                    "    return torch.autograd.grad(b, x)"),
    "ex6-produce": ("def ex6_strict(x, a):\n    d1, = torch.autograd.grad(a * x, x, create_graph=True)\n"
                    "    return torch.autograd.grad(d1, [x, a])\n\n\n"
                    "def ex6_allow_unused(x, a):\n    d1, = torch.autograd.grad(a * x, x, create_graph=True)\n"
                    "    return torch.autograd.grad(d1, [x, a], allow_unused=True)\n\n\n"
                    "def ex6_materialize(x, a):\n    d1, = torch.autograd.grad(a * x, x, create_graph=True)\n"
                    "    return torch.autograd.grad(d1, [x, a], materialize_grads=True)"),
    "ex7-produce": (F7 + "def ex7_nested(v):\n    g, = torch.autograd.grad(f7(v), v, create_graph=True)\n"
                    "    return torch.stack([torch.autograd.grad(g[i], v, retain_graph=True)[0] for i in range(2)])\n\n\n"
                    "def ex7_functional(v):\n    return torch.autograd.functional.hessian(f7, v)\n\n\n"
                    "def ex7_func(v):\n    return torch.func.hessian(f7)(v)"),
    "ex8-produce": "def ex8(x):\n    (x**2 * torch.exp(x)).backward(create_graph=True)\n    return x.grad.requires_grad",
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    p = params("ben")
    wrong = predictions(p)
    x, y = p["x0"], p["y0"]
    wrong["ex1-predict"] = f"p1_second = None   # thought the graph stays around\np1_grad = {y!r}"
    wrong["ex2-predict"] = "p2_sub_x = 2.0\np2_sub_y = -2.0\np2_scale = None   # a constant factor needs nothing saved?"
    wrong["ex3-predict"] = (f"p3_x_grad = {sig(2 * x * y)}   # thought retain_graph passes do not add up\n"
                            f"p3_y_grad = {sig(x * x)}\np3_third = None")
    out["ben"] = ("thinks a graph can be walked again and again", {**wrong, **CODE},
                  {"1.predict.second": "failed:graph-reusable", "2.predict.scale": "failed:constant-saves-nothing",
                   "3.predict.x_grad": "failed:retained-passes-do-not-add-x",
                   "3.predict.y_grad": "failed:retained-passes-do-not-add-y", "3.predict.third": "failed:retain-graph-is-sticky"})

    p = params("cleo")
    pred = predictions(p)
    pred["ex5-predict"] = "p5_flags = (True, True)\np5_second = \"RuntimeError\""
    code = dict(CODE, **{
        "ex4-produce": ("def ex4(x):\n    f = x**2 * torch.exp(x)\n    d1, = torch.autograd.grad(f, x)\n"
                        "    d2, = torch.autograd.grad(d1, x)\n    d3, = torch.autograd.grad(d2, x)\n    return d1, d2, d3"),
        "ex7-produce": CODE["ex7-produce"].replace(", retain_graph=True)[0]", ")[0]")})
    out["cleo"] = ("forgot create_graph in the chain and retain_graph between Hessian rows", {**pred, **code},
                   {"5.predict.flags": "failed:always-requires-grad", "4.produce.derivatives": "error", "7.produce.nested": "error"})

    p = params("dev")
    pred = predictions(p)
    pred["ex6-predict"] = ("p6_strict = (0.0, 1.0)   # calculus: d1 = a does not change with x\n"
                           "p6_allow_unused = (0.0, 1.0)\np6_materialize = (0.0, 1.0)")
    code = dict(CODE, **{"ex6-produce": CODE["ex6-produce"].replace(
        "return torch.autograd.grad(d1, [x, a])\n", "return torch.autograd.grad(d1, [x, a], materialize_grads=True)\n")})
    out["dev"] = ("expects calculus' 0 where the graph has no path (None, or an error)", {**pred, **code},
                  {"6.predict.strict": "failed:calculus-says-zero", "6.predict.allow_unused": "failed:calculus-says-zero",
                   "6.produce.strict": "failed:calculus-says-zero"})

    p = params("eve")
    pred = predictions(p)
    pred["ex8-predict"] = pred["ex8-predict"].replace('"UserWarning"', '"RuntimeWarning"').replace(
        "p8_requires_grad = True", "p8_requires_grad = False")
    code = dict(CODE, **{"ex8-produce": (
        "def ex8(x):\n    # the warning says to use autograd.grad, so I did\n"
        "    d, = torch.autograd.grad(x**2 * torch.exp(x), x, create_graph=True)\n"
        "    x.grad = d.detach()\n    return x.grad.requires_grad")})
    out["eve"] = ("avoided backward(create_graph=True), so no warning and a plain .grad", {**pred, **code},
                  {"8.predict.warning": "failed:runtime-warning", "8.predict.requires_grad": "failed:grad-never-requires-grad",
                   "8.produce.warning": "failed", "8.produce.requires_grad": "failed:grad-never-requires-grad"})
    return out
