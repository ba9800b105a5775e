"""Do odd answers and abrupt exits in a submission become check outcomes, never a crash or a lost run?"""
import nbformat
import pytest

from autograder.grade import grade_notebook

from conftest import EXAMPLES


def variant(tmp_path, edits, extra_cells=()):
    """ada's correct notebook with some cells replaced (by nbgrader grade_id) and cells appended."""
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in edits:
            cell.source = edits[gid]
    nb.cells += [nbformat.v4.new_code_cell(src) for src in extra_cells]
    path = tmp_path / "ada.ipynb"
    nbformat.write(nb, path)
    return path


def statuses(report):
    return {o.check_id: o.status for o in report.outcomes}


@pytest.mark.parametrize("literal, phrase", [
    ("10**400", "reading this value raised OverflowError"),
    ("type('Liar', (), {'__repr__': lambda s: s.__repr__()})()", "Liar"),
])
def test_an_unreadable_prediction_fails_only_its_own_check(key, tmp_path, literal, phrase):
    path = variant(tmp_path, {"ex1-predict": f"p1_returns = None\np1_grad = {literal}"})
    r = grade_notebook(path, key, "ada", exercises=["1", "2"])
    s = statuses(r)
    assert s.pop("1.predict.grad") == "failed" and set(s.values()) == {"passed"}
    o = next(o for o in r.outcomes if o.check_id == "1.predict.grad")
    assert phrase in o.observed


def test_a_repr_that_never_ends_is_stopped_by_the_call_limit(key, tmp_path):
    forever = "class Forever:\n    def __repr__(self):\n        while True:\n            pass\n"
    path = variant(tmp_path, {"ex1-predict": forever + "p1_returns = None\np1_grad = Forever()"})
    r = grade_notebook(path, key, "ada", exercises=["1", "5"])
    s = statuses(r)
    assert s.pop("1.predict.grad") == "failed" and set(s.values()) == {"passed"}
    assert "longer than 5 s" in next(o.observed for o in r.outcomes if o.check_id == "1.predict.grad")


def test_a_tensor_subclass_that_raises_put_into_grad_is_a_failed_check(key, tmp_path):
    evil = ("class Evil(torch.Tensor):\n    @classmethod\n    def __torch_function__(cls, *a, **k):\n"
            "        raise RuntimeError('no')\n\n"
            "def ex1(x):\n    (x * x).backward()\n    x.grad = torch.zeros(()).as_subclass(Evil)\n")
    path = variant(tmp_path, {"ex1-produce": evil})
    r = grade_notebook(path, key, "ada", exercises=["1", "2"])
    s = statuses(r)
    assert s["1.produce.grad"] in ("failed", "error") and s["2.produce.returns"] == "passed"


def test_an_exit_at_top_level_names_the_cell_and_keeps_what_ran_before(key, tmp_path):
    path = variant(tmp_path, {"ex3-check": "import os\nos._exit(0)"})
    r = grade_notebook(path, key, "ada")
    s = statuses(r)
    assert r.status == "graded"
    assert all(v == "error" for v in s.values())   # names and calls are read after all cells ran
    assert any("process ended (exit code 0) while cell" in n and "('ex3-check')" in n for n in r.notes), r.notes


def test_many_failing_cells_keep_the_report_small(key, tmp_path):
    path = variant(tmp_path, {}, [f"raise ValueError('{i}' * 150)" for i in range(60)])
    r = grade_notebook(path, key, "ada", exercises=["1"])
    assert set(statuses(r).values()) == {"passed"}
    assert len(r.notes) == 21 and r.notes[-1] == "… and 40 more notes"
