"""Do our notebooks work in real nbgrader: `generate_assignment` makes the same student notebook as our
release, `autograde` (set up with our `configure`, so that it grades in our sandbox) gives every student the
same score as our `grade` and cannot be told a score by the notebook, and our `grade --nbgrader` fills an nbgrader
course's autograded/, feedback/ and gradebook?"""
import copy
import json
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


def scores(course: Path, students: tuple[str, ...] = STUDENTS) -> dict[str, float]:
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        return {s: gb.find_submission(ASSIGNMENT, s).score for s in students}


ATTACK = Path(__file__).parent / "cases" / "attack-2026-12" / "nbgrader-check-override"


def make_course(base: Path, key_path: Path, config: str, students: dict[str, Path]) -> Path:
    """A course directory: the solution as nbgrader's source, released by nbgrader, and the submissions."""
    course = base
    course.mkdir(parents=True, exist_ok=True)
    (course / "nbgrader_config.py").write_text(config)
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(SOLUTION / "backward-vs-grad.ipynb", course / "source" / ASSIGNMENT)
    shutil.copy(key_path.parent.parent.parent / "assignments" / ASSIGNMENT / "public_key.json", course / "source" / ASSIGNMENT)
    nbgrader(course, "db", "assignment", "add", ASSIGNMENT)
    nbgrader(course, "generate_assignment", ASSIGNMENT, "--force")
    for s, notebook in students.items():
        folder = course / "submitted" / s / ASSIGNMENT
        folder.mkdir(parents=True)
        shutil.copy(notebook, folder / "backward-vs-grad.ipynb")
    return course


@pytest.fixture(scope="module")
def course(released, tmp_path_factory):
    """A course set up as docs/staff.md says (configure: nbgrader autograde grades in our sandbox), with four
    example students and the attack of tests/cases/attack-2026-12/nbgrader-check-override (mallory, honest). ada's
    notebook ends with a copy of her lab.check("1") cell, its nbgrader metadata too (nbgrader #108: a copied grade
    cell made nbgrader's own checks fail the whole submission, 0 points in gradebook.db), and has a plain
    lab.check("1") cell pasted above the real one (its score must still go into the cell nbgrader grades)."""
    _, key_path = released
    config = ("c = get_config()\n"
              "c.CourseDirectory.course_id = 'autograd-lab'\n"
              "from autograder.integrations.nbgrader import configure\n"
              f"configure(c, {str(key_path.parent.parent)!r})   # build/: <assignment>/key.json\n")
    base = tmp_path_factory.mktemp("course")
    ada = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    [check] = [c for c in ada.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1-check"]
    ada.cells.append(nbformat.from_dict({**copy.deepcopy(check), "id": "a1b2c3d4"}))
    ada.cells.insert(ada.cells.index(check), nbformat.v4.new_code_cell('lab.check("1")'))   # pasted, no metadata
    nbformat.write(ada, base / "ada.ipynb")
    students = ({s: EXAMPLES / f"{s}.ipynb" for s in STUDENTS} | {"ada": base / "ada.ipynb"}
                | {s: ATTACK / f"{s}.ipynb" for s in ("mallory", "honest")})
    return make_course(base / "course", key_path, config, students)


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
    """nbgrader autograde, set up with configure, grades in our sandbox (no kernel runs the notebook): the same
    scores as `grade --nbgrader`, student by student; the five lines that set a score in the kernel
    (mallory) change nothing, and nothing the notebook runs sees the full key."""
    _, key_path = released
    done = nbgrader(course, "autograde", ASSIGNMENT, "--create", "--force")
    assert "does not exist in the database" not in done.stdout + done.stderr, (done.stdout + done.stderr)[-3000:]
    theirs = scores(course, (*STUDENTS, "mallory", "honest"))
    graded = nbformat.read(course / "autograded" / "mallory" / ASSIGNMENT / "backward-vs-grad.ipynb", as_version=4)
    printed = json.dumps([c.get("outputs", []) for c in graded.cells])
    assert "secret seen by the student code" not in printed   # mallory's cell never ran
    assert json.loads(key_path.read_text())["secret"][:12] not in json.dumps(graded)
    p = run_cli("grade", "--nbgrader", str(course), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    ours = {s: read_report(course / "autograd-lab" / ASSIGNMENT / "reports" / f"{s}__backward-vs-grad.json").score
            for s in (*STUDENTS, "mallory", "honest")}
    assert ours == {"ada": 26, "ben": 20, "eve": 23, "gus": 0, "mallory": 0, "honest": 0}
    assert theirs == ours, "nbgrader autograde (grading in our sandbox) and our grade differ"
    ada = nbformat.read(course / "autograded" / "ada" / ASSIGNMENT / "backward-vs-grad.ipynb", as_version=4)
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in ada.cells].count("ex1-check") == 1
    first = next(i for i, c in enumerate(ada.cells) if c.metadata.get("nbgrader", {}).get("grade_id") == "ex1-check")
    assert ada.cells[first].outputs[-1]["data"]["text/plain"] == "4"   # the score is in the grade cell nbgrader reads
    for pasted in (ada.cells[first - 1], ada.cells[-1]):
        assert pasted.outputs[0]["text"] == f"a copy of exercise 1's check cell: its score is in cell {first + 1}\n"
    assert scores(course, (*STUDENTS, "mallory", "honest")) == ours   # our grade wrote the same scores
    assert "scores of 6 submission(s) in its gradebook.db" in p.stderr


def test_without_our_set_up_nbgrader_autograde_gets_no_grade_from_the_kernel(released, tmp_path):
    """A course configured the old way (nbgrader runs the notebook in a kernel, with a path to the keys in the
    environment): the check cells refuse to grade there, so an honest notebook shows why instead of a score, and
    the message names the sandboxed ways."""
    _, key_path = released
    config = ("c = get_config()\nc.ClearSolutions.code_stub = {'python': ''}\nimport os\n"
              f"os.environ['AUTOGRAD_LAB_KEYS'] = {str(key_path.parent.parent)!r}\n")
    course = make_course(tmp_path / "course", key_path, config, {"ada": EXAMPLES / "ada.ipynb"})
    nbgrader(course, "autograde", ASSIGNMENT, "--create", "--force")
    assert scores(course, ("ada",)) == {"ada": 0}
    graded = (course / "autograded" / "ada" / ASSIGNMENT / "backward-vs-grad.ipynb").read_text()
    assert "autograd-lab does not grade in the notebook's own kernel" in graded
    assert "autograder grade --nbgrader COURSE" in graded


def test_our_grade_writes_nbgraders_autograded_and_feedback_folders(released, course):
    _, key_path = released
    assert run_cli("grade", "--nbgrader", str(course), "--key", str(key_path)).returncode == 0
    nb = nbformat.read(course / "autograded" / "ben" / ASSIGNMENT / "backward-vs-grad.ipynb", as_version=4)
    results = [c.outputs[0]["data"]["text/plain"] for c in nb.cells
               if c.metadata.get("nbgrader", {}).get("grade") and c.outputs]
    assert results == ["3", "3", "3", "3", "4", "4"]   # ben's score per exercise, as nbgrader reads it
    assert nb.metadata["autograd_lab"]["report"]["student"] == "ben"
    page = (course / "feedback" / "ben" / ASSIGNMENT / "backward-vs-grad.html").read_text()
    assert "ben" in page and "1.predict.returns" in page.replace("<wbr>", "")   # an id may break at its dots


def test_grade_clears_needs_manual_grading_as_nbgraders_autograde_does(released, course):
    from nbgrader.api import Gradebook

    _, key_path = released
    assert run_cli("grade", "--nbgrader", str(course), "--key", str(key_path)).returncode == 0
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        rows = {d["student"]: d["needs_manual_grade"] for d in gb.submission_dicts(ASSIGNMENT)}
    assert rows == {s: False for s in (*STUDENTS, "mallory", "honest")}


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


def test_grade_records_the_hand_in_time_so_the_courses_late_penalty_applies(released, tmp_path):
    """tests/cases/nbgrader-late-timestamp: due 2026-11-20 23:59 UTC, the "zero" policy; stu_late handed in on
    2026-11-25 10:00 UTC (timestamp.txt, as nbgrader's exchange writes it), stu_ontime on 2026-11-19."""
    from nbgrader.api import Gradebook

    _, key_path = released
    config = "c = get_config()\nc.CourseDirectory.course_id = 'late'\nc.LateSubmissionPlugin.penalty_method = 'zero'\n"
    case = Path(__file__).parent / "cases" / "nbgrader-late-timestamp" / "submitted"
    course = make_course(tmp_path / "course", key_path, config, {})
    nbgrader(course, "db", "assignment", "add", ASSIGNMENT, "--duedate=2026-11-20 23:59:00 UTC")
    shutil.copytree(case, course / "submitted", dirs_exist_ok=True)
    # nbgrader PR #591: a timestamp.txt that is not a time (here, text) is graded (nbgrader's autograde fails it), and
    # staff hear of it (before: nothing said); its text is the student's, never quoted. (Its notebook is stu_ontime's:
    # not gradable as stu_garbled's, so it has no score here.)
    shutil.copytree(course / "submitted" / "stu_ontime", course / "submitted" / "stu_garbled")
    (course / "submitted" / "stu_garbled" / ASSIGNMENT / "timestamp.txt").write_text("I want to be a timestamp :(")
    r = run_cli("grade", "--nbgrader", str(course), "--key", str(key_path), "--jobs", "1")
    assert r.returncode == 0, r.stderr
    [late] = [line for line in r.stdout.splitlines() if line.startswith("nbgrader: late")]
    assert late.endswith(": stu_late 4 d 10 h late, penalty 26"), late
    assert ("nbgrader: timestamp.txt is not a hand-in time for stu_garbled (it is not a time): graded; the hand-in "
            "time gradebook.db had for them (if any) stays, and with it any late penalty; check when they handed in") \
        in r.stderr, r.stderr[-2000:]
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        got = {s.student_id: (str(s.timestamp), s.total_seconds_late, s.score, s.late_submission_penalty)
               for s in gb.find_assignment(ASSIGNMENT).submissions}
    assert got == {"stu_late": ("2026-11-25 10:00:00", 381660.0, 26.0, 26.0),
                   "stu_ontime": ("2026-11-19 10:00:00", 0.0, 26.0, 0.0)}
    nbgrader(course, "export", "--to", "export.csv")
    rows = {line.split(",")[3]: line for line in (course / "export.csv").read_text().splitlines()[1:]}
    assert rows["stu_late"].startswith("01-backward-vs-grad,2026-11-20 23:59:00,2026-11-25 10:00:00,stu_late")
    assert rows["stu_late"].endswith(",26.0,26.0,0.0,26.0"), rows["stu_late"]   # raw score, penalty, then the final


def test_what_courses_hand_in_beside_the_work_costs_no_one_a_score(released, tmp_path):
    """Two public reports in one course (one nbgrader run):
    - otter-grader #928 (and ../shared/cases/public-2026-12-03/nbgrader-lone-surrogate): jade's notebook holds half
      of an emoji, the JSON escape "\\ud83d" (valid JSON; nbformat reads it), in a markdown cell and in a print inside
      ex3. Before, writing its autograded copy raised UnicodeEncodeError: the run ended, no score reached gradebook.db
      (not the classmates' either) and an empty .ipynb was left. Now it is graded 26/26 (the print escapes, as in
      Jupyter's kernel, instead of raising), and its autograded copy is the notebook with the escape kept.
    - nbgrader #258 ("skip extra notebooks"): ada's folder holds her worked notebook, a scratch Untitled.ipynb (no
      cell of the assignment) and an untouched copy of the release with her STUDENT_ID (backward-vs-grad-Copy1.ipynb).
      Before, all three were her submissions, none counted until staff chose. Now the two are named as not work and
      left out, and her 26/26 is in gradebook.db.
    - django_autograder #53 ("do not count identical submissions"): ada's folder also holds the same file twice
      (backward-vs-grad (1).ipynb, the same bytes): it is not a second submission."""
    assignments, key_path = released
    course = make_course(tmp_path / "course", key_path, "c = get_config()\n", {"ada": EXAMPLES / "ada.ipynb"})
    nb = nbformat.read(EXAMPLES / "jade.ipynb", as_version=4)
    [ex3] = [c for c in nb.cells if c.source.startswith("def ex3(x):")]
    ex3.source = ex3.source.replace("def ex3(x):\n", "def ex3(x):\n    print('done \\ud83d')\n")
    nb.cells.insert(3, nbformat.v4.new_markdown_cell("My answer \ud83d"))
    folder = course / "submitted" / "jade" / ASSIGNMENT
    folder.mkdir(parents=True)
    text = nbformat.writes(nb)   # the surrogate stays a JSON escape: ensure_ascii=False cannot encode it
    (folder / "backward-vs-grad.ipynb").write_text(text, encoding="utf-8", errors="backslashreplace")
    assert "\\ud83d" in (folder / "backward-vs-grad.ipynb").read_text()
    folder = course / "submitted" / "ada" / ASSIGNMENT
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch\nprint(torch.ones(2))")])
    nbformat.write(scratch, folder / "Untitled.ipynb")
    copy = nbformat.read(assignments / "backward-vs-grad.ipynb", as_version=4)
    [sid] = [c for c in copy.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "student-id"]
    sid.source = 'STUDENT_ID = "ada"'
    nbformat.write(copy, folder / "backward-vs-grad-Copy1.ipynb")
    shutil.copy(EXAMPLES / "ada.ipynb", folder / "backward-vs-grad (1).ipynb")
    r = run_cli("grade", "--nbgrader", str(course), "--key", str(key_path), "--jobs", "1")
    assert r.returncode == 0, r.stderr[-2000:]
    assert ("nbgrader: not graded, not work on 01-backward-vs-grad beside a notebook that is: "
            "ada/Untitled.ipynb (no cell of the assignment); ada/backward-vs-grad (1).ipynb (the same file as "
            "ada/backward-vs-grad.ipynb); ada/backward-vs-grad-Copy1.ipynb (unchanged since its release)") \
        in r.stderr, r.stderr
    assert "scores of 2 submission(s) in its gradebook.db" in r.stderr, r.stdout[-2000:] + r.stderr[-2000:]
    assert scores(course, ("ada", "jade")) == {"ada": 26.0, "jade": 26.0}
    assert sorted(p.name for p in (course / "autograd-lab" / ASSIGNMENT / "reports").glob("*.json")) == \
        ["ada__backward-vs-grad.json", "jade__backward-vs-grad.json"]
    back = nbformat.read(course / "autograded" / "jade" / ASSIGNMENT / "backward-vs-grad.ipynb", as_version=4)
    assert "My answer \ud83d" in [c.source for c in back.cells]
    assert (course / "feedback" / "jade" / ASSIGNMENT / "backward-vs-grad.html").is_file()
