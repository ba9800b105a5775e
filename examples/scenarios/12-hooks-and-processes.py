"""Example submissions of 12-hooks-and-processes: each scenario is the released notebook with some cells
answered the way a student would (predictions as literals rounded to 4 significant figures for that
student's own parameters; code with a realistic mistake), and the statuses a correct grader must give it,
written here by hand from what the mistake must cause. See examples/make_submissions.py.
"""
from __future__ import annotations

import math

from make_submissions import sig, vec, tup


def numbers(p: dict) -> dict:
    """The numbers a student works out by hand."""
    w1, x1 = p["w1"], p["x1"]
    per_sample = [2 * (p["w4"] * p[f"x4{n}"] - p[f"y4{n}"]) * p[f"x4{n}"] for n in range(3)]
    x5, w5 = p["x5"], p["w5"]
    g8 = [2 * (p["w8"] * p["a0"] - p["b0"]) * p["a0"], 2 * (p["w8"] * p["a1"] - p["b1"]) * p["a1"]]
    return {
        "grad_input": 2 * w1 ** 2 * x1, "grad_output": 2 * w1 * x1,
        "per_sample": per_sample, "batch": sum(per_sample) / 3,
        "penalty": (3 * w5 * x5 ** 2 + 36 * w5 ** 2 * x5 ** 3, x5 ** 3 + 18 * w5 * x5 ** 4),
        "plain": (3 * w5 * x5 ** 2, x5 ** 3),
        "adam": p["w7"] - 0.1 * math.copysign(1.0, p["w7"]), "sgd": p["w7"] - 0.1 * 2 * p["k7"] * p["w7"],
        "g8": g8, "mean8": (g8[0] + g8[1]) / 2,
    }


def predictions(p: dict) -> dict[str, str]:
    n = numbers(p)
    return {
        "ex1-predict": (f"p1_grad_input = {sig(n['grad_input'])}\np1_grad_output = {sig(n['grad_output'])}\n"
                        f"p1_no_input = None"),
        "ex2-predict": (f"p2_hook = {p['k2']}\np2_post = {sig(2 * p['w2'] + p['k2'])}\n"
                        f"p2_terms = {tup([p['m2'], p['m2']])}\np2_non_leaf = \"RuntimeError\""),
        "ex3-predict": f"p3_forward = (2, 0)\np3_backward = (2, 2)\np3_scaled = {tup([p['s3'] * p['y3'], p['s3'] * p['x3']])}",
        "ex4-predict": f"p4_per_sample = {vec(n['per_sample'])}\np4_weight_grad = None",
        "ex5-predict": f"p5_penalty = {tup(n['penalty'])}\np5_retain = {tup(n['plain'])}\np5_only_penalty = \"RuntimeError\"",
        "ex6-predict": (f"p6_ctx_style = \"RuntimeError\"\np6_no_jvp = \"NotImplementedError\"\n"
                        f"p6_jvp = {tup([p['x6'] ** 3, 3 * p['x6'] ** 2 * p['v6']])}"),
        "ex7-predict": f"p7_grad = {sig(2 * p['k7'] * p['w7'])}\np7_adam = {sig(n['adam'])}\np7_sgd = {sig(n['sgd'])}",
        "ex8-predict": (f"p8_average = {tup([n['mean8'], n['mean8']])}\np8_no_sync = {tup(n['g8'])}\n"
                        f"p8_unused = {tup([n['mean8'], None])}\np8_strict = \"RuntimeError\""),
    }


CODE = {
    'ex1-produce': '''\
def ex1_seen(x, w):
    seen = {}

    def hook(module, grad_input, grad_output):
        seen["in"], seen["out"] = grad_input[0], grad_output[0]

    lin = make_linear(w)
    lin.register_full_backward_hook(hook)
    (lin(x.reshape(1, 1)) ** 2).sum().backward()
    return (seen["in"], seen["out"])


def ex1_no_input(x, w):
    seen = {}

    def hook(module, grad_input, grad_output):
        seen["in"] = grad_input[0]

    lin = make_linear(w)
    lin.register_full_backward_hook(hook)
    (lin(x.detach().reshape(1, 1)) ** 2).sum().backward()
    return seen["in"]''',
    'ex2-produce': '''\
def ex2_passes(w, k, a, m):
    got, kept = [], []
    w.register_hook(lambda g: got.append(g))
    w.register_post_accumulate_grad_hook(lambda p: kept.append(p.grad.clone()))
    (w * w).backward()
    (k * w).backward()
    return (got[1], kept[1])


def ex2_terms(w, k, a, m):
    got = {}
    y = a * w
    z = w * w
    y.register_hook(lambda g: got.update(y=g))
    z.register_hook(lambda g: got.update(z=g))
    (m * (y + z)).backward()
    return (got["y"], got["z"])


def ex2_non_leaf(w, k, a, m):
    (w * 2).register_post_accumulate_grad_hook(lambda p: None)''',
    'ex3-produce': '''\
def ex3_counts(x, y, s):
    n = {"pack": 0, "unpack": 0}

    def pack(saved):
        n["pack"] += 1
        return saved

    def unpack(saved):
        n["unpack"] += 1
        return saved

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        z = x * y
    after_forward = (n["pack"], n["unpack"])
    z.backward()
    return after_forward + (n["pack"], n["unpack"])


def ex3_scaled(x, y, s):
    with torch.autograd.graph.saved_tensors_hooks(lambda t: t * s, lambda t: t):
        z = x * y
    z.backward()''',
    'ex4-produce': '''\
def ex4_per_sample(w, X, Y):
    lin = make_linear(w)
    params = {name: p.detach() for name, p in lin.named_parameters()}

    def loss(params, x, y):
        out = torch.func.functional_call(lin, params, (x.unsqueeze(0),))
        return ((out - y.unsqueeze(0)) ** 2).sum()

    grads = torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, X, Y)
    return grads["weight"].flatten()


def ex4_weight_grad(w, X, Y):
    lin = make_linear(w)
    params = {name: p.detach() for name, p in lin.named_parameters()}

    def loss(params, x, y):
        out = torch.func.functional_call(lin, params, (x.unsqueeze(0),))
        return ((out - y.unsqueeze(0)) ** 2).sum()

    torch.func.vmap(torch.func.grad(loss), in_dims=(None, 0, 0))(params, X, Y)
    return lin.weight.grad''',
    'ex5-produce': '''\
def ex5_penalty(x, w):
    f = w * x ** 3
    g, = torch.autograd.grad(f, x, create_graph=True)
    (f + g ** 2).backward()


def ex5_retain(x, w):
    f = w * x ** 3
    g, = torch.autograd.grad(f, x, retain_graph=True)
    (f + g ** 2).backward()


def ex5_only_penalty(x, w):
    g, = torch.autograd.grad(w * x ** 3, x)
    (g ** 2).backward()''',
    'ex6-produce': '''\
def ex6_ctx_style(x, v):
    return torch.func.jvp(CubeCtx.apply, (x,), (v,))


def ex6_jvp(x, v):
    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x ** 3

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, = inputs
            ctx.save_for_backward(x)
            ctx.save_for_forward(x)

        @staticmethod
        def backward(ctx, grad_out):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * grad_out

        @staticmethod
        def jvp(ctx, x_t):
            x, = ctx.saved_tensors
            return 3 * x ** 2 * x_t

    return torch.func.jvp(Cube.apply, (x,), (v,))''',
    'ex7-produce': '''\
def ex7_adam(w, k):
    w.register_hook(lambda g: g * k)
    opt = torch.optim.Adam([w], lr=0.1)
    (w * w).backward()
    opt.step()
    return w.detach().clone()


def ex7_sgd(w, k):
    w.register_hook(lambda g: g * k)
    opt = torch.optim.SGD([w], lr=0.1)
    (w * w).backward()
    opt.step()
    return w.detach().clone()''',
    'ex8-produce': '''\
def ex8_average(w, a, b):
    def body(rank, w, a, b):
        model = DDP(make_linear(w))
        F.mse_loss(model(a[rank].reshape(1, 1)), b[rank].reshape(1, 1)).backward()
        return model.module.weight.grad

    return on_two_ranks(body, w, a, b)


def ex8_no_sync(w, a, b):
    def body(rank, w, a, b):
        model = DDP(make_linear(w))
        with model.no_sync():
            F.mse_loss(model(a[rank].reshape(1, 1)), b[rank].reshape(1, 1)).backward()
        return model.module.weight.grad

    return on_two_ranks(body, w, a, b)


def ex8_unused(w, a, b):
    def body(rank, w, a, b):
        model = DDP(TwoLayers(w), find_unused_parameters=True)
        F.mse_loss(model(a[rank].reshape(1, 1)), b[rank].reshape(1, 1)).backward()
        return (model.module.used.weight.grad, model.module.unused.weight.grad)

    return on_two_ranks(body, w, a, b)[0]


def ex8_strict(w, a, b):
    def body(rank, w, a, b):
        model = DDP(TwoLayers(w))
        for _ in range(2):
            F.mse_loss(model(a[rank].reshape(1, 1)), b[rank].reshape(1, 1)).backward()

    return on_two_ranks(body, w, a, b)''',
}


def replaced(gid: str, old: str, new: str) -> dict[str, str]:
    """CODE with `old` replaced by `new` in the cell `gid` (which must hold it)."""
    assert old in CODE[gid], (gid, old)
    return dict(CODE, **{gid: CODE[gid].replace(old, new)})


def scenarios(params) -> dict[str, tuple[str, dict[str, str], dict[str, str]]]:
    """student -> (what it shows, cell sources by grade_id, expected non-passed statuses), for the
    misconceptions; make_submissions adds the correct "ada" and the not-attempted "gus"."""
    out = {}

    p = params("ben")
    n = numbers(p)
    pred = predictions(p)
    pred["ex1-predict"] = (f"p1_grad_input = {sig(n['grad_output'])}   # the gradient that comes in from above\n"
                           f"p1_grad_output = {sig(n['grad_input'])}   # the gradient that goes out, to x\n"
                           f"p1_no_input = None")
    code = replaced("ex1-produce", 'return (seen["in"], seen["out"])', 'return (seen["out"], seen["in"])')
    out["ben"] = ("reads grad_input as the gradient coming into the hook from the loss, and grad_output as the one "
                  "going out to the input: swaps the two",
                  {**pred, **code},
                  {"1.predict.grad_input": "failed:output-for-input", "1.predict.grad_output": "failed:input-for-output",
                   "1.produce.seen": "failed:in-out-swapped"})

    p = params("cleo")
    pred = predictions(p)
    pred["ex2-predict"] = (f"p2_hook = {sig(2 * p['w2'] + p['k2'])}   # the hook shows the gradient so far\n"
                           f"p2_post = {p['k2']}   # after accumulating: this pass's gradient\n"
                           + "\n".join(pred["ex2-predict"].split("\n")[2:]))
    code = replaced("ex2-produce", "w.register_hook(lambda g: got.append(g))",
                    "w.register_hook(lambda g: got.append(None if w.grad is None else w.grad.clone()))")
    out["cleo"] = ("thinks a tensor hook sees the accumulated .grad (and reads w.grad inside it), and that the "
                   "post-accumulate hook sees this pass's gradient",
                   {**pred, **code},
                   {"2.predict.hook": "failed:hook-sees-accumulated", "2.predict.post": "failed:post-sees-this-pass",
                    "2.produce.passes": "failed:reads-grad-in-hook"})

    p = params("dev")
    n = numbers(p)
    pred = predictions(p)
    pred["ex5-predict"] = (f"p5_penalty = {tup(n['penalty'])}\n"
                           f"p5_retain = {tup(n['penalty'])}   # retain_graph keeps the graph, so the penalty counts\n"
                           f"p5_only_penalty = \"RuntimeError\"")
    code = replaced("ex5-produce", "g, = torch.autograd.grad(f, x, create_graph=True)",
                    "g, = torch.autograd.grad(f, x, retain_graph=True)   # fixes 'backward through the graph a second time'")
    out["dev"] = ("silences the \"backward through the graph a second time\" error with retain_graph=True instead of "
                  "create_graph=True, so the penalty is silently a constant",
                  {**pred, **code},
                  {"5.predict.retain": "failed:penalty-still-counts", "5.produce.penalty_x": "failed:penalty-dropped-x",
                   "5.produce.penalty_w": "failed:penalty-dropped-w"})

    p = params("eve")
    n = numbers(p)
    pred = predictions(p)
    pred["ex4-predict"] = (f"p4_per_sample = {vec([g / 3 for g in n['per_sample']])}   # each row's part of the mean\n"
                           f"p4_weight_grad = {sig(n['batch'])}   # grad also fills .grad, with the batch mean")
    code = dict(CODE, **{"ex4-produce": (
        "def ex4_per_sample(w, X, Y):\n    lin = make_linear(w)\n    F.mse_loss(lin(X), Y).backward()\n"
        "    return lin.weight.grad.flatten().expand(3)   # one gradient per sample\n\n\n"
        "def ex4_weight_grad(w, X, Y):\n    lin = make_linear(w)\n    F.mse_loss(lin(X), Y).backward()\n"
        "    return lin.weight.grad")})
    out["eve"] = ("computes the batch gradient with backward() and gives it to every sample, and thinks the "
                  "torch.func transform writes the batch mean into .grad",
                  {**pred, **code},
                  {"4.predict.per_sample": "failed:share-of-the-mean", "4.predict.weight_grad": "failed:vmap-writes-grad",
                   "4.produce.per_sample": "failed:batch-mean-every-row",
                   "4.produce.weight_grad": "failed:backward-on-the-batch"})

    p = params("finn")
    pred = predictions(p)
    pred["ex6-predict"] = (f"p6_ctx_style = None   # jvp works with any Function\n"
                           f"p6_no_jvp = \"RuntimeError\"\n"
                           f"p6_jvp = {tup([p['x6'] ** 3, 3 * p['x6'] ** 2])}   # the derivative of x**3")
    code = replaced("ex6-produce", "return 3 * x ** 2 * x_t", "return 3 * x ** 2")
    out["finn"] = ("expects torch.func to take any Function, and writes a jvp rule that returns the derivative "
                   "without multiplying by the tangent",
                   {**pred, **code},
                   {"6.predict.ctx_style": "failed:any-function-works", "6.predict.no_jvp": "failed:no-jvp-setup-context",
                    "6.predict.jvp": "failed:tangent-without-v", "6.produce.jvp": "failed:tangent-without-v"})

    p = params("hana")
    n = numbers(p)
    pred = predictions(p)
    pred["ex7-predict"] = (f"p7_grad = {sig(2 * p['w7'])}   # the hook only looks at the gradient\n"
                           f"p7_adam = {sig(n['sgd'])}   # a k times larger gradient, a k times larger step\n"
                           f"p7_sgd = {sig(n['sgd'])}")
    hook = "    w.register_hook(lambda g: g * k)\n"
    forgot = "    def scale(g):\n        g = g * k\n\n    w.register_hook(scale)\n"
    code = dict(CODE, **{"ex7-produce": CODE["ex7-produce"].replace(hook, forgot)})
    assert code["ex7-produce"].count("def scale") == 2
    out["hana"] = ("expects Adam's step to grow with the gradient, and writes a hook that computes g * k but "
                   "returns nothing, so the gradient is not changed",
                   {**pred, **code},
                   {"7.predict.grad": "failed:hook-leaves-grad", "7.predict.adam": "failed:adam-scales-with-hook",
                    "7.produce.grad": "failed:hook-leaves-grad", "7.produce.sgd": "failed:sgd-hook-ignored"})

    p = params("ivo")
    n = numbers(p)
    pred = predictions(p)
    pred["ex8-predict"] = (f"p8_average = {tup([2 * n['mean8'], 2 * n['mean8']])}   # the all-reduce adds them up\n"
                           f"p8_no_sync = {tup(n['g8'])}\n"
                           f"p8_unused = {tup([n['mean8'], 0.0])}   # DDP fills in zeros\np8_strict = \"RuntimeError\"")
    code = replaced("ex8-produce",
                    "        with model.no_sync():\n"
                    "            F.mse_loss(model(a[rank].reshape(1, 1)), b[rank].reshape(1, 1)).backward()\n",
                    "        loss = F.mse_loss(model(a[rank].reshape(1, 1)), b[rank].reshape(1, 1))\n"
                    "        with model.no_sync():   # only the backward needs it\n            loss.backward()\n")
    out["ivo"] = ("thinks DDP sums the ranks' gradients and fills zeros for an unused parameter, and runs only the "
                  "backward inside no_sync(), so the gradients are still averaged",
                  {**pred, **code},
                  {"8.predict.average": "failed:summed", "8.predict.unused": "failed:unused-zeros",
                   "8.produce.no_sync": "failed:no-sync-still-averages"})

    p = params("jo")
    pred = predictions(p)
    pred["ex3-predict"] = (f"p3_forward = (2, 2)   # pack and unpack come in pairs\np3_backward = (2, 2)\n"
                           f"p3_scaled = {tup([p['y3'], p['x3']])}   # pack only changes how it is stored")
    code = replaced("ex3-produce", "    after_forward = (n[\"pack\"], n[\"unpack\"])\n    z.backward()\n",
                    "    z.backward()\n    after_forward = (n[\"pack\"], n[\"unpack\"])\n")
    out["jo"] = ("thinks unpack runs right after pack and that a pack cannot change the gradients, and reads the "
                 "first counts after backward",
                 {**pred, **code},
                 {"3.predict.forward": "failed:unpack-at-once", "3.predict.scaled": "failed:storage-only",
                  "3.produce.counts": "failed:counted-after-backward"})

    p = params("kai")
    pred = predictions(p)
    pred["ex2-predict"] = pred["ex2-predict"].replace("p2_non_leaf = \"RuntimeError\"",
                                                      "p2_non_leaf = None   # any tensor takes hooks")
    pred["ex8-predict"] = pred["ex8-predict"].replace("p8_strict = \"RuntimeError\"",
                                                      "p8_strict = None   # DDP ignores the unused layer")
    code = replaced("ex8-produce", "model = DDP(TwoLayers(w), find_unused_parameters=True)", "model = DDP(TwoLayers(w))")
    out["kai"] = ("leaves find_unused_parameters out: expects DDP to ignore a parameter the forward does not use, "
                  "while it waits for its gradient and leaves the used weight unreduced",
                  {**pred, **code},
                  {"2.predict.non_leaf": "failed:any-tensor-post-hook", "8.predict.strict": "failed:unused-ignored",
                   "8.produce.unused": "failed:unused-flag-forgotten"})
    return out
