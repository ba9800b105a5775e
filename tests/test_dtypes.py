"""Issue 44, round three: bfloat16 and float16. A small assignment on autocast, built in a temporary folder (never
shipped): a dtype as an answer (predicted, observed, and a misconception on it), a bfloat16 leaf whose .grad is
observed, tolerances by dtype, and the refusal at release that names the tolerance and the dtype's fix. Released and
graded through the real sandbox."""
import json

import nbformat
import pytest

from autograder.authoring.release import BuildError, release
from autograder.grading.grade import grade_notebook
from autograder.keyfile import load_key
from autograder.render.class_stats import class_stats

SPEC = '''[assignment]
id = "autocast-lab"
title = "Autocast and bfloat16"
notebook = "autocast.ipynb"
torch_observed = "2.13.0"

[parameters]
x0 = { kind = "real", low = 0.5, high = 1.5, decimals = 2 }
x1 = { kind = "real", low = 0.5, high = 1.5, decimals = 2 }
x2 = { kind = "real", low = 0.5, high = 1.5, decimals = 2 }
w0 = { kind = "real", low = 0.5, high = 1.5, decimals = 2 }
w1 = { kind = "real", low = 0.5, high = 1.5, decimals = 2 }
w2 = { kind = "real", low = 0.5, high = 1.5, decimals = 2 }
b0 = { kind = "real", low = 0.5, high = 2.0, decimals = 2 }

[[exercise]]
id = "1"
title = "x @ w under autocast"
functions = ["ex1_matmul"]
args = [{ name = "x", params = ["x0", "x1", "x2"], shape = [1, 3] },
        { name = "w", params = ["w0", "w1", "w2"], shape = [3, 1] }]

[[exercise.check]]
id = "predict.dtype"
title = "predicted: the dtype of x @ w under torch.autocast('cpu', dtype=torch.bfloat16)"
predict = "p1_dtype"
expect = "torch.bfloat16"
why = "Under CPU autocast, a matmul runs in the autocast dtype, whatever its inputs' dtype."

[[exercise.check]]
id = "produce.dtype"
title = "ex1_matmul: the dtype of y"
function = "ex1_matmul"
observe = "returned.dtype"
expect = "torch.bfloat16"
why = "Under CPU autocast, a matmul runs in the autocast dtype, whatever its inputs' dtype."

[[exercise.check]]
id = "produce.value"
title = "ex1_matmul: y"
function = "ex1_matmul"
observe = "returned"
expect = "Matrix([[x0*w0 + x1*w1 + x2*w2]])"
why = "x @ w in bfloat16 keeps about 3 significant figures."

[[exercise.check]]
id = "produce.x_grad"
title = "ex1_matmul: x.grad after y.sum().backward()"
function = "ex1_matmul"
observe = "x.grad"
expect = "Matrix([[w0, w1, w2]])"
dtype = "bfloat16"
why = "A leaf's .grad has the leaf's dtype (float32), computed by the bfloat16 matmul's backward."

[[exercise.misconception]]
id = "forgot-autocast"
name = "forgot autocast"
checks = ["predict.dtype", "produce.dtype", "produce.value"]
value = "torch.float32"
feedback = "Outside torch.autocast a matmul of float32 tensors is float32: compute y inside the with block."

[[exercise]]
id = "2"
title = "a bfloat16 leaf"
functions = ["ex2_cube"]
args = [{ name = "b", param = "b0", dtype = "bfloat16" }]

[[exercise.check]]
id = "predict.grad_dtype"
title = "predicted: the dtype of b.grad"
predict = "p2_dtype"
expect = "torch.bfloat16"
why = "A leaf's .grad has the leaf's dtype."

[[exercise.check]]
id = "produce.grad"
title = "ex2_cube: b.grad"
function = "ex2_cube"
observe = "b.grad"
expect = "diff(b**3, b)"
why = "backward() stores 3 b**2, rounded to bfloat16."

[[exercise.check]]
id = "produce.grad_dtype"
title = "ex2_cube: the dtype of b.grad"
function = "ex2_cube"
observe = "b.grad.dtype"
expect = "torch.bfloat16"
why = "A leaf's .grad has the leaf's dtype."

[[exercise.misconception]]
id = "grads-are-float32"
name = "gradients are float32"
checks = ["predict.grad_dtype"]
value = "torch.float32"
feedback = "Gradients are not promoted: a bfloat16 leaf gets a bfloat16 .grad."
'''

CELLS = [
    ("markdown", "# Autocast and bfloat16"),
    ("code", 'STUDENT_ID = "your-student-id"'),
    ("code", 'import torch\nfrom autograder.lab import Lab\n\nlab = Lab("autocast-lab", STUDENT_ID)\nP = lab.parameters'),
    ("markdown", "## Exercise 1"),
    ("code", "# PREDICT 1\n### BEGIN SOLUTION\np1_dtype = torch.bfloat16\n### END SOLUTION"),
    ("code", 'def ex1_matmul(x, w):\n    """y = x @ w under torch.autocast("cpu", dtype=torch.bfloat16); y.sum().backward(); '
             'return y."""\n    ### BEGIN SOLUTION\n    with torch.autocast("cpu", dtype=torch.bfloat16):\n'
             "        y = x @ w\n    y.sum().backward()\n    return y\n    ### END SOLUTION"),
    ("markdown", "## Exercise 2"),
    ("code", '# PREDICT 2\n### BEGIN SOLUTION\np2_dtype = "bfloat16"\n### END SOLUTION'),
    ("code", 'def ex2_cube(b):\n    """b is a bfloat16 leaf: call (b ** 3).backward()."""\n    ### BEGIN SOLUTION\n'
             "    (b ** 3).backward()\n    ### END SOLUTION"),
]


def _assignment(root, spec=SPEC):
    folder = root / "solutions" / "autocast-lab"
    folder.mkdir(parents=True)
    (folder / "spec.toml").write_text(spec)
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.cells = [nbformat.v4.new_markdown_cell(t) if k == "markdown" else nbformat.v4.new_code_cell(t) for k, t in CELLS]
    nbformat.write(nb, folder / "autocast.ipynb")
    return folder


@pytest.fixture(scope="module")
def autocast(tmp_path_factory, worker):
    """The autocast assignment released: (the Release, its full key, the temporary root)."""
    root = tmp_path_factory.mktemp("autocast")
    r = release(_assignment(root), root / "assignments", root / "build", worker=worker)
    return r, load_key(r.key), root


def _submission(student_nb, answers: dict[str, str]) -> str:
    """The student copy with each placeholder or stub line replaced (a learner's work)."""
    nb = nbformat.read(student_nb, as_version=4)
    for old, new in answers.items():
        cell = next(c for c in nb.cells if c.cell_type == "code" and old in c.source)
        cell.source = cell.source.replace(old, new, 1)
    return nbformat.writes(nb)


RIGHT = {"p1_dtype = ...": "p1_dtype = torch.bfloat16",
         'raise NotImplementedError("exercise 1: write ex1_matmul")':
             'with torch.autocast("cpu", dtype=torch.bfloat16):\n        y = x @ w\n    y.sum().backward()\n    return y',
         "p2_dtype = ...": 'p2_dtype = "torch.bfloat16"',
         'raise NotImplementedError("exercise 2: write ex2_cube")': "(b ** 3).backward()"}
FORGOT = {**RIGHT, "p1_dtype = ...": "p1_dtype = torch.float32",
          'raise NotImplementedError("exercise 1: write ex1_matmul")': "y = x @ w\n    y.sum().backward()\n    return y",
          "p2_dtype = ...": 'p2_dtype = "float32"'}


def test_a_bfloat16_assignment_releases_and_grades_right_and_forgot_autocast(autocast, worker, tmp_path):
    r, key, root = autocast
    assert (r.solution_score, r.blank_score, r.max_score) == (7.0, 0.0, 7.0)
    assert key.check("1.produce.value").expectation.form["dtype"] == "bfloat16"
    assert key.check("1.produce.x_grad").expectation.form["dtype"] == "float32"
    assert key.check("2.produce.grad").expectation.form["dtype"] == "bfloat16"
    assert key.check("1.produce.x_grad").dtype == "bfloat16"
    assert json.loads((root / "build/autocast-lab/key.json").read_text())["checks"][0]["expect"] == {"dtype": "bfloat16"}

    student_nb = r.student_notebook
    reports = []
    for name, answers in (("ada", RIGHT), ("ben", FORGOT)):
        path = tmp_path / f"{name}.ipynb"
        path.write_text(_submission(student_nb, answers))
        reports.append(grade_notebook(path, key, name, worker=worker))
    right, forgot = reports
    assert right.status == "graded" and right.score == 7.0, [(o.check_id, o.message) for o in right.outcomes]
    by_id = {o.check_id: o for o in forgot.outcomes}
    assert forgot.score == 3.0, [(o.check_id, o.status, o.message) for o in forgot.outcomes]
    for cid in ("1.predict.dtype", "1.produce.dtype", "1.produce.value"):
        assert by_id[cid].status == "failed" and by_id[cid].misconception.name == "forgot autocast", by_id[cid]
    assert by_id["1.predict.dtype"].message == "p1_dtype: torch.float32 instead of torch.bfloat16"
    assert by_id["1.produce.dtype"].observed == "torch.float32" and by_id["1.produce.dtype"].expected == "torch.bfloat16"
    assert "dtype float32 instead of bfloat16" in by_id["1.produce.value"].message
    assert by_id["1.produce.value"].misconception.evidence.startswith("that thinking gives the right value as "
                                                                      "torch.float32 = tensor([[")
    assert by_id["1.produce.x_grad"].status == "passed"   # exact float32 numbers, within bfloat16's tolerance
    assert by_id["2.predict.grad_dtype"].misconception.name == "gradients are float32"
    assert by_id["2.produce.grad"].status == "passed" and by_id["2.produce.grad_dtype"].status == "passed"

    stats = class_stats(reports, key=key)
    value = next(c for c in stats.checks if c.check_id == "1.produce.value")
    assert {m.id: m.count for m in value.misconceptions} == {"forgot-autocast": 1}
    assert value.unnamed == 0 and value.wrong_answers == ()


def test_release_names_the_tolerance_and_the_dtype_that_would_pass(tmp_path, worker):
    """A float32 .grad computed by a bfloat16 matmul, judged with float32's 1e-5: the refusal says it is bfloat16's
    rounding and how to declare it; a bfloat16 value given a float32 rtol by hand: its own default would pass."""
    undeclared = SPEC.replace('dtype = "bfloat16"\nwhy = "A leaf', 'why = "A leaf')
    with pytest.raises(BuildError) as e:
        release(_assignment(tmp_path / "a", undeclared), tmp_path / "a/assignments", tmp_path / "a/build",
                worker=worker)
    text = str(e.value)
    assert "check '1.produce.x_grad'" in text and "the value is float32" in text, text
    assert "float32's default tolerance, rtol = 1e-05, atol = 1e-05" in text, text
    assert ('declare it with dtype = "bfloat16" on the check; bfloat16\'s default tolerance, '
            'rtol = atol = 4 × 2^-7 = 0.03125, would pass') in text, text
    assert "fix the expect expression" not in text

    tight = SPEC.replace('why = "backward() stores 3 b**2', 'rtol = 1e-5\natol = 1e-5\nwhy = "backward() stores 3 b**2')
    with pytest.raises(BuildError) as e:
        release(_assignment(tmp_path / "b", tight), tmp_path / "b/assignments", tmp_path / "b/build", worker=worker)
    text = str(e.value)
    assert "check '2.produce.grad'" in text and "the value is bfloat16" in text, text
    assert "compared with the check's rtol/atol, rtol = 1e-05, atol = 1e-05" in text, text
    assert ("This value is bfloat16; its default tolerance, rtol = atol = 4 × 2^-7 = 0.03125, would pass: remove "
            "rtol and atol from the check") in text, text
