"""scaffold: `autograder new <id>`, a new assignment's folder (spec.toml and a solution notebook of one exercise)
that releases as it is, written once: no nbgrader metadata, placeholders, stubs or check cells (release's `prepare`
makes them from the spec).

May import: stdlib, nbformat, torch (its version, for torch_observed).
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["ScaffoldError", "new", "spec_text"]
ID = re.compile(r"[0-9]{2}-[a-z0-9]+(-[a-z0-9]+)*|[a-z][a-z0-9]*(-[a-z0-9]+)*")


class ScaffoldError(ValueError):
    """The folder cannot be made: the message says why and what to do."""


SPEC = '''# Spec of assignment {id}. The spec declares every name once (predictions, functions, arguments, points);
# release completes the notebook from it (nbgrader metadata, `name = ...` placeholders, NotImplementedError
# stubs, lab.check cells). Format: docs/instructor.md, "Writing a spec".

[assignment]
id = "{id}"
title = "{title}"
notebook = "{notebook}"
torch_observed = "{torch}"

[grading]
fresh_points = 2          # besides each student's own point, graded at 2 more (a hard-coded number fails there)

[parameters]
# Each student draws their own numbers: P.x0 in the notebook.
x0 = {{ kind = "real", low = 0.5, high = 2.5, sign = "any", decimals = 2 }}

[[exercise]]
id = "1"
title = "backward() fills x.grad"
functions = ["ex1_grad"]
args = [{{ name = "x", param = "x0" }}]   # ex1_grad(x): x is a float32 scalar leaf at x0

[[exercise.check]]
id = "predict.grad"
title = "predicted: x.grad after y = x**3 and y.backward()"
predict = "p1_grad"
expect = "diff(x**3, x)"
why = "backward() stores dy/dx = 3x**2 in the .grad of the leaf x."

[[exercise.check]]
id = "produce.grad"
title = "ex1_grad: x.grad after backward()"
function = "ex1_grad"
observe = "x.grad"
expect = "diff(x**3, x)"
why = "y.backward() accumulates dy/dx into x.grad, which was None."

[[exercise.misconception]]
id = "grad-holds-the-output"
name = ".grad holds the output"
checks = ["predict.grad"]
value = "x**3"
feedback = "x.grad holds the derivative dy/dx, not the value of y: backward() computes 3x**2 here."
'''

CELLS = [
    ("markdown", "# {title}\n\nReplace this text: what the assignment is about, and what the learner will predict and "
                 "produce."),
    ("code", 'STUDENT_ID = "your-student-id"   # <- replace with the id your course gave you, then run all cells'),
    ("code", 'import torch\nfrom autograder.lab import Lab\n\nlab = Lab("{id}", STUDENT_ID)\n'
             "P = lab.parameters   # your own numbers: P.x0\nP"),
    ("markdown", "## Exercise 1 · backward() fills x.grad\n\n`x = P.x0` is a leaf with `requires_grad=True`. "
                 "Predict `x.grad` after `y = x ** 3` and `y.backward()`, then write `ex1_grad`."),
    ("code", "# PREDICT 1\n### BEGIN SOLUTION\np1_grad = 3 * P.x0 ** 2\n### END SOLUTION"),
    ("code", 'def ex1_grad(x):\n    """Compute y = x ** 3 and call y.backward(). Return nothing: the grader reads x.grad.\n\n'
             '    x: a float32 scalar leaf with requires_grad=True.\n    """\n    ### BEGIN SOLUTION\n'
             "    y = x ** 3\n    y.backward()\n    ### END SOLUTION"),
]


def spec_text(assignment: str, title: str, notebook: str, torch_version: str) -> str:
    """The spec.toml `new` writes for `assignment` (its title, notebook file name and torch_observed): release reads
    it to tell the key of the untouched scaffold, which no student works on, from an assignment's real release."""
    return SPEC.format(id=assignment, title=title.replace('"', "'"), notebook=notebook, torch=torch_version)


def new(assignment: str, solutions: str | Path = "solutions", title: str | None = None) -> tuple[Path, Path]:
    """Write `<solutions>/<assignment>/spec.toml` and `<solutions>/<assignment>/<name>.ipynb` (the id without its
    number: 13-hooks -> hooks.ipynb), one exercise that releases as it is.

    Returns: (the spec's path, the notebook's path).
    Raises:
        ScaffoldError: an id that is not lower case with hyphens ("13-hooks"), or a folder that exists.
    """
    import nbformat

    if not ID.fullmatch(assignment):
        raise ScaffoldError(f"{assignment!r}: an assignment id is lower case with hyphens, after an optional two-digit "
                            f"number (\"13-hooks\")")
    folder = Path(solutions) / assignment
    if folder.exists():
        raise ScaffoldError(f"{folder} exists already; choose another id, or edit that assignment")
    name = re.sub(r"^[0-9]{2}-", "", assignment)
    title = title or name.replace("-", " ").capitalize()
    try:
        import torch

        torch_version = torch.__version__.split("+")[0]
    except ImportError:
        torch_version = "2.13.0"
    folder.mkdir(parents=True)
    spec = folder / "spec.toml"
    notebook = folder / f"{name}.ipynb"
    spec.write_text(spec_text(assignment, title, notebook.name, torch_version), encoding="utf-8")
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nb.cells = [nbformat.v4.new_markdown_cell(text.format(title=title)) if kind == "markdown"
                else nbformat.v4.new_code_cell(text.format(id=assignment)) for kind, text in CELLS]
    nbformat.write(nb, str(notebook))
    return spec, notebook
