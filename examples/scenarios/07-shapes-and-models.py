"""Example submissions of 07-shapes-and-models: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

from make_submissions import sig, vec


def model(p: dict) -> dict:
    """The numbers a student works out by hand for exercises 3-7."""
    X = [[p[f"X{n}0"], p[f"X{n}1"]] for n in range(4)]
    y = [p[f"y{n}"] for n in range(4)]
    yhat = [p["w0"] * xn[0] + p["w1"] * xn[1] + p["b0"] for xn in X]
    r = [a - b for a, b in zip(yhat, y, strict=True)]
    ybar = sum(y) / 4
    return {"weight": [0.5 * sum(rn * xn[j] for rn, xn in zip(r, X, strict=True)) for j in range(2)], "bias": 0.5 * sum(r),
            "wrong_weight": [0.5 * sum((a - ybar) * xn[j] for a, xn in zip(yhat, X, strict=True)) for j in range(2)],
            "wrong_bias": 0.5 * sum(a - ybar for a in yhat)}


def predictions(p: dict) -> dict[str, str]:
    m = model(p)
    s, k = p["s0"], p["k"]
    u = [p["u0"], p["u1"], p["u2"]]
    msum = sum(p[f"m{i}{j}"] for i in range(3) for j in range(2))
    return {
        "ex1-predict": f"p1_v_grad = {vec([3 * s, 3 * s])}\np1_s_grad = {sig(msum + 3 * (p['v0'] + p['v1']))}",
        "ex2-predict": f"p2_expand = {vec([2 * k * ui for ui in u])}\np2_index = {vec([4 * u[0], 0.0, 2 * u[2]])}",
        "ex3-predict": f"p3_weight = {vec(m['weight'])}\np3_bias = {sig(m['bias'])}\np3_W_grad = None",
        "ex4-predict": f"p4_unscaled = {vec([2 * g for g in m['weight']])}\np4_scaled = {vec(m['weight'])}",
        "ex5-predict": f"p5_weight = None\np5_bias = {sig(m['bias'])}",
        "ex6-predict": (f"p6_eval_requires_grad = True\np6_eval_weight = {vec(m['weight'])}\n"
                        f"p6_no_grad_requires_grad = False"),
        "ex7-predict": (f"p7_warning = \"UserWarning\"\np7_wrong_weight = {vec(m['wrong_weight'])}\n"
                        f"p7_wrong_bias = {sig(m['wrong_bias'])}"),
    }


CODE = {
    "ex1-produce": "def ex1(M, v, s):\n    ((M + v) * s).sum().backward()",
    "ex2-produce": ("def ex2_expand(u, k):\n    (u.expand(k, 3) ** 2).sum().backward()\n\n\n"
                    "def ex2_index(u, k):\n    (u[[0, 2, 0]] ** 2).sum().backward()"),
    "ex3-produce": ("def ex3(W, b, X, y):\n    lin = make_linear(W, b)\n    F.mse_loss(lin(X), y).backward()\n"
                    "    return (lin.weight.grad, lin.bias.grad)"),
    "ex4-produce": ("def ex4_unscaled(W, b, X, y):\n    lin = make_linear(W, b)\n    for i in (0, 2):\n"
                    "        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2])\n        loss.backward()\n"
                    "    return (lin.weight.grad, lin.bias.grad)\n\n\n"
                    "def ex4_scaled(W, b, X, y):\n    lin = make_linear(W, b)\n    for i in (0, 2):\n"
                    "        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2])\n        (loss / 2).backward()\n"
                    "    return (lin.weight.grad, lin.bias.grad)"),
    "ex5-produce": ("def ex5(W, b, X, y):\n    lin = make_linear(W, b)\n    lin.weight.requires_grad_(False)\n"
                    "    F.mse_loss(lin(X), y).backward()\n    return (lin.weight.grad, lin.bias.grad)"),
    "ex6-produce": ("def ex6_eval(W, b, X, y):\n    lin = make_linear(W, b)\n"
                    "    model = torch.nn.Sequential(lin, torch.nn.Dropout(p=0.5))\n    model.eval()\n"
                    "    out = model(X)\n    F.mse_loss(out, y).backward()\n    return (out.requires_grad, lin.weight.grad)\n\n\n"
                    "def ex6_no_grad(W, b, X, y):\n    lin = make_linear(W, b)\n"
                    "    model = torch.nn.Sequential(lin, torch.nn.Dropout(p=0.5))\n    model.eval()\n"
                    "    with torch.no_grad():\n        out = model(X)\n    return out.requires_grad"),
    "ex7-produce": ("def ex7_wrong(W, b, X, y):\n    lin = make_linear(W, b)\n    F.mse_loss(lin(X), y).backward()\n"
                    "    return (lin.weight.grad, lin.bias.grad)\n\n\n"
                    "def ex7_fixed(W, b, X, y):\n    lin = make_linear(W, b)\n    F.mse_loss(lin(X), y.unsqueeze(1)).backward()\n"
                    "    return (lin.weight.grad, lin.bias.grad)"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    p = params("ben")
    m = model(p)
    wrong = predictions(p)
    wrong["ex1-predict"] = (f"p1_v_grad = {vec([p['s0'], p['s0']])}   # d((M + v) * s)/dv = s\n"
                            + wrong["ex1-predict"].split("\n")[1])
    wrong["ex2-predict"] = (wrong["ex2-predict"].split("\n")[0]
                            + f"\np2_index = {vec([2 * p['u0'], 0.0, 2 * p['u2']])}   # 2u where u is used")
    wrong["ex4-predict"] = f"p4_unscaled = {vec(m['weight'])}   # the same as the full batch\np4_scaled = {vec(m['weight'])}"
    wrong["ex7-predict"] = (f"p7_warning = \"UserWarning\"\np7_wrong_weight = {vec(m['weight'])}   # as in exercise 3\n"
                            f"p7_wrong_bias = {sig(m['wrong_bias'])}")
    out["ben"] = ("one gradient per use forgotten: broadcast copies and repeated indices not summed, "
                  "accumulation taken for averaging, the broadcast target overlooked",
                  {**wrong, **CODE},
                  {"1.predict.v_grad": "failed:copies-not-summed", "2.predict.index": "failed:repeats-not-summed",
                   "4.predict.unscaled": "failed:accumulation-averages",
                   "7.predict.wrong_weight": "failed:broadcast-overlooked"})

    p = params("cleo")
    code = dict(CODE, **{"ex4-produce": CODE["ex4-produce"].replace(
        "    for i in (0, 2):\n", "    for i in (0, 2):\n        lin.zero_grad()   # a clean start for each micro-batch\n")})
    out["cleo"] = ("zeroes the gradients inside the micro-batch loop, so only the last micro-batch counts",
                   {**predictions(p), **code},
                   {"4.produce.unscaled": "failed:zero-grad-in-the-loop",
                    "4.produce.scaled": "failed:zero-grad-in-the-loop-halved"})

    p = params("dev")
    pred = predictions(p)
    pred["ex6-predict"] = ("p6_eval_requires_grad = False   # eval mode: no gradients\np6_eval_weight = None\n"
                           "p6_no_grad_requires_grad = False")
    code = dict(CODE, **{"ex6-produce": CODE["ex6-produce"].replace(
        "    with torch.no_grad():\n        out = model(X)\n", "    out = model(X)   # eval() already turns gradients off\n")})
    out["dev"] = ("takes model.eval() for torch.no_grad()", {**pred, **code},
                  {"6.predict.eval_requires_grad": "failed:eval-is-no-grad",
                   "6.predict.eval_weight": "failed:eval-stops-gradients",
                   "6.produce.no_grad": "failed:eval-instead-of-no-grad"})

    p = params("eve")
    code = dict(CODE, **{"ex7-produce": CODE["ex7-produce"].replace("y.unsqueeze(1)", "y.unsqueeze(0)")})
    out["eve"] = ("\"fixes\" the target with unsqueeze(0): (1, 4) still broadcasts against (4, 1)",
                  {**predictions(p), **code}, {"7.produce.fixed": "failed:still-broadcasts"})

    p = params("finn")
    code = dict(CODE, **{"ex5-produce": (
        "def ex5(W, b, X, y):\n    lin = make_linear(W, b)\n    F.mse_loss(lin(X), y).backward()\n"
        "    lin.weight.requires_grad_(False)   # frozen\n    return (lin.weight.grad, lin.bias.grad)")})
    out["finn"] = ("freezes the weight after backward, too late", {**predictions(p), **code},
                   {"5.produce.grads": "failed:frozen-after-backward"})
    return out
