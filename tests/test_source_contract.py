"""Assignment 13 graded through the sandbox as a student would try to beat it (issue 47): the facts of the installed
torch are read before the learner's code runs, so code that replaces torch's functions or the tools that read
source neither changes what is passed to engine_flag nor what is expected of it."""
from __future__ import annotations

import re
import tomllib

import nbformat

from autograder.grading.grade import grade_notebook

from conftest import ROOT, edited_notebook, release_once

ID = "13-source-contract"
ADA = ROOT / "examples" / "submissions" / ID / "ada.ipynb"


def _grade(tmp_path, tmp_path_factory, worker, edits: dict[str, str]):
    _, key = release_once(ID, tmp_path_factory, worker)
    path = tmp_path / "ada.ipynb"
    path.write_text(edited_notebook(ADA, edits))
    report = grade_notebook(path, key, "ada", worker=worker)
    return {o.check_id: o for o in report.outcomes}


def test_replacing_torchs_backward_in_a_cell_changes_neither_the_argument_nor_the_answer(tmp_path, tmp_path_factory,
                                                                                          worker):
    out = _grade(tmp_path, tmp_path_factory, worker, {
        "def engine_flag(fn):": "torch.autograd.backward = lambda *args, **kwargs: None   # a learner's experiment\n"
                                "torch.autograd.grad = lambda *args, **kwargs: ()\n\n\ndef engine_flag(fn):"})
    assert out["1.produce.flag"].status == "passed", out["1.produce.flag"].message


def test_a_forged_source_reader_cannot_make_a_hard_coded_answer_right(tmp_path, tmp_path_factory, worker):
    forged = ('inspect.getsource = lambda fn: "def f():\\n    _engine_run_backward(accumulate_grad=True)\\n"\n\n\n'
              "def engine_flag(fn):\n    return True\n\n\ndef unused(fn):")
    out = _grade(tmp_path, tmp_path_factory, worker, {"def engine_flag(fn):": forged})
    assert out["1.produce.flag"].status == "failed"
    assert "True instead of" in out["1.produce.flag"].message or "expected None, got a bool" in \
        out["1.produce.flag"].message


def test_the_release_the_notebook_quotes_is_its_specs_torch_observed():
    spec = tomllib.loads((ROOT / "solutions" / ID / "spec.toml").read_text())
    nb = nbformat.read(ROOT / "solutions" / ID / "source-contract.ipynb", as_version=4)
    quoted = re.search(r'QUOTED = "([^"]+)"', "\n".join(c.source for c in nb.cells)).group(1)
    assert quoted == spec["assignment"]["torch_observed"] == "2.13.0"
