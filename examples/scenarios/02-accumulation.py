"""Example submissions of 02-accumulation: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

from make_submissions import sig


def predictions(p: dict) -> dict[str, str]:
    x, y, k, w, lr, mu, a, b = p["x0"], p["y0"], p["k"], p["w0"], p["lr0"], p["mu0"], p["a0"], p["b0"]
    return {
        "ex1-predict": f"p1_sum = {sig(2 * k * x)}\np1_mean = {sig(2 * x)}",
        "ex2-predict": f"p2_zero_grad = 0.0\np2_zero_saved = 0.0\np2_none_grad = None\np2_none_saved = {sig(3 * x * x)}",
        "ex3-predict": f"p3_fresh = \"AttributeError\"\np3_x_grad = {y!r}\np3_y_grad = {x!r}",
        "ex4-predict": "p4_optimizer = None\np4_keep = [0.0, 0.0]\np4_module = None",
        "ex5-predict": f"p5_x_grad = {sig(2 * x)}\np5_y_none = None\np5_y_zeros = 0.0",
        "ex6-predict": f"p6_zeros = {sig(w - lr * 2 * w * (1 + mu))}\np6_none = {sig(w - lr * 2 * w)}",
        "ex7-predict": f"p7_together = {sig(a + 2 * b * w)}\np7_apart = {sig(a + 2 * b * w)}",
    }


CODE = {
    "ex1-produce": ("def ex1_sum(x, k):\n    for _ in range(k):\n        (x ** 2).backward()\n\n\n"
                    "def ex1_mean(x, k):\n    for _ in range(k):\n        loss = x ** 2 / k\n        loss.backward()"),
    "ex2-produce": ("def ex2_zero(x):\n    (x ** 3).backward()\n    saved = x.grad\n    x.grad.zero_()\n    return saved\n\n\n"
                    "def ex2_none(x):\n    (x ** 3).backward()\n    saved = x.grad\n    x.grad = None\n    return saved"),
    "ex3-produce": ("def ex3_fresh(x, y):\n    x.grad.zero_()\n\n\n"
                    "def ex3_safe(x, y):\n    for t in [x, y]:\n        if t.grad is not None:\n            t.grad.zero_()\n"
                    "    (x * y).backward()"),
    "ex4-produce": ("def ex4_optimizer(w):\n    opt = torch.optim.SGD([w], lr=0.1)\n    (w ** 2).sum().backward()\n"
                    "    opt.zero_grad()\n\n\n"
                    "def ex4_keep(w):\n    opt = torch.optim.SGD([w], lr=0.1)\n    (w ** 2).sum().backward()\n"
                    "    opt.zero_grad(set_to_none=False)\n\n\n"
                    "def ex4_module(w):\n    lin = torch.nn.Linear(2, 1)\n    lin(w).sum().backward()\n"
                    "    lin.zero_grad()\n    return lin.weight.grad"),
    "ex5-produce": ("def ex5_none(x, y):\n    opt = torch.optim.SGD([x, y], lr=0.1)\n    (x * y).backward()\n"
                    "    opt.zero_grad()\n    (x ** 2).backward()\n\n\n"
                    "def ex5_zeros(x, y):\n    opt = torch.optim.SGD([x, y], lr=0.1)\n    (x * y).backward()\n"
                    "    opt.zero_grad(set_to_none=False)\n    (x ** 2).backward()"),
    "ex6-produce": ("def ex6_zeros(w, lr, mu):\n    opt = torch.optim.SGD([w], lr=lr, momentum=mu)\n"
                    "    (w ** 2).backward()\n    opt.step()\n    opt.zero_grad(set_to_none=False)\n    opt.step()\n"
                    "    return w\n\n\n"
                    "def ex6_none(w, lr, mu):\n    opt = torch.optim.SGD([w], lr=lr, momentum=mu)\n"
                    "    (w ** 2).backward()\n    opt.step()\n    opt.zero_grad()\n    opt.step()\n    return w"),
    "ex7-produce": ("def ex7_together(w, a, b):\n    (a * w + b * w ** 2).backward()\n\n\n"
                    "def ex7_apart(w, a, b):\n    (a * w).backward()\n    (b * w ** 2).backward()"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    # Ben thinks backward() overwrites .grad: every pass leaves only its own derivative.
    p = params("ben")
    pred = predictions(p)
    x, k, w, a, b = p["x0"], p["k"], p["w0"], p["a0"], p["b0"]
    pred["ex1-predict"] = f"p1_sum = {sig(2 * x)}   # the last pass wins\np1_mean = {sig(2 * x / k)}"
    pred["ex7-predict"] = f"p7_together = {sig(a + 2 * b * w)}\np7_apart = {sig(2 * b * w)}   # the second pass replaces the first"
    out["ben"] = ("thinks backward() overwrites .grad (predictions), right code", {**pred, **CODE},
                  {"1.predict.sum": "failed:backward-overwrites", "1.predict.mean": "failed:last-scaled-pass-only",
                   "7.predict.apart": "failed:second-pass-replaces"})

    # Cleo thinks saved = x.grad is a copy, and "zeroes" by putting a new zero tensor in .grad.
    p = params("cleo")
    pred = predictions(p)
    x = p["x0"]
    pred["ex2-predict"] = (f"p2_zero_grad = 0.0\np2_zero_saved = {sig(3 * x * x)}   # saved is my copy\n"
                           f"p2_none_grad = None\np2_none_saved = {sig(3 * x * x)}")
    code = dict(CODE, **{"ex2-produce": CODE["ex2-produce"].replace(
        "    x.grad.zero_()\n", "    x.grad = torch.zeros_like(x.grad)   # a fresh zero gradient\n")})
    out["cleo"] = ("thinks a saved .grad is a copy; replaces .grad instead of zeroing it in place", {**pred, **code},
                   {"2.predict.zero_saved": "failed:saved-is-a-copy", "2.produce.zero_saved": "failed:saved-is-a-copy"})

    # Dev learned PyTorch 1.x: zero_grad() fills zeros, so "zero" and "None" are the same to him.
    p = params("dev")
    pred = predictions(p)
    w, lr, mu = p["w0"], p["lr0"], p["mu0"]
    moved = sig(w - lr * 2 * w * (1 + mu))
    pred["ex4-predict"] = "p4_optimizer = [0.0, 0.0]\np4_keep = [0.0, 0.0]\np4_module = [[0.0, 0.0]]"
    pred["ex5-predict"] = pred["ex5-predict"].replace("p5_y_none = None", "p5_y_none = 0.0")
    pred["ex6-predict"] = f"p6_zeros = {moved}\np6_none = {moved}"
    code = dict(CODE, **{"ex6-produce": CODE["ex6-produce"].replace(
        "    opt.zero_grad()\n", "    w.grad.zero_()   # same as opt.zero_grad()\n")})
    out["dev"] = ("pre-2.0 mental model: zero_grad() means zeros; resets by hand with zero_()", {**pred, **code},
                  {"4.predict.optimizer": "failed:zeros-not-none", "4.predict.module": "failed:module-zeros-not-none",
                   "5.predict.y_none": "failed:none-is-zero", "6.predict.none": "failed:none-is-zero",
                   "6.produce.none": "failed:none-is-zero"})

    # Eve expects zero_() to work on a fresh leaf, and zeroes without looking for None.
    p = params("eve")
    pred = predictions(p)
    pred["ex3-predict"] = pred["ex3-predict"].replace('"AttributeError"', '"RuntimeError"')
    code = dict(CODE, **{"ex3-produce": ("def ex3_fresh(x, y):\n    x.grad.zero_()\n\n\n"
                                         "def ex3_safe(x, y):\n    x.grad.zero_()\n    y.grad.zero_()\n"
                                         "    (x * y).backward()")})
    out["eve"] = ("zeroes a .grad that is still None", {**pred, **code},
                  {"3.predict.fresh": "failed:a-torch-error", "3.produce.x_grad": "error", "3.produce.y_grad": "error"})

    # Finn returns the numbers he worked out for his own point.
    p = params("finn")
    w, lr, mu = p["w0"], p["lr0"], p["mu0"]
    code = dict(CODE, **{"ex6-produce": (
        f"def ex6_zeros(w, lr, mu):\n    return torch.tensor({w - lr * 2 * w * (1 + mu)!r})\n\n\n"
        f"def ex6_none(w, lr, mu):\n    return torch.tensor({w - lr * 2 * w!r})")})
    out["finn"] = ("hard-coded his own answers: right at his point only", {**predictions(p), **code},
                   {"6.produce.zeros": "failed", "6.produce.none": "failed"})
    return out
