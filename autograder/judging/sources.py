"""sources: what a notebook's code cells say, read with `ast` and never run: the names each cell binds, where
each exercise is observed (its check cell, or where the released notebook puts it), which cell defines a
function or sets a prediction, functions whose code stands above a leftover `raise NotImplementedError`,
and later cells that rebind a name an exercise used.

May import: stdlib, autograder.model.
"""
from __future__ import annotations

import ast
import bisect
import builtins
import collections
import collections.abc
import functools
import re
import threading
from dataclasses import dataclass
from typing import Literal

from autograder.model import Key

# An exercise's check cell: `lab.check("<id>")` and nothing else.
CHECK_CELL = re.compile(r"\s*lab\.check\(\s*[\"']?(\w+)[\"']?\s*\)\s*")


def check_cell_exercise(source: str) -> str | None:
    """The exercise id of a check cell's source (`lab.check("3")` -> "3"), or None for any other cell."""
    m = CHECK_CELL.fullmatch(source)
    return m.group(1) if m else None


CACHED_UP_TO = 4_000          # characters of one cell: a longer one is parsed each time
CACHE_CHARACTERS = 400_000    # characters of all cached cells (a tree takes about 200 bytes a character: 80 MB)
_TREES: collections.OrderedDict[str, ast.Module | None] = collections.OrderedDict()
_TREES_SIZE = [0]
_TREES_LOCK = threading.Lock()


def parse(source: str) -> ast.Module | None:
    """The cell's syntax tree; IPython's magics and shell escapes (`%time`, `!ls`, `x?`) are left out, and a
    cell magic (`%%time`) or a cell that is not Python gives None. Cached by source (cells up to CACHED_UP_TO
    characters, the least recently used dropped beyond CACHE_CHARACTERS in all): the cells a batch's
    notebooks share (the released notebook's) are parsed once, and their trees, which nothing changes, are
    shared, with what is derived from them (`derived`); a submission's own long cells are not kept."""
    if len(source) > CACHED_UP_TO:
        return _parse(source)
    with _TREES_LOCK:
        if source in _TREES:
            _TREES.move_to_end(source)
            return _TREES[source]
    tree = _parse(source)
    with _TREES_LOCK:
        if source not in _TREES:
            _TREES[source] = tree
            _TREES_SIZE[0] += len(source)
            while _TREES_SIZE[0] > CACHE_CHARACTERS:
                old, _ = _TREES.popitem(last=False)
                _TREES_SIZE[0] -= len(old)
        return _TREES[source]


# Cell magics whose body IPython runs as Python in the notebook's namespace (timing it, or keeping its output):
# the body is read as the cell (issue 44). `%%time` takes no argument (IPython refuses `%%time x = 1` and `%%time
# # note` with a UsageError and runs nothing); `%%capture` takes its options and an output name. Any other cell
# magic makes the cell not Python here: `%%timeit` runs its body in a namespace of its own (nothing it sets reaches
# the notebook: IPython 9.19, checked), `%%bash`, `%%writefile`... are not Python at all.
TRANSPARENT_MAGICS = ("time", "capture")
_HELP = re.compile(r"%%\w+\?")   # `%%time?` asks for help: IPython reads it as no cell magic


def cleaned_lines(source: str) -> list[str]:
    """The cell's lines (ends kept) after IPython's first clean-up, as `IPython.core.inputtransformer2` does it
    before it looks for a cell magic: leading blank lines dropped, then the first line's indentation taken off every
    line that starts with it."""
    lines = source.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line and not line.isspace()), 0)
    lines = lines[start:]
    indent = re.match(r"[ \t]+", lines[0]) if lines else None
    if indent:
        n = len(indent.group(0))
        lines = [line[n:] if line.startswith(indent.group(0)) else line for line in lines]
    return lines


def cell_magic(source: str) -> tuple[str, str, str] | None:
    """(name, argument line, body) of the cell magic a cell starts with, as IPython reads it (`%%capture out` ->
    ("capture", "out", the lines after it)), or None for a cell without one."""
    lines = cleaned_lines(source)
    if not lines or not lines[0].startswith("%%") or _HELP.match(lines[0]):
        return None
    name, _, line = lines[0][2:].rstrip().partition(" ")
    return name, line, "".join(lines[1:])


MAX_MAGICS = 4   # cell magics one inside another that are read; more make the cell not Python here (each is a
                 # pass over the rest of the cell: 42,000 nested %%time lines cost 35 s of the grader's CPU)


def python_of(source: str) -> str | None:
    """The Python a cell runs in the notebook's namespace: the cell itself, or the body under %%time and %%capture
    (also one inside the other, up to MAX_MAGICS); None under any other cell magic."""
    for _ in range(MAX_MAGICS + 1):
        magic = cell_magic(source)
        if magic is None:
            return source
        name, line, body = magic
        if name not in TRANSPARENT_MAGICS or (name == "time" and line.strip()):
            return None
        source = body
    return None


def hidden_code(source: str) -> bool:
    """Does the cell run code its syntax tree (`parse`) leaves out: a line magic or shell escape (`%time f()`,
    `!cmd`), a help line (`x?`), which `_parse` blanks so that the rest can be read, or an expanded argument of a cell
    magic (`%%capture {f()}`, `$x`: IPython evaluates it)? Such code can set any name, so what the cell sets is not
    worked out by hand (autograder.judging.worked). A cell that is not Python here (`python_of` is None) is not
    hidden: it reads as nothing at all."""
    for _ in range(MAX_MAGICS + 1):
        magic = cell_magic(source)
        if magic is None:
            break
        name, line, body = magic
        if name not in TRANSPARENT_MAGICS or (name == "time" and line.strip()):
            return False
        if "{" in line or "$" in line:
            return True
        source = body
    else:
        return False
    text = "".join(cleaned_lines(source))
    if not any((line.lstrip().startswith(("%", "!")) or line.split("#")[0].rstrip().endswith("?"))
               and not _harmless(line) for line in text.splitlines() if line.strip()):
        return False   # no line `_parse` would blank but a harmless one (most cells: no second parse)
    try:
        ast.parse(text)   # Python as it stands (such a line inside a string): nothing was blanked
        return False
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return True


# Line magics that run none of the cell's code (display settings, listings): a PREDICT cell may keep them.
SAFE_LINE_MAGICS = frozenset({"precision", "matplotlib", "pprint", "xmode", "who", "whos", "lsmagic", "config"})


def _harmless(line: str) -> bool:
    """Is a line `_parse` blanks one that runs no code: a SAFE_LINE_MAGICS magic without an expanded argument
    (IPython evaluates `{...}` and `$name` in a magic's line), or a help line (`name?`, `torch.tensor??`)?"""
    text = line.strip()
    if text.startswith("%") and not text.startswith("%%"):
        name, _, rest = text[1:].partition(" ")
        return name in SAFE_LINE_MAGICS and "{" not in rest and "$" not in rest
    return re.fullmatch(r"[A-Za-z_][\w.]*\?{1,2}", text) is not None


def _parse(source: str) -> ast.Module | None:
    python = python_of(source)
    if python is None:
        return None
    source = "".join(cleaned_lines(python))
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    kept = [("" if line.lstrip().startswith(("%", "!")) or line.split("#")[0].rstrip().endswith("?") else line)
            for line in source.splitlines()]
    try:
        return ast.parse("\n".join(kept))
    except (SyntaxError, ValueError, RecursionError, MemoryError):   # too deeply nested to read: not Python here
        return None


def derived(node: ast.AST, what: collections.abc.Hashable, make) -> object:
    """What `make(node)` derives from a node of a (cached, shared) syntax tree, computed once and kept on the node
    itself (so it lives exactly as long as the tree), under `what` (a name, or a tuple of a name and what else the
    value depends on). Two threads may both compute it: the same value."""
    cache = node.__dict__.setdefault("_agl", {})
    if what not in cache:
        cache[what] = make(node)
    return cache[what]


def _targets(node: ast.AST) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, (ast.Tuple, ast.List)):
        return set().union(*(_targets(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return set()


def bindings(tree: ast.Module | None, imports: bool = True) -> frozenset[str]:
    """The top-level names a cell binds: assignments, definitions, for and with targets, and (with
    `imports`) imports."""
    if tree is None:
        return frozenset()
    return derived(tree, f"bindings {imports}", lambda t: _bindings(t, imports))


def _bindings(tree: ast.Module, imports: bool) -> frozenset[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.Assign,)):
            for t in node.targets:
                names |= _targets(t)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            names |= _targets(node.target)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.For, ast.AsyncFor)):
            names |= _targets(node.target)
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    names |= _targets(item.optional_vars)
        elif imports and isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    for node in ast.walk(tree):   # walrus at any depth of a top-level expression binds a top-level name
        if isinstance(node, ast.NamedExpr) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return frozenset(names)


def function_def(tree: ast.Module | None, name: str) -> ast.FunctionDef | None:
    """The last top-level `def name` of a cell, or None."""
    found = None
    for node in tree.body if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            found = node
    return found


def _is_not_implemented(node: ast.stmt) -> bool:
    if not isinstance(node, ast.Raise) or node.exc is None:
        return False
    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
    return isinstance(exc, ast.Name) and exc.id == "NotImplementedError"


def code_above_raise(fn: ast.FunctionDef) -> bool:
    """Does the function end with `raise NotImplementedError(...)` below code of its own (other than its
    docstring)? Then the code was written but the placeholder line was left in."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        body = body[1:]
    placeholder = lambda s: isinstance(s, ast.Pass) or (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))
    return bool(body) and _is_not_implemented(body[-1]) and any(not placeholder(s) for s in body[:-1])


def free_globals(fn: ast.FunctionDef) -> frozenset[str]:
    """The global names a function reads: names it loads that are neither its parameters nor bound inside
    it, nor builtins."""
    return derived(fn, "free globals", _free_globals)


def _free_globals(fn: ast.FunctionDef) -> frozenset[str]:
    args = fn.args
    local = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    local |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    loaded: set[str] = set()
    for node in ast.walk(fn):
        if isinstance(node, ast.Name):
            (loaded if isinstance(node.ctx, ast.Load) else local).add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not fn:
            local.add(node.name)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
        elif isinstance(node, ast.Global):
            local -= set(node.names)
    return frozenset(n for n in loaded - local if not hasattr(builtins, n))


Where = Literal["check cell", "moved", "no check cell"]


@dataclass(frozen=True)
class Position:
    """Where an exercise is observed: after code cell `after` (-1: before every cell). `where` says why:
    at its own check cell; its check cell was "moved" above the cell that defines its functions; or there
    was "no check cell" (it is observed where the released notebook checks it, after its PRODUCE cell).
    `check` is its check cell's index (None when there is none)."""

    after: int
    where: Where
    check: int | None = None


def _index(binds: tuple[frozenset[str], ...]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, names in enumerate(binds):
        for name in names:
            out.setdefault(name, []).append(i)
    return out


@dataclass(frozen=True)
class Facts:
    """What a notebook's code cells say (see the module docstring), per code cell in order."""

    binds: tuple[frozenset[str], ...]
    trees: tuple[ast.Module | None, ...]
    checks: tuple[str | None, ...]
    sources: tuple[str, ...] = ()

    @functools.cached_property
    def hidden(self) -> tuple[bool, ...]:
        """Per cell: does it run code its syntax tree leaves out (`hidden_code`)?"""
        if len(self.sources) != len(self.trees):   # facts made without their sources: nothing to read
            return (False,) * len(self.trees)
        # kept on the tree (`derived`): a cached tree is its one source's, so a notebook's shared cells are read once
        return tuple(derived(t, "hidden code", lambda _t, c=c: hidden_code(c)) if t is not None else False
                     for c, t in zip(self.sources, self.trees, strict=True))

    @classmethod
    def of(cls, cells: list[str]) -> Facts:
        """The facts of `cells` (each code cell's source, in order)."""
        trees = tuple(parse(c) for c in cells)
        return cls(tuple(bindings(t) for t in trees), trees, tuple(check_cell_exercise(c) for c in cells), tuple(cells))

    def binding_cells(self, name: str, upto: int | None = None) -> list[int]:
        """The indices of the cells that bind `name` (up to and including `upto`)."""
        cells = self._bound_in.get(name, [])
        return cells if upto is None else cells[:bisect.bisect_right(cells, upto)]

    @functools.cached_property
    def _bound_in(self) -> dict[str, list[int]]:
        """name -> the cells that bind it, in order (one pass over the cells: lookups cost no scan)."""
        return _index(self.binds)

    @functools.cached_property
    def _bound_in_no_imports(self) -> dict[str, list[int]]:
        return _index(self.binds_no_imports)

    def defining_cell(self, name: str, upto: int) -> int | None:
        """The last cell up to `upto` that binds `name`, or None."""
        found = self.binding_cells(name, upto)
        return found[-1] if found else None

    def unreadable_cell(self, name: str, upto: int) -> int | None:
        """The last cell up to `upto` that Python cannot parse (a SyntaxError: it binds nothing) and whose text, at
        its top level, reads as defining or setting `name` (`def name(`, `name = `), or None."""
        pattern = re.compile(rf"^(?:def\s+{re.escape(name)}\s*\(|class\s+{re.escape(name)}\b|{re.escape(name)}\s*=[^=])",
                             re.M)
        for i in range(min(upto, len(self.trees) - 1), -1, -1):
            if self.trees[i] is None and pattern.search(self.sources[i]):
                return i
        return None

    def definition(self, name: str, upto: int) -> ast.FunctionDef | None:
        """The `def name` in force after cell `upto` (None if its last binding is not a def)."""
        cell = self.defining_cell(name, upto)
        return function_def(self.trees[cell], name) if cell is not None else None

    def position(self, exercise: str, functions: tuple[str, ...], names: tuple[str, ...]) -> Position:
        """Where `exercise` (with these produce functions and prediction variables) is observed."""
        checks = [i for i, e in enumerate(self.checks) if e == exercise]
        firsts = [cells[0] for cells in (self.binding_cells(f) for f in functions) if cells]
        produce = max(firsts) if firsts else None
        if checks and (produce is None or produce <= checks[0]):
            return Position(checks[0], "check cell", checks[0])
        if checks:
            return Position(produce, "moved", checks[0])
        if produce is not None:
            return Position(produce, "no check cell")
        predicted = [c for n in names for c in self.binding_cells(n)[:1]]
        return Position(max(predicted) if predicted else len(self.binds) - 1, "no check cell")

    def positions(self, key: Key, exercises: list[str] | None = None) -> dict[str, Position]:
        """exercise id -> where it is observed, for the exercises of `key` (or only `exercises`)."""
        out = {}
        for ex in key.exercises:
            if exercises is None or ex.id in exercises:
                names = tuple(c.name for c in key.checks if c.exercise == ex.id and c.kind == "predict" and c.name)
                out[ex.id] = self.position(ex.id, ex.functions, names)
        return out

    def used_names(self, functions: tuple[str, ...], names: tuple[str, ...], after: int) -> list[str]:
        """The names an exercise observed after cell `after` used: its prediction variables and functions,
        and the globals its functions read."""
        used = dict.fromkeys([*names, *functions])
        for f in functions:
            fn = self.definition(f, after)
            if fn is not None:
                used.update(dict.fromkeys(sorted(free_globals(fn))))
        return list(used)

    def rebound_later(self, used: list[str], after: int) -> list[tuple[str, int]]:
        """(name, cell) for each of `used` that a cell after `after` binds again (imports aside: importing
        a module again binds the same module): the first such cell of each name."""
        out = []
        for name in used:
            cells = self._bound_in_no_imports.get(name, [])
            k = bisect.bisect_right(cells, after)
            if k < len(cells):
                out.append((name, cells[k]))
        return out

    @functools.cached_property
    def scratch(self) -> dict:
        """A cache for what other modules derive from these facts (autograder.judging.worked)."""
        return {}

    @functools.cached_property
    def binds_no_imports(self) -> tuple[frozenset[str], ...]:
        """Per cell, the top-level names it binds other than by importing."""
        return tuple(bindings(t, imports=False) for t in self.trees)
