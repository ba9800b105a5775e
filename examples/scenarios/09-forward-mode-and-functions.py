"""Example submissions of 09-forward-mode-and-functions: each scenario is the released notebook with
some cells answered the way a student would (predictions as literals rounded to 4 significant figures
for that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig


def _values(p: dict) -> dict[str, list[float]]:
    """The answers at point p, unrounded: exercise -> numbers."""
    x0, x1, t0, t1 = p["x0"], p["x1"], p["t0"], p["t1"]
    a, b, t = p["a"], p["b"], p["t"]
    return {
        "f1": [x0 * x0 * x1, x0 + x1 ** 3],
        "jv": [2 * x0 * x1 * t0 + x0 * x0 * t1, t0 + 3 * x1 * x1 * t1],
        "vj": [t0 * 2 * x0 * x1 + t1, t0 * x0 * x0 + t1 * 3 * x1 * x1],
        "f2": [a * a * b + b ** 3, 2 * a * b * t],
    }


def _lst(xs) -> str:
    return "[" + ", ".join(sig(x) for x in xs) + "]"


def predictions(p: dict) -> dict[str, str]:
    v = _values(p)
    w0, w1, w2, s, v0, v1 = p["w0"], p["w1"], p["w2"], p["s"], p["v0"], p["v1"]
    u, r, k = p["u"], p["r"], p["k"]
    f2, tan = v["f2"]
    return {
        "ex1-predict": f"p1_jvp = ({_lst(v['f1'])}, {_lst(v['jv'])})\np1_vjp = ({_lst(v['vj'])},)",
        "ex2-predict": (f"p2_dual = ({sig(f2)}, {sig(tan)})\np2_unreached = (None, 0.0)\n"
                        f"p2_after = ({sig(f2)}, None)\np2_no_level = \"RuntimeError\""),
        "ex3-predict": (f"p3_passes = (3, 1, 1, 3)\np3_grad = {_lst([2 * w0 * w1, w0 * w0, math.exp(w2)])}\n"
                        f"p3_deriv = {_lst([2 * s, 3 * s * s, math.exp(s)])}"),
        "ex4-predict": (f"p4_jacobian = [[{sig(v1)}, {sig(v0)}], [{sig(2 * v0)}, 0.0], [0.0, {sig(math.exp(v1))}]]\n"
                        "p4_where_fwd = 0.0\np4_where_rev = math.nan"),
        "ex5-predict": f"p5_needs = (True, False)\np5_c_grad = None\np5_y_grad = {sig(p['p'] * math.exp(p['q']))}",
        "ex6-predict": (f"p6_flags = (True, False)\np6_x_grad = [{sig(2 * p['pos'])}, 0.0]\n"
                        "p6_received = [0.0, 0.0]\np6_through = \"RuntimeError\""),
        "ex7-predict": f"p7_grad = {sig(k * r ** (k - 1))}\np7_too_few = \"RuntimeError\"\np7_not_none = \"RuntimeError\"",
        "ex8-predict": (f"p8_plain = ({sig(4 * u ** 3)}, {sig(12 * u * u)})\np8_once_backward = \"RuntimeError\"\n"
                        f"p8_once_grad = ({sig(4 * u ** 3)}, {sig(3 * u * u)})"),
        "ex9-predict": ("p9_gradcheck = True\np9_gradgradcheck = True\np9_once = \"GradcheckError\"\n"
                        "p9_float32 = \"GradcheckError\"\np9_warning = \"UserWarning\""),
    }


MULEXP = ('seen5 = {}\n\n\nclass MulExp(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, a, b):\n'
          '        e = torch.exp(b)\n        ctx.save_for_backward(a, e)\n        return a * e\n\n'
          '    @staticmethod\n    def backward(ctx, grad_output):\n        seen5["needs_input_grad"] = ctx.needs_input_grad\n'
          '        a, e = ctx.saved_tensors\n'
          '        grad_a = grad_output * e if ctx.needs_input_grad[0] else None\n'
          '        grad_b = grad_output * a * e if ctx.needs_input_grad[1] else None\n'
          '        return grad_a, grad_b\n\n\n')
EX5 = ('def ex5_one(x, y, c):\n    MulExp.apply(x, c).backward()\n    return seen5["needs_input_grad"]\n\n\n'
       'def ex5_both(x, y, c):\n    MulExp.apply(x, y).backward()')
POW = ('class Pow(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x, k):\n'
       '        ctx.save_for_backward(x)\n        ctx.k = k\n        return x ** k\n\n'
       '    @staticmethod\n    def backward(ctx, grad_output):\n        (x,) = ctx.saved_tensors\n'
       '        return grad_output * ctx.k * x ** (ctx.k - 1), None\n\n\n')
EX7 = ('def ex7_right(x, k):\n    Pow.apply(x, k).backward()\n\n\n'
       'def ex7_too_few(x, k):\n    class PowTooFew(Pow):\n        @staticmethod\n        def backward(ctx, g):\n'
       '            (x,) = ctx.saved_tensors\n            return g * ctx.k * x ** (ctx.k - 1)\n\n'
       '    PowTooFew.apply(x, k).backward()\n\n\n'
       'def ex7_not_none(x, k):\n    class PowNotNone(Pow):\n        @staticmethod\n        def backward(ctx, g):\n'
       '            (x,) = ctx.saved_tensors\n            return g * ctx.k * x ** (ctx.k - 1), torch.zeros(())\n\n'
       '    PowNotNone.apply(x, k).backward()')
CUBES = ('from torch.autograd.function import once_differentiable\n\n\n'
         'class Cube(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n'
         '        ctx.save_for_backward(x)\n        return x ** 3\n\n    @staticmethod\n    def backward(ctx, grad_output):\n'
         '        (x,) = ctx.saved_tensors\n        return grad_output * 3 * x ** 2\n\n\n'
         'class CubeOnce(Cube):\n    @staticmethod\n    @once_differentiable\n    def backward(ctx, grad_output):\n'
         '        (x,) = ctx.saved_tensors\n        return grad_output * 3 * x ** 2\n\n\n')
EX9 = ('def ex9_gradcheck(w, w32):\n    return torch.autograd.gradcheck(Cube.apply, (w,))\n\n\n'
       'def ex9_gradgradcheck(w, w32):\n    return torch.autograd.gradgradcheck(Cube.apply, (w,))\n\n\n'
       'def ex9_once(w, w32):\n    return torch.autograd.gradgradcheck(CubeOnce.apply, (w,))\n\n\n'
       'def ex9_float32(w, w32):\n    return torch.autograd.gradcheck(Cube.apply, (w32,))')

CODE = {
    "ex1-produce": ('def f1(u):\n    return torch.stack([u[0] ** 2 * u[1], u[0] + u[1] ** 3])\n\n\n'
                    'def ex1_jvp(x, v):\n    return torch.func.jvp(f1, (x,), (v,))\n\n\n'
                    'def ex1_vjp(x, v):\n    out, vjp_fn = torch.func.vjp(f1, x)\n    return vjp_fn(v)'),
    "ex2-produce": ('def f2(x, y):\n    return x ** 2 * y + y ** 3\n\n\n'
                    'def ex2_dual(x, y, t):\n    with fwAD.dual_level():\n        dual = fwAD.make_dual(x, t)\n'
                    '        return fwAD.unpack_dual(f2(dual, y))\n\n\n'
                    'def ex2_unreached(x, y, t):\n    with fwAD.dual_level():\n        fwAD.make_dual(x, t)\n'
                    '        ad = fwAD.unpack_dual(y ** 3).tangent\n'
                    '    jv = torch.func.jvp(lambda x: y ** 3, (x,), (t,))[1]\n    return ad, jv\n\n\n'
                    'def ex2_after(x, y, t):\n    with fwAD.dual_level():\n        out = f2(fwAD.make_dual(x, t), y)\n'
                    '    return fwAD.unpack_dual(out)\n\n\n'
                    'def ex2_no_level(x, y, t):\n    return fwAD.make_dual(x, t)'),
    "ex3-produce": ('def g3(w):\n    return w[0] ** 2 * w[1] + torch.exp(w[2])\n\n\n'
                    'def h3(s):\n    return torch.stack([s ** 2, s ** 3, torch.exp(s)])\n\n\n'
                    'def ex3_grad_jvp(w, s):\n    e = torch.eye(3)\n'
                    '    return tuple(torch.func.jvp(g3, (w,), (e[j],))[1] for j in range(3))\n\n\n'
                    'def ex3_grad_vjp(w, s):\n    _, vjp_fn = torch.func.vjp(g3, w)\n    return vjp_fn(torch.tensor(1.0))\n\n\n'
                    'def ex3_deriv_jvp(w, s):\n    return (torch.func.jvp(h3, (s,), (torch.tensor(1.0),))[1],)\n\n\n'
                    'def ex3_deriv_vjp(w, s):\n    _, vjp_fn = torch.func.vjp(h3, s)\n    e = torch.eye(3)\n'
                    '    return tuple(vjp_fn(e[i])[0] for i in range(3))'),
    "ex4-produce": ('def f4(v):\n    return torch.stack([v[0] * v[1], v[0] ** 2, torch.exp(v[1])])\n\n\n'
                    'def r4(t):\n    return torch.where(t > 0, torch.sqrt(t), 0.0)\n\n\n'
                    'def ex4_fwd(v, z):\n    return torch.func.jacfwd(f4)(v)\n\n\n'
                    'def ex4_rev(v, z):\n    return torch.func.jacrev(f4)(v)\n\n\n'
                    'def ex4_where_fwd(v, z):\n    return torch.func.jacfwd(r4)(z)\n\n\n'
                    'def ex4_where_rev(v, z):\n    return torch.func.jacrev(r4)(z)'),
    "ex5-produce": MULEXP + EX5,
    "ex6-produce": ('seen6 = {}\n\n\nclass ReluWithMask(torch.autograd.Function):\n    @staticmethod\n    def forward(ctx, x):\n'
                    '        mask = (x > 0).to(x.dtype)\n        ctx.mark_non_differentiable(mask)\n'
                    '        ctx.save_for_backward(mask)\n        return x * mask, mask\n\n'
                    '    @staticmethod\n    def backward(ctx, grad_out, grad_mask):\n        seen6["grad_mask"] = grad_mask\n'
                    '        (mask,) = ctx.saved_tensors\n        return grad_out * mask\n\n\n'
                    'def ex6_flags(x):\n    out, mask = ReluWithMask.apply(x)\n    return out.requires_grad, mask.requires_grad\n\n\n'
                    'def ex6_grad(x):\n    out, mask = ReluWithMask.apply(x)\n    (out ** 2 + mask).sum().backward()\n'
                    '    return seen6["grad_mask"]\n\n\n'
                    'def ex6_through(x):\n    out, mask = ReluWithMask.apply(x)\n    mask.sum().backward()'),
    "ex7-produce": POW + EX7,
    "ex8-produce": (CUBES +
                    'def ex8_plain(x):\n    d1, = torch.autograd.grad(x * Cube.apply(x), x, create_graph=True)\n'
                    '    d2, = torch.autograd.grad(d1, x)\n    return d1, d2\n\n\n'
                    'def ex8_once_backward(x):\n    d1, = torch.autograd.grad(x * CubeOnce.apply(x), x, create_graph=True)\n'
                    '    d1.backward()\n\n\n'
                    'def ex8_once_grad(x):\n    d1, = torch.autograd.grad(x * CubeOnce.apply(x), x, create_graph=True)\n'
                    '    d2, = torch.autograd.grad(d1, x)\n    return d1, d2'),
    "ex9-produce": EX9,
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}
    # Ben swaps forward and reverse mode: he thinks jvp gives v^T J (like backward) and vjp gives
    # J v, and that reverse mode needs a pass per input. J v and v^T J differ by (x0**2 - 1) * (t1, t0),
    # never 0 since |x0| >= 1.2.
    p = params("ben")
    v = _values(p)
    wrong = predictions(p)
    wrong["ex1-predict"] = (f"p1_jvp = ({_lst(v['f1'])}, {_lst(v['vj'])})   # the gradient-like product\n"
                            f"p1_vjp = ({_lst(v['jv'])},)")
    wrong["ex3-predict"] = wrong["ex3-predict"].replace("p3_passes = (3, 1, 1, 3)", "p3_passes = (1, 3, 3, 1)")
    code = dict(CODE, **{"ex1-produce": (
        'def f1(u):\n    return torch.stack([u[0] ** 2 * u[1], u[0] + u[1] ** 3])\n\n\n'
        'def ex1_jvp(x, v):\n    # (output, product with v): I used vjp for the product\n'
        '    out, vjp_fn = torch.func.vjp(f1, x)\n    return out, vjp_fn(v)[0]\n\n\n'
        'def ex1_vjp(x, v):\n    return (torch.func.jvp(f1, (x,), (v,))[1],)')})
    out["ben"] = ("swaps jvp and vjp: J v for v^T J, and the passes each needs", {**wrong, **code},
                  {"1.predict.jvp": "failed:jvp-gives-vtj", "1.predict.vjp": "failed:vjp-gives-jv",
                   "1.produce.jvp": "failed:jvp-gives-vtj", "1.produce.vjp": "failed:vjp-gives-jv",
                   "3.predict.passes": "failed:modes-swapped"})

    # Cleo returns only the gradients she thinks are needed: none for the Python int k, none for an
    # input that needs no gradient. Autograd wants one value per forward input, so both backwards raise.
    p = params("cleo")
    pred = predictions(p)
    pred["ex7-predict"] = (f"p7_grad = {sig(p['k'] * p['r'] ** (p['k'] - 1))}\n"
                           "p7_too_few = None   # k is a number: no gradient needed\np7_not_none = None")
    code = dict(CODE, **{
        "ex5-produce": MULEXP.replace(
            "        grad_a = grad_output * e if ctx.needs_input_grad[0] else None\n"
            "        grad_b = grad_output * a * e if ctx.needs_input_grad[1] else None\n"
            "        return grad_a, grad_b\n",
            "        if ctx.needs_input_grad[1]:\n            return grad_output * e, grad_output * a * e\n"
            "        return grad_output * e   # b needs no gradient\n") + EX5,
        "ex7-produce": POW.replace("x ** (ctx.k - 1), None\n", "x ** (ctx.k - 1)\n") + EX7})
    out["cleo"] = ("returns too few gradients from backward (nothing for k, nothing for an input without grad)",
                   {**pred, **code},
                   {"5.produce.needs": "error", "5.produce.x_grad": "error", "5.produce.c_grad": "error",
                    "7.predict.too_few": "failed:autograd-fills-none", "7.predict.not_none": "failed:extra-gradient-ignored",
                    "7.produce.grad": "error"})

    # Dev builds gradcheck's input himself and forgets dtype=torch.float64: in float32 gradcheck and
    # gradgradcheck raise GradcheckError at every m in the spec's range (measured on torch 2.13.0).
    p = params("dev")
    pred = predictions(p)
    pred["ex9-predict"] = pred["ex9-predict"].replace(
        'p9_float32 = "GradcheckError"', "p9_float32 = True   # float32 is precise enough").replace(
        'p9_warning = "UserWarning"', "p9_warning = None")
    code = dict(CODE, **{"ex9-produce": EX9.replace(
        "def ex9_gradcheck(w, w32):\n    return torch.autograd.gradcheck(Cube.apply, (w,))",
        "def ex9_gradcheck(w, w32):\n    x = torch.tensor(w.item(), requires_grad=True)\n"
        "    return torch.autograd.gradcheck(Cube.apply, (x,))").replace(
        "def ex9_gradgradcheck(w, w32):\n    return torch.autograd.gradgradcheck(Cube.apply, (w,))",
        "def ex9_gradgradcheck(w, w32):\n    x = torch.tensor(w.item(), requires_grad=True)\n"
        "    return torch.autograd.gradgradcheck(Cube.apply, (x,))")})
    out["dev"] = ("forgets float64 for gradcheck and gradgradcheck", {**pred, **code},
                  {"9.predict.float32": "failed:float32-precise-enough", "9.predict.warning": "failed:no-warning",
                   "9.produce.gradcheck": "error", "9.produce.gradgradcheck": "error"})

    # Eve answers with calculus where torch answers None, nan or a partial second derivative (right code).
    p = params("eve")
    f2, tan = _values(p)["f2"]
    pred = predictions(p)
    pred["ex2-predict"] = (f"p2_dual = ({sig(f2)}, {sig(tan)})\np2_unreached = (0.0, 0.0)   # y**3 does not move with x\n"
                           f"p2_after = ({sig(f2)}, {sig(tan)})\np2_no_level = \"RuntimeError\"")
    pred["ex4-predict"] = pred["ex4-predict"].replace("p4_where_rev = math.nan", "p4_where_rev = 0.0")
    u = p["u"]
    pred["ex8-predict"] = pred["ex8-predict"].replace(f"p8_once_grad = ({sig(4 * u ** 3)}, {sig(3 * u * u)})",
                                                      f"p8_once_grad = ({sig(4 * u ** 3)}, {sig(12 * u * u)})   # d(x**4)/dx twice")
    out["eve"] = ("predicts calculus' values where torch gives None, nan or a silently partial d2", {**pred, **CODE},
                  {"2.predict.unreached": "failed:calculus-zero", "2.predict.after": "failed:tangent-survives",
                   "4.predict.where_rev": "failed:forward-mode-zero", "8.predict.once_grad": "failed:calculus-d2"})

    # Fay thinks backward is asked for every gradient and a marked output gets None, and her MulExp
    # backward forgets the factor a in d(a e^b)/db (wrong at every point: |p| >= 1.2).
    p = params("fay")
    pred = predictions(p)
    pred["ex5-predict"] = (f"p5_needs = (True, True)\np5_c_grad = 0.0   # zero, since nothing flows to c\n"
                           f"p5_y_grad = {sig(p['p'] * math.exp(p['q']))}")
    pred["ex6-predict"] = pred["ex6-predict"].replace("p6_received = [0.0, 0.0]", "p6_received = None")
    code = dict(CODE, **{"ex5-produce": MULEXP.replace("grad_output * a * e if", "grad_output * e if") + EX5})
    out["fay"] = ("custom Function anatomy: needs_input_grad, marked outputs, and a backward missing a factor",
                  {**pred, **code},
                  {"5.predict.needs": "failed:all-flags-true", "5.predict.c_grad": "failed:none-is-zero",
                   "5.produce.y_grad": "failed:forgot-the-factor-a", "6.predict.received": "failed:none-received"})

    # Ivy takes one jvp with a tangent of ones for the whole gradient, expects forward mode to fall into
    # the where trap too, drops the factor k of the power rule (in her prediction and in Pow's backward),
    # and forgets ctx.mark_non_differentiable(mask) in ReluWithMask.
    p = params("ivy")
    pred = predictions(p)
    w0, w1, w2, r, k = p["w0"], p["w1"], p["w2"], p["r"], p["k"]
    pred["ex3-predict"] = pred["ex3-predict"].replace(
        f"p3_grad = {_lst([2 * w0 * w1, w0 * w0, math.exp(w2)])}",
        f"p3_grad = {sig(2 * w0 * w1 + w0 * w0 + math.exp(w2))}   # one jvp with tangent ones")
    pred["ex4-predict"] = pred["ex4-predict"].replace("p4_where_fwd = 0.0", "p4_where_fwd = math.nan")
    pred["ex7-predict"] = pred["ex7-predict"].replace(f"p7_grad = {sig(k * r ** (k - 1))}",
                                                      f"p7_grad = {sig(r ** (k - 1))}")
    code = dict(CODE, **{
        "ex3-produce": CODE["ex3-produce"].replace(
            "    e = torch.eye(3)\n    return tuple(torch.func.jvp(g3, (w,), (e[j],))[1] for j in range(3))",
            "    return (torch.func.jvp(g3, (w,), (torch.ones(3),))[1],)   # all inputs at once"),
        "ex6-produce": CODE["ex6-produce"].replace("        ctx.mark_non_differentiable(mask)\n", ""),
        "ex7-produce": POW.replace("grad_output * ctx.k * x ** (ctx.k - 1), None",
                                   "grad_output * x ** (ctx.k - 1), None") + EX7})
    out["ivy"] = ("one jvp with tangent ones, nan from forward mode, the power rule without k, no mark on mask",
                  {**pred, **code},
                  {"3.predict.grad": "failed:one-jvp-with-ones", "3.produce.grad_jvp": "failed:ones-tangent-in-one-pass",
                   "4.predict.where_fwd": "failed:forward-also-nan",
                   "6.produce.flags": "failed:mark-ignored", "6.produce.received": "failed:ones-received",
                   "6.produce.through": "failed:backward-through-mask-works",
                   "7.predict.grad": "failed:power-rule-without-factor",
                   "7.produce.grad": "failed:power-rule-without-factor"})
    return out
