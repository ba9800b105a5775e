"""installed: facts of the torch a run imports (model.INSTALLED_FACTS), read INSIDE the run's process before any of
the submission's code runs: its version strings, and the `accumulate_grad` keyword a function's own source passes to
autograd's engine. Also resolves the objects of torch a produce call is given (model.Arg.objects).

May import: stdlib, torch, autograder.wire.

Source of the engine calls: torch/autograd/__init__.py on torch 2.13.0 has `backward` call
`_engine_run_backward(..., accumulate_grad=True)` and `grad` call it with `accumulate_grad=False`; older releases
call `Variable._execution_engine.run_backward(...)` with the same keyword. Both names are read.
"""
from __future__ import annotations

import ast
import hashlib
import importlib
import inspect
import linecache
import os
import textwrap
import types
from typing import Any

from autograder import wire

ENGINE_CALLS = ("_engine_run_backward", "run_backward")   # the engine's entry, on 2.13.0 and in older releases
GENERATED = "<generated>"   # an object argument that is a function this run writes (`generate`), not one of torch's

_TEMPLATE = '''def {name}(tensors, grad_tensors=None, retain_graph=None):
    """Made for this run of the check: only its source says what it asks of the engine."""
    return _engine_run_backward(tensors, grad_tensors, retain_graph, False, (), allow_unreachable=True,
                                accumulate_grad={flag})
'''


def generate(seed: str | None = None) -> Any:
    """A function written for this run, with a name and an `accumulate_grad` (True or False) in its engine call drawn
    from `seed` (the grader's: the same for a submission's runs again and its regrades; None: at random), its source
    readable by `inspect.getsource` (registered in linecache): an answer looked up by a function's name cannot know
    it. The grader's own template, never a learner's text; the function is never called by the grader (its engine
    name is not even defined), and made without exec: its code object is the compiled template's."""
    digest = hashlib.sha256(seed.encode()).hexdigest() if seed else os.urandom(16).hex()
    name = "replay_" + digest[:8]
    source = _TEMPLATE.format(name=name, flag=int(digest[8], 16) % 2 == 0)
    filename = f"<autograd-lab {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    module = compile(source, filename, "exec")   # our template above, with a bool and a hex name; never run
    code = next(c for c in module.co_consts if isinstance(c, types.CodeType))
    return types.FunctionType(code, {"__name__": "autograd_lab_generated"}, name, (None, None))


def resolve(dotted: str, seed: str | None = None) -> Any:
    """The object a dotted name of torch names, as code that writes it reads it ("torch.autograd.grad",
    "torch.Tensor.backward"; "torch.autograd.gradcheck" is the function, which hides its module): attribute by
    attribute, importing a submodule only where no attribute has the name. Raises LookupError when this torch has
    no such object."""
    if dotted == GENERATED:
        return generate(seed)
    parts = dotted.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        raise LookupError(f"no module {parts[0]}") from None
    for i, name in enumerate(parts[1:], 2):
        try:
            obj = getattr(obj, name)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i]))
            except ImportError:
                raise LookupError(f"this torch has no {dotted}") from None
    return obj


def engine_flag(obj: Any) -> bool | None:
    """The `accumulate_grad` keyword that `obj`'s own source passes to autograd's engine (the first engine call in
    its syntax tree whose keyword is a literal bool), or None: its source makes no such call (it may delegate to a
    function that does, as Tensor.backward does), or it has no Python source."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(obj)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if name not in ENGINE_CALLS:
            continue
        for kw in node.keywords:
            if kw.arg == "accumulate_grad":
                try:
                    value = ast.literal_eval(kw.value)
                except ValueError:
                    continue
                if isinstance(value, bool):
                    return value
    return None


def object_names(observe: list[dict[str, Any]]) -> list[str]:
    """The dotted names of every object argument of a probe request's `observe` entries, in first-use order."""
    names: dict[str, None] = {}
    for entry in observe:
        for call in entry.get("calls", ()):
            for point in call.get("points", ()):
                for arg in point.get("args", ()):
                    if isinstance(arg.get("object"), str):
                        names[arg["object"]] = None
    return list(names)


def read(names: list[str], seed: str | None = None) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The installed facts ({fact name: wire Value}: "torch.__version__", "torch.version.git_version", and
    "engine_flag:<dotted name>" for each of `names` this torch has) and the objects `names` resolve to (`seed`: the
    generated function's, `generate`)."""
    import torch

    facts: dict[str, dict[str, Any]] = {
        "torch.__version__": {"t": "str", "v": wire.clip(str(torch.__version__))},
        "torch.version.git_version": {"t": "str", "v": wire.clip(str(getattr(torch.version, "git_version", "")))}}
    objects: dict[str, Any] = {}
    for name in names:
        try:
            objects[name] = resolve(name, seed)
        except LookupError:
            continue
        flag = engine_flag(objects[name])
        facts["engine_flag:" + name] = {"t": "none"} if flag is None else {"t": "bool", "v": flag}
    return facts, objects
