"""Does a batch name submissions uniquely, find each student's id, and keep one report per submission?"""
import json
import os
import shutil
import subprocess
import sys

from autograder.grading.batch import find_submissions, report_file

from conftest import EXAMPLES, ROOT, run_cli


def test_a_submissions_student_folder_is_found_below_the_folder_given(key, tmp_path):
    released_name = key.notebook   # backward-vs-grad.ipynb
    for folder in ("mia", "submitted/zoe/" + key.assignment):
        (tmp_path / folder).mkdir(parents=True)
        shutil.copy(EXAMPLES / "ada.ipynb", tmp_path / folder / released_name)
    shutil.copy(EXAMPLES / "ada.ipynb", tmp_path / "ada.ipynb")
    found = {s.name: s.source.folder for s in find_submissions([str(tmp_path)], key)}
    assert found == {"ada.ipynb": None, "mia/backward-vs-grad.ipynb": "mia",
                     f"submitted/zoe/{key.assignment}/backward-vs-grad.ipynb": "zoe"}


def test_same_file_names_in_two_folders_are_two_submissions_with_two_reports(key, released, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    for student in ("ada", "ben"):
        (subs / student).mkdir(parents=True)
        shutil.copy(EXAMPLES / f"{student}.ipynb", subs / student / key.notebook)
    found = find_submissions([str(subs)], key)
    assert [(s.name, s.source.folder) for s in found] == [("ada/backward-vs-grad.ipynb", "ada"),
                                                         ("ben/backward-vs-grad.ipynb", "ben")]
    assert report_file(found[0].name) == "ada__backward-vs-grad.json"
    p = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--jobs", "2")
    assert p.returncode == 0, p.stderr
    ada = json.loads((tmp_path / "out" / "reports" / "ada__backward-vs-grad.json").read_text())
    ben = json.loads((tmp_path / "out" / "reports" / "ben__backward-vs-grad.json").read_text())
    assert (ada["student"], ada["score"]) == ("ada", 26) and (ben["student"], ben["score"]) == ("ben", 20)
    assert "2 submissions in" in p.stdout


def test_a_file_named_for_another_student_than_its_student_id_is_not_graded_with_anyones_parameters(released,
                                                                                                     tmp_path):
    _, key_path = released
    shutil.copy(EXAMPLES / "ada.ipynb", tmp_path / "zoe.ipynb")
    (tmp_path / "out" / "reports").mkdir(parents=True)
    (tmp_path / "out" / "reports" / "old.json").write_text("{}")
    p = run_cli("grade", str(tmp_path / "zoe.ipynb"), "--out", str(tmp_path / "out"), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    text = " ".join(p.stdout.split())
    assert "not_gradable" in text and "file name says 'zoe' but its STUDENT_ID says 'ada'" in text, text
    assert "1 older report(s)" in p.stdout and "old.json" in p.stdout
    p = run_cli("grade", str(tmp_path / "zoe.ipynb"), "--out", str(tmp_path / "out2"), "--key", str(key_path),
                "--ids", "notebook", "--json")
    [report] = json.loads(p.stdout)
    assert (report["student"], report["score"]) == ("ada", 26)
    assert "graded as its STUDENT_ID 'ada' (grade --ids notebook); its file name says 'zoe'" in report["notes"]


def test_files_given_one_by_one_with_the_same_name_are_told_apart_by_folder(key, tmp_path):
    for student in ("ada", "ben"):
        (tmp_path / student).mkdir()
        shutil.copy(EXAMPLES / f"{student}.ipynb", tmp_path / student / key.notebook)
    found = find_submissions([str(tmp_path / "ada" / key.notebook), str(tmp_path / "ben" / key.notebook)], key)
    assert [(s.name, s.source.folder) for s in found] == [("ada/backward-vs-grad.ipynb", "ada"),
                                                         ("ben/backward-vs-grad.ipynb", "ben")]


def _copies(tmp_path, plan):
    """A submissions folder: {new name: example student}, each the example's work with its STUDENT_ID set
    to the new name (a file named for one student and declaring another is not gradable)."""
    import nbformat

    subs = tmp_path / "subs"
    subs.mkdir()
    for name, student in plan.items():
        nb = nbformat.read(EXAMPLES / f"{student}.ipynb", as_version=4)
        for cell in nb.cells:
            if cell.metadata.get("nbgrader", {}).get("grade_id") == "student-id":
                cell.source = f'STUDENT_ID = "{name}"'
        nbformat.write(nb, subs / f"{name}.ipynb")
    return subs


def _rows(out):
    import csv

    return list(csv.DictReader((out / "gradebook.csv").open()))


def test_a_batch_killed_with_sigkill_resumes_without_losing_or_duplicating_anything(released, tmp_path):
    """SIGKILL the grader (and so its sandbox worker) in the middle of a batch; the rerun grades only
    what is missing, every report is whole, and the gradebook has each submission exactly once,
    with the scores a clean run gives."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from autograder.report import read_report

    _, key_path = released
    # hana's notebook spends its 5 s call limit in a loop: the batch is still running when it is killed
    plan = {"a1": "ada", "b1": "ben", "h1": "hana", "c1": "cleo", "h2": "hana", "d1": "dev", "e1": "eve", "g1": "gus"}
    subs = _copies(tmp_path, plan)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(out), "--key", str(key_path),
           "--jobs", "1"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list((out / "reports").glob("*.json"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    first = sorted(p.name for p in (out / "reports").glob("*.json"))
    assert 2 <= len(first) < len(plan), first
    for p in first:
        read_report(out / "reports" / p)   # whole JSON: written atomically
    assert not (out / "gradebook.csv").exists()

    again = run_cli(*cmd[3:])
    assert again.returncode == 0, again.stderr
    assert f"({len(first)} unchanged since the last run, kept" in again.stdout
    assert sorted(p.name for p in (out / "reports").iterdir()) == sorted(f"{n}.json" for n in plan)
    rows = _rows(out)
    assert sorted(r["submission"] for r in rows) == sorted(f"{n}.ipynb" for n in plan)

    clean = tmp_path / "clean"
    assert run_cli(*cmd[3:5], "--out", str(clean), *cmd[7:]).returncode == 0
    assert {r["submission"]: r["score"] for r in rows} == {r["submission"]: r["score"] for r in _rows(clean)}


def test_an_unchanged_submission_is_not_graded_again_unless_forced_and_a_changed_one_is(released, tmp_path):
    from autograder.report import read_report

    _, key_path = released
    subs = _copies(tmp_path, {"ada": "ada", "ben": "ben"})
    out = tmp_path / "out"
    args = ("grade", str(subs), "--out", str(out), "--key", str(key_path))
    assert run_cli(*args).returncode == 0
    before = read_report(out / "reports" / "ada.json")
    p = run_cli(*args)
    assert "(2 unchanged since the last run, kept" in p.stdout
    assert read_report(out / "reports" / "ada.json") == before
    shutil.copy(EXAMPLES / "cleo.ipynb", subs / "ben.ipynb")   # ben hands in again
    p = run_cli(*args)
    assert "(1 unchanged since the last run, kept" in p.stdout
    forced = run_cli(*args, "--force")
    assert "unchanged since the last run" not in forced.stdout
    after = read_report(out / "reports" / "ada.json")
    assert after.seconds != before.seconds or after.fingerprint == before.fingerprint
    assert [(o.check_id, o.status, o.score) for o in after.outcomes] == \
        [(o.check_id, o.status, o.score) for o in before.outcomes]   # grading twice: the same scores


def test_a_notebook_of_another_assignment_is_not_gradable_never_a_silent_zero(key, worker):
    from autograder.grading.grade import grade_notebook

    other = EXAMPLES.parent / "02-accumulation" / "ada.ipynb"
    r = grade_notebook(other, key, "ada", worker=worker)
    assert r.status == "not_gradable" and r.score is None
    assert "is assignment '02-accumulation', not '01-backward-vs-grad'" in r.reason


def test_ids_from_the_notebook_for_files_a_platform_renamed(released, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(EXAMPLES / "ada.ipynb", subs / "ada_12345_backward-vs-grad (1).ipynb")
    p = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--ids", "notebook",
                "--json")
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)[0]
    assert report["student"] == "ada" and report["score"] == 26


STOPPER = '''import os, signal, time
def spin():
    import ctypes
    ctypes.CDLL(None).prctl(15, b"agl-stopper", 0, 0, 0)   # PR_SET_NAME: the test looks for this name
    os.setsid()   # out of the run's session
    end, me = time.time() + 60, os.getpid()
    while time.time() < end:
        last = int(open("/proc/sys/kernel/ns_last_pid").read())
        for p in range(max(2, last - 3), last + 5):   # stop whatever is started next
            if p != me:
                try:
                    os.kill(p, signal.SIGSTOP)
                except OSError:
                    pass
for _ in range(3):
    if os.fork() == 0:
        try:
            spin()
        finally:
            os._exit(0)
'''


def test_a_run_that_stops_new_processes_cannot_hang_the_batch_or_outlive_it(released, tmp_path):
    """Children that leave the run's session and SIGSTOP every new pid (they once stopped the worker's
    clean-up helper, which hung the worker): the other submissions are graded, the batch ends, and
    nothing of the run is left running."""
    import subprocess

    import nbformat

    _, key_path = released
    subs = _copies(tmp_path, {"ben": "ben", "cleo": "cleo"})
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(STOPPER))
    nb.cells[1].source = 'STUDENT_ID = "mallory"'
    nbformat.write(nb, subs / "mallory.ipynb")
    p = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path), "--jobs", "2",
                "--limit", "submission_timeout=10", "--json", timeout=300)
    assert p.returncode == 0, p.stderr
    got = {r["student"]: r for r in json.loads(p.stdout)}
    assert got["ben"]["score"] == 20 and got["cleo"]["score"] == 24
    assert got["mallory"]["status"] == "graded"
    # Only this run's processes: other graders on the machine may have runs of their own at this moment.
    ps = subprocess.run(["ps", "-eo", "comm="], capture_output=True, text=True).stdout.split()
    assert "agl-stopper" not in ps, "a process of a run outlived its batch"


def test_file_names_that_are_not_utf8_or_are_very_long_are_graded_like_any_other(released, tmp_path):
    _, key_path = released
    subs = tmp_path / "subs"
    subs.mkdir()
    odd = os.fsdecode(b"ada\xff")                      # not UTF-8: a name a zip archive may hold
    long = "a" * 240                                   # 246 bytes with .ipynb: no room for a temp name beside
    for name in (odd, long):
        shutil.copy(EXAMPLES / "ada.ipynb", subs / f"{name}.ipynb")
    p = subprocess.run([sys.executable, "-m", "autograder", "grade", str(subs), "--out", str(tmp_path / "out"),
                        "--key", str(key_path)], cwd=ROOT, capture_output=True, text=True, errors="replace")
    assert p.returncode == 0, p.stderr
    assert "2 submissions in" in p.stdout
    long_report = tmp_path / "out" / "reports" / report_file(f"{long}.ipynb")
    assert long_report.name.startswith("a" * 120 + "-") and len(long_report.name) == 120 + 1 + 12 + 5
    assert json.loads(long_report.read_text())["status"] == "not_gradable"   # STUDENT_ID 'ada' vs the file name
    assert len(list((tmp_path / "out" / "reports").glob("*.json"))) == 2


def test_a_forged_commit_record_with_a_bare_nan_costs_nothing_but_its_trust(released, tmp_path):
    """Python's JSON reads a bare NaN, which no report could hold: such a record is no record (the notebook is
    graded as its cells stand), and the batch writes every report and its gradebook."""
    from autograder.judging import commit

    nb = json.loads((EXAMPLES / "ada.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "ex1-check")
    record = commit.make("01-backward-vs-grad", "ada", "1", {"p1_returns": {"t": "none"},
                                                            "p1_grad": {"t": "float", "v": float("nan")}}, ["x"])
    cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {commit.COMMIT_MIME: record}}]
    subs = tmp_path / "subs"
    subs.mkdir()
    (subs / "ada.ipynb").write_text(json.dumps(nb))   # NaN written bare, as json.dumps does by default
    shutil.copy(EXAMPLES / "ben.ipynb", subs)
    out = tmp_path / "out"
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(released[1]), "--stats")
    assert p.returncode == 0, p.stderr
    report = json.loads((out / "reports" / "ada.json").read_text())
    assert report["status"] == "graded" and "1" not in report["commits"]
    assert (out / "gradebook.csv").exists() and (out / "stats.html").exists()
