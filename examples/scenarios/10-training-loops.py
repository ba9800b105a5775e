"""Example submissions of 10-training-loops: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for
that student's own parameters; code with a realistic mistake), and the statuses a correct grader
must give it, written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig, vec, tup


def numbers(p: dict) -> dict:
    """The numbers a student works out by hand."""
    r1 = [p["w0"] * p[f"x{n}"] + p["b0"] - p[f"y{n}"] for n in range(4)]
    x1 = [p[f"x{n}"] for n in range(4)]
    total = math.sqrt(p["g0"] ** 2 + p["g1"] ** 2 + p["g2"] ** 2)
    r3 = p["w0"] * p["x0"] + p["w1"] * p["x1"] - p["t"]
    g3 = [2 * r3 * p["x0"], 2 * r3 * p["x1"]]
    r8 = p["u3"] * p["u2"] * p["u1"] * p["q"] - p["yq"]
    d1, d3 = 2 * r8 * p["u3"] * p["u2"] * p["q"], 2 * r8 * p["u2"] * p["u1"] * p["q"]
    clip = lambda g: max(-p["c"], min(p["c"], g))
    return {
        "right": (sum(r * x for r, x in zip(r1, x1, strict=True)) / 2, sum(r1) / 2),
        "inside": ((r1[2] * x1[2] + r1[3] * x1[3]) / 2, (r1[2] + r1[3]) / 2),
        "total": total, "norm_w": [p["g0"] * p["M"] / total, p["g1"] * p["M"] / total],
        "value_w": [clip(p["g0"]), clip(p["g1"])], "value_b": clip(p["g2"]),
        "g3": g3, "scaled": [2 ** p["k"] * g for g in g3], "step": [p["w0"] - 0.1 * g3[0], p["w1"] - 0.1 * g3[1]],
        "a_grad": p["v"] * p["h0"] * (1 - math.tanh(p["a"] * p["h0"]) ** 2),
        "d1": d1, "d3": d3,
    }


def predictions(p: dict) -> dict[str, str]:
    n = numbers(p)
    return {
        "ex1-predict": f"p1_right = {tup(n['right'])}\np1_inside = {tup(n['inside'])}\np1_late = {sig(p['w0'])}",
        "ex2-predict": (f"p2_total = {sig(n['total'])}\np2_norm_w = {vec(n['norm_w'])}\n"
                        f"p2_value_w = {vec(n['value_w'])}\np2_value_b = {sig(n['value_b'])}"),
        "ex3-predict": f"p3_scaled = {vec(n['scaled'])}\np3_unscaled = {vec(n['g3'])}\np3_step = {vec(n['step'])}",
        "ex4-predict": (f"p4_inf_w = {vec([p['w0'], p['w1']])}\np4_inf_scale = {sig(2 ** (p['k'] - 1))}\n"
                        f"p4_warning = \"UserWarning\"\np4_enabled = False"),
        "ex5-predict": f"p5_calls = (1, 2)\np5_a_grad = {sig(n['a_grad'])}\np5_reentrant_a_grad = None",
        "ex6-predict": (f"p6_is_sparse = True\np6_rows = [1, 3]\n"
                        f"p6_dense = [[0.0, 0.0], {vec([4 * p['e10'], 4 * p['e11']])}, [0.0, 0.0], "
                        f"{vec([2 * p['e30'], 2 * p['e31']])}]\np6_adam = \"RuntimeError\""),
        "ex7-predict": (f"p7_linear = {vec([p['cr'], -p['ci']])}\np7_abs2 = {vec([2 * p['zr'], 2 * p['zi']])}\n"
                        f"p7_pair = {tup([p['cr'], -p['ci']])}\np7_error = \"RuntimeError\""),
        "ex8-predict": (f"p8_frozen = {tup([n['d1'], None, n['d3']])}\np8_no_grad = {tup([None, None, n['d3']])}\n"
                        f"p8_frozen_step = {vec([p['u1'] - 0.1 * n['d1'], p['u2'], p['u3'] - 0.1 * n['d3']])}\n"
                        f"p8_no_grad_step = {vec([p['u1'], p['u2'], p['u3'] - 0.1 * n['d3']])}"),
    }


CODE = {
    "ex1-produce": ("def ex1_right(W, b, X, y):\n    lin = make_linear(W, b)\n    opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
                    "    opt.zero_grad()\n    for i in (0, 2):\n        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2]) / 2\n"
                    "        loss.backward()\n    opt.step()\n    return (lin.weight.grad, lin.bias.grad)\n\n\n"
                    "def ex1_inside(W, b, X, y):\n    lin = make_linear(W, b)\n    opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
                    "    for i in (0, 2):\n        opt.zero_grad()\n        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2]) / 2\n"
                    "        loss.backward()\n    opt.step()\n    return (lin.weight.grad, lin.bias.grad)\n\n\n"
                    "def ex1_late(W, b, X, y):\n    lin = make_linear(W, b)\n    opt = torch.optim.SGD(lin.parameters(), lr=0.1)\n"
                    "    opt.zero_grad()\n    for i in (0, 2):\n        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2]) / 2\n"
                    "        loss.backward()\n    opt.zero_grad()\n    opt.step()\n    return (lin.weight.grad, lin.weight.detach())"),
    "ex2-produce": ("def ex2_norm(w, b, g, max_norm, clip):\n    ((w * g[:2]).sum() + (b * g[2:]).sum()).backward()\n"
                    "    total = torch.nn.utils.clip_grad_norm_([w, b], max_norm=max_norm)\n    return total\n\n\n"
                    "def ex2_value(w, b, g, max_norm, clip):\n    ((w * g[:2]).sum() + (b * g[2:]).sum()).backward()\n"
                    "    torch.nn.utils.clip_grad_value_([w, b], clip_value=clip)"),
    "ex3-produce": ("def ex3_scaled(w, x, t, k):\n    scaler = torch.amp.GradScaler(\"cpu\", init_scale=2.0 ** k)\n"
                    "    loss = ((w * x).sum() - t) ** 2\n    scaler.scale(loss).backward()\n\n\n"
                    "def ex3_unscaled(w, x, t, k):\n    opt = torch.optim.SGD([w], lr=0.1)\n"
                    "    scaler = torch.amp.GradScaler(\"cpu\", init_scale=2.0 ** k)\n    loss = ((w * x).sum() - t) ** 2\n"
                    "    scaler.scale(loss).backward()\n    scaler.unscale_(opt)\n\n\n"
                    "def ex3_step(w, x, t, k):\n    opt = torch.optim.SGD([w], lr=0.1)\n"
                    "    scaler = torch.amp.GradScaler(\"cpu\", init_scale=2.0 ** k)\n    loss = ((w * x).sum() - t) ** 2\n"
                    "    scaler.scale(loss).backward()\n    scaler.step(opt)\n    scaler.update()\n"
                    "    return (w.detach().clone(), scaler.get_scale())"),
    "ex4-produce": ("def ex4_inf(w, x, t, k):\n    opt = torch.optim.SGD([w], lr=0.1)\n"
                    "    scaler = torch.amp.GradScaler(\"cpu\", init_scale=2.0 ** k)\n    x_bad = x.clone()\n"
                    "    x_bad[0] = math.inf\n    loss = ((w * x_bad).sum() - t) ** 2\n    scaler.scale(loss).backward()\n"
                    "    scaler.step(opt)\n    scaler.update()\n    return (w.detach().clone(), scaler.get_scale())\n\n\n"
                    "def ex4_default(w, x, t, k):\n    scaler = torch.amp.GradScaler()\n    loss = ((w * x).sum() - t) ** 2\n"
                    "    scaler.scale(loss).backward()\n    return scaler.is_enabled()"),
    "ex5-produce": ("def ex5(h, a, v):\n    calls = 0\n\n    def block(h):\n        nonlocal calls\n        calls += 1\n"
                    "        return torch.tanh(a * h)\n\n    out = v * checkpoint(block, h, use_reentrant=False)\n"
                    "    after_forward = calls\n    out.backward()\n    return (after_forward, calls)\n\n\n"
                    "def ex5_reentrant(h, a, v):\n    out = v * checkpoint(lambda h: torch.tanh(a * h), h, use_reentrant=True)\n"
                    "    out.backward()"),
    "ex6-produce": ("def ex6_layout(W):\n    emb = make_embedding(W)\n    (emb(TOKENS) ** 2).sum().backward()\n"
                    "    return emb.weight.grad.is_sparse\n\n\n"
                    "def ex6_rows(W):\n    emb = make_embedding(W)\n    (emb(TOKENS) ** 2).sum().backward()\n"
                    "    return emb.weight.grad.coalesce().indices().flatten()\n\n\n"
                    "def ex6_dense(W):\n    emb = make_embedding(W)\n    (emb(TOKENS) ** 2).sum().backward()\n"
                    "    return emb.weight.grad.to_dense()\n\n\n"
                    "def ex6_adam(W):\n    emb = make_embedding(W)\n    (emb(TOKENS) ** 2).sum().backward()\n"
                    "    torch.optim.Adam(emb.parameters(), lr=0.1).step()"),
    "ex7-produce": ("def ex7_linear(zr, zi, cr, ci):\n    z = torch.complex(zr, zi).detach().requires_grad_()\n"
                    "    (complex(cr, ci) * z).real.backward()\n    return torch.view_as_real(z.grad)\n\n\n"
                    "def ex7_abs2(zr, zi, cr, ci):\n    z = torch.complex(zr, zi).detach().requires_grad_()\n"
                    "    (z.abs() ** 2).backward()\n    return torch.view_as_real(z.grad)\n\n\n"
                    "def ex7_pair(zr, zi, cr, ci):\n    z = torch.complex(zr, zi)\n    (complex(cr, ci) * z).real.backward()\n\n\n"
                    "def ex7_complex_loss(zr, zi, cr, ci):\n    z = torch.complex(zr, zi).detach().requires_grad_()\n"
                    "    (complex(cr, ci) * z).backward()"),
    "ex8-produce": ("def ex8_frozen(x, y, u1, u2, u3):\n    model = make_model(u1, u2, u3)\n    model[1].weight.requires_grad_(False)\n"
                    "    F.mse_loss(model(x.reshape(1, 1)), y.reshape(1, 1)).backward()\n"
                    "    return (model[0].weight.grad, model[1].weight.grad, model[2].weight.grad)\n\n\n"
                    "def ex8_frozen_step(x, y, u1, u2, u3):\n    model = make_model(u1, u2, u3)\n    model[1].weight.requires_grad_(False)\n"
                    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                    "    F.mse_loss(model(x.reshape(1, 1)), y.reshape(1, 1)).backward()\n    opt.step()\n    return weights(model)\n\n\n"
                    "def ex8_no_grad(x, y, u1, u2, u3):\n    model = make_model(u1, u2, u3)\n    h = model[0](x.reshape(1, 1))\n"
                    "    with torch.no_grad():\n        h = model[1](h)\n    F.mse_loss(model[2](h), y.reshape(1, 1)).backward()\n"
                    "    return (model[0].weight.grad, model[1].weight.grad, model[2].weight.grad)\n\n\n"
                    "def ex8_no_grad_step(x, y, u1, u2, u3):\n    model = make_model(u1, u2, u3)\n"
                    "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n    h = model[0](x.reshape(1, 1))\n"
                    "    with torch.no_grad():\n        h = model[1](h)\n    F.mse_loss(model[2](h), y.reshape(1, 1)).backward()\n"
                    "    opt.step()\n    return weights(model)"),
}


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}

    p = params("ben")
    n = numbers(p)
    pred = predictions(p)
    pred["ex1-predict"] = (f"p1_right = {tup(n['right'])}\n"
                           f"p1_inside = {tup(n['right'])}   # zero_grad only clears what step() already used\n"
                           f"p1_late = {sig(p['w0'] - 0.1 * n['right'][0])}")
    code = dict(CODE, **{"ex1-produce": CODE["ex1-produce"].replace(
        "    opt.zero_grad()\n    for i in (0, 2):\n        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2]) / 2\n"
        "        loss.backward()\n    opt.step()\n",
        "    for i in (0, 2):\n        opt.zero_grad()   # a clean start for every micro-batch\n"
        "        loss = F.mse_loss(lin(X[i:i + 2]), y[i:i + 2]) / 2\n        loss.backward()\n    opt.step()\n", 1)})
    assert code["ex1-produce"] != CODE["ex1-produce"]
    out["ben"] = ("calls zero_grad() at the top of every micro-batch, so only the last micro-batch reaches step(), "
                  "and thinks its place in the loop does not matter",
                  {**pred, **code},
                  {"1.predict.inside": "failed:zero-grad-place-irrelevant", "1.predict.late": "failed:late-zero-grad-ignored",
                   "1.produce.right": "failed:only-last-micro-batch"})

    p = params("cleo")
    n = numbers(p)
    pred = predictions(p)
    pred["ex2-predict"] = (f"p2_total = {sig(p['M'])}   # after clipping the norm is max_norm\n"
                           + "\n".join(pred["ex2-predict"].split("\n")[1:]))
    code = dict(CODE, **{"ex2-produce": CODE["ex2-produce"].replace(
        "    total = torch.nn.utils.clip_grad_norm_([w, b], max_norm=max_norm)\n    return total",
        "    torch.nn.utils.clip_grad_norm_([w, b], max_norm=max_norm)\n"
        "    return torch.cat([w.grad, b.grad]).norm()   # the norm to log")})
    out["cleo"] = ("reads the norm clip_grad_norm_ returns as the norm after clipping, and logs the clipped norm",
                   {**pred, **code}, {"2.predict.total": "failed:norm-after-clipping", "2.produce.total": "failed:norm-after-clipping"})

    p = params("dev")
    n = numbers(p)
    pred = predictions(p)
    pred["ex3-predict"] = (f"p3_scaled = {vec(n['g3'])}   # the scale only protects float16, it is not in .grad\n"
                           + "\n".join(pred["ex3-predict"].split("\n")[1:]))
    code = dict(CODE, **{"ex3-produce": CODE["ex3-produce"].replace(
        "    scaler.scale(loss).backward()\n    scaler.unscale_(opt)\n",
        "    scaler.scale(loss).backward()   # .grad is ready to use\n")})
    out["dev"] = ("reads the gradients after scaler.scale(loss).backward() as the real ones and skips unscale_",
                  {**pred, **code}, {"3.predict.scaled": "failed:scale-not-in-grad", "3.produce.unscaled": "failed:still-scaled"})

    p = params("eve")
    pred = predictions(p)
    pred["ex4-predict"] = "\n".join(pred["ex4-predict"].split("\n")[:2]) + \
        "\np4_warning = None   # GradScaler works on any device\np4_enabled = True"
    code = dict(CODE, **{key: CODE[key].replace("torch.amp.GradScaler(\"cpu\", init_scale=2.0 ** k)",
                                                "torch.amp.GradScaler(init_scale=2.0 ** k)")
                         for key in ("ex3-produce", "ex4-produce")})
    out["eve"] = ("makes the GradScaler without naming the device \"cpu\": on a machine without CUDA it warns and "
                  "disables itself, so nothing is scaled, the scale is 1 and an inf step is not skipped",
                  {**pred, **code},
                  {"3.produce.scaled": "failed:scaler-without-device",
                   "3.produce.step": "failed:disabled-scaler-scale",
                   "4.produce.inf": "failed:scaler-without-device", "4.predict.warning": "failed:no-warning",
                   "4.predict.enabled": "failed:works-on-any-device"})

    p = params("ivo")
    n = numbers(p)
    pred = predictions(p)
    pred["ex5-predict"] = (f"p5_calls = (1, 1)   # checkpoint keeps what it computed\np5_a_grad = {sig(n['a_grad'])}\n"
                           f"p5_reentrant_a_grad = {sig(n['a_grad'])}   # both variants are the same checkpoint")
    code = dict(CODE, **{"ex5-produce": CODE["ex5-produce"].replace(
        "checkpoint(block, h, use_reentrant=False)", "checkpoint(block, h)")})
    out["ivo"] = ("leaves use_reentrant out, which on torch 2.13 means use_reentrant=True (with a warning), on a block "
                  "whose input needs no gradient: the block is never recomputed and its parameter gets no gradient; "
                  "expects one forward call and the two variants to give the same gradients",
                  {**pred, **code},
                  {"5.predict.calls": "failed:no-recompute", "5.predict.reentrant_a_grad": "failed:reentrant-same-gradient",
                   "5.produce.calls": "failed:reentrant-default-calls", "5.produce.a_grad": "failed:reentrant-default-grad"})

    p = params("finn")
    pred = predictions(p)
    pred["ex6-predict"] = pred["ex6-predict"].replace(
        "p6_is_sparse = True\np6_rows = [1, 3]", "p6_is_sparse = False\np6_rows = [0, 1, 2, 3]   # the whole table") \
        .replace("p6_adam = \"RuntimeError\"", "p6_adam = None   # Adam takes any gradient")
    code = dict(CODE, **{"ex6-produce": CODE["ex6-produce"].replace(
        "    return emb.weight.grad.to_dense()", "    return emb.weight.grad   # already a (4, 2) table")})
    out["finn"] = ("expects a dense embedding gradient: a full table, usable as it is and by any optimizer",
                   {**pred, **code},
                   {"6.predict.is_sparse": "failed:dense-gradient", "6.predict.rows": "failed:whole-table",
                    "6.predict.adam": "failed:adam-takes-sparse", "6.produce.dense": "failed"})

    p = params("hana")
    pred = predictions(p)
    pred["ex7-predict"] = (f"p7_linear = {vec([p['cr'], p['ci']])}   # 2 * dL/dz = c\n"
                           f"p7_abs2 = {vec([2 * p['zr'], -2 * p['zi']])}   # 2 * dL/dz = 2 * conj(z)\n"
                           + "\n".join(pred["ex7-predict"].split("\n")[2:]))
    out["hana"] = ("forgets the conjugate: predicts 2 * dL/dz of complex (Wirtinger) calculus, c and 2 * conj(z), "
                   "instead of torch's 2 * conj(dL/dz), conj(c) and 2z",
                   {**pred, **CODE}, {"7.predict.linear": "failed:conjugate-forgotten",
                                     "7.predict.abs2": "failed:conjugate-forgotten-abs2"})

    p = params("jo")
    n = numbers(p)
    pred = predictions(p)
    pred["ex8-predict"] = (f"p8_frozen = {tup([n['d1'], None, n['d3']])}\n"
                           f"p8_no_grad = {tup([n['d1'], None, n['d3']])}   # no_grad freezes the layer, as requires_grad_(False)\n"
                           f"p8_frozen_step = {vec([p['u1'] - 0.1 * n['d1'], p['u2'], p['u3'] - 0.1 * n['d3']])}\n"
                           f"p8_no_grad_step = {vec([p['u1'] - 0.1 * n['d1'], p['u2'], p['u3'] - 0.1 * n['d3']])}")
    frozen = ("    model = make_model(u1, u2, u3)\n    model[1].weight.requires_grad_(False)\n")
    code = dict(CODE, **{"ex8-produce": CODE["ex8-produce"]
                         .replace(frozen + "    F.mse_loss(model(x.reshape(1, 1)), y.reshape(1, 1)).backward()\n",
                                  "    model = make_model(u1, u2, u3)\n    h = model[0](x.reshape(1, 1))\n"
                                  "    with torch.no_grad():   # freeze layer 2\n        h = model[1](h)\n"
                                  "    F.mse_loss(model[2](h), y.reshape(1, 1)).backward()\n", 1)
                         .replace(frozen + "    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                                  "    F.mse_loss(model(x.reshape(1, 1)), y.reshape(1, 1)).backward()\n",
                                  "    model = make_model(u1, u2, u3)\n    opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                                  "    h = model[0](x.reshape(1, 1))\n    with torch.no_grad():   # freeze layer 2\n"
                                  "        h = model[1](h)\n    F.mse_loss(model[2](h), y.reshape(1, 1)).backward()\n", 1)})
    assert "requires_grad_(False)" not in code["ex8-produce"]
    out["jo"] = ("freezes the middle layer with torch.no_grad() as if it were requires_grad_(False): the first "
                 "layer stops training too",
                 {**pred, **code},
                 {"8.predict.no_grad": "failed:no-grad-freezes-one-layer",
                  "8.predict.no_grad_step": "failed:no-grad-freezes-one-layer-step",
                  "8.produce.frozen": "failed:frozen-cuts-earlier",
                  "8.produce.frozen_step": "failed:frozen-cuts-earlier-step"})
    return out
