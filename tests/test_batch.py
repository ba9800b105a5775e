"""Does a batch name submissions uniquely, find each student's id, and keep one report per submission?"""
import json
import shutil

from autograder.batch import find_submissions, report_file, student_for

from conftest import EXAMPLES, run_cli


def test_student_ids_from_file_names_and_from_folders_when_the_name_was_kept(key, tmp_path):
    released_name = key["notebook"]   # backward-vs-grad.ipynb
    assert student_for(tmp_path / "ada.ipynb", key) == "ada"
    assert student_for(tmp_path / "mia" / released_name, key) == "mia"
    assert student_for(tmp_path / "submitted" / "mia" / key["assignment"] / released_name, key) == "mia"


def test_same_file_names_in_two_folders_are_two_submissions_with_two_reports(key, released, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    for student in ("ada", "ben"):
        (subs / student).mkdir(parents=True)
        shutil.copy(EXAMPLES / f"{student}.ipynb", subs / student / key["notebook"])
    found = find_submissions([str(subs)], key)
    assert [(s.name, s.student) for s in found] == [("ada/backward-vs-grad.ipynb", "ada"),
                                                   ("ben/backward-vs-grad.ipynb", "ben")]
    assert report_file(found[0].name) == "ada__backward-vs-grad.json"
    p = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--jobs", "2")
    assert p.returncode == 0, p.stderr
    ada = json.loads((tmp_path / "out" / "reports" / "ada__backward-vs-grad.json").read_text())
    ben = json.loads((tmp_path / "out" / "reports" / "ben__backward-vs-grad.json").read_text())
    assert (ada["student"], ada["score"]) == ("ada", 26) and (ben["student"], ben["score"]) == ("ben", 20)
    assert "2 submissions in" in p.stdout


def test_a_renamed_file_is_graded_as_its_name_and_the_mismatch_is_shown(released, tmp_path):
    _, key_path = released
    shutil.copy(EXAMPLES / "ada.ipynb", tmp_path / "zoe.ipynb")
    (tmp_path / "out" / "reports").mkdir(parents=True)
    (tmp_path / "out" / "reports" / "old.json").write_text("{}")
    p = run_cli("grade", str(tmp_path / "zoe.ipynb"), "--out", str(tmp_path / "out"), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    assert "STUDENT_ID = 'ada', but it was graded as 'zoe'" in " ".join(p.stdout.split())
    assert "1 older report(s)" in p.stdout and "old.json" in p.stdout


def test_files_given_one_by_one_with_the_same_name_are_told_apart_by_folder(key, tmp_path):
    for student in ("ada", "ben"):
        (tmp_path / student).mkdir()
        shutil.copy(EXAMPLES / f"{student}.ipynb", tmp_path / student / key["notebook"])
    found = find_submissions([str(tmp_path / "ada" / key["notebook"]), str(tmp_path / "ben" / key["notebook"])], key)
    assert [(s.name, s.student) for s in found] == [("ada/backward-vs-grad.ipynb", "ada"), ("ben/backward-vs-grad.ipynb", "ben")]
