"""worked: the rule that a prediction is worked out, not run. It reads the cell that sets a prediction (and,
for the names that cell takes from earlier cells, every earlier cell that sets or changes them) as a
syntax tree, never runs it, and says what in it runs what the prediction predicts: autograd in any form,
a name that a PRODUCE cell defines, or code a syntax tree cannot follow. It fails closed: a prediction
it cannot trace to a plain top-level assignment is not taken as worked out.

A static reading is not a proof: it guards against the usual ways of computing an answer (and the
report says what it found), not against a determined learner.

May import: stdlib, autograder.sources.
"""
from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

from autograder.sources import Facts

# Attributes and names that run autograd, or say a tensor takes part in it (torch's autograd docs:
# https://pytorch.org/docs/stable/autograd.html, torch.func: https://pytorch.org/docs/stable/func.html).
AUTOGRAD = frozenset({
    "backward", "grad", "requires_grad", "requires_grad_", "retain_grad", "retains_grad", "register_hook",
    "grad_fn", "autograd", "func", "nn", "optim", "forward_ad", "enable_grad", "set_grad_enabled",
    "gradcheck", "gradgradcheck", "jvp", "vjp", "vmap", "jacrev", "jacfwd", "hessian", "jacobian", "hvp", "vhp",
    "functional", "checkpoint", "make_dual", "unpack_dual", "functional_call", "grad_and_value",
})
# Names and attributes that reach code or objects a syntax tree cannot follow.
HIDDEN = frozenset({"eval", "exec", "compile", "__import__", "getattr", "setattr", "delattr", "globals", "locals",
                    "vars", "open", "input", "breakpoint", "memoryview", "get_ipython", "sys", "modules",
                    "builtins", "user_ns", "importlib"})
NAMES = frozenset({"__name__", "__qualname__"})   # dunders that only name something (`type(e).__name__`)
ALLOWED_IMPORTS = frozenset({"math", "cmath", "numpy", "torch", "fractions", "decimal", "statistics", "sympy",
                             "mpmath", "scipy"})
MAX_STATEMENTS = 5000   # a prediction traced through more statements than this is not read (fails closed)

RULE = ("a prediction is worked out, not run: write it with numbers, P.<parameter>, your earlier predictions and "
        "arithmetic (math, numpy or plain torch functions), without autograd and without your PRODUCE functions")


@dataclass(frozen=True)
class Finding:
    """What runs in a prediction: `what` (e.g. "`x.grad`", "ex1, your PRODUCE function") and the code cell
    (index) where it stands."""

    what: str
    cell: int


def _names(node: ast.AST) -> tuple[set[str], set[str]]:
    """(names loaded, names bound) anywhere in `node`."""
    loaded, bound = set(), set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            (loaded if isinstance(n.ctx, ast.Load) else bound).add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name != "*"}
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            bound |= set(n.names)
    return loaded, bound


def _root(node: ast.AST) -> str | None:
    """The name at the root of `a.b[0].c` (None for other expressions)."""
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _module_level(stmt: ast.stmt):
    """The nodes of a statement that run at the cell's level: not the bodies of functions, lambdas and
    classes (a function's locals are not the notebook's names)."""
    todo = [stmt]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not stmt:
            continue
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            todo += [*n.decorator_list, *n.args.defaults, *[d for d in n.args.kw_defaults if d is not None]]
            continue
        if isinstance(n, ast.ClassDef):
            todo += [*n.decorator_list, *n.bases]
            continue
        if isinstance(n, ast.Lambda):
            continue
        todo += list(ast.iter_child_nodes(n))


def _writes(stmt: ast.stmt) -> set[str]:
    """The notebook names a statement may set or change: what it binds at the cell's level (a `def` or
    `class` its name; `global` declarations inside functions), the roots of item and attribute targets
    (`a[0] = ...`, `math.fabs = ...`), and the objects whose methods it calls as statements
    (`vals.append(...)`)."""
    out: set[str] = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Global):
            out |= set(n.names)
    for n in _module_level(stmt):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name != "*"}
        elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
            out.add(n.target.id)
        targets = (n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign))
                   else [])
        out |= {r for t in targets if isinstance(t, (ast.Attribute, ast.Subscript)) and (r := _root(t)) is not None}
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and isinstance(n.value.func, ast.Attribute):
            r = _root(n.value.func.value)
            if r is not None:
                out.add(r)
    return out


def _slice(stmts: list[ast.stmt], name: str, _writes=_writes) -> tuple[list[ast.stmt], set[str]]:
    """The top-level statements of a cell that take part in setting `name`, read backwards from its last
    write (a statement counts when it writes a name still needed; its names are then needed too), and the
    names they take from outside the cell. One pass: linear in the cell's length."""
    needed, picked, bound = {name}, [], set()
    last = max((i for i, s in enumerate(stmts) if name in _writes(s)), default=-1)
    for s in reversed(stmts[: last + 1]):
        writes = _writes(s)
        if writes & needed:
            loaded, binds = _names(s)
            picked.append(s)
            needed |= loaded | writes
            bound |= binds
    picked.reverse()
    return picked, needed - bound - {name} if picked else set()


def _import_runs(n: ast.Import | ast.ImportFrom) -> str | None:
    """What an import brings in that a prediction may not use, or None (math, numpy, torch and the like;
    autograd's modules are not among them)."""
    allowed = ", ".join(sorted(ALLOWED_IMPORTS))
    if isinstance(n, ast.Import):
        for a in n.names:
            parts = a.name.split(".")
            if parts[0] not in ALLOWED_IMPORTS or AUTOGRAD & set(parts):
                return f"`import {a.name}` (a prediction may import {allowed}, not autograd's modules)"
        return None
    parts = (n.module or "").split(".")
    if n.module in ("autograder", "autograder.lab") and all(a.name == "Lab" for a in n.names):
        return None   # the notebook's own set-up cell
    if n.level or parts[0] not in ALLOWED_IMPORTS or AUTOGRAD & set(parts) or any(a.name in AUTOGRAD for a in n.names):
        return (f"`from {'.' * n.level}{n.module or ''} import ...` (a prediction may import {allowed}, not "
                f"autograd's modules)")
    return None


def _text(n: ast.AST) -> str:
    try:
        text = ast.unparse(n)
    except (RecursionError, ValueError):
        return "an expression"
    return text if len(text) <= 60 else "..." + text[-57:]


def _runs(stmt: ast.stmt) -> str | None:
    """What in one statement runs autograd or reaches code a syntax tree cannot follow, or None."""
    for n in ast.walk(stmt):
        if isinstance(n, ast.Attribute):
            dunder = n.attr.startswith("__") and n.attr.endswith("__") and n.attr not in NAMES
            if n.attr in AUTOGRAD or n.attr in HIDDEN or dunder or (n.attr.startswith("_") and not dunder
                                                                     and n.attr not in NAMES):
                return f"`{_text(n)}`"
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if n.id in HIDDEN or (n.id.startswith("__") and n.id.endswith("__") and n.id not in NAMES):
                return f"`{n.id}`"
        elif isinstance(n, ast.keyword):
            if n.arg is None:
                return "`**` keyword arguments"
            if n.arg == "requires_grad" and not (isinstance(n.value, ast.Constant) and n.value.value is False):
                return "`requires_grad=`"
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in AUTOGRAD | HIDDEN:
            return f"the name {n.value!r} as a string"
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            what = _import_runs(n)
            if what is not None:
                return what
    return None


def _imported(stmts: list[ast.stmt], name: str, _writes=_writes) -> ast.Import | ast.ImportFrom | None:
    """The cell's last top-level statement that writes `name`, when it is an import of it."""
    last = None
    for s in stmts:
        if isinstance(s, (ast.Import, ast.ImportFrom)) and name in {(a.asname or a.name).split(".")[0] for a in s.names}:
            last = s
        elif name in _writes(s):
            last = None
    return last


def finding(facts: Facts, name: str, after: int, produce: frozenset[str], predictions: frozenset[str],
            labels: tuple[str, ...] = ()) -> Finding | None:
    """Why the prediction `name`, as it stood after code cell `after`, was not worked out; None when it was.
    `produce` holds the produce functions' names (any exercise); `predictions` every prediction variable.
    Every earlier cell that sets or changes a name the prediction uses is read too (imports of math,
    numpy, torch and the like are given). Cells that define a produce function are PRODUCE cells: a
    prediction may not use what they define, imports aside."""
    try:
        return _finding(facts, name, after, produce, predictions, labels)
    except RecursionError:   # code nested too deeply for the syntax tree's reader: not taken as worked out
        return Finding("code nested too deeply to read", max(after, 0))


def _finding(facts: Facts, name: str, after: int, produce: frozenset[str], predictions: frozenset[str],
             labels: tuple[str, ...]) -> Finding | None:
    cache: dict[int, set[str]] = facts.scratch.setdefault("worked.writes", {})   # shared by a notebook's predictions
    writes = lambda s: cache[id(s)] if id(s) in cache else cache.setdefault(id(s), _writes(s))
    label = lambda i: labels[i] if i < len(labels) else f"code cell {i + 1}"
    produce_cells = {i for f in produce for i in facts.binding_cells(f)}
    bodies = [list(t.body) if t is not None else None for t in facts.trees]
    home = facts.defining_cell(name, after)
    if home is None or bodies[home] is None:
        return Finding(f"no plain top-level assignment sets {name} (a prediction is written as `{name} = ...` at "
                       f"the top of its PREDICT cell, not inside a block, a function or a cell magic)",
                       max(after, 0) if home is None else home)
    for i in range(home + 1, after + 1):   # set again, later, somewhere the syntax tree does not show at the top
        if bodies[i] is None or any(name in writes(s) for s in bodies[i]):
            return Finding(f"{label(i)} changes {name} inside a block or cell magic after its PREDICT cell", i)
    todo, seen, budget = [(name, home)], set(), MAX_STATEMENTS
    while todo:
        target, upto = todo.pop()
        cells = [home] if target == name else [
            i for i in range(upto, -1, -1) if bodies[i] is not None and any(target in writes(s) for s in bodies[i])]
        if not cells:
            if target in produce:
                return Finding(f"{target}, your PRODUCE function", upto)
            if hasattr(builtins, target) and target in HIDDEN:
                return Finding(f"`{target}`", upto)
            stars = [i for i in range(upto + 1) if bodies[i] is not None and any(
                isinstance(s, ast.ImportFrom) and any(a.name == "*" for a in s.names) and _import_runs(s) for s in bodies[i])]
            if stars and not hasattr(builtins, target):
                return Finding(f"{target}, from a `from ... import *` that brings in autograd", stars[-1])
            continue
        for cell in cells:
            if (target, cell) in seen:
                continue
            seen.add((target, cell))
            stmts = bodies[cell]
            budget -= len(stmts)
            if budget < 0:
                return Finding("more code than the grader reads to trace a prediction", cell)
            imported = _imported(stmts, target, writes)
            if imported is not None:   # a module (or a name from one): given, unless it is autograd's
                what = _import_runs(imported)
                if what is not None:
                    return Finding(what, cell)
                continue
            if target in produce:
                return Finding(f"{target}, your PRODUCE function", cell)
            if cell in produce_cells and target != name and target in facts.binds[cell]:
                return Finding(f"{target}, which a PRODUCE cell defines", cell)
            picked, outside = _slice(stmts, target, writes)
            for s in picked:
                what = _runs(s)
                if what is not None:
                    return Finding(what, cell)
                for n in ast.walk(s):
                    if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in produce:
                        return Finding(f"{n.id}, your PRODUCE function", cell)
            todo += [(other, cell - 1) for other in sorted(outside) if cell > 0]
    return None


def message(name: str, found: Finding, label: str) -> str:
    """The failed check's message."""
    return f"{name} was not worked out: it uses {found.what}, in {label}. {RULE[0].upper()}{RULE[1:]}"
