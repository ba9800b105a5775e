"""Predict first, then see the answer (issue 10), in a real kernel and the batch: the first self-check with every
prediction filled in commits them, and only then shows the expected values; the commit travels with the notebook
and the grader reads it under the policy "first" or "last". (The worked-out rule and the records read as data:
tests/fast/test_worked_rule.py.)"""
from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder.judging import commit
from autograder.grading.grade import grade_notebook
from autograder.grading.identity import Source
from autograder.keyfile import load_key
from autograder.student.lab import REPORT_MIME
from autograder.grading.plan import draw_point

from conftest import ROOT, run_cli

A01 = ROOT / "assignments" / "01-backward-vs-grad"


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
    assert shown["1.predict.grad"]["status"] == "sealed" and shown["1.predict.grad"]["expected"] is None
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
    assert shown["1.predict.grad"]["status"] == "missing" and shown["1.predict.returns"]["status"] == "sealed"
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
    assert predictions and all(o["status"] == "sealed" and " is written down; " in o["message"] for o in predictions)
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




def test_predict_cells_under_time_and_capture_are_graded_in_a_kernel_and_the_batch_and_timeit_is_explained(tmp_path, worker):
    """issue 44: a right literal in a PREDICT cell under %%time or %%capture (one inside the other, or indented as
    IPython allows) passes in the notebook's own check and in the grade; under %%timeit, which runs its body in a
    namespace of its own, the prediction is missing in both, and the message says why."""
    import math

    for name in ("public_key.json", "backward-vs-grad.ipynb"):
        shutil.copy(A01 / name, tmp_path / name)
    nb = nbformat.read(tmp_path / "backward-vs-grad.ipynb", as_version=4)
    _cell(nb, "student-id").source = 'STUDENT_ID = "amy"'
    x = draw_point(load_key(A01 / "public_key.json").parameters, "01-backward-vs-grad", "amy", "own")["x0"]
    d2 = 2 * x * math.sin(x) + x * x * math.cos(x)
    _cell(nb, "ex1-predict").source = f"%%time\n%%capture\n# PREDICT 1\np1_returns = None\np1_grad = {2 * x!r}\n"
    _cell(nb, "ex2-predict").source = f"  %%capture out\n  # PREDICT 2\n  p2_returns = ({d2!r},)\n  p2_grad = None\n"
    _cell(nb, "ex3-predict").source = f"%%timeit -n1 -r1\n# PREDICT 3\np3_derivative = {d2!r}\np3_grad = 0.0\n"
    _run(nb, tmp_path)
    timeit = (". %%timeit runs its body in a namespace of its own, so nothing it sets stays defined: take its line "
              "away (%%time and %%capture alone are fine)")
    shown = {**_shown(nb, "1")[0], **_shown(nb, "2")[0], **_shown(nb, "3")[0]}
    nbformat.write(nb, tmp_path / "backward-vs-grad.ipynb")
    graded = {o.check_id: o for o in grade_notebook(tmp_path / "backward-vs-grad.ipynb",
                                                    load_key(A01 / "public_key.json"), "amy").outcomes}
    for cid in ("1.predict.returns", "1.predict.grad", "2.predict.returns", "2.predict.grad"):
        assert shown[cid]["status"] == graded[cid].status == "passed", (cid, shown[cid], graded[cid])
    assert graded["1.predict.grad"].message == f"p1_grad = {2 * x:.6g}"
    assert shown["3.predict.derivative"]["status"] == graded["3.predict.derivative"].status == "missing"
    assert graded["3.predict.derivative"].message == f"p3_derivative is not defined: it is set in cell 16 ('ex3-predict'){timeit}"
    assert shown["3.predict.derivative"]["message"] == ("p3_derivative is not defined: it is set in the cell run as In [10], "
                                                        f"which starts `%%timeit -n1 -r1`{timeit}")
