"""Does the student's `autograder check` pass the solution and report the blank copy as missing?"""
import json

from conftest import EXAMPLES, SOLUTION, run_cli


def test_check_passes_every_check_of_a_right_notebook_with_its_commits(released):
    out, _ = released
    p = run_cli("check", str(EXAMPLES / "ada.ipynb"), "--key", str(out / "public_key.json"))
    assert p.returncode == 0, p.stdout + p.stderr
    assert "score 26 / 26 · 26 passed" in p.stdout
    assert "torch 2.13.0" in p.stdout and "sympy 1." in p.stdout and "your parameters: x0 = " in p.stdout


def test_check_reports_every_check_missing_on_the_blank_copy(released):
    out, _ = released
    p = run_cli("check", str(out / "backward-vs-grad.ipynb"), "--json")   # public_key.json found beside it
    assert p.returncode == 1
    report = json.loads(p.stdout)
    assert report["status"] == "graded" and report["score"] == 0
    assert {o["status"] for o in report["outcomes"]} == {"missing"} and len(report["outcomes"]) == 26


def test_check_on_a_truncated_file_says_not_graded(released, tmp_path):
    out, _ = released
    bad = tmp_path / "mine.ipynb"
    bad.write_text((out / "backward-vs-grad.ipynb").read_text()[:500])
    p = run_cli("check", str(bad), "--key", str(out / "public_key.json"))
    assert p.returncode == 1 and "NOT GRADED" in p.stdout and "not valid JSON" in p.stdout
    assert "this is not a 0" in p.stdout.lower()


def test_help_lists_examples_and_exit_codes():
    p = run_cli("grade", "--help")
    assert p.returncode == 0 and "examples:" in p.stdout and "--out" in p.stdout
    p = run_cli("--help")
    assert "exit codes" in p.stdout


def test_grade_without_a_key_says_how_to_make_one(tmp_path):
    (tmp_path / "a.ipynb").write_text("{}")
    p = run_cli("grade", str(tmp_path / "a.ipynb"), "--out", str(tmp_path / "o"), "--assignment", "nope", cwd=tmp_path)
    assert p.returncode == 2 and "no key at build/nope/key.json: run grade from the project folder after `autograder release solutions/nope`" in p.stderr
    (tmp_path / "solutions" / "nope").mkdir(parents=True)
    p = run_cli("grade", str(tmp_path / "a.ipynb"), "--out", str(tmp_path / "o"), "--assignment", "nope", cwd=tmp_path)
    assert p.returncode == 2 and "run `autograder release solutions/nope` first" in p.stderr


def test_check_of_an_unknown_exercise_is_a_usage_error(released):
    out, _ = released
    p = run_cli("check", str(out / "backward-vs-grad.ipynb"), "--exercise", "9")
    assert p.returncode == 2 and "no exercise 9; the exercises are 1, 2, 3, 4, 5, 6" in p.stderr


def test_check_finds_the_public_key_by_the_notebooks_folder_name():
    p = run_cli("check", str(SOLUTION / "backward-vs-grad.ipynb"), "--exercise", "1")
    # the solution's check cells never ran in a notebook, so nothing is committed: its predictions wait, sealed,
    # and the exit code says only what was judged (issue "Right grades ... round two")
    assert p.returncode == 0 and ("score 2 / 4 · 2 passed, 2 sealed (2 points sealed: judged once the exercise's "
                                  "predictions are committed)") in p.stdout, p.stdout + p.stderr
    assert "p1_grad = 2.22 is written down" in p.stdout


def test_limits_are_set_per_command_and_a_bad_one_is_refused(released, tmp_path):
    from conftest import EXAMPLES

    _, key_path = released
    p = run_cli("grade", str(EXAMPLES / "hana.ipynb"), "--out", str(tmp_path), "--key", str(key_path),
                "--limit", "call_timeout=1", "--json")
    assert p.returncode == 0, p.stderr
    outcome = next(o for o in json.loads(p.stdout)[0]["outcomes"] if o["check_id"] == "4.produce.after_k")
    assert outcome["status"] == "timeout" and "did not return within 1 s" in outcome["message"]
    bad = run_cli("grade", str(EXAMPLES / "ada.ipynb"), "--out", str(tmp_path), "--key", str(key_path),
                  "--limit", "memory_mb=lots")
    assert bad.returncode == 2 and "--limit 'memory_mb=lots': the value must be a whole number" in bad.stderr
    unknown = run_cli("check", str(EXAMPLES / "ada.ipynb"), "--limit", "cpu=1")
    assert unknown.returncode == 2 and "unknown limit(s) cpu" in unknown.stderr
