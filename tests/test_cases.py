"""The fair-grade cases (tests/cases/README.md) and their kinds: whose submission it is, duplicates in a
batch, uploads with several notebooks, a crash in a cell, spreadsheet formulas, a not-gradable report's
torch version."""
from __future__ import annotations

import csv
import json
import os
import shutil
from pathlib import Path

import nbformat

from conftest import EXAMPLES, run_cli

CASES = Path(__file__).parent / "cases"


def grade(*args, key_path) -> list[dict]:
    p = run_cli("grade", *map(str, args), "--key", str(key_path), "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_browser_copies_of_the_released_name_are_graded_as_their_student_folder(released, tmp_path):
    _, key_path = released
    reports = grade(CASES / "renamed-download", "--out", tmp_path / "out", key_path=key_path)
    assert sorted((r["student"], r["score"], r["status"]) for r in reports) == [("ana6", 26, "graded"),
                                                                               ("ben6", 26, "graded")]
    rows = list(csv.DictReader((tmp_path / "out" / "gradebook.csv").open()))
    assert sorted(r["student"] for r in rows) == ["ana6", "ben6"] and {r["counts"] for r in rows} == {"yes"}


def test_an_id_no_rule_resolves_is_never_recorded_with_a_score(released, tmp_path):
    _, key_path = released
    loose = tmp_path / "subs"
    loose.mkdir()
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    nb.cells[1].source = 'STUDENT_ID = "your-student-id"'
    nbformat.write(nb, loose / "backward-vs-grad (1).ipynb")   # no student folder, no STUDENT_ID: whose?
    [r] = grade(loose, "--out", tmp_path / "out", key_path=key_path)
    assert r["status"] == "not_gradable" and r["score"] is None
    assert r["reason"].startswith("whose submission is this?") and "still the placeholder" in r["reason"]
    grades = list(csv.DictReader((tmp_path / "out" / "grades.csv").open()))
    assert grades[0]["raw_score"] == "" and grades[0]["score"] == ""


def test_two_submissions_of_one_student_are_both_reported_and_staff_choose_which_counts(released, tmp_path):
    """Both are graded and reported; the file's time (the later one here) does not decide (a zip or a student can
    set it): none counts until staff choose (the choice itself: tests/test_attacks.py)."""
    _, key_path = released
    mia = tmp_path / "subs" / "mia"
    mia.mkdir(parents=True)
    for name, example, age in (("backward-vs-grad.ipynb", "ben", 600), ("backward-vs-grad (1).ipynb", "ada", 0)):
        nb = nbformat.read(EXAMPLES / f"{example}.ipynb", as_version=4)
        nb.cells[1].source = 'STUDENT_ID = "mia"'
        nbformat.write(nb, mia / name)
        os.utime(mia / name, (os.path.getmtime(mia / name) - age,) * 2)
    reports = {r["submission"]: r for r in grade(tmp_path / "subs", "--out", tmp_path / "out", key_path=key_path)}
    assert reports["mia/backward-vs-grad.ipynb"]["choose_among"] == ["mia/backward-vs-grad (1).ipynb"]
    assert reports["mia/backward-vs-grad (1).ipynb"]["choose_among"] == ["mia/backward-vs-grad.ipynb"]
    assert {r["superseded_by"] for r in reports.values()} == {""}
    rows = {r["submission"]: r for r in csv.DictReader((tmp_path / "out" / "gradebook.csv").open())}
    assert {r["counts"] for r in rows.values()} == {
        "choose: 2 submissions of mia; write yes in the one that counts, then grade again"}
    grades = list(csv.DictReader((tmp_path / "out" / "grades.csv").open()))
    assert [(g["student_id"], g["score"]) for g in grades] == [("mia", "")]
    assert reports["mia/backward-vs-grad (1).ipynb"]["score"] != reports["mia/backward-vs-grad.ipynb"]["score"]


def _upload(tmp_path, *notebooks: Path) -> Path:
    root = tmp_path / "gs"
    (root / "submission").mkdir(parents=True)
    for nb in notebooks:
        shutil.copy(nb, root / "submission" / nb.name)
    return root


def test_a_gradescope_upload_with_a_blank_copy_grades_the_worked_one_and_says_so(released, tmp_path):
    from autograder.integrations.gradescope import run

    _, key_path = released
    folder = CASES / "gradescope-two-notebooks"
    root = _upload(tmp_path, *sorted(folder.glob("*.ipynb")))
    assert run(root, key_path) == 0
    res = json.loads((root / "results" / "results.json").read_text())
    assert res["score"] == 26
    assert res["output"].startswith("Graded **` backward-vs-grad (1).ipynb `**; the upload's other notebooks were "
                                    "not graded: ` backward-vs-grad.ipynb (unchanged since its release) `.")


def test_a_gradescope_upload_with_two_worked_copies_is_refused_with_the_reason(released, tmp_path):
    from autograder.integrations.gradescope import run

    _, key_path = released
    worked = CASES / "gradescope-two-notebooks" / "backward-vs-grad (1).ipynb"
    second = tmp_path / "backward-vs-grad-Copy1.ipynb"
    second.write_bytes(worked.read_bytes() + b"\n")   # saved again (the same bytes twice would count once)
    root = _upload(tmp_path, worked, second)
    assert run(root, key_path) == 0
    res = json.loads((root / "results" / "results.json").read_text())
    assert res["tests"] == [] and "NOT GRADED" in res["output"]
    assert "the upload has 2 notebooks" in res["output"] and "cannot tell which one is your work" in res["output"]


def test_an_exit_in_a_cell_costs_only_the_exercise_it_prevents(released, tmp_path):
    _, key_path = released
    [r] = grade(CASES / "os-exit-in-cell.ipynb", "--ids", "notebook", "--out", tmp_path / "out", key_path=key_path)
    bad = {o["check_id"]: o["status"] for o in r["outcomes"] if o["status"] != "passed"}
    assert bad == {"2.produce.returns": "error", "2.produce.grad": "error"}, bad
    assert any(n.startswith("the run ended during cell 13 ('ex2-produce'): the process ended, exit code 1")
               for n in r["notes"]), r["notes"]


def test_spreadsheet_formulas_from_submissions_are_written_as_text(released, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ('=HYPERLINK("http:__x","a")', "+cmd", "-2+3", "@SUM(1)"):
        nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
        nb.cells[1].source = f"STUDENT_ID = {name!r}"
        nbformat.write(nb, subs / f"{name}.ipynb")
    grade(subs, "--out", tmp_path / "out", key_path=key_path)
    for book, columns in (("gradebook.csv", ("submission", "student")), ("grades.csv", ("student_id",))):
        rows = list(csv.reader((tmp_path / "out" / book).open()))
        head, body = rows[0], rows[1:]
        assert len(body) == 4
        for row in body:
            for column in columns:
                assert row[head.index(column)][0] == "'", (book, row)   # no spreadsheet evaluates it
            score = row[head.index("score")]
            assert score[0].isdigit() and float(score) > 0, score       # numbers the grader wrote are untouched


def test_a_not_gradable_report_states_the_torch_the_grader_runs(released, tmp_path):
    _, key_path = released
    bad = tmp_path / "eve.ipynb"
    bad.write_text("{ truncated")
    p = run_cli("grade", str(bad), "--out", str(tmp_path / "out"), "--key", str(key_path), "--feedback")
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "out" / "reports" / "eve.json").read_text())
    assert report["status"] == "not_gradable" and report["versions"]["torch"] == "2.13.0"
    page = (tmp_path / "out" / "feedback" / "eve.html").read_text()
    assert "torch 2.13.0 (key observed on torch 2.13.0)" in page and "torch ?" not in page   # no run: no CUDA line
