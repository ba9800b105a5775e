"""What courses really hand in, round three (issue 45): public reports of other autograders' users, each as an input of
our own, with the outcome it should have."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from conftest import EXAMPLES, run_cli


def grade(*args, key_path) -> list[dict]:
    p = run_cli("grade", *map(str, args), "--key", str(key_path), "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_matplotlib_inline_at_the_top_of_a_produce_cell_runs_as_in_jupyter(released, tmp_path):
    """`%matplotlib inline` (and `widget`, `qt`), pasted from tutorials at the top of a PRODUCE cell, with a figure
    drawn: before, the grader's shell raised "Implement enable_gui in a subclass" and the exercise's checks were
    errors, where Jupyter runs the cell. Now the grader takes matplotlib's Agg backend and grades the cell."""
    _, key_path = released
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    magics = iter(("inline", "widget", "qt", "inline", "", "inline"))
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def ex"):
            cell.source = (f"%matplotlib {next(magics)}\nimport matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\n"
                           f"plt.show()\n" + cell.source)
    assert next(magics, None) is None
    nbformat.write(nb, tmp_path / "ada.ipynb")
    [r] = grade(tmp_path / "ada.ipynb", "--out", tmp_path / "out", key_path=key_path)
    assert (r["status"], r["score"]) == ("graded", 26), [(o["check_id"], o["status"], o.get("message"))
                                                         for o in r["outcomes"] if o["status"] != "passed"]
