"""nbgrader's Validate (the real `nbgrader validate`) on our notebooks: it commits nothing, and says "Success" only
when every check of every exercise passes, in self-study (the public key) and in a course (the service)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograder.judging import commit
from conftest import ASSIGNMENT
from servers.course import call
from test_course import NB, _cell

SUCCESS = "Success! Your notebook passes all the tests."


def validate(path: Path, env: dict[str, str] | None = None) -> str:
    """`nbgrader validate NOTEBOOK` as a student runs it (the Validate button runs the same); its output."""
    import os

    p = subprocess.run([str(Path(sys.executable).parent / "nbgrader"), "validate", str(path)], cwd=path.parent,
                       capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})
    assert p.returncode == 0, p.stderr[-3000:]
    return p.stdout + p.stderr


def _solved(key_path: Path, student: str) -> nbformat.NotebookNode:
    """The completed solution (what release hands nbgrader) as a student's notebook."""
    nb = nbformat.read(key_path.parent / "source" / NB, as_version=4)
    _cell(nb, "student-id").source = f'STUDENT_ID = "{student}"'
    return nb


def _run_all(nb, folder: Path) -> None:
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    nbformat.write(nb, folder / NB)


def test_self_study_validate_commits_nothing_and_passes_only_a_finished_committed_notebook(released, tmp_path):
    assignments, key_path = released
    shutil.copytree(assignments, tmp_path / "gil")
    folder = tmp_path / "gil"
    blank = nbformat.read(folder / NB, as_version=4)
    _cell(blank, "student-id").source = 'STUDENT_ID = "gil"'
    nbformat.write(blank, folder / NB)
    out = validate(folder / NB)
    assert "VALIDATION FAILED ON 6 CELL(S)" in out and SUCCESS not in out
    assert "1.predict.grad: missing" in out
    assert not (folder / commit.STORE).exists()

    # finished but never checked: Validate commits nothing, and does not say Success
    nbformat.write(_solved(key_path, "gil"), folder / NB)
    out = validate(folder / NB)
    assert SUCCESS not in out and "Its predictions are not committed: run its check cell first." in out
    assert not (folder / commit.STORE).exists()

    # checked in the notebook (committed there), then validated: Success
    _run_all(_solved(key_path, "gil"), folder)
    assert (folder / commit.STORE).exists()
    before = (folder / commit.STORE).read_bytes()
    assert SUCCESS in validate(folder / NB)
    assert (folder / commit.STORE).read_bytes() == before


def test_course_validate_sends_no_prediction_and_passes_only_after_the_checks(course, tmp_path):
    token, api = course.tokens["ben"], course.svc.url + "/api/v1"
    shutil.copytree(course.student, tmp_path / "ben")
    folder = tmp_path / "ben"
    nbformat.write(_solved(course.key_path, "ben"), folder / NB)
    env = {"AUTOGRAD_LAB_TOKEN": token, "XDG_CONFIG_HOME": str(tmp_path / ".config")}
    out = validate(folder / NB, env)
    assert SUCCESS not in out and "Its predictions are not committed: run its check cell first." in out
    status, held = call(api + f"/students/ben/assignments/{ASSIGNMENT}/commits", token)
    assert status == 200 and held == {"commits": [], "predictions": []}

    import os
    old = os.environ.get("AUTOGRAD_LAB_TOKEN")
    os.environ["AUTOGRAD_LAB_TOKEN"] = token
    try:
        _run_all(_solved(course.key_path, "ben"), folder)
    finally:
        os.environ.pop("AUTOGRAD_LAB_TOKEN") if old is None else os.environ.update(AUTOGRAD_LAB_TOKEN=old)
    status, held = call(api + f"/students/ben/assignments/{ASSIGNMENT}/commits", token)
    assert len(held["commits"]) == 6
    sent = len(held["predictions"])
    assert SUCCESS in validate(folder / NB, env)
    status, held = call(api + f"/students/ben/assignments/{ASSIGNMENT}/commits", token)
    assert len(held["predictions"]) == sent   # Validate sent no prediction
