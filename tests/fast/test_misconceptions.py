"""The curriculum's named misconceptions: every prediction with a value or .grad-state answer lists at least two,
and every assignment's example submissions show some being named, for predictions and produced values."""
from __future__ import annotations

import json

import pytest

from autograder.authoring.spec import load_spec

from conftest import ROOT

IDS = sorted(p.parent.name for p in (ROOT / "solutions").glob("*/spec.toml"))


@pytest.mark.parametrize("assignment", IDS)
def test_the_examples_show_named_misconceptions(assignment):
    """Every assignment's examples include failures the grader names as a misconception of the spec, for
    predictions and for produced values."""
    folder = ROOT / "examples" / "submissions" / assignment
    named = {c: m for f in folder.glob("*.expected.json") for c, m in json.loads(f.read_text()).get(
        "misconceptions", {}).items()}
    spec = load_spec(ROOT / "solutions" / assignment)
    # a produce check of a fact of the installed torch (13) has no misconception: its answer differs by release
    produce_named = any(c.kind == "produce" and c.misconceptions for c in spec.checks)
    assert any(".predict." in c for c in named) and (any(".produce." in c for c in named) or not produce_named), named
    ids = {(c.id, m.id) for c in load_spec(ROOT / "solutions" / assignment).checks for m in c.misconceptions}
    assert all((c, m) in ids for c, m in named.items())


@pytest.mark.parametrize("assignment", IDS)
def test_every_prediction_with_a_value_or_grad_state_has_two_misconceptions(assignment):
    """A prediction whose answer is a number, None or a tuple (a value or a .grad state; not an exception or
    warning class) lists at least two named misconceptions."""
    a = load_spec(ROOT / "solutions" / assignment)
    short = [c.id for c in a.checks if c.kind == "predict" and c.expectation.kind in ("value", "convention")
             and len(c.misconceptions) < 2]
    assert not short, f"predictions with fewer than two misconceptions: {short}"
