"""Example submissions of 08-calculus-vs-autograd: each scenario is the released notebook with some
cells answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig


def sigmoid_prime(s: float) -> float:
    return math.exp(-s) / (1 + math.exp(-s)) ** 2


def predictions(p: dict) -> dict[str, str]:
    u, s, c, h = p["u"], p["s"], p["c"], p["h"]
    return {
        "ex1-predict": "p1_relu = 0.0\np1_maximum = 0.5",
        "ex2-predict": "p2_maximum = 0.5\np2_where_x = 1.0\np2_where_y = 0.0",
        "ex3-predict": "p3_lo = 1.0\np3_hi = 1.0",
        "ex4-predict": f"p4_sqrt = (math.inf, -math.inf, math.nan)\np4_log = (math.inf, -math.inf, {sig(1 / u)})",
        "ex5-predict": "p5_trap = math.nan\np5_safe = 0.0",
        "ex6-predict": "p6_sqrt_square = math.nan\np6_abs = 0.0",
        "ex7-predict": f"p7_exact = {sig(sigmoid_prime(s))}\np7_float32 = 0.0",
        "ex8-predict": f"p8_central = {sig(3 * c * c + h * h)}\np8_difference = {sig(h * h)}",
        "ex9-predict": "p9_correct = True\np9_wrong = \"GradcheckError\"",
    }


CODE = {
    "ex1-produce": ("def ex1_relu(x, a):\n    (torch.relu(x) + torch.relu(a)).backward()\n\n\n"
                    "def ex1_maximum(x, a):\n    zero = torch.zeros(())\n"
                    "    (torch.maximum(x, zero) + torch.maximum(a, zero)).backward()"),
    "ex2-produce": ("def ex2_maximum(x, y):\n    torch.maximum(x, y).backward()\n\n\n"
                    "def ex2_where(x, y):\n    torch.where(x >= y, x, y).backward()"),
    "ex3-produce": "def ex3(x, y, lo, hi):\n    (torch.clamp(x, lo, hi) + torch.clamp(y, lo, hi)).backward()",
    "ex4-produce": ("def ex4_sqrt(x, n, u):\n    (torch.sqrt(x) + torch.sqrt(n) + torch.sqrt(u)).backward()\n\n\n"
                    "def ex4_log(x, n, u):\n    (torch.log(x) + torch.log(n) + torch.log(u)).backward()"),
    "ex5-produce": ("def ex5_trap(x, y):\n    f = lambda t: torch.where(t > 0, torch.sqrt(t), 0.0)\n"
                    "    (f(x) + f(y)).backward()\n\n\n"
                    "def ex5_safe(x, y):\n    def f(t):\n        ok = t > 0\n"
                    "        return torch.where(ok, torch.sqrt(torch.where(ok, t, 1.0)), 0.0)\n"
                    "    (f(x) + f(y)).backward()"),
    "ex6-produce": ("def ex6_sqrt_square(x, a):\n    (torch.sqrt(x ** 2) + torch.sqrt(a ** 2)).backward()\n\n\n"
                    "def ex6_abs(x, a):\n    (torch.abs(x) + torch.abs(a)).backward()"),
    "ex7-produce": "def ex7(x, w):\n    torch.sigmoid(x).backward()\n    torch.sigmoid(w).backward()",
    "ex8-produce": ("def ex8_central(x, h):\n    f = lambda t: t ** 3\n    return (f(x + h) - f(x - h)) / (2 * h)\n\n\n"
                    "def ex8_autograd(x, h):\n    return torch.autograd.grad(x ** 3, x)[0]"),
    "ex9-produce": ("def ex9_correct(w):\n    return torch.autograd.gradcheck(lambda t: t ** 3, (w,))\n\n\n"
                    "def ex9_wrong(w):\n    class BadCube(torch.autograd.Function):\n        @staticmethod\n"
                    "        def forward(ctx, t):\n            ctx.save_for_backward(t)\n            return t ** 3\n\n"
                    "        @staticmethod\n        def backward(ctx, g):\n            (t,) = ctx.saved_tensors\n"
                    "            return g * t ** 2   # wrong: forgets the factor 3\n\n"
                    "    return torch.autograd.gradcheck(BadCube.apply, (w,))"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    # Ben answers with calculus: the symmetric subgradient 1/2 at every kink, tie and bound, and the
    # derivative of the function as written on paper (0 for the where and for sqrt(x**2) at 0).
    p = params("ben")
    wrong = predictions(p)
    wrong["ex1-predict"] = "p1_relu = 0.5   # Heaviside(0) = 1/2\np1_maximum = 0.5"
    wrong["ex2-predict"] = "p2_maximum = 0.5\np2_where_x = 0.5   # a tie: half each\np2_where_y = 0.5"
    wrong["ex3-predict"] = "p3_lo = 0.5\np3_hi = 0.5"
    wrong["ex5-predict"] = "p5_trap = 0.0   # the where picks 0, whose derivative is 0\np5_safe = 0.0"
    wrong["ex6-predict"] = "p6_sqrt_square = 0.0   # sqrt(x**2) = |x|, and sign(0) = 0\np6_abs = 0.0"
    wrong["ex7-predict"] = f"p7_exact = {sig(sigmoid_prime(p['s']))}\np7_float32 = {sig(sigmoid_prime(p['s']))}"
    out["ben"] = ("predicts with calculus at kinks and singular points (right code)", {**wrong, **CODE},
                  {"1.predict.relu": "failed:kink-gets-half", "2.predict.where_x": "failed:half-each",
                   "2.predict.where_y": "failed:half-each", "3.predict.lo": "failed:bound-gets-half",
                   "3.predict.hi": "failed:bound-gets-half", "5.predict.trap": "failed:where-drops-the-branch",
                   "6.predict.sqrt_square": "failed:simplified-to-abs", "7.predict.float32": "failed:float32-keeps-it"})

    # Cleo treats -0.0 as plain 0, and "fixes" the where trap by cleaning the output, which has no nan.
    p = params("cleo")
    pred = predictions(p)
    pred["ex4-predict"] = (f"p4_sqrt = (math.inf, math.inf, math.nan)   # -0.0 is just 0\n"
                           f"p4_log = (math.inf, math.inf, {sig(1 / p['u'])})")
    code = dict(CODE, **{"ex5-produce": CODE["ex5-produce"].split("\n\n\n")[0] + (
        "\n\n\ndef ex5_safe(x, y):\n    f = lambda t: torch.nan_to_num(torch.where(t > 0, torch.sqrt(t), 0.0))\n"
        "    (f(x) + f(y)).backward()")})
    out["cleo"] = ("ignores the sign of -0.0; cleans the output with nan_to_num instead of the input", {**pred, **code},
                   {"4.predict.sqrt": "failed:sqrt-negative-zero-is-zero", "4.predict.log": "failed:log-negative-zero-is-zero",
                    "5.produce.safe_x": "failed:still-nan"})

    # Dev works in float64 "to be safe" inside the float32 exercise, and uses a forward difference.
    p = params("dev")
    pred = predictions(p)
    c, h = p["c"], p["h"]
    pred["ex7-predict"] = (f"p7_exact = {sig(sigmoid_prime(p['s']))}\n"
                           f"p7_float32 = {sig(sigmoid_prime(p['s']))}   # float32 goes down to 1e-38")
    pred["ex8-predict"] = f"p8_central = {sig(((c + h) ** 3 - c ** 3) / h)}\np8_difference = {sig(3 * c * h + h * h)}"
    code = dict(CODE, **{
        "ex7-produce": "def ex7(x, w):\n    torch.sigmoid(x.double()).backward()   # more precise\n    torch.sigmoid(w).backward()",
        "ex8-produce": ("def ex8_central(x, h):\n    return ((x + h) ** 3 - x ** 3) / h\n\n\n"
                        "def ex8_autograd(x, h):\n    return torch.autograd.grad(x ** 3, x)[0]")})
    out["dev"] = ("computes the float32 gradient through float64; a forward difference instead of a central one",
                  {**pred, **code},
                  {"7.predict.float32": "failed:float32-keeps-it", "7.produce.float32": "failed:float32-keeps-it",
                   "8.predict.central": "failed:forward-difference",
                   "8.predict.difference": "failed:forward-difference-error",
                   "8.produce.central": "failed:forward-difference"})

    # Eve thinks gradcheck returns False on a mismatch, and catches the exception to make it so.
    p = params("eve")
    pred = predictions(p)
    pred["ex9-predict"] = "p9_correct = True\np9_wrong = False"
    code = dict(CODE, **{"ex9-produce": CODE["ex9-produce"].replace(
        "    return torch.autograd.gradcheck(BadCube.apply, (w,))",
        "    try:\n        return torch.autograd.gradcheck(BadCube.apply, (w,))\n    except Exception:\n"
        "        return False")})
    out["eve"] = ("believes gradcheck returns False on a mismatch, and catches its exception", {**pred, **code},
                  {"9.predict.wrong": "failed:returns-false-on-mismatch",
                   "9.produce.wrong": "failed:returns-false-on-mismatch"})

    # Hana writes clamp by hand with maximum and minimum: the same function, a tie-splitting backward.
    p = params("hana")
    code = dict(CODE, **{"ex3-produce": (
        "def ex3(x, y, lo, hi):\n    lo_t, hi_t = torch.tensor(lo), torch.tensor(hi)\n"
        "    my_clamp = lambda t: torch.minimum(torch.maximum(t, lo_t), hi_t)\n"
        "    (my_clamp(x) + my_clamp(y)).backward()")})
    out["hana"] = ("clamp written as minimum(maximum(x, lo), hi): the same function, ties split in half",
                   {**predictions(p), **code},
                   {"3.produce.lo": "failed:bound-gets-half", "3.produce.hi": "failed:bound-gets-half"})

    # Ivy takes a tie for Python's max, reads log's gradient as nan outside its domain, takes abs'(0) as 1,
    # trusts the central difference as exact, and forgets to return what gradcheck returns.
    p = params("ivy")
    pred = predictions(p)
    pred["ex4-predict"] = ("p4_sqrt = (math.inf, -math.inf, math.nan)\n"
                           "p4_log = (math.inf, -math.inf, math.nan)   # log(u) is nan below 0")
    pred["ex6-predict"] = "p6_sqrt_square = math.nan\np6_abs = 1.0   # the x >= 0 side"
    pred["ex8-predict"] = f"p8_central = {sig(3 * p['c'] ** 2 + p['h'] ** 2)}\np8_difference = 0.0"
    code = dict(CODE, **{
        "ex2-produce": CODE["ex2-produce"].replace("torch.maximum(x, y).backward()", "max(x, y).backward()"),
        "ex9-produce": CODE["ex9-produce"].replace("    return torch.autograd.gradcheck(lambda t: t ** 3, (w,))",
                                                   "    torch.autograd.gradcheck(lambda t: t ** 3, (w,))")})
    out["ivy"] = ("Python's max at a tie, log's gradient nan below 0, abs'(0) = 1, an exact central difference, "
                  "gradcheck's result not returned", {**pred, **code},
                  {"2.produce.maximum_x": "failed:first-input-wins", "2.produce.maximum_y": "failed:python-max-leaves-y-out",
                   "4.predict.log": "failed:log-domain-nan", "6.predict.abs": "failed:zero-counts-as-positive",
                   "8.predict.difference": "failed:central-is-exact", "9.produce.correct": "failed:returns-nothing"})
    return out
