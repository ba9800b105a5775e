"""course.json, the course's student file: what the kernel needs to observe an exercise, and no answer in any form;
and the course's copy of each notebook, which sends no learner to a terminal check it cannot do."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from autograder.grading import coursefile
from autograder.grading.plan import ProbePlan
from autograder.keyfile import load_key
from autograder.service.commands import course_notebook

ROOT = Path(__file__).resolve().parents[2]
KEYS = sorted((ROOT / "assignments").glob("*/public_key.json"))


def test_there_are_thirteen_assignments():
    assert len(KEYS) == 13


@pytest.mark.parametrize("path", KEYS, ids=lambda p: p.parent.name)
def test_a_course_file_holds_the_plan_and_no_answer(path):
    key = load_key(path)
    data = coursefile.to_json(key, "https://lab.example.edu/services/autograd-lab/")
    text = json.dumps(data)
    loaded = coursefile.from_json(json.loads(text))
    assert loaded.plan == ProbePlan.of(key) and loaded.service == "https://lab.example.edu/services/autograd-lab"
    raw = json.loads(path.read_text())
    for check in raw["checks"]:
        assert check["why"] not in text and check["title"] not in text
        for answer in [check["expect"], *(m["value"] for m in check.get("misconceptions", ()))]:
            expr = answer.get("expr", "")
            if any(ch in expr for ch in "*+-/()"):
                assert expr not in text, (check["id"], expr)
    for secret in (raw["digest"], raw["public_digest"]):
        assert secret not in text


@pytest.mark.parametrize("bad", [{}, {"schema": "autograd-lab/course", "v": 2},
                                 {"schema": "autograd-lab/course", "v": 1, "assignment": "x"}])
def test_a_malformed_course_file_is_refused(bad):
    with pytest.raises(ValueError, match="course file"):
        coursefile.from_json(bad)


@pytest.mark.parametrize("url", ["127.0.0.1:8750", "ftp://x", "http://", "http://a b"])
def test_a_service_url_must_be_http(url):
    with pytest.raises(ValueError, match="not a service URL"):
        coursefile.check_url(url)


@pytest.mark.parametrize("path", sorted((ROOT / "assignments").glob("*/*.ipynb")), ids=lambda p: p.parent.name)
def test_the_course_copy_of_a_notebook_says_how_a_course_works_and_ends_with_hand_in_and_feedback(path):
    """The released cells stay as they are (only the prose about the terminal changes); a course introduction follows
    the first Markdown cell, and the notebook ends with lab.submit() and lab.feedback() (issue 46)."""
    own = nbformat.read(path, as_version=4)
    handed = nbformat.reads(course_notebook(path.read_text()), as_version=4)
    gid = lambda c: c.metadata["nbgrader"]["grade_id"]
    added = ["course-intro", "hand-in-intro", "hand-in", "feedback-intro", "feedback"]
    kept = [c for c in handed.cells if gid(c) not in added]
    assert [(c.cell_type, c.metadata, c.source if c.cell_type == "code" else "") for c in kept] == \
           [(c.cell_type, c.metadata, c.source if c.cell_type == "code" else "") for c in own.cells]
    assert [gid(c) for c in handed.cells].index("course-intro") == 1 and [gid(c) for c in handed.cells[-4:]] == \
        added[1:]
    assert [c.source for c in handed.cells[-4:] if c.cell_type == "code"] == ["lab.submit()", "lab.feedback()"]
    assert all(c.metadata["nbgrader"]["locked"] for c in handed.cells if gid(c) in added)
    intro = handed.cells[1].source
    assert "keeps the record of your work" in intro and "**sealed**" in intro and "`lab.submit()`" in intro
    assert "the committed value is the one graded" in intro
    prose = "\n".join(c.source for c in handed.cells if c.cell_type == "markdown")
    assert "autograder check" not in prose and "the answers are on the course service" in prose
    assert "keep the outputs when you hand in" not in prose   # self-study's record; a course's is the service's
    assert all(c.metadata["editable"] is False and c.metadata["deletable"] is False for c in handed.cells
               if gid(c) in added)
    assert nbformat.reads(course_notebook(nbformat.writes(handed)), as_version=4).cells == handed.cells   # once
