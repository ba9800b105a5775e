"""Learners work where they already are (issue 18): the package leaves a learner's torch alone, and a report made
on another torch release says so at the top and on each version-sensitive check. (A check without bubblewrap:
tests/test_own_torch.py.)"""
from __future__ import annotations

import tomllib
from dataclasses import replace

from autograder.judging.judge import version_note
from autograder.keyfile import load_key
from autograder.render.gradescope import to_results
from autograder.render.html import to_html
from autograder.render.terminal import render
from autograder.report import Outcome, Report, torch_note

from conftest import ROOT


def _report(torch: str) -> Report:
    key = load_key(ROOT / "assignments" / "09-forward-mode-and-functions" / "public_key.json")
    check = next(c for c in key.checks if c.version_sensitive)
    note = version_note(key, check, torch)
    outcome = Outcome(check.id, check.exercise, check.title, check.kind, "passed", 1.0, 1.0, message="ok",
                      version_note=note)
    return Report(key.assignment, "mine.ipynb", "amy", "graded", 1.0, 1.0, (outcome,),
                  versions={"torch": torch, "torch_key": key.torch_version, "sympy": "1.14", "grader": "0.1.0"})


def test_the_torch_requirement_has_a_floor_and_no_ceiling():
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    torch = [d for d in deps if d.startswith("torch")]
    assert torch == ["torch>=2.3"]
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.index("'torch==2.13.0'") < setup.index("-e '.[staff,dev,dask,stats,course,hub]'")   # staff and CI: the reference release first


def test_a_report_on_another_torch_says_so_at_the_top_and_on_each_version_sensitive_check():
    other, same = _report("2.5.1"), _report("2.13.0")
    assert torch_note(same) is None and same.outcomes[0].version_note is None
    assert torch_note(other).startswith("This run used torch 2.5.1; the expected values come from sympy and from "
                                        "a reference run on torch 2.13.0")
    assert "observed on torch 2.13.0, and this run used torch 2.5.1" in other.outcomes[0].version_note
    text = render(other)
    top = text.splitlines()[:6]
    assert any(line.startswith("NOTE: This run used torch 2.5.1") for line in top), top
    assert "note: version-sensitive: this behaviour was observed on torch 2.13.0" in text
    assert "NOTE:" not in render(same)
    assert '<p class="agl-torch-note"><strong>Note:</strong> This run used torch 2.5.1' in to_html(other)
    assert "**Note:** This run used torch 2.5.1" in to_results(other)["output"]
    assert replace(other, status="not_gradable") and torch_note(replace(other, status="not_gradable")) is None
