"""Predict first, then see the answer (issue 10): a prediction is worked out, not run (autograder.judging.worked); the
first self-check with every prediction filled in commits them, and only then shows the expected values; the
commit travels with the notebook and the grader reads it under the policy "first" or "last"."""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.judging import commit, sources, worked
from autograder.grading.grade import grade_notebook
from autograder.grading.identity import Source
from autograder.keyfile import load_key
from autograder.student.lab import REPORT_MIME
from autograder.grading.plan import draw_point

from conftest import ROOT, run_cli

A01 = ROOT / "assignments" / "01-backward-vs-grad"
SETUP = "import torch, math\nimport numpy as np\nfrom autograder import Lab\nlab = Lab('a', 'b')\nP = lab.parameters"


def _finding(*cells: str, name: str, produce=("ex1",), predictions=("p1", "p2")):
    facts = sources.Facts.of([SETUP, *cells])
    return worked.finding(facts, name, len(cells), frozenset(produce), frozenset(predictions))


@pytest.mark.parametrize("cell", [
    "p1 = None", "p1 = (2.5, None)", "p1 = 'RuntimeError'", "p1 = RuntimeError", "p1 = math.nan",
    "p1 = float('inf')", "p1 = torch.nan", "p1 = torch.tensor(2.5)", "p1 = torch.Size([2])", "p1 = torch.float64",
    "p1 = 2 * P.x0 * math.cos(P.x0)", "p1 = p2 * 3",
    "X = np.array([[1., 2.], [3., 4.]])\nr = np.array([0.5, -1.])\np1 = 2 / 2 * r @ X",
    "def f(x):\n    return 3 * x ** 2\np1 = f(P.x0)",
    "grad = 2 * P.x0   # a name of my own\np1 = grad",
    "p1 = 1.0\nprint(torch.tensor(1.0, requires_grad=True))   # not part of p1",
    "x = P.x0\np1 = 2 * x\nx = torch.tensor(P.x0, requires_grad=True)\n(x * x).backward()\nprint(x.grad)   # checked after",
    "p1 = 2 * lab.parameters['x0']", "p1 = torch.tensor(2.5, requires_grad=False)", "p1 = type(ValueError()).__name__",
    "import mpmath\np1 = mpmath.diff(lambda v: v ** 2, P.x0)", "p1 = dict(returns=None, value=2 * P.x0)['value']",
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
     "cmath, decimal, fractions, math, mpmath, numpy, scipy, statistics, sympy, torch, not autograd's modules)"),
    ("vals = []\nvals.append(torch.ones(1).grad)\np1 = vals[0]", "`torch.ones(1).grad`"),
    ("p1 = getattr(torch, 'autograd')", "`getattr`"),
    ("g = getattr\np1 = g(torch.ones(1), 'gr' + 'ad')", "`getattr`"),
    ("p1 = torch.tensor(P.x0, **{'requires_grad': True}) * 2", "`**` keyword arguments"),
    ("p1 = __builtins__.len([])", "`__builtins__`"),
    ("p1 = get_ipython().user_ns['ex1'](2.0)", "`get_ipython().user_ns`"),
    ("p1 = torch.sys.modules['__main__'].ex1(2.0)", "`torch.sys.modules`"),
    ("_t = torch.ones(1)\np1 = _t._grad", "`_t._grad`"),
    ("if True:\n    p1 = torch.ones(1).grad", "no plain top-level assignment sets p1 (a prediction is written as `p1 = "
     "...` at the top of its PREDICT cell, not inside a block, a function or a cell magic)"),
    ("p1 = P.__class__", "`P.__class__`"),
    ("p1 = ex1(torch.tensor(2.0))", "ex1, your PRODUCE function"),
])
def test_a_prediction_that_runs_autograd_or_a_produce_function_is_named(cell, what):
    found = _finding(cell, name="p1")
    assert found is not None and found.what == what and found.cell == 1


@pytest.mark.parametrize("cells, what, cell", [
    (["%%time\np1 = torch.ones(1).grad"], "no plain top-level assignment sets p1", 1),
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
    (["%%capture\ng = torch.ones(1).grad", "p1 = g"], "g, which no cell visibly sets", 2),
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


def test_a_prediction_a_commit_record_does_not_hold_is_graded_as_its_cell_stands_and_sealed_in_a_self_check(tmp_path):
    """A record made without one of the exercise's predictions (by hand, or before a new release added one)
    commits only what it holds: the other prediction is noted in the batch and shows no expected value, and no
    misconception, in a terminal check."""
    nb = nbformat.read(ROOT / "examples" / "submissions" / "01-backward-vs-grad" / "ben.ipynb", as_version=4)
    record = commit.make("01-backward-vs-grad", "ben", "1", {"p1_returns": {"t": "none"}}, [])
    _cell(nb, "ex1-check").outputs = [nbformat.v4.new_output("display_data", data={commit.COMMIT_MIME: record})]
    _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 0.86"
    nbformat.write(nb, tmp_path / "ben.ipynb")
    shutil.copy(A01 / "public_key.json", tmp_path)
    shown = {o["check_id"]: o for o in json.loads(run_cli("check", str(tmp_path / "ben.ipynb"), "--json").stdout)["outcomes"]}
    assert shown["1.predict.grad"]["status"] == "missing" and shown["1.predict.grad"]["expected"] is None
    assert shown["1.predict.grad"]["misconception"] is None and shown["1.predict.returns"]["status"] == "passed"
    graded = grade_notebook(tmp_path / "ben.ipynb", load_key(A01 / "public_key.json"), "ben")
    o = next(o for o in graded.outcomes if o.check_id == "1.predict.grad")
    assert o.status == "failed" and o.commit == ("p1_grad is not in exercise 1's commit record (the record was made "
                                                 "without it), so it was graded as its cell stands")


# ------------------------------------------------------------------------------------- in a real kernel

def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _run(nb, folder: Path):
    """Run the notebook top to bottom in a new kernel (a restart and "Run all")."""
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def _shown(nb, exercise: str) -> tuple[dict, dict | None]:
    """(check id -> outcome as the check cell showed it, the commit record in its output)."""
    outs = _cell(nb, f"ex{exercise}-check").outputs
    report = next(o["data"][REPORT_MIME] for o in outs if REPORT_MIME in o.get("data", {}))
    record = next((o["data"][commit.COMMIT_MIME] for o in outs if commit.COMMIT_MIME in o.get("data", {})), None)
    return {o["check_id"]: o for o in report["outcomes"] if o["exercise"] == exercise}, record


def test_predict_commit_reveal_revise_and_run_all_in_a_kernel_then_grade_under_both_policies(tmp_path, worker):
    for name in ("public_key.json", "backward-vs-grad.ipynb"):
        shutil.copy(A01 / name, tmp_path / name)
    nb = nbformat.read(tmp_path / "backward-vs-grad.ipynb", as_version=4)
    _cell(nb, "student-id").source = 'STUDENT_ID = "amy"'
    x = draw_point(load_key(A01 / "public_key.json").parameters, "01-backward-vs-grad", "amy", "own")["x0"]
    _cell(nb, "ex1-produce").source = "def ex1(x):\n    return (x * x).backward()"

    # 1. one prediction still `...`: no expected value is shown, and nothing is committed
    _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = ..."
    shown, record = _shown(_run(nb, tmp_path), "1")
    assert record is None and not (tmp_path / commit.STORE).exists()
    assert shown["1.predict.grad"]["status"] == "missing" and shown["1.predict.returns"]["status"] == "missing"
    assert "p1_returns = None is written down" in shown["1.predict.returns"]["message"]
    assert all(o["expected"] is None and o["oracle"] is None for o in shown.values())

    # 2. every prediction filled in (one wrong): committed, and the answers are shown
    _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 1.0"
    shown, first = _shown(_run(nb, tmp_path), "1")
    assert first is not None and first["values"]["p1_grad"] == {"t": "float", "v": 1.0}
    assert shown["1.predict.grad"]["status"] == "failed" and shown["1.predict.grad"]["expected"] == f"{2 * x:g}"

    # 3. revised after the answer was shown; a restart and "Run all" show the first commit again
    _cell(nb, "ex1-predict").source = f"p1_returns = None\np1_grad = {2 * x!r}"
    shown, again = _shown(_run(nb, tmp_path), "1")
    assert again == first
    grad = shown["1.predict.grad"]
    assert grad["status"] == "failed" and "revised after the answer was shown" in grad["commit"]
    assert "graded: the committed value" in grad["commit"]
    nbformat.write(nb, tmp_path / "amy.ipynb")

    # 4. the grader reads the record from the check cell's output: policy "first", then "last"
    key = load_key(A01 / "public_key.json")
    report = grade_notebook(tmp_path / "amy.ipynb", key, exercises=["1"], worker=worker,
                            source=Source(tmp_path / "amy.ipynb", None, "file"))
    outcome = next(o for o in report.outcomes if o.check_id == "1.predict.grad")
    assert outcome.status == "failed" and outcome.observed == "1.0" and "revised" in outcome.commit
    assert report.commits["1"]["values"]["p1_grad"]["v"] == 1.0
    last = replace(key, grading=replace(key.grading, prediction_policy="last"))
    report = grade_notebook(tmp_path / "amy.ipynb", last, exercises=["1"], worker=worker,
                            source=Source(tmp_path / "amy.ipynb", None, "file"))
    outcome = next(o for o in report.outcomes if o.check_id == "1.predict.grad")
    assert outcome.status == "passed" and "graded: the final cell" in outcome.commit

    # 5. `autograder check` from a terminal says what the notebook showed
    r = run_cli("check", str(tmp_path / "amy.ipynb"), "--exercise", "1", "--json")
    terminal = {o["check_id"]: o["status"] for o in json.loads(r.stdout)["outcomes"]}
    assert terminal == {c: o["status"] for c, o in shown.items()}

    # 6. a hand-edited record is reported and not trusted
    data = json.loads((tmp_path / "amy.ipynb").read_text())
    for cell in data["cells"]:
        for out in cell.get("outputs", []):
            if commit.COMMIT_MIME in out.get("data", {}):
                out["data"][commit.COMMIT_MIME]["values"]["p1_grad"]["v"] = 2 * x
    (tmp_path / "edited.ipynb").write_text(json.dumps(data))
    report = grade_notebook(tmp_path / "edited.ipynb", key, student="amy", exercises=["1"], worker=worker)
    outcome = next(o for o in report.outcomes if o.check_id == "1.predict.grad")
    assert outcome.status == "passed" and "edited by hand" in outcome.commit
    assert any("exercise 1: its commit record was edited by hand" in n for n in report.notes)


def test_a_computed_prediction_fails_in_the_kernel_and_in_the_batch_alike(tmp_path, worker):
    for name in ("public_key.json", "backward-vs-grad.ipynb"):
        shutil.copy(A01 / name, tmp_path / name)
    nb = nbformat.read(tmp_path / "backward-vs-grad.ipynb", as_version=4)
    _cell(nb, "student-id").source = 'STUDENT_ID = "cal"'
    _cell(nb, "ex1-predict").source = ("_x = torch.tensor(P.x0, requires_grad=True); p1_returns = (_x * _x).backward(); "
                                       "p1_grad = _x.grad.item()")
    shown, record = _shown(_run(nb, tmp_path), "1")
    assert record is not None
    for check in ("1.predict.returns", "1.predict.grad"):
        assert shown[check]["status"] == "failed"
        assert "was not worked out (`requires_grad=`" in shown[check]["message"]
    nbformat.write(nb, tmp_path / "cal.ipynb")
    report = grade_notebook(tmp_path / "cal.ipynb", load_key(A01 / "public_key.json"), exercises=["1"], worker=worker,
                            source=Source(tmp_path / "cal.ipynb", None, "file"))
    assert {o.check_id: o.status for o in report.outcomes if o.kind == "predict"} == \
        {"1.predict.returns": "failed", "1.predict.grad": "failed"}
    assert "A prediction is worked out, not run" in report.outcomes[0].message

    # the cell rewritten with literals after the commit: the committed values were still obtained by running code
    _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 1.0"
    nbformat.write(nb, tmp_path / "cal.ipynb")
    report = grade_notebook(tmp_path / "cal.ipynb", load_key(A01 / "public_key.json"), exercises=["1"], worker=worker,
                            source=Source(tmp_path / "cal.ipynb", None, "file"))
    grad = next(o for o in report.outcomes if o.check_id == "1.predict.grad")
    assert grad.status == "failed" and grad.message.endswith("(as its cell stood when it was committed)")


def test_a_terminal_check_reads_commits_but_never_makes_one(tmp_path):
    """Only a check cell run in the notebook commits (its output is what the grader reads): `autograder check`
    on a notebook without records shows no expected value and writes no record."""
    shutil.copy(A01 / "public_key.json", tmp_path)
    shutil.copy(ROOT / "examples" / "submissions" / "01-backward-vs-grad" / "noah.ipynb", tmp_path)
    r = run_cli("check", str(tmp_path / "noah.ipynb"), "--json")
    report = json.loads(r.stdout)
    predictions = [o for o in report["outcomes"] if o["kind"] == "predict"]
    assert predictions and all(o["status"] == "missing" and " is written down; " in o["message"] for o in predictions)
    assert all(o["expected"] is None and o["why"] is None for o in report["outcomes"])
    assert report["commits"] == {} and not (tmp_path / commit.STORE).exists()
    shutil.copy(ROOT / "examples" / "submissions" / "01-backward-vs-grad" / "ada.ipynb", tmp_path)
    report = json.loads(run_cli("check", str(tmp_path / "ada.ipynb"), "--json").stdout)
    assert report["score"] == report["max_score"] and set(report["commits"]) == set("123456")


def test_an_instructor_may_relax_the_rule_in_the_spec(tmp_path, worker):
    from autograder.authoring.spec import SpecError, load_spec

    src = (ROOT / "solutions" / "01-backward-vs-grad" / "spec.toml").read_text()
    folder = tmp_path / "01-backward-vs-grad"
    shutil.copytree(ROOT / "solutions" / "01-backward-vs-grad", folder)
    (folder / "spec.toml").write_text(src.replace("[grading]", '[grading]\npredictions = "any"\nprediction_policy = "last"', 1))
    spec = load_spec(folder)
    assert spec.grading.predictions == "any" and spec.grading.prediction_policy == "last"
    (folder / "spec.toml").write_text(src.replace("[grading]", '[grading]\nprediction_policy = "best"', 1))
    with pytest.raises(SpecError, match=r"prediction_policy = 'best' must be one of 'first', 'last'"):
        load_spec(folder)


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
