"""Example submissions of 05-vectors: each scenario is the released notebook with some cells answered
the way a student would (predictions as literals rounded to 4 significant figures for that student's
own parameters; code with a realistic mistake), and the statuses a correct grader must give it,
written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

from make_submissions import sig, vec


def predictions(p: dict) -> dict[str, str]:
    x0, x1, x2, v0, v1 = p["x0"], p["x1"], p["x2"], p["v0"], p["v1"]
    vjp = [v0 * x1 * x2 + v1 * 2 * x0, v0 * x0 * x2, v0 * x0 * x1 + v1]
    row0 = [x1 * x2, x0 * x2, x0 * x1]
    r0 = p["s00"] * p["w0"] + p["s01"] * p["w1"] - p["t0"]
    return {
        "ex1-predict": f"p1_error = \"RuntimeError\"\np1_sum_grad = {vec([x1 * x2 + 2 * x0, x0 * x2, x0 * x1 + 1])}",
        "ex2-predict": f"p2_x_grad = {vec(vjp)}",
        "ex3-predict": f"p3_returns = ({vec(vjp)},)\np3_x_grad = None",
        "ex4-predict": "p4_error = \"RuntimeError\"\np4_shape = (2,)",
        "ex5-predict": f"p5_jacobian = [{vec(row0)}, [{sig(2 * x0)}, 0.0, 1.0]]",
        "ex6-predict": f"p6_grad = {vec(row0)}\np6_x_grad = None\np6_vector = \"RuntimeError\"",
        "ex7-predict": f"p7_shape = (3, 2)\np7_first = {vec([2 * r0 * p['s00'], 2 * r0 * p['s01']])}",
    }


CODE = {
    "ex1-produce": "def ex1_plain(x):\n    F(x).backward()\n\n\ndef ex1_sum(x):\n    F(x).sum().backward()",
    "ex2-produce": "def ex2(x, v):\n    F(x).backward(gradient=v)",
    "ex3-produce": "def ex3(x, v):\n    return torch.autograd.grad(F(x), x, grad_outputs=v)",
    "ex4-produce": "def ex4(x):\n    F(x).backward(gradient=torch.ones_like(x))",
    "ex5-produce": ("def ex5_rows(x):\n    rows = []\n    for i in range(2):\n        e = torch.zeros(2)\n        e[i] = 1.0\n"
                    "        rows.append(torch.autograd.grad(F(x), x, grad_outputs=e)[0])\n    return torch.stack(rows)\n\n\n"
                    "def ex5_functional(x):\n    return torch.autograd.functional.jacobian(F, x)\n\n\n"
                    "def ex5_jacrev(x):\n    return torch.func.jacrev(F)(x)"),
    "ex6-produce": ("def f6(x):\n    return F(x)[0]\n\n\n"
                    "def ex6_grad(x):\n    return torch.func.grad(f6)(x)\n\n\n"
                    "def ex6_vector(x):\n    return torch.func.grad(F)(x)"),
    "ex7-produce": ("def loss(w, xi, ti):\n    return (xi @ w - ti) ** 2\n\n\n"
                    "def ex7_per_sample(w, X, t):\n"
                    "    return torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(w, X, t)\n\n\n"
                    "def ex7_mean(w, X, t):\n    g, = torch.autograd.grad(((X @ w - t) ** 2).mean(), w)\n    return g"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    p = params("ben")
    pred = predictions(p)
    x0, x1, x2 = p["x0"], p["x1"], p["x2"]
    pred["ex1-predict"] = pred["ex1-predict"].replace('"RuntimeError"', "None   # backward sums the outputs for me?")
    pred["ex4-predict"] = "p4_error = \"RuntimeError\"\np4_shape = (3,)   # like x"
    pred["ex5-predict"] = (f"p5_jacobian = [[{sig(x1 * x2)}, {sig(2 * x0)}], [{sig(x0 * x2)}, 0.0], "
                           f"[{sig(x0 * x1)}, 1.0]]   # one row per input")
    code = dict(CODE, **{"ex5-produce": CODE["ex5-produce"].replace("torch.stack(rows)", "torch.stack(rows, dim=1)")})
    out["ben"] = ("lays things out by the input's shape: the Jacobian transposed, gradient shaped like x",
                  {**pred, **code},
                  {"1.predict.error": "failed:backward-sums-the-outputs", "4.predict.shape": "failed:shape-of-the-input",
                   "5.predict.jacobian": "failed:jacobian-transposed", "5.produce.rows": "failed:jacobian-transposed"})

    p = params("cleo")
    pred = predictions(p)
    pred["ex7-predict"] = pred["ex7-predict"].replace("p7_shape = (3, 2)", "p7_shape = (2,)   # one gradient, like w")
    code = dict(CODE, **{"ex7-produce": (
        "def loss(w, xi, ti):\n    return (xi @ w - ti) ** 2\n\n\n"
        "def ex7_per_sample(w, X, t):\n    # the backward pass already goes through every sample\n"
        "    g, = torch.autograd.grad(((X @ w - t) ** 2).sum(), w)\n    return g\n\n\n"
        "def ex7_mean(w, X, t):\n    g, = torch.autograd.grad(((X @ w - t) ** 2).sum(), w)\n    return g")})
    out["cleo"] = ("expects per-sample gradients from one backward pass; sums instead of averaging",
                   {**pred, **code},
                   {"7.predict.shape": "failed:one-gradient-like-w", "7.produce.per_sample": "failed:one-pass-sums-the-samples",
                    "7.produce.mean": "failed:sum-instead-of-mean"})

    p = params("dev")
    pred = predictions(p)
    x0, x1, x2, v0, v1 = p["x0"], p["x1"], p["x2"], p["v0"], p["v1"]
    vjp = [v0 * x1 * x2 + v1 * 2 * x0, v0 * x0 * x2, v0 * x0 * x1 + v1]
    pred["ex3-predict"] = f"p3_returns = ({vec(vjp)},)\np3_x_grad = {vec(vjp)}"
    pred["ex6-predict"] = (f"p6_grad = {vec([x1 * x2, x0 * x2, x0 * x1])}\n"
                           f"p6_x_grad = {vec([x1 * x2, x0 * x2, x0 * x1])}\np6_vector = \"RuntimeError\"")
    code = dict(CODE, **{
        "ex3-produce": "def ex3(x, v):\n    F(x).backward(gradient=v)\n    return (x.grad,)",
        "ex6-produce": ("def f6(x):\n    return F(x)[0]\n\n\n"
                        "def ex6_grad(x):\n    f6(x).backward()\n    return x.grad\n\n\n"
                        "def ex6_vector(x):\n    return torch.func.grad(F)(x)")})
    out["dev"] = ("gets the numbers right but through backward(), so .grad is filled where it must stay None",
                  {**pred, **code},
                  {"3.predict.x_grad": "failed:grad-fills-grad-too", "3.produce.x_grad": "failed:grad-fills-grad-too",
                   "6.predict.x_grad": "failed:func-grad-fills-grad", "6.produce.x_grad": "failed:func-grad-fills-grad"})

    p = params("eve")
    code = dict(CODE, **{"ex5-produce": (
        "def ex5_rows(x):\n    rows = []\n    for i in range(2):\n"
        "        rows.append(torch.autograd.grad(F(x), x, grad_outputs=torch.ones(2))[0])\n"
        "    return torch.stack(rows)\n\n\n"
        "def ex5_functional(x):\n    return torch.autograd.functional.jacobian(F, x)\n\n\n"
        "def ex5_jacrev(x):\n    return torch.func.jacrev(F)(x)")})
    out["eve"] = ("weights every output with 1 for every row: each row is the sum of the rows of J",
                  {**predictions(p), **code}, {"5.produce.rows": "failed:ones-for-every-row"})
    return out
