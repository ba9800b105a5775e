"""worked: the rule that a prediction is worked out, not run. It reads the cell that sets a prediction (and,
for the names that cell takes from earlier cells, every earlier cell that sets or changes them) as a
syntax tree, never runs it, and says what in it runs what the prediction predicts: autograd in any form,
a name that a PRODUCE cell defines, or code a syntax tree cannot follow. It fails closed: a prediction
it cannot trace to a plain top-level assignment is not taken as worked out.

A static reading is not a proof: it guards against the usual ways of computing an answer (and the
report says what it found), not against a determined learner.

May import: stdlib, autograder.judging.sources.
"""
from __future__ import annotations

import ast
import builtins
import re
import time
from dataclasses import dataclass

from autograder.judging.sources import Facts, derived

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
# Names and attributes that turn data into code, or reach autograd's kernels by another road: TorchScript and
# torch's other compilers and tracers (a source string that calls autograd), pickles and files read back (code or
# values a PRODUCE cell wrote), parsers that evaluate a string (sympy's sympify runs Python's eval), code and
# function objects, programs, and torch.ops' kernels (`torch.ops.aten.threshold_backward`). An attack in 2026-12
# took full credit through each; the class is closed, not only its instances.
DATA_TO_CODE = frozenset({
    "jit", "script", "CompilationUnit", "fx", "export", "dynamo", "onnx", "ops", "library",
    "load", "loads", "loadtxt", "genfromtxt", "fromfile", "fromregex", "memmap", "pickle", "marshal", "shelve",
    "sympify", "parse_expr", "lambdify", "attrgetter", "methodcaller", "operator", "types", "FunctionType",
    "CodeType", "inspect", "runpy", "codeop", "os", "subprocess", "system", "popen", "ctypes", "CDLL", "cdll",
})
# Of those, words a learner may well give a value of their own (`types = [...]`): as plain names they are read as the
# learner's; imported, or as an attribute, they are what DATA_TO_CODE says.
OWN_WORDS = frozenset({"load", "loads", "system", "types", "os", "script", "export", "ops", "library", "fx", "popen",
                       "memmap", "inspect", "onnx", "dynamo", "jit", "operator"})
NAMES = frozenset({"__name__", "__qualname__"})   # dunders that only name something (`type(e).__name__`)
ALLOWED_IMPORTS = frozenset({"math", "cmath", "numpy", "torch", "fractions", "decimal", "statistics", "sympy",
                             "mpmath", "scipy"})
MAX_STATEMENTS = 5000   # a prediction traced through more statements than this is not read (fails closed)
# All of a notebook's predictions are traced within this time (on the grading host, before and after the sandbox:
# a released notebook's take milliseconds); a prediction still untraced then is not taken as worked out.
MAX_SECONDS = 10.0
# A course service's request traces within this (the kernel sends what it ran; a released notebook's take
# milliseconds): a pasted chain of 45,000 assignments took 7.75 s of the service's CPU a request with MAX_SECONDS.
REQUEST_SECONDS = 1.0
# Tracing a name through a cell costs about the names its statements use and bind; a prediction may spend this much
# (a released notebook's spend at most a few thousand; a cell of thousands of names traced name by name, millions).
MAX_WORK = 200_000

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


def _names_of(st: ast.stmt) -> tuple[frozenset[str], frozenset[str]]:
    """`_names` of a statement, computed once and kept on it (a prediction traces many names through the same
    statements: without it, a statement of thousands of names was walked once per name)."""
    return derived(st, "worked names", lambda node: tuple(map(frozenset, _names(node))))


def _runs_of(st: ast.stmt) -> str | None:
    """`_runs` of a statement, computed once and kept on it."""
    return derived(st, "worked runs", _runs)


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


def _effects(stmt: ast.stmt) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
    """(names a statement binds at the cell's level: assignments, `def`/`class`, imports, walrus, `global`
    declarations inside functions; names it may change in place: roots of item and attribute targets
    (`a[0] = ...`, `math.fabs = ...`); roots of objects whose methods it calls (`v.append(...)`,
    `b.copy_(g)`))."""
    binds: set[str] = set()
    changes: set[str] = set()
    receivers: set[str] = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Global):
            binds |= set(n.names)
    for n in _module_level(stmt):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            binds.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            binds.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            binds |= {(a.asname or a.name).split(".")[0] for a in n.names if a.name != "*"}
        elif isinstance(n, ast.NamedExpr) and isinstance(n.target, ast.Name):
            binds.add(n.target.id)
        targets = (n.targets if isinstance(n, (ast.Assign, ast.Delete)) else
                   [n.target] if isinstance(n, (ast.AugAssign, ast.AnnAssign)) else [])
        changes |= {r for t in targets if isinstance(t, (ast.Attribute, ast.Subscript)) and (r := _root(t)) is not None}
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            r = _root(n.func.value)
            if r is not None:
                receivers.add(r)
    return frozenset(binds), frozenset(changes), frozenset(receivers)


def _slice(stmts: list[ast.stmt], name: str, writes) -> tuple[list[ast.stmt], set[str], int]:
    """The top-level statements of a cell up to the last one that writes `name` which take part in setting
    it: a statement counts when it writes a name still needed, or binds a new name from one (an alias,
    `b = a`); its names are then needed too. Returns them, the names they take from outside the cell, and
    the index of that last statement (-1: none)."""
    last = max((i for i, st in enumerate(stmts) if name in writes(st)), default=-1)
    head = stmts[: last + 1]
    facts = [(*_names_of(st), writes(st)) for st in head]
    needed, chosen = {name}, set()
    for _ in range(5):   # a fixed point; five passes follow aliases of aliases
        grew = False
        for i in range(len(head) - 1, -1, -1):
            loaded, bound, w = facts[i]
            if i not in chosen and (w & needed or (loaded & needed and bound)):
                chosen.add(i)
                needed |= loaded | w | bound
                grew = True
        if not grew:
            break
    picked = [head[i] for i in sorted(chosen)]
    bound_here = set().union(*(facts[i][1] for i in chosen)) if chosen else set()
    first = min((i for i in chosen if name in facts[i][2]), default=None)
    earlier = {name} if first is not None and any(name in facts[i][0] for i in chosen if i <= first) else set()
    return picked, (needed - bound_here - {name}) | earlier, last   # `p1 = p1 + 0`: p1 comes from outside too


def _import_runs(n: ast.Import | ast.ImportFrom) -> str | None:
    """What an import brings in that a prediction may not use, or None (math, numpy, torch and the like;
    autograd's modules are not among them)."""
    allowed = ", ".join(sorted(ALLOWED_IMPORTS))
    if isinstance(n, ast.Import):
        for a in n.names:
            parts = a.name.split(".")
            if parts[0] not in ALLOWED_IMPORTS or AUTOGRAD & set(parts) or DATA_TO_CODE & set(parts):
                return (f"`import {a.name}` (a prediction may import {allowed}, not autograd's modules or what "
                        f"makes code from data)")
        return None
    parts = (n.module or "").split(".")
    if n.module in ("autograder", "autograder.lab", "autograder.student.lab") and all(a.name == "Lab" for a in n.names):
        return None   # the notebook's own set-up cell
    if n.level or parts[0] not in ALLOWED_IMPORTS or (AUTOGRAD | DATA_TO_CODE) & set(parts) or \
            any(a.name in AUTOGRAD or a.name in DATA_TO_CODE or a.name == "S" or "backward" in a.name.lower()
                for a in n.names):
        return (f"`from {'.' * n.level}{n.module or ''} import ...` (a prediction may import {allowed}, not "
                f"autograd's modules or what makes code from data)")
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
            if n.attr in DATA_TO_CODE or "backward" in n.attr.lower():
                return f"`{_text(n)}` (code made from data, or an autograd kernel)"
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
            if n.id in HIDDEN or (n.id.startswith("__") and n.id.endswith("__") and n.id not in NAMES):
                return f"`{n.id}`"
            if n.id in DATA_TO_CODE - OWN_WORDS:   # (an import of one of these is named at the import)
                return f"`{n.id}` (code made from data)"
        elif isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)) and \
                (n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id) == "S":
            return f"`{_text(n.func)}(...)` (sympy's S() of a string runs it as code)"
        elif isinstance(n, ast.keyword):
            if n.arg is None:
                return "`**` keyword arguments"
            if n.arg == "requires_grad" and not (isinstance(n.value, ast.Constant) and n.value.value is False):
                return "`requires_grad=`"
            if n.arg in ("allow_pickle", "weights_only"):
                return f"`{n.arg}=` (a pickle runs code)"
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            what = _import_runs(n)
            if what is not None:
                return what
    return None


def _imported(stmts: list[ast.stmt], name: str, writes) -> ast.Import | ast.ImportFrom | None:
    """The cell's last top-level statement that writes `name`, when it is an import of it."""
    last = None
    for s in stmts:
        if isinstance(s, (ast.Import, ast.ImportFrom)) and name in {(a.asname or a.name).split(".")[0] for a in s.names}:
            last = s
        elif name in writes(s):
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
    scratch = facts.scratch   # shared by a notebook's predictions
    # a cell that runs code its tree leaves out (a line magic, a shell escape, an expanded magic argument) is read as
    # no tree at all: what it sets or changes cannot be traced
    bodies = [list(t.body) if t is not None and not hidden else None
              for t, hidden in zip(facts.trees, facts.hidden, strict=True)]
    if "worked.modules" not in scratch:
        scratch["worked.modules"] = frozenset(
            a.asname or a.name.split(".")[0] for b in bodies if b for st in b if isinstance(st, (ast.Import, ast.ImportFrom))
            for a in st.names if a.name != "*")
    modules = scratch["worked.modules"]

    def eff(st: ast.stmt) -> tuple[frozenset[str], ...]:
        return derived(st, "worked effects", _effects)   # kept on the (cached, shared) statement

    def binds(st: ast.stmt) -> frozenset[str]:
        return eff(st)[0]

    def changes(st: ast.stmt) -> frozenset[str]:
        return eff(st)[1] | (eff(st)[2] - modules)   # calling a module's functions does not change the module

    def writes(st: ast.stmt) -> frozenset[str]:
        return binds(st) | changes(st)

    if "worked.cells" not in scratch:   # per cell: (names it binds, names it changes in place), kept on its tree
        scratch["worked.cells"] = [   # (`derived`: a released notebook's cells are shared by every request)
            derived(t, ("worked cell", modules), lambda t: (frozenset().union(*map(binds, t.body)),
                                                            frozenset().union(*map(changes, t.body))))
            if b is not None else (frozenset(), frozenset()) for t, b in zip(facts.trees, bodies, strict=True)]
    per_cell = scratch["worked.cells"]
    label = lambda i: labels[i] if i < len(labels) else f"code cell {i + 1}"
    produce_cells = {i for f in produce for i in facts.binding_cells(f)}
    home = facts.defining_cell(name, after)
    if home is not None and facts.hidden[home]:
        return Finding(f"{label(home)}, which sets {name}, also runs code the grader cannot read (a line magic such as "
                       f"%time, a shell escape !, a help line ending in ?, or a {{...}} or $name in a cell magic's "
                       f"line): keep a PREDICT cell to plain Python", home)
    if home is None or bodies[home] is None:
        return Finding(f"no plain top-level assignment sets {name} (a prediction is written as `{name} = ...` at "
                       f"the top of its PREDICT cell, not inside a block, a function or a cell magic other than %%time and %%capture)",
                       max(after, 0) if home is None else home)
    word = re.compile(rf"\b{re.escape(name)}\b")
    for i in range(home + 1, after + 1):   # set again, later, somewhere the syntax tree does not show at the top
        unread = bodies[i] is None and word.search(facts.sources[i] if i < len(facts.sources) else "")
        if unread or name in per_cell[i][0] | per_cell[i][1]:
            return Finding(f"{label(i)} changes {name} inside a block or cell magic after its PREDICT cell", i)
    todo: list[tuple[str, int, int]] = [(name, home, home)]
    seen: set[tuple[str, int]] = set()
    queued: dict[int, set[str]] = {home: {name}}   # the names traced from each cell on up: each once
    budget, targets, work = MAX_STATEMENTS, 0, MAX_WORK
    weights: dict[int, int] = {}   # per cell: the names its statements use and bind (what tracing one name costs)
    seconds = scratch.setdefault("worked.seconds", MAX_SECONDS)
    deadline = scratch.setdefault("worked.deadline", time.monotonic() + seconds)
    while todo:
        target, upto, used_in = todo.pop()
        targets += 1
        if targets > MAX_STATEMENTS:
            return Finding("more names than the grader reads to trace a prediction", used_in)
        if time.monotonic() >= deadline:   # (>=: a clock of 0 s stops at once, on any machine)
            scratch["worked.out_of_time"] = True   # the clock's finding, not the code's (see out_of_time)
            return Finding(f"more code than the grader reads in the {seconds:g} s it has for a notebook's "
                           f"predictions", used_in)
        if target == name and upto >= home:
            cells = [home]
        else:   # any other name, and the prediction's own earlier value (`p1 = p1 + 0`: where did that come from?)
            bound_at = next((i for i in range(upto, -1, -1) if target in per_cell[i][0]), None)
            if bound_at is None:
                if target in produce:
                    return Finding(f"{target}, your PRODUCE function", used_in)
                if target in predictions:   # another prediction that no cell visibly set by then: only code the
                    # grader cannot read (exec, a magic) gives it a value here; unset, this cell raises NameError
                    return Finding(f"{target}, which no cell visibly sets before {label(used_in)}", used_in)
                if hasattr(builtins, target):
                    if target in HIDDEN:
                        return Finding(f"`{target}`", used_in)
                    continue
                stars = [i for i in range(used_in + 1) if bodies[i] is not None and any(
                    isinstance(st, ast.ImportFrom) and any(a.name == "*" for a in st.names) and _import_runs(st)
                    for st in bodies[i])]
                if stars:
                    return Finding(f"{target}, from a `from ... import *` that brings in autograd", stars[-1])
                return Finding(f"{target}, which no cell visibly sets (set what a prediction uses with plain "
                               f"assignments, not exec, globals() or magics)", used_in)
            cells = [bound_at] + [i for i in range(bound_at + 1, upto + 1) if target in per_cell[i][1]]
        for cell in cells:
            if (target, cell) in seen or bodies[cell] is None:
                continue
            seen.add((target, cell))
            stmts = bodies[cell]
            budget -= len(stmts)
            if cell not in weights:
                weights[cell] = sum(len(a) + len(b) for a, b in map(_names_of, stmts))
            work -= weights[cell]
            if budget < 0 or work < 0:
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
            picked, outside, last = _slice(stmts, target, writes)
            for st in picked:
                what = _runs_of(st)
                if what is not None:
                    return Finding(what, cell)
                used = _names_of(st)[0] & produce
                if used:
                    return Finding(f"{min(used)}, your PRODUCE function", cell)
            if target == name:   # what changes the prediction's objects after it is set, up to its check
                needed = {target} | outside | set().union(*(_names_of(st)[0] | writes(st) for st in picked))
                later = [(cell, st) for st in stmts[last + 1:]] + [
                    (i, st) for i in range(cell + 1, after + 1) if bodies[i] and per_cell[i][1] & needed
                    for st in bodies[i]]
                for i, st in later:
                    if changes(st) & needed and (what := _runs_of(st)) is not None:
                        return Finding(what, i)
            if cell > 0:
                waiting = queued.setdefault(cell - 1, set())
                fresh = outside - waiting
                waiting |= fresh
                todo += [(other, cell - 1, cell) for other in sorted(fresh)]
    return None


def start_clock(facts: Facts, seconds: float) -> None:
    """Give the predictions traced next in `facts` a clock of their own: `seconds` from the first of them on (by
    default a notebook's predictions share one clock of MAX_SECONDS, started at the first). Release traces each
    sample student's predictions on a clock of its own, since the sandbox runs between them take time too."""
    facts.scratch.pop("worked.deadline", None)
    facts.scratch.pop("worked.out_of_time", None)
    facts.scratch["worked.seconds"] = seconds


def out_of_time(facts: Facts) -> bool:
    """Did a prediction traced in `facts` (since the last start_clock) stop at the clock? Its Finding then says only
    that the machine did not finish reading the code in time, nothing about the code: release, which traces its
    own solution, takes it as the machine's fault (authoring.release.TraceTimeout)."""
    return bool(facts.scratch.get("worked.out_of_time"))


def message(name: str, found: Finding, label: str) -> str:
    """The failed check's message."""
    return f"{name} was not worked out ({found.what}, in {label}). {RULE[0].upper()}{RULE[1:]}"
