"""Assignment 13 graded through the sandbox as a student would try to beat it (issue 47): the facts of the installed
torch are read before the learner's code runs, so code that replaces torch's functions or the tools that read
source neither changes what is passed to engine_flag nor what is expected of it."""
from __future__ import annotations

import re
import shutil
import tomllib

import nbformat

from autograder.grading.grade import grade_notebook

from conftest import ROOT, edited_notebook, release_once
from autograder.authoring.sweep import QUICK   # the domain check at a few thousand points: its full run is benchmarks/release_domain.py's

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
    assert out["1.produce.flag"].status == "failed"   # True is wrong for four of the six functions


def test_the_release_the_notebook_quotes_is_its_specs_torch_observed():
    spec = tomllib.loads((ROOT / "solutions" / ID / "spec.toml").read_text())
    nb = nbformat.read(ROOT / "solutions" / ID / "source-contract.ipynb", as_version=4)
    quoted = re.search(r'QUOTED = "([^"]+)"', "\n".join(c.source for c in nb.cells)).group(1)
    assert quoted == spec["assignment"]["torch_observed"] == "2.13.0"


def test_no_frame_or_live_object_of_the_run_holds_the_facts_it_read(tmp_path, tmp_path_factory, worker):
    """A student's attack (issue 47's trial): climb the frames, or scan the heap, for the facts the probe read."""
    snoop = ("import gc\nimport sys\n\n\ndef engine_flag(fn):\n"
             "    frame = sys._getframe(1)\n"
             "    while frame is not None:\n"
             "        for value in list(frame.f_locals.values()):\n"
             "            if isinstance(value, dict) and any(str(k).startswith('engine_flag:') for k in value):\n"
             "                return 'leaked'\n"
             "        frame = frame.f_back\n"
             "    for o in gc.get_objects():\n"
             "        if isinstance(o, dict) and any(str(k).startswith('engine_flag:') for k in list(o)[:50]):\n"
             "            return 'leaked'\n"
             "    return 'nothing found'\n\n\ndef unused(fn):")
    out = _grade(tmp_path, tmp_path_factory, worker, {"def engine_flag(fn):": snoop})
    assert out["1.produce.flag"].status == "failed"
    assert out["1.produce.flag"].observed == "'nothing found'", out["1.produce.flag"].observed


def test_the_notebooks_table_of_p_f_is_the_specs_list_of_objects():
    spec = tomllib.loads((ROOT / "solutions" / ID / "spec.toml").read_text())
    objects = spec["exercise"][0]["args"][0]["objects"]
    nb = nbformat.read(ROOT / "solutions" / ID / "source-contract.ipynb", as_version=4)
    rows = re.findall(r"^\| (\d) \| (.+?) \|$", next(c.source for c in nb.cells if c.metadata["nbgrader"]["grade_id"] ==
                                                     "ex1"), re.M)
    assert [int(i) for i, _ in rows] == list(range(len(objects)))
    assert [name.strip("`") if name.startswith("`") else "<generated>" for _, name in rows] == objects


def test_release_refuses_an_object_that_is_misspelled_a_module_or_without_python_source(tmp_path, worker):
    from autograder.authoring.release import release
    from autograder.authoring.spec import SpecError

    for wrong, phrase in (("torch.autograd.gradchek", "this torch has no such object; check its spelling"),
                          ("torch.autograd.functional", "is 'module', not a Python function"),
                          ("torch.add", "not a Python function")):
        folder = tmp_path / wrong / "solutions" / ID
        folder.parent.mkdir(parents=True)
        shutil.copytree(ROOT / "solutions" / ID, folder)
        spec = folder / "spec.toml"
        spec.write_text(spec.read_text().replace('"torch.autograd.gradcheck"', f'"{wrong}"'))
        try:
            release(folder, tmp_path / wrong / "assignments", tmp_path / wrong / "build", worker=worker, domain_budget=QUICK)
        except SpecError as e:
            assert f"spec.toml [[exercise]] id='1': argument 'fn': object '{wrong}'" in str(e) and phrase in str(e)
        else:
            raise AssertionError(f"{wrong} was released")
