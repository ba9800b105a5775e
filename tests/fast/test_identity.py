"""Whose submission is this? Each identity rule, decorated copies of the released name, and the witnesses
that disagree (no sandbox: identity is read from names, folders and STUDENT_ID)."""
from pathlib import Path

import pytest

from autograder.grading.identity import PLACEHOLDER_ID, Source, is_released_name, resolve, student_folder, undecorated

RELEASED, ASSIGNMENT = "backward-vs-grad.ipynb", "01-backward-vs-grad"


@pytest.mark.parametrize("stem", ["backward-vs-grad", "backward-vs-grad (1)", "backward-vs-grad(2)",
                                  "backward-vs-grad-Copy1", "Copy of backward-vs-grad", "Copy of backward-vs-grad (3)",
                                  "backward-vs-grad - Copy", "backward-vs-grad copy", "backward-vs-grad copy 2",
                                  "smithjohn_12345_67890_backward-vs-grad", "backward-vs-grad-stu_renamed",
                                  "BACKWARD-VS-GRAD (1)"])
def test_copies_of_the_released_name_are_recognised(stem):
    assert is_released_name(stem, RELEASED)


@pytest.mark.parametrize("stem", ["mia", "backward", "vs-grad", "s1234567", "backward-vs-gradient"])
def test_a_student_id_is_not_a_released_name(stem):
    assert not is_released_name(stem, RELEASED)


def test_decorations_are_taken_off_one_after_another():
    assert undecorated("Copy of backward-vs-grad (1) - Copy") == "backward-vs-grad"


def who(name, folder=None, declared=None, rule="file"):
    return resolve(Source(Path("/x") / name, folder, rule), RELEASED, ASSIGNMENT, declared)


def test_the_file_name_then_the_folder_then_student_id_decide_and_agreeing_witnesses_give_no_note():
    assert (who("mia.ipynb", None, "mia").student, who("mia.ipynb", None, "mia").notes) == ("mia", ())
    assert who("backward-vs-grad (1).ipynb", "ana6", "ana6").student == "ana6"
    lone = who("backward-vs-grad (1).ipynb", None, "ana6")
    assert lone.student == "ana6" and not lone.problem and "graded as its STUDENT_ID 'ana6'" in lone.notes[0]


def test_witnesses_that_disagree_make_it_not_gradable_with_what_to_do():
    conflict = who("mia.ipynb", None, "max")
    assert conflict.problem.startswith("whose submission is this? Its file name says 'mia' but its STUDENT_ID says "
                                       "'max'") and "--ids notebook" in conflict.problem
    assert "Its folder says 'ana6' but its STUDENT_ID says 'ben6'" in who("backward-vs-grad (1).ipynb", "ana6", "ben6").problem
    nobody = who("backward-vs-grad (1).ipynb", None, PLACEHOLDER_ID)
    assert nobody.problem and "still the placeholder" in nobody.problem
    assert who("backward-vs-grad.ipynb", None, None).problem   # no name, no folder, no STUDENT_ID


def test_the_placeholder_is_graded_by_the_file_with_a_note_and_the_notebook_rule_trusts_student_id():
    p = who("mia.ipynb", None, PLACEHOLDER_ID)
    assert p.student == "mia" and not p.problem and p.notes[0].startswith("STUDENT_ID is still")
    n = who("mia.ipynb", None, "max", rule="notebook")
    assert n.student == "max" and not n.problem and "its file name says 'mia'" in n.notes[0]
    folder = who("whatever-i-called-it.ipynb", "stu1", "stu2", rule="folder")
    assert folder.student == "stu1" and "folder says 'stu1'" in folder.problem


def test_a_student_folder_is_the_first_folder_below_the_folder_given_not_named_after_the_assignment():
    assert student_folder(("mia", ASSIGNMENT), ASSIGNMENT) == "mia"
    assert student_folder((ASSIGNMENT, "mia"), ASSIGNMENT) == "mia"
    assert student_folder(("mallory", "ada"), ASSIGNMENT) == "mallory"   # inside mallory's folder: mallory's
    assert student_folder((), ASSIGNMENT) is None and student_folder((ASSIGNMENT,), ASSIGNMENT) is None
    assert student_folder(("submitted", "zoe", ASSIGNMENT), ASSIGNMENT) == "zoe"   # nbgrader's course folder
    assert student_folder(("submitted", "mallory", "ada", ASSIGNMENT), ASSIGNMENT) == "mallory"


def test_a_file_name_never_speaks_for_another_student_than_its_folder():
    """mallory/bob.ipynb (shared/cases/attack-2026-12/filename-impersonation): not bob's, not mallory's."""
    claim = who("bob.ipynb", "mallory", "bob")
    assert claim.problem.startswith("whose submission is this? It is in the folder of 'mallory' but its file name says "
                                    "'bob'") and claim.student == "mallory"
    assert who("bob.ipynb", "mallory", None).problem   # without STUDENT_ID too
    assert who("bob.ipynb", "mallory", "bob", rule="notebook").problem   # --ids notebook: the folder still rules
    assert "'mallory' but its STUDENT_ID says 'bob'" in who(RELEASED, "mallory", "bob", rule="notebook").problem
    agree = who("mia (1).ipynb", "mia", "mia")   # a browser's second download of her own file
    assert (agree.student, agree.problem) == ("mia", "")
    assert who("bob.ipynb", "mallory", "bob", rule="folder").problem   # nbgrader's folders: STUDENT_ID disagrees


def test_what_a_platform_added_to_the_released_name_is_a_witness_student_id_must_agree_with():
    """A flat download from a learning platform (shared: attack, second pass): jones_mallory_1002_backward-vs-grad
    with STUDENT_ID "ada" would have been graded as ada's, beside ada's own smith_ada_1001_backward-vs-grad."""
    own = who("smith_ada_1001_backward-vs-grad.ipynb", None, "ada")
    assert own.student == "ada" and not own.problem
    claim = who("jones_mallory_1002_backward-vs-grad.ipynb", None, "ada")
    assert claim.problem.startswith("whose submission is this? Its file name says 'jones_mallory_1002' beside the "
                                    "released name") and "STUDENT_ID says 'ada'" in claim.problem
    assert not who("backward-vs-grad-ada-lovelace.ipynb", None, "ada-lovelace").problem
    assert not who("backward-vs-grad (1).ipynb", None, "ana6").problem   # a copy's decoration is no witness


def test_canvas_names_a_re_upload_and_the_students_name_run_together_are_read():
    """A staff trial: Canvas's "smithcleo_1003_backward-vs-grad-1" (a re-upload) was taken for a student id, and
    "devsmith_LATE_1004_88812_backward-vs-grad" refused STUDENT_ID "dev"."""
    assert is_released_name("smith_cleo_1003_backward-vs-grad-1", RELEASED)
    assert who("smith_cleo_1003_backward-vs-grad-1.ipynb", None, "cleo").student == "cleo"
    late = who("devsmith_LATE_1004_88812_backward-vs-grad.ipynb", None, "dev")
    assert late.student == "dev" and not late.problem
    assert who("jones_mallory_1002_backward-vs-grad.ipynb", None, "ada").problem   # still not ada's


def test_a_folder_that_disagrees_is_never_told_to_use_ids_notebook():
    p = who("backward-vs-grad.ipynb", "Downloads", "ada").problem
    assert "Its folder says 'Downloads' but its STUDENT_ID says 'ada'" in p and "--ids notebook" not in p


def test_ids_that_differ_only_in_case_are_one_student_with_one_set_of_parameters():
    """nbgrader #1534 (JupyterHub lower-cases its user names; a roster or a learner may not): STUDENT_ID "Ada" in
    ada's folder is ada, with ada's parameters; her commit records, made as "Ada", are hers; a different id still
    disagrees."""
    from autograder.grading.plan import draw_point
    from autograder.judging import commit
    from autograder.model import Parameter, same_student

    agree = who("backward-vs-grad.ipynb", "ada", "Ada")
    assert (agree.student, agree.problem, agree.notes) == ("ada", "", ())
    assert who("ada.ipynb", None, "ADA").student == "ada" and not who("ada.ipynb", None, "ADA").problem
    upload = resolve(Source(Path("/x/backward-vs-grad.ipynb"), None, "upload", uploader=("ADA",)), RELEASED,
                     ASSIGNMENT, "ada")
    assert (upload.student, upload.problem) == ("ADA", "")   # the course's record, its spelling
    assert who("backward-vs-grad.ipynb", "ada", "adam").problem
    params = {"x0": Parameter("real", 0.5, 3.0, "any")}
    assert draw_point(params, ASSIGNMENT, "Ada", "own") == draw_point(params, ASSIGNMENT, "ada", "own") != \
        draw_point(params, ASSIGNMENT, "adam", "own")
    record = commit.read(commit.make(ASSIGNMENT, "Ada", "1", {}, ["p1 = 2"]))
    assert commit.choose([record], ASSIGNMENT, "ada") == {"1": record}
    assert same_student("Zoë", "zoë") and not same_student("ada", None)


def test_the_name_jupyter_gives_a_new_notebook_names_no_student():
    """A scratch Untitled.ipynb handed in beside the work was a student "Untitled" (0 points, a row in grades.csv);
    in a student's folder it was "its file name says 'Untitled'": rename it. It names no one: the folder, else
    STUDENT_ID, decides, and with neither the reason says what the name is."""
    assert (who("Untitled.ipynb", "ben", None).student, who("Untitled.ipynb", "ben", None).problem) == ("ben", "")
    assert who("Untitled1.ipynb", None, "ada").student == "ada"
    lone = who("Untitled-2.ipynb", None, None)
    assert lone.problem.startswith("whose submission is this? Untitled-2.ipynb is the name Jupyter gives a new "
                                   "notebook, it is in no student folder"), lone.problem
    assert who("untitled_project.ipynb", None, None).student == "untitled_project"   # a name of one's own
