"""Example submissions of 03-leaves: each scenario is the released notebook with some cells answered
the way a student would (predictions as literals rounded to 4 significant figures for that
student's own parameters; code with a realistic mistake), and the statuses a correct grader must
give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

from make_submissions import sig


def predictions(p: dict) -> dict[str, str]:
    x, c, k, v, u, s = p["x0"], p["c0"], p["k"], p["v0"], p["u0"], p["s0"]
    return {
        "ex1-predict": f"p1_y_grad = None\np1_warning = \"UserWarning\"\np1_x_grad = {sig(2 * c * c * x)}",
        "ex2-predict": f"p2_y_grad = {sig(2 * c * x)}\np2_x_grad = {sig(2 * c * c * x)}\np2_y_grad_k = {sig(2 * k * c * x)}",
        "ex3-predict": f"p3_is_leaf = False\np3_w_grad = None\np3_leaf_grad = {sig(3 * v * v)}",
        "ex4-predict": f"p4_plain = (False, True)\np4_mixed = (True, False)\np4_x_grad = {sig(2 * (u + s))}\np4_c_grad = None",
        "ex5-predict": f"p5_is_leaf = True\np5_x2_grad = {sig(3 * x * x)}\np5_x_grad = None",
        "ex6-predict": f"p6_flag = \"RuntimeError\"\np6_x_grad = {sig(2 * x)}",
    }


CODE = {
    "ex1-produce": "def ex1(x, c):\n    y = c * x\n    z = y * y\n    z.backward()\n    return y.grad",
    "ex2-produce": ("def ex2(x, c, k):\n    y = c * x\n    y.retain_grad()\n    z = y * y\n    z.backward()\n    return y.grad\n\n\n"
                    "def ex2_passes(x, c, k):\n    y = c * x\n    y.retain_grad()\n    z = y * y\n    for _ in range(k):\n"
                    "        z.backward(retain_graph=True)\n    return y.grad"),
    "ex3-produce": ("def ex3_bug(v):\n    leaf = torch.tensor(v, requires_grad=True)\n    w = leaf.double()\n"
                    "    (w ** 3).backward()\n    return w.is_leaf, w.grad, leaf.grad\n\n\n"
                    "def ex3_fix(v):\n    w = torch.tensor(v, dtype=torch.float64, requires_grad=True)\n"
                    "    (w ** 3).backward()\n    return w.is_leaf, w.grad"),
    "ex4-produce": ("def ex4_plain(x, c):\n    d = c * 3\n    return d.requires_grad, d.is_leaf\n\n\n"
                    "def ex4_mixed(x, c):\n    m = x + c\n    (m * m).backward()\n    return m.requires_grad, m.is_leaf"),
    "ex5-produce": ("def ex5(x):\n    x2 = x.detach().requires_grad_()\n    (x2 ** 3).backward()\n"
                    "    return x2.is_leaf, x2.grad"),
    "ex6-produce": ("def ex6_flag(x):\n    y = x * 2\n    y.requires_grad = False\n\n\n"
                    "def ex6_detach(x):\n    y = (x * 2).detach()\n    z = y * x\n    z.backward()"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    # Ben expects every tensor in the graph to get a .grad, and no warning.
    p = params("ben")
    pred = predictions(p)
    x, c, v = p["x0"], p["c0"], p["v0"]
    pred["ex1-predict"] = f"p1_y_grad = {sig(2 * c * x)}\np1_warning = None   # no warning\np1_x_grad = {sig(2 * c * c * x)}"
    pred["ex3-predict"] = f"p3_is_leaf = True\np3_w_grad = {sig(3 * v * v)}\np3_leaf_grad = None"
    out["ben"] = ("expects every tensor in the graph to get a .grad (predictions), right code", {**pred, **CODE},
                  {"1.predict.y_grad": "failed:every-tensor-gets-a-grad", "1.predict.warning": "failed:no-warning",
                   "3.predict.is_leaf": "failed:w-is-the-leaf", "3.predict.w_grad": "failed:w-gets-the-gradient",
                   "3.predict.leaf_grad": "failed:gradient-stops-at-w"})

    # Cleo "fixes" the float64 bug by moving the conversion, and copies with clone() instead of detach().
    p = params("cleo")
    code = dict(CODE, **{
        "ex3-produce": CODE["ex3-produce"].replace(
            "w = torch.tensor(v, dtype=torch.float64, requires_grad=True)",
            "w = torch.tensor(v, requires_grad=True).to(torch.float64)"),
        "ex5-produce": CODE["ex5-produce"].replace("x.detach()", "x.clone()")})
    out["cleo"] = ("converts after requires_grad=True in her fix; copies with clone() instead of detach()",
                   {**predictions(p), **code},
                   {"3.produce.fix": "failed:converted-after-requires-grad", "5.produce.new_leaf": "failed:copy-keeps-history",
                    "5.produce.x_grad": "failed:gradient-reaches-x"})

    # Dev thinks every result of an operation is a non-leaf, that an unused gradient is zero, and
    # that detach() works in place.
    p = params("dev")
    pred = predictions(p)
    pred["ex4-predict"] = (pred["ex4-predict"].replace("p4_plain = (False, True)", "p4_plain = (False, False)")
                           .replace("p4_c_grad = None", "p4_c_grad = 0.0"))
    code = dict(CODE, **{"ex6-produce": CODE["ex6-produce"].replace(
        "    y = (x * 2).detach()\n", "    y = x * 2\n    y.detach()   # stop the gradient through y\n")})
    out["dev"] = ("thinks results are never leaves and detach() works in place", {**pred, **code},
                  {"4.predict.plain": "failed:results-are-never-leaves", "4.predict.c_grad": "failed:none-is-zero",
                   "6.produce.x_grad": "failed:both-paths-counted"})

    # Eve hands back None without reading y.grad, and forgets retain_grad() in the k-pass version.
    p = params("eve")
    code = dict(CODE, **{
        "ex1-produce": "def ex1(x, c):\n    ((c * x) * (c * x)).backward()\n    return None   # y is not a leaf",
        "ex2-produce": CODE["ex2-produce"].replace(
            "    y = c * x\n    y.retain_grad()\n    z = y * y\n    for", "    y = c * x\n    z = y * y\n    for")})
    out["eve"] = ("returns None without reading y.grad (no warning); forgets retain_grad() once",
                  {**predictions(p), **code}, {"1.produce.warning": "failed", "2.produce.y_grad_k": "failed:y-grad-not-kept"})

    # Finn runs backward() k times over one graph without retain_graph=True.
    p = params("finn")
    code = dict(CODE, **{"ex2-produce": CODE["ex2-produce"].replace("z.backward(retain_graph=True)", "z.backward()")})
    out["finn"] = ("a second backward() through a freed graph raises", {**predictions(p), **code},
                   {"2.produce.y_grad_k": "error", "2.produce.x_grad_k": "error"})
    return out
