"""Do our notebooks work in real nbgrader: `generate_assignment` makes the same student notebook as our
release, `autograde` (whose grade cells call our checker) gives every student the same score as our
`grade`, and our `grade --nbgrader` fills an nbgrader course's autograded/, feedback/ and gradebook?"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.report import read_report

from conftest import ASSIGNMENT, EXAMPLES, SOLUTION, run_cli

STUDENTS = ("ada", "ben", "eve", "gus")   # correct, wrong predictions, hard-coded numbers, not attempted


def nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    p = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, capture_output=True, text=True,
                       env=env, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return p


def scores(course: Path) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s: gb.find_submission(ASSIGNMENT, s).score for s in STUDENTS}


@pytest.fixture(scope="module")
def course(released, tmp_path_factory):
    """A course directory: the solution as nbgrader's source, released by nbgrader, four submissions."""
    out, key_path = released
    course = tmp_path_factory.mktemp("course")
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\n"
        "c.CourseDirectory.course_id = 'autograd-lab'\n"
        "c.ClearSolutions.code_stub = {'python': ''}   # our placeholders stay; no stub is added\n"
        "import os\n"
        f"os.environ['AUTOGRAD_LAB_KEYS'] = {str(key_path.parent.parent)!r}   # build/: <assignment>/key.json\n")
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(SOLUTION / "backward-vs-grad.ipynb", course / "source" / ASSIGNMENT)
    nbgrader(course, "db", "assignment", "add", ASSIGNMENT)
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    for s in STUDENTS:
        folder = course / "submitted" / s / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(EXAMPLES / f"{s}.ipynb", folder / "backward-vs-grad.ipynb")
    return course


def test_generate_assignment_makes_the_same_student_notebook_as_our_release(released, course):
    ours = nbformat.read(released[0] / "backward-vs-grad.ipynb", as_version=4)
    theirs = nbformat.read(course / "release" / ASSIGNMENT / "backward-vs-grad.ipynb", as_version=4)
    assert len(ours.cells) == len(theirs.cells) == 31
    for a, b in zip(ours.cells, theirs.cells, strict=True):
        assert (a.cell_type, a.source, a.metadata) == (b.cell_type, b.source, b.metadata)
    grade_cells = [c for c in ours.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert [c.metadata["nbgrader"]["points"] for c in grade_cells] == [4, 4, 4, 4, 4, 6]
    assert all(c.metadata["nbgrader"].get("checksum") for c in grade_cells)


def test_nbgrader_autograde_and_our_grade_give_every_student_the_same_score(released, course):
    _, key_path = released
    nbgrader(course, "autograde", ASSIGNMENT, "--create", "--force")
    theirs = scores(course)
    p = run_cli("grade", "--nbgrader", str(course), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    ours = {s: read_report(course / "autograd-lab" / ASSIGNMENT / "reports" / f"{s}__backward-vs-grad.json").score
            for s in STUDENTS}
    assert ours == {"ada": 26, "ben": 20, "eve": 23, "gus": 0}
    assert theirs == ours, "nbgrader autograde (calling our checker) and our grade differ"
    assert scores(course) == ours   # our grade wrote the same scores into nbgrader's gradebook
    assert "scores of 4 submission(s) in its gradebook.db" in p.stderr


def test_our_grade_writes_nbgraders_autograded_and_feedback_folders(released, course):
    _, key_path = released
    assert run_cli("grade", "--nbgrader", str(course), "--key", str(key_path)).returncode == 0
    nb = nbformat.read(course / "autograded" / "ben" / ASSIGNMENT / "backward-vs-grad.ipynb", as_version=4)
    results = [c.outputs[0]["data"]["text/plain"] for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.outputs]
    assert results == ["3", "3", "3", "3", "4", "4"]   # ben's score per exercise, as nbgrader reads it
    assert nb.metadata["autograd_lab"]["report"]["student"] == "ben"
    page = (course / "feedback" / "ben" / ASSIGNMENT / "backward-vs-grad.html").read_text()
    assert "ben" in page and "1.predict.returns" in page


def test_grade_clears_needs_manual_grading_as_nbgraders_autograde_does(released, course):
    from nbgrader.api import Gradebook

    _, key_path = released
    assert run_cli("grade", "--nbgrader", str(course), "--key", str(key_path)).returncode == 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        rows = {d["student"]: d["needs_manual_grade"] for d in gb.submission_dicts(ASSIGNMENT)}
    assert rows == {s: False for s in STUDENTS}


def test_a_renamed_submission_is_written_under_the_name_nbgrader_uses(released, course, tmp_path):
    """A student who renamed the notebook (tests/cases/nbgrader-renamed): formgrader opens
    autograded/<student>/<assignment>/<released name>, so that is where the graded copy and the feedback go."""
    _, key_path = released
    copy = tmp_path / "course"
    shutil.copytree(course, copy)
    folder = copy / "submitted" / "stu_renamed" / ASSIGNMENT
    folder.mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "cases" / "nbgrader-renamed" / "backward-vs-grad-stu_renamed.ipynb", folder)
    p = run_cli("grade", "--nbgrader", str(copy), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    assert (copy / "autograded" / "stu_renamed" / ASSIGNMENT / "backward-vs-grad.ipynb").is_file()
    assert not (copy / "autograded" / "stu_renamed" / ASSIGNMENT / "backward-vs-grad-stu_renamed.ipynb").exists()
    assert (copy / "feedback" / "stu_renamed" / ASSIGNMENT / "backward-vs-grad.html").is_file()
    report = read_report(copy / "autograd-lab" / ASSIGNMENT / "reports" / "stu_renamed__backward-vs-grad-stu_renamed.json")
    assert (report.student, report.score) == ("stu_renamed", 26)
