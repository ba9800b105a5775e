"""Invariants every assignment of the curriculum must hold: it releases (oracles agree, solution
100 %, blank copy 0), the committed release is up to date, the solution runs top to bottom in a real
Jupyter kernel with every self-check passing, its example submissions get exactly their recorded
statuses. (Its spec's shape: tests/fast/test_curriculum_specs.py.)"""
from __future__ import annotations

import json
import re
import shutil

import nbformat
import pytest
from nbclient import NotebookClient

from dataclasses import replace

from autograder.grading.grade import grade_notebook

from conftest import ROOT, release_once
from golden_reports import GOLDEN, SECRET, differences, grade_examples

IDS = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/spec.toml"))


def released(assignment: str, tmp_path_factory, worker):
    """Release `assignment` once per session into a temporary folder: (Release, full key)."""
    return release_once(assignment, tmp_path_factory, worker)


_GRADED: dict[str, dict] = {}


def graded_examples(assignment: str, tmp_path_factory, worker) -> dict[str, dict]:
    """student -> the normalised report of each example submission of `assignment`, graded once per session
    at the golden fresh points (examples/at_many_points.py grades them at many others)."""
    if assignment not in _GRADED:
        _, key = released(assignment, tmp_path_factory, worker)
        _GRADED[assignment] = grade_examples(assignment, replace(key, fresh_seed=SECRET), worker)
    return _GRADED[assignment]


@pytest.mark.parametrize("assignment", IDS)
def test_it_releases_and_the_committed_release_is_up_to_date(assignment, tmp_path_factory, worker):
    r, key = released(assignment, tmp_path_factory, worker)
    assert r.solution_score == r.max_score > 0 and r.blank_score == 0
    committed = json.loads((ROOT / "assignments" / assignment / "public_key.json").read_text())
    assert committed["digest"] == key.digest, f"run: autograder release solutions/{assignment}"
    nb = nbformat.read(ROOT / "assignments" / assignment / key.notebook, as_version=4)
    assert nb.metadata["autograd_lab"]["key_digest"] == key.digest


def test_a_convention_check_shows_torchs_value_sympys_value_and_the_conventions_name(tmp_path_factory, worker):
    assignment = "08-calculus-vs-autograd"
    _, key = released(assignment, tmp_path_factory, worker)
    report = grade_notebook(ROOT / "examples" / "submissions" / assignment / "ben.ipynb", key, "ben", worker=worker)
    o = next(o for o in report.outcomes if o.check_id == "1.predict.relu")
    assert o.status == "failed"   # ben predicted calculus' 1/2; torch's 0 is what is graded
    assert o.convention.startswith("relu'(0)") and "torch 2.13.0 gives 0" in o.convention
    assert "sympy's diff(Max(0, x), x) gives 0.5" in o.convention and "Graded against torch's value" in o.convention
    assert o.version_note is None


def test_a_report_made_on_another_torch_flags_the_version_sensitive_checks(tmp_path_factory, worker):
    assignment = "08-calculus-vs-autograd"
    _, key = released(assignment, tmp_path_factory, worker)
    other = replace(key, torch_observed="2.12.0")   # as if the key had been observed on another release
    report = grade_notebook(ROOT / "examples" / "submissions" / assignment / "ada.ipynb", other, "ada", worker=worker)
    flagged = {o.check_id for o in report.outcomes if o.version_note}
    sensitive = {c.id for c in key.checks if c.version_sensitive}
    assert flagged == sensitive and len(sensitive) >= 5
    note = next(o.version_note for o in report.outcomes if o.version_note)
    assert "observed on torch 2.12.0" in note and "this run used torch 2.13.0" in note


def test_11_anomaly_mode_around_backward_only_fails_4_produce_anomaly_and_says_why(tmp_path_factory, worker):
    """4.produce.anomaly is about the forward line: the check asks for the forward traceback, which torch records only
    while the forward pass runs under detect_anomaly(). kai turns anomaly mode on around backward() alone (issue 44)."""
    assignment = "11-debugging-gradients"
    _, key = released(assignment, tmp_path_factory, worker)
    folder = ROOT / "examples" / "submissions" / assignment
    kai = grade_notebook(folder / "kai.ipynb", key, "kai", exercises=["4"], worker=worker)
    o = next(o for o in kai.outcomes if o.check_id == "4.produce.anomaly")
    assert o.status == "failed" and o.score == 0
    assert ("UserWarning was emitted, but its message lacks 'Error detected in MulBackward0. Traceback of forward "
            "call': Error detected in MulBackward0. No forward pass information available. Enable detect anomaly "
            "during forward pass") in o.message
    assert "only while the forward pass runs under detect_anomaly()" in o.why
    assert [x.status for x in kai.outcomes if x.check_id != "4.produce.anomaly"] == ["passed"] * 7
    ada = grade_notebook(folder / "ada.ipynb", key, "ada", exercises=["4"], worker=worker)
    o = next(o for o in ada.outcomes if o.check_id == "4.produce.anomaly")
    assert o.status == "passed" and "Traceback of forward call that caused the error" in o.observed


@pytest.mark.parametrize("assignment", IDS)
def test_the_solution_runs_top_to_bottom_in_a_kernel_and_every_self_check_passes(assignment, tmp_path_factory, worker):
    r, key = released(assignment, tmp_path_factory, worker)
    nb = nbformat.read(ROOT / "solutions" / assignment / key.notebook, as_version=4)
    out = tmp_path_factory.mktemp(f"run-{assignment}")   # beside its public key, as a student runs it
    shutil.copy(ROOT / "assignments" / assignment / "public_key.json", out)
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3", resources={"metadata": {"path": str(out)}}).execute()
    checked = set()
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type == "code" and re.fullmatch(r"ex\w+-check", gid):
            text = "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in cell.outputs)
            assert " ok " in text and not re.search(r"FAILED|ERROR|TIMEOUT| missing ", text), (gid, text)
            checked.add(gid)
    assert len(checked) == len(key.exercises), "one lab.check cell per exercise"


@pytest.mark.parametrize("assignment", IDS)
def test_the_example_submissions_get_their_recorded_statuses(assignment, tmp_path_factory, worker):
    folder = ROOT / "examples" / "submissions" / assignment
    expected = {f.name.split(".")[0]: json.loads(f.read_text()) for f in folder.glob("*.expected.json")}
    assert len(expected) >= 3
    everything = {s for s, e in expected.items() if e["status"] == "graded" and set(e["checks"].values()) == {"passed"}}
    nothing = {s for s, e in expected.items() if e["status"] == "graded" and set(e["checks"].values()) == {"missing"}}
    assert everything and nothing, "examples include a correct and a not-attempted submission"
    assert len(expected) > len(everything | nothing), "and at least one typical misconception"
    reports = graded_examples(assignment, tmp_path_factory, worker)
    for student, exp in expected.items():
        report = reports[student]
        assert report["status"] == exp["status"], (student, report["reason"])
        got = {o["check_id"]: o["status"] for o in report["outcomes"] if o["visibility"] == "public"}
        messages = {o["check_id"]: o["message"] for o in report["outcomes"]}
        assert got == exp["checks"], (student, {k: (v, got.get(k), messages.get(k)) for k, v in exp["checks"].items()
                                                if got.get(k) != v})
        named = {o["check_id"]: o["misconception"]["id"] for o in report["outcomes"] if o["misconception"]}
        assert named == exp.get("misconceptions", {}), (student, named, exp.get("misconceptions"))


@pytest.mark.parametrize("assignment", IDS)
def test_every_example_report_equals_its_golden_report(assignment, tmp_path_factory, worker):
    """Reports of the example submissions, graded at the golden fresh points, are exactly the reports saved
    in tests/golden/ (apart from timing and sympy's version string). A change meant to alter reports
    rewrites them with tests/golden_reports.py, and the diff shows what changed."""
    got = graded_examples(assignment, tmp_path_factory, worker)
    folder = GOLDEN / assignment
    assert sorted(got) == sorted(p.stem for p in folder.glob("*.json")), f"run tests/golden_reports.py {assignment}"
    for student, report in got.items():
        golden = json.loads((folder / f"{student}.json").read_text())
        assert not differences(report, golden), (student, differences(report, golden))


@pytest.mark.parametrize("assignment", IDS)
def test_the_committed_examples_are_what_the_generator_writes(assignment, tmp_path, worker):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_submissions", ROOT / "examples" / "make_submissions.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(assignment, tmp_path, worker)
    folder = ROOT / "examples" / "submissions" / assignment
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(p.name for p in folder.iterdir())
    for name in written:
        assert (tmp_path / name).read_text() == (folder / name).read_text(), \
            f"{name} is stale: run examples/make_submissions.py {assignment}"


