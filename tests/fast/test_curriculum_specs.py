"""The curriculum's specs keep the course's promises (read from the specs alone)."""
from __future__ import annotations

import re

import pytest

from autograder.authoring.spec import load_spec
from autograder.model import RaisesExpectation, WarnsExpectation

from conftest import ROOT

IDS = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/spec.toml"))


def test_the_curriculum_has_ten_assignments_numbered_in_order():
    assert [i[:3] for i in IDS] == [f"{n:02d}-" for n in range(1, 11)]


@pytest.mark.parametrize("assignment", IDS)
def test_the_spec_keeps_the_course_promises(assignment):
    a = load_spec(ROOT / "solutions" / assignment)
    assert 5 <= len(a.exercises) <= 9 or assignment.startswith("01-"), f"{len(a.exercises)} exercises"
    for ex in a.exercises:
        kinds = {c.kind for c in a.checks if c.exercise == ex.id}
        assert kinds == {"predict", "produce"}, f"exercise {ex.id}: predict then produce"
    for c in a.checks:
        if isinstance(c.expectation, (RaisesExpectation, WarnsExpectation)) and c.kind == "produce":
            assert c.expectation.phrase.strip(), f"{c.id}: an exception or warning check needs a key phrase"
            assert len(c.expectation.phrase) <= 60, f"{c.id}: a key phrase, not the whole message"
        if c.expectation.kind == "convention":
            assert c.expectation.sympy, c.id
    random_params = [n for n, d in a.parameters.items() if d.kind != "fixed"]
    assert random_params, "parameters must be random per student where the exercise allows"


def test_the_curriculum_checks_warnings_conventions_and_version_sensitive_behaviour():
    checks = [c for i in IDS for c in load_spec(ROOT / "solutions" / i).checks]
    assert any(c.expectation.kind == "warns" and c.kind == "produce" for c in checks)
    assert any(c.expectation.kind == "raises" for c in checks)
    assert sum(1 for c in checks if c.expectation.kind == "convention") >= 3
    assert any(c.version_sensitive for c in checks)


def test_the_readme_table_lists_every_assignment():
    readme = (ROOT / "README.md").read_text()
    for assignment in IDS:
        assert re.search(rf"^\|\s*`?{re.escape(assignment)}`?\s*\|", readme, re.M), assignment
