"""A prediction is worked out, not run (autograder.judging.worked), read as syntax trees; and the commit records of
predictions read back and show a hand edit (autograder.judging.commit). The kernel and the batch: tests/test_predictions.py."""
from __future__ import annotations

import json

import pytest

from autograder.judging import commit, sources, worked
from autograder.keyfile import load_key

from conftest import ROOT


SETUP = "import torch, math\nimport numpy as np\nfrom autograder import Lab\nlab = Lab('a', 'b')\nP = lab.parameters"


def _finding(*cells: str, name: str, produce=("ex1",), predictions=("p1", "p2")):
    facts = sources.Facts.of([SETUP, *cells])
    return worked.finding(facts, name, len(cells), frozenset(produce), frozenset(predictions))


@pytest.mark.parametrize("cell", [
    "p1 = None", "p1 = (2.5, None)", "p1 = 'RuntimeError'", "p1 = RuntimeError", "p1 = math.nan",
    "p1 = float('inf')", "p1 = torch.nan", "p1 = torch.tensor(2.5)", "p1 = torch.Size([2])", "p1 = torch.float64",
    "p1 = 2 * P.x0 * math.cos(P.x0)",
    "X = np.array([[1., 2.], [3., 4.]])\nr = np.array([0.5, -1.])\np1 = 2 / 2 * r @ X",
    "def f(x):\n    return 3 * x ** 2\np1 = f(P.x0)",
    "grad = 2 * P.x0   # a name of my own\np1 = grad",
    "p1 = 1.0\nprint(torch.tensor(1.0, requires_grad=True))   # not part of p1",
    "x = P.x0\np1 = 2 * x\nx = torch.tensor(P.x0, requires_grad=True)\n(x * x).backward()\nprint(x.grad)   # checked after",
    "p1 = 2 * lab.parameters['x0']", "p1 = torch.tensor(2.5, requires_grad=False)", "p1 = type(ValueError()).__name__",
    "import mpmath\np1 = mpmath.diff(lambda v: v ** 2, P.x0)", "p1 = dict(returns=None, value=2 * P.x0)['value']",
    "types = [2 * P.x0]\np1 = types[0]", "p1 = float(torch.trace(torch.eye(2)))", "import sympy\np1 = sympy.Rational(1, 3)",
    "load = 2.0\np1 = load * P.x0",
])
def test_a_worked_out_prediction_is_a_prediction(cell):
    assert _finding(cell, name="p1") is None


@pytest.mark.parametrize("cell, what", [
    ("_x = torch.tensor(P.x0, requires_grad=True); p1 = (_x * _x).backward(); p2 = _x.grad.item()", "`requires_grad=`"),
    ("_x = torch.tensor(P.x0)\n_x.requires_grad_()\ny = _x * _x\ny.backward()\np1 = _x.grad", "`_x.requires_grad_`"),
    ("p1 = torch.autograd.grad(torch.tensor(1.0) * 2, [])", "`torch.autograd.grad`"),
    ("p1 = torch.func.grad(torch.sin)(torch.tensor(P.x0))", "`torch.func.grad`"),
    ("p1 = torch.nn.Linear(2, 1).weight", "`torch.nn`"),
    ("from torch.autograd import grad\np1 = grad", "`from torch.autograd import ...` (a prediction may import "
     "cmath, decimal, fractions, math, mpmath, numpy, scipy, statistics, sympy, torch, not autograd's modules "
     "or what makes code from data)"),
    ("vals = []\nvals.append(torch.ones(1).grad)\np1 = vals[0]", "`torch.ones(1).grad`"),
    ("p1 = getattr(torch, 'autograd')", "`getattr`"),
    ("g = getattr\np1 = g(torch.ones(1), 'gr' + 'ad')", "`getattr`"),
    ("p1 = torch.tensor(P.x0, **{'requires_grad': True}) * 2", "`**` keyword arguments"),
    ("p1 = __builtins__.len([])", "`__builtins__`"),
    ("p1 = get_ipython().user_ns['ex1'](2.0)", "`get_ipython().user_ns`"),
    ("p1 = torch.sys.modules['__main__'].ex1(2.0)", "`torch.sys.modules`"),
    ("_t = torch.ones(1)\np1 = _t._grad", "`_t._grad`"),
    ("if True:\n    p1 = torch.ones(1).grad", "no plain top-level assignment sets p1 (a prediction is written as `p1 = "
     "...` at the top of its PREDICT cell, not inside a block, a function or a cell magic other than %%time and "
     "%%capture)"),
    ("p1 = P.__class__", "`P.__class__`"),
    ("p1 = ex1(torch.tensor(2.0))", "ex1, your PRODUCE function"),
    # routes around the rule an attacker found in 2026-12 (issue 45): code made from data, autograd's kernels
    ("src = 'def f(x: torch.Tensor):\\n    return x'\ncu = torch.jit.CompilationUnit(src)\np1 = cu.f(torch.ones(1))",
     "`torch.jit.CompilationUnit` (code made from data, or an autograd kernel)"),
    ("p1 = float(np.load('g.npy', allow_pickle=True))", "`np.load` (code made from data, or an autograd kernel)"),
    ("p1 = torch.ops.aten.threshold_backward(torch.ones(1), torch.ones(1), 0.0)",
     "`torch.ops.aten.threshold_backward` (code made from data, or an autograd kernel)"),
    ("import sympy\np1 = float(sympy.sympify('2*3'))", "`sympy.sympify` (code made from data, or an autograd kernel)"),
    ("import sympy\np1 = float(sympy.S('2*3'))", "`sympy.S(...)` (sympy's S() of a string runs it as code)"),
    ("p1 = np.core.numeric.operator.attrgetter('grad')(torch.ones(1))",
     "`np.core.numeric.operator.attrgetter` (code made from data, or an autograd kernel)"),
    ("from numpy import load\np1 = load('g.npy')", "`from numpy import ...` (a prediction may import cmath, decimal, "
     "fractions, math, mpmath, numpy, scipy, statistics, sympy, torch, not autograd's modules or what makes code from "
     "data)"),
    ("p1 = torch.load('g.pt', weights_only=False)", "`torch.load` (code made from data, or an autograd kernel)"),
])
def test_a_prediction_that_runs_autograd_or_a_produce_function_is_named(cell, what):
    found = _finding(cell, name="p1")
    assert found is not None and found.what == what and found.cell == 1


@pytest.mark.parametrize("cells, what, cell", [
    (["%%bash\np1 = torch.ones(1).grad"], "no plain top-level assignment sets p1", 1),
    (["%%time\np1 = torch.ones(1).grad"], "`torch.ones(1).grad`", 1),   # %%time runs its body: it is read
    (["def f():\n    global p1\n    p1 = torch.ones(1).grad\nf()"], "no plain top-level assignment sets p1", 1),
    (["p1 = 1.0", "if True:\n    p1 = torch.ones(1).grad"], "code cell 3 changes p1 inside a block", 2),
    (["def round(v):\n    t = torch.tensor(v, requires_grad=True)\n    return t", "p1 = round(P.x0)"],
     "`requires_grad=`", 1),
    (["math.fabs = lambda v: torch.ones(1).grad", "p1 = math.fabs(P.x0)"], "`torch.ones(1).grad`", 1),
    (["P['g1'] = torch.ones(1).grad", "p1 = P['g1']"], "`torch.ones(1).grad`", 1),
    (["p2 = torch.ones(1).grad", "p1 = p2"], "`torch.ones(1).grad`", 1),
    (["from torch.func import *", "p1 = grad(torch.sin)(torch.tensor(P.x0))"],
     "grad, from a `from ... import *` that brings in autograd", 1),
    (["from torch.autograd import *\np1 = grad(torch.ones(1), [])"], "grad, from a `from ... import *`", 1),
    (["exec('g = torch.ones(1).grad')", "p1 = g"], "g, which no cell visibly sets", 2),
    (["%%writefile g.py\ng = torch.ones(1).grad", "p1 = g"], "g, which no cell visibly sets", 2),
    (["buf = torch.zeros(())\np1 = buf\nx = torch.tensor(1.0, requires_grad=True)\n(x * x).backward()\n"
      "buf.copy_(x.grad)"], "`x.grad`", 1),
    (["buf = torch.zeros(())\np1 = buf", "x = torch.tensor(1.0, requires_grad=True)\n(x * x).backward()\n"
      "_ = buf.copy_(x.grad)"], "`x.grad`", 2),
    (["a = [0.0]\nb = a\nb[0] = torch.ones(1).grad\np1 = a[0]"], "`torch.ones(1).grad`", 1),
    (["v = []\n_ = v.append(torch.ones(1).grad)\np1 = v[0]"], "`torch.ones(1).grad`", 1),
])
def test_what_hides_the_cell_that_sets_a_prediction_is_named(cells, what, cell):
    found = _finding(*cells, name="p1")
    assert found is not None and found.what.startswith(what) and found.cell == cell, found


@pytest.mark.parametrize("cells, name", [
    (["x = torch.tensor(3.0, requires_grad=True)\n(x * x).backward()", "x = P.x0\np1 = 2 * x", "p2 = 3 * x"], "p2"),
    (["p1 = 2 * P.x0", "def ex1(x)\n    return x   # a syntax error in a PRODUCE cell"], "p1"),
    (["p1 = 2 * P.x0", "%%time\ndef ex1(x):\n    return x"], "p1"),
    (["r = {'returns': None, 'grad': 2 * P.x0}\np1 = r['grad']"], "p1"),
    (["%precision 4\np1 = 2 * P.x0   # is it 2x?"], "p1"),
    (["p2 = 2 * P.x0", "torch.autograd.grad?\np1 = p2 * 3"], "p1"),   # another prediction, set before; a help line
])
def test_honest_predictions_beside_other_code_are_predictions(cells, name):
    assert _finding(*cells, name=name) is None


def test_a_produce_cell_may_import_and_a_deep_or_long_cell_is_read_in_bounded_time():
    import time

    assert _finding("import torch\nimport math\ndef ex1(x):\n    return x", "p1 = torch.tensor(math.pi)", name="p1") is None
    deep = "p1 = " + "+".join(["1"] * 3000)
    facts = sources.Facts.of([SETUP, deep])   # too deep for Python's parser: the cell is not Python here
    assert worked.finding(facts, "p1", 1, frozenset(), frozenset()).what.startswith("no plain top-level")
    chain = "p1 = 2 * P.x0 + 0 * float((" + "+".join(["0"] * 900) + " + torch.zeros(())).grad is None)"
    assert _finding(chain, name="p1") is not None
    start = time.monotonic()
    long = "\n".join(["a0 = 1"] + [f"a{i} = a{i - 1}" for i in range(1, 24000)] + ["p1 = 2 * P.x0 + a23999"])
    found = _finding(long, name="p1")
    assert found is not None and found.what == "more code than the grader reads to trace a prediction"
    assert time.monotonic() - start < 30


def test_a_name_from_an_earlier_cell_is_followed_there():
    found = _finding("_x = torch.tensor(2.0, requires_grad=True)\n(_x ** 2).backward()\nmine = _x.grad.item()",
                     "p1 = mine", name="p1")
    assert found == worked.Finding("`requires_grad=`", 1)
    found = _finding("def ex1(x):\n    helper = 3\n    return x\nconst = 2.0", "p1 = const", name="p1")
    assert found is not None and found.what == "const, which a PRODUCE cell defines"
    assert found is not None and "PRODUCE cell" in found.what and found.cell == 1


def test_every_right_prediction_of_every_example_and_solution_is_worked_out():
    """The rule keeps every form the examples and solutions of every assignment write (pat's aside)."""
    from autograder.grading.notebook import code_cells, read_notebook

    seen = 0
    for folder in sorted((ROOT / "assignments").iterdir()):
        key = load_key(folder / "public_key.json")
        produce = frozenset(f for e in key.exercises for f in e.functions)
        names = frozenset(c.name for c in key.checks if c.kind == "predict" and c.name)
        notebooks = [p for p in (ROOT / "examples" / "submissions" / folder.name).glob("*.ipynb") if p.stem != "pat"]
        for path in [*notebooks, *(ROOT / "solutions" / folder.name).glob("*.ipynb")]:
            expected = path.with_suffix(".expected.json")
            if expected.exists() and json.loads(expected.read_text())["status"] != "graded":
                continue
            facts = sources.Facts.of(code_cells(read_notebook(path)))
            positions = facts.positions(key)
            for c in key.checks:
                if c.kind == "predict" and c.name:
                    seen += 1
                    assert worked.finding(facts, c.name, positions[c.exercise].after, produce, names) is None, \
                        (path, c.name)
    assert seen > 500


def test_a_commit_record_reads_back_and_a_hand_edit_shows():
    record = commit.make("01-backward-vs-grad", "amy", "1", {"p1_grad": {"t": "float", "v": 1.5}}, ["p1_grad = 1.5"],
                         when=1796040000.0)
    read = commit.read(record)
    assert read.intact and read.time == "2026-11-30T12:00:00Z" and read.values == {"p1_grad": {"t": "float", "v": 1.5}}
    edited = json.loads(json.dumps(record))
    edited["values"]["p1_grad"]["v"] = 2.0
    assert commit.read(edited).intact is False
    assert commit.choose([commit.read(edited)], "01-backward-vs-grad", "amy")["1"].startswith(
        "its commit record was edited by hand")
    other = commit.read(commit.make("01-backward-vs-grad", "bob", "1", {"p1_grad": {"t": "float", "v": 1.5}}, []))
    assert "belongs to another notebook" in commit.choose([other], "01-backward-vs-grad", "amy")["1"]
    later = commit.read(commit.make("01-backward-vs-grad", "amy", "1", {"p1_grad": {"t": "float", "v": 9.0}}, [],
                                    when=1796050000.0))
    assert commit.choose([later, read], "01-backward-vs-grad", "amy")["1"] is read   # the first commit counts


def test_a_record_json_cannot_write_again_or_too_large_is_no_record():
    nan = commit.make("01-backward-vs-grad", "amy", "1", {"p1_grad": {"t": "float", "v": float("nan")}}, [])
    assert commit.read(nan) is None   # a bare NaN (Python's JSON reads one): a report could not be written with it
    assert commit.read({**commit.make("01-backward-vs-grad", "amy", "1", {}, []), "extra": float("inf")}) is None
    big = {"t": "seq", "kind": "list", "items": [{"t": "str", "v": "x" * 2000}] * 200}
    assert commit.read(commit.make("01-backward-vs-grad", "amy", "1", {"p1_grad": big}, [])) is None
    assert commit.read(commit.make("01-backward-vs-grad", "amy", "1", {"p1_grad": {"t": "float", "v": "nan"}}, []))


def test_a_short_cell_is_parsed_once_per_batch_and_a_long_one_each_time():
    from autograder.judging import sources
    from autograder.judging.sources import CACHE_CHARACTERS, CACHED_UP_TO, parse

    short = "x = 1\ny = x + 2\n"
    assert parse(short) is parse(short)   # the released cells every notebook shares: one tree
    long = "z = 0\n" * (CACHED_UP_TO // 6 + 1)
    first, second = parse(long), parse(long)
    assert first is not second and len(first.body) == len(second.body) == CACHED_UP_TO // 6 + 1   # none kept
    for i in range(2 * CACHE_CHARACTERS // CACHED_UP_TO + 1):   # many cells of their own: the oldest go
        parse(f"v{i} = 0  # " + "." * (CACHED_UP_TO - 20))
    assert sum(map(len, sources._TREES)) == sources._TREES_SIZE[0] <= CACHE_CHARACTERS
    assert parse(short) is parse(short)


@pytest.mark.parametrize("magic, worked_out", [("%%time", True), ("%%capture out", True), ("%%capture", True),
                                               ("%%bash", False), ("%%writefile p.py", False), ("%%timeit", False),
                                               ("%%time\n%%capture", True), ("%%capture --no-stderr c\n%%time", True),
                                               ("\n\n%%time", True), ("%%time  ", True), ("%%time # note", False),
                                               ("%%capture\n%%timeit", False)])
def test_a_cell_magic_that_runs_its_body_as_python_keeps_the_predictions_worked_out(magic, worked_out):
    """%%time and %%capture run the cell's body as Python in the notebook: its predictions are read there, in
    the self-check and the grade alike; any other cell magic makes the cell something else than Python."""
    found = _finding(f"{magic}\np1 = 2 * P.x0", name="p1")
    assert (found is None) == worked_out, found
    if not worked_out:
        assert "other than %%time and %%capture" in found.what


def test_tracing_a_prediction_has_a_bound_of_work_and_fails_closed_beyond_it():
    """shared: attack, second pass: 3,000 names in one statement, each traced through it, took minutes of the
    grader's own time; past MAX_WORK the prediction is not taken as worked out, within a second."""
    import time

    from autograder.judging import worked
    from autograder.judging.sources import Facts

    names = [f"a{i}" for i in range(3000)]
    facts = Facts.of([" = ".join(names) + " = (" + "0," * 30_000 + ")", "p1_grad = len([" + ", ".join(names) + "])"])
    start = time.monotonic()
    found = worked.finding(facts, "p1_grad", 1, frozenset({"ex1"}), frozenset({"p1_grad"}))
    assert found.what == "more code than the grader reads to trace a prediction" and found.cell == 0
    assert time.monotonic() - start < 30   # before: over a minute here (under load); now about 0.3 s


def _ipython_runs(cell: str) -> str | None:
    """The Python IPython itself runs in the notebook's namespace for `cell`: its transform of the cell, or of the body
    of each %%time (without an argument) and %%capture it starts with; None under any other cell magic."""
    import ast

    from IPython.core.inputtransformer2 import TransformerManager

    code = TransformerManager().transform_cell(cell)
    while True:
        tree = ast.parse(code)
        call = tree.body[0].value if len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "run_cell_magic"):
            return code
        name, line, body = (a.value for a in call.args)
        if name not in ("time", "capture") or (name == "time" and line):
            return None
        code = TransformerManager().transform_cell(body)


CELLS_UNDER_MAGICS = [
    "%%time\np1 = 2.0", "  %%time\n  p1 = 2.0\n  p2 = None", "\t%%capture out\n\tp1 = 2.0", "\n \n%%time\np1 = 2.0",
    "%%time\n%%capture\np1 = 2.0", "%%capture\n  %%time\n  p1 = 2.0", "%%time\r\np1 = 2.0\r\n", "%%time\n  p1 = 2.0",
    "%%time # note\np1 = 2.0", "%%time p1 = 2.0", "%%timeit\np1 = 2.0", "%%capture\n%%timeit -n1\np1 = 2.0",
    "%%time?\np1 = 2.0", "%%bash\np1=2", "# PREDICT 1\n%%time\np1 = 2.0", "%%time\n%time p2 = 1\np1 = 2.0",
]


@pytest.mark.parametrize("cell", CELLS_UNDER_MAGICS)
def test_a_cell_under_a_cell_magic_is_read_as_ipython_runs_it(cell):
    """issue 44: the grader reads a cell as the Python IPython runs in the notebook for it (9.19's transforms), so a
    PREDICT cell under %%time or %%capture (indented, after blank lines, one magic inside the other) sets its
    predictions, and one under %%timeit (a namespace of its own) or %%time with an argument (a UsageError) does not."""
    import ast

    from autograder.judging.sources import bindings, parse

    runs = _ipython_runs(cell)
    try:
        expected = set(bindings(ast.parse(runs))) if runs is not None else set()
    except SyntaxError:   # IPython raises it when the cell runs: nothing is set
        expected = set()
    assert set(bindings(parse(cell))) == expected, (cell, runs)


_SETUP = "import torch, math\nimport numpy as np\nfrom autograder import Lab\nlab = Lab('a', 'b')\nP = lab.parameters"
_AUTOGRAD = "_x = torch.tensor(P.x0, requires_grad=True); (_x * _x).backward(); p1 = _x.grad.item()"


@pytest.mark.parametrize("cells", [
    ["p1 = 0.0\n%time " + _AUTOGRAD],                          # a line magic after the literal, in the same cell
    ["p1 = 0.0", "%time " + _AUTOGRAD],                        # ... or in a later cell
    ["%time " + _AUTOGRAD, "p1 = p1"],                         # ... or earlier, then carried
    ["exec(" + repr(_AUTOGRAD) + ")", "p1 = p1"],              # exec, then carried
    ["exec(" + repr(_AUTOGRAD.replace("p1 =", "p2 =")) + ")", "p1 = p2"],   # into another prediction's name
    ["%%capture {get_ipython().user_ns.__setitem__('p2', 3.0)}\np1 = p2"],  # a cell magic's line is expanded: run
    ["%precision 4\np1 = 0.0\n" + _AUTOGRAD + "; s = '?#'"],   # a line ending in ? before a # is blanked too
])
def test_code_the_syntax_tree_leaves_out_never_makes_a_prediction_worked_out(cells):
    """A student's attack (issue 44's round): a line magic, a help line, an expanded magic argument or exec can set a
    prediction with autograd while the tree shows a literal; each must fail closed."""
    facts = sources.Facts.of([_SETUP, *cells])
    found = worked.finding(facts, "p1", len(cells), frozenset({"ex1"}), frozenset({"p1", "p2"}))
    assert found is not None, cells


def test_nested_cell_magics_are_read_to_a_depth_of_four_in_linear_time():
    deep = "%%time\n" * 42_000 + "p1 = 0.0\n"
    assert sources.python_of(deep) is None and sources.parse(deep) is None   # not read: 35 s of CPU before
    assert sources.python_of("%%time\n%%capture\n%%time\n%%capture\np1 = 0.0\n") == "p1 = 0.0\n"
