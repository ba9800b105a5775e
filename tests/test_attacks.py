"""A submission is data (the issue of that name; inputs in tests/cases/attack-2026-12/): nothing handed in can read
the grading host, speak for another student, hang or exhaust the batch, or collect the graded fresh points. Each
case is graded the way staff grade (`autograder grade`, a real subprocess) and has its own expected outcome."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import socket
import time
from pathlib import Path

import pytest

from autograder.grading import plan

from conftest import EXAMPLES, ROOT, edited_notebook, run_cli

CASES = ROOT / "tests" / "cases" / "attack-2026-12"
SECRET = "hunter2-SECRET-TOKEN"


def _grade(folder: Path, out: Path, key_path: Path, *extra: str, **env: str) -> dict[str, dict]:
    p = run_cli("grade", str(folder), "--out", str(out), "--key", str(key_path), *extra, timeout=900, env=env or None)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-3000:]
    with (out / "gradebook.csv").open(encoding="utf-8") as f:
        return {row["submission"]: row for row in csv.DictReader(f)}


def _everything_written(out: Path) -> str:
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file())


@pytest.fixture
def hostile_folder(tmp_path):
    """The README's layout (submissions/ beside solutions/), with what a zip or a git checkout can carry."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "solutions" / "01-backward-vs-grad", project / "solutions" / "01-backward-vs-grad")
    subs = project / "submissions"
    subs.mkdir()
    shutil.copy(CASES / "alice.ipynb", subs / "alice.ipynb")
    shutil.copy(EXAMPLES / "ben.ipynb", subs / "ben.ipynb")
    os.symlink("../solutions/01-backward-vs-grad/backward-vs-grad.ipynb", subs / "mallory.ipynb")
    os.symlink("/etc/passwd", subs / "eve.ipynb")
    os.symlink("/proc/self/environ", subs / "env.ipynb")
    os.symlink("/dev/zero", subs / "zero.ipynb")
    os.symlink("alice.ipynb", subs / "carl.ipynb")               # a link to a classmate's file
    os.mkfifo(subs / "fifo.ipynb")                               # read, it would hang the batch
    with socket.socket(socket.AF_UNIX) as s:
        s.bind(str(subs / "sock.ipynb"))
    (subs / "dora").mkdir()
    os.symlink("../../solutions/01-backward-vs-grad", subs / "dora" / "01-backward-vs-grad")   # a linked folder
    return subs


def test_links_and_special_files_are_refused_without_being_read_and_everything_else_is_graded(
        released, hostile_folder, tmp_path):
    out = tmp_path / "out"
    rows = _grade(hostile_folder, out, released[1], "--feedback", SECRET_TOKEN=SECRET)
    assert {n: (r["status"], r["score"]) for n, r in rows.items()} == {
        "alice.ipynb": ("graded", "26"), "ben.ipynb": ("graded", "20"),
        "carl.ipynb": ("not_gradable", ""), "dora/01-backward-vs-grad": ("not_gradable", ""),
        "env.ipynb": ("not_gradable", ""), "eve.ipynb": ("not_gradable", ""), "fifo.ipynb": ("not_gradable", ""),
        "mallory.ipynb": ("not_gradable", ""), "sock.ipynb": ("not_gradable", ""), "zero.ipynb": ("not_gradable", "")}
    reasons = {n: json.loads((out / "reports" / (n.replace("/", "__").removesuffix(".ipynb") + ".json")).read_text())
               ["reason"] for n in rows}
    assert reasons["mallory.ipynb"] == ("mallory.ipynb is a symbolic link, not a file: the grader does not follow "
                                        "links; hand in the notebook itself")
    assert reasons["fifo.ipynb"] == "fifo.ipynb is a FIFO (named pipe), not a notebook file"
    assert reasons["dora/01-backward-vs-grad"].startswith("01-backward-vs-grad is a symbolic link to a folder")
    written = _everything_written(out)
    assert SECRET not in written and "root:x:0:0" not in written   # nothing of a target reaches a report or page
    assert rows["alice.ipynb"]["counts"] == "yes"                   # the linked copy does not take alice's place


def test_the_same_attacks_on_a_dask_cluster_give_the_same_outcomes(released, hostile_folder, tmp_path):
    local = _grade(hostile_folder, tmp_path / "local", released[1])
    dask = _grade(hostile_folder, tmp_path / "dask", released[1], "--scheduler", "local:2", SECRET_TOKEN=SECRET)
    assert {n: (r["status"], r["score"]) for n, r in dask.items()} == \
        {n: (r["status"], r["score"]) for n, r in local.items()}
    assert SECRET not in _everything_written(tmp_path / "dask")


def test_a_crafted_notebook_is_refused_before_it_costs_the_grader_memory(released, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    nb = json.loads((CASES / "alice.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "display_data", "metadata": {}, "data": {"application/json": "@@"}}]
    text = json.dumps(nb)
    for name, n in (("mallory", 3_300_000), ("max", 13_000_000)):   # 9.9 MB and 39 MB of "{}," (the attack's sizes)
        (subs / f"{name}.ipynb").write_text(text.replace('"@@"', "[" + ",".join(["{}"] * n) + "]"))
    shutil.copy(CASES / "alice.ipynb", subs / "alice.ipynb")
    rows = _grade(subs, tmp_path / "out", released[1])
    assert rows["alice.ipynb"]["score"] == "26"
    mallory = json.loads((tmp_path / "out" / "reports" / "mallory.json").read_text())["reason"]
    assert mallory.startswith("mallory.ipynb holds more than 500,000 JSON objects and lists")
    big = json.loads((tmp_path / "out" / "reports" / "max.json").read_text())["reason"]
    assert big.startswith("max.ipynb holds more than 500,000 JSON objects and lists")
    (subs / "huge.ipynb").write_bytes(b" " * (65 * 2**20))   # over the size limit: refused by its size, unread
    _grade(subs, tmp_path / "out2", released[1])
    assert json.loads((tmp_path / "out2" / "reports" / "huge.json").read_text())["reason"].startswith(
        "huge.ipynb is 65.0 MiB, more than the 64 MiB a notebook may have")


def test_a_file_name_cannot_take_a_classmates_grade(released, tmp_path):
    """shared/cases/attack-2026-12/filename-impersonation: mallory/bob.ipynb, handed in later."""
    subs = tmp_path / "submissions"
    shutil.copytree(CASES / "filename-impersonation", subs)
    old = time.time() - 3600
    os.utime(subs / "bob" / "backward-vs-grad.ipynb", (old, old))
    rows = _grade(subs, tmp_path / "out", released[1])
    # the case's bob.ipynb is blank (the release with STUDENT_ID = "bob") beside mallory's work: not work, left out
    assert sorted(rows) == ["bob/backward-vs-grad.ipynb", "mallory/backward-vs-grad.ipynb"]
    # a worked one is not gradable: its name says bob, its folder mallory
    shutil.copy(subs / "bob" / "backward-vs-grad.ipynb", subs / "mallory" / "bob.ipynb")
    rows = _grade(subs, tmp_path / "out", released[1])
    assert (rows["bob/backward-vs-grad.ipynb"]["student"], rows["bob/backward-vs-grad.ipynb"]["score"],
            rows["bob/backward-vs-grad.ipynb"]["counts"]) == ("bob", "26", "yes")
    assert rows["mallory/bob.ipynb"]["status"] == "not_gradable"
    report = json.loads((tmp_path / "out" / "reports" / "mallory__bob.json").read_text())
    assert report["reason"].startswith("whose submission is this? It is in the folder of 'mallory' but its file name "
                                       "says 'bob'")
    grades = list(csv.DictReader(io.StringIO((tmp_path / "out" / "grades.csv").read_text())))
    assert {g["student_id"]: g["score"] for g in grades} == {"bob": "26.0", "mallory": "26.0"}


def test_no_time_a_submission_carries_decides_which_counts_and_staff_choose_in_the_gradebook(released, tmp_path):
    subs = tmp_path / "subs"
    (subs / "mia").mkdir(parents=True)
    shutil.copy(EXAMPLES / "ben.ipynb", subs / "mia" / "backward-vs-grad.ipynb")
    shutil.copy(EXAMPLES / "ben.ipynb", subs / "mia" / "backward-vs-grad (1).ipynb")
    for p in (subs / "mia" / "backward-vs-grad.ipynb", subs / "mia" / "backward-vs-grad (1).ipynb"):
        text = p.read_text().replace('STUDENT_ID = \\"ben\\"', 'STUDENT_ID = \\"mia\\"')
        p.write_text(text + ("\n" if "(1)" in p.name else ""))   # saved again: not the same file (that counts once)
    future = time.time() + 10 * 365 * 86400   # a zip can carry any time
    os.utime(subs / "mia" / "backward-vs-grad (1).ipynb", (future, future))
    out = tmp_path / "out"
    rows = _grade(subs, out, released[1])
    assert [rows[n]["counts"] for n in sorted(rows)] == [
        "choose: 2 submissions of mia; write yes in the one that counts, then grade again"] * 2
    grades = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    assert [(g["student_id"], g["score"]) for g in grades] == [("mia", "")]   # no score until staff choose
    text = (out / "gradebook.csv").read_text()
    lines = text.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("mia/backward-vs-grad.ipynb,"))
    lines[i] = lines[i].replace("choose: 2 submissions of mia; write yes in the one that counts, then grade again", "yes")
    (out / "gradebook.csv").write_text("\n".join(lines) + "\n")
    rows = _grade(subs, out, released[1])
    assert rows["mia/backward-vs-grad.ipynb"]["counts"] == "yes"
    assert rows["mia/backward-vs-grad (1).ipynb"]["counts"] == "no (mia/backward-vs-grad.ipynb counts)"
    assert "mia,mia/backward-vs-grad.ipynb" in (out / "choices.csv").read_text()
    rows = _grade(subs, out, released[1], "--force")   # the choice stays, also when everything is graded again
    assert rows["mia/backward-vs-grad.ipynb"]["counts"] == "yes"


def test_a_graded_report_shows_no_fresh_point_and_each_submission_has_its_own(key, worker):
    """Feedback handed back cannot be collected into a table of fresh points and their answers."""
    from autograder.grading.grade import grade_notebook

    eve = (EXAMPLES / "eve.ipynb").read_bytes()   # hard-coded numbers: right at her own point only
    first = grade_notebook("eve.ipynb", key, "eve", data=eve, worker=worker)
    again = grade_notebook("eve.ipynb", key, "eve", data=eve.replace(b'"cells"', b'"cells" ', 1), worker=worker)
    o = next(o for o in first.outcomes if o.check_id == "1.produce.grad")
    assert o.status == "failed" and o.expected is None and o.observed is None and o.oracle is None
    assert o.message.startswith("x.grad after ex1(x) at fresh point 1: not the expected value — it is right at your "
                                "own point but not at fresh point 1")
    assert "fresh points are not shown, and they change with every submission" in o.message
    own = f"x={first.parameters['x0']}"
    text = json.dumps(first.to_dict())
    assert set(re.findall(r"x=-?[0-9.]+", text)) <= {own}   # no other point's coordinates anywhere
    assert first.score == again.score
    salts = plan.submission_salt(eve), plan.submission_salt(eve.replace(b'"cells"', b'"cells" ', 1))
    assert plan.points_for(key, "eve", salts[0])[1:] != plan.points_for(key, "eve", salts[1])[1:]


def test_names_are_data_any_bytes_any_control_character(released, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    odd = os.fsdecode(b"ben\x1b[31mred\xff")
    text = (EXAMPLES / "ben.ipynb").read_text().replace('STUDENT_ID = \\"ben\\"', 'STUDENT_ID = \\"your-student-id\\"')
    (subs / f"{odd}.ipynb").write_text(text)
    (subs / os.fsdecode(b"\xe9t\xe9")).mkdir()
    (subs / os.fsdecode(b"\xe9t\xe9") / "backward-vs-grad.ipynb").write_text(text)
    p = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(released[1]), timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "\x1b" not in p.stdout + p.stderr and "\\x1b[31mred" in p.stderr
    reports = [json.loads(r.read_text()) for r in (tmp_path / "out" / "reports").glob("*.json")]
    assert [r["status"] for r in reports] == ["graded", "graded"]   # before: "not graded: internal grader error"
    # a report is UTF-8 JSON: a byte that is not UTF-8 is kept as its escape
    assert sorted(r["student"] for r in reports) == ["\\udce9t\\udce9", "ben\x1b[31mred\\udcff"]


def test_what_a_notebook_says_its_assignment_is_never_names_a_path_or_outvotes_the_course(released, tmp_path):
    """A notebook's Lab("<id>") only picks among the keys staff released (build/<id>/key.json): Lab("../subs/mallory")
    would have graded with a key of mallory's own making, and notebooks naming two assignments stop the batch."""
    project = tmp_path / "project"
    (project / "build" / "01-backward-vs-grad").mkdir(parents=True)
    shutil.copy(released[1], project / "build" / "01-backward-vs-grad" / "key.json")
    subs = project / "subs"
    (subs / "mallory").mkdir(parents=True)
    shutil.copy(released[1], subs / "mallory" / "key.json")   # her own "key", if the grader could be led to it
    (subs / "mallory" / "backward-vs-grad.ipynb").write_text(
        edited_notebook(EXAMPLES / "ben.ipynb", {'Lab("01-backward-vs-grad", STUDENT_ID)': 'Lab("../subs/mallory", STUDENT_ID)'}))
    p = run_cli("grade", "subs/mallory", "--out", "out", cwd=project)
    assert p.returncode == 2 and "cannot tell which assignment these are" in p.stderr, p.stderr
    shutil.copy(CASES / "alice.ipynb", subs / "alice.ipynb")
    p = run_cli("grade", "subs", "--out", "out", cwd=project, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    assert json.loads((project / "out" / "reports" / "alice.json").read_text())["score"] == 26
    (project / "build" / "02-accumulation").mkdir()
    shutil.copy(released[1], project / "build" / "02-accumulation" / "key.json")
    (subs / "zed.ipynb").write_text(
        edited_notebook(EXAMPLES / "ben.ipynb", {'Lab("01-backward-vs-grad", STUDENT_ID)': 'Lab("02-accumulation", STUDENT_ID)'}))
    p = run_cli("grade", "subs", "--out", "out2", cwd=project)
    assert p.returncode == 2 and ("the notebooks name several released assignments: 01-backward-vs-grad (1 "
                                  "notebooks), 02-accumulation (1 notebooks); pass --assignment ID") in p.stderr


def test_bulk_a_tree_too_deep_and_a_classmates_folder_inside_ones_own_are_rows_of_the_gradebook(released, tmp_path,
                                                                                               deep_folders):
    subs = tmp_path / "subs"
    (subs / "ada").mkdir(parents=True)
    shutil.copy(EXAMPLES / "ada.ipynb", subs / "ada" / "backward-vs-grad.ipynb")
    (subs / "mallory" / "ada").mkdir(parents=True)   # mallory's folder, holding a copy that says it is ada's
    (subs / "mallory" / "ada" / "backward-vs-grad.ipynb").write_text(
        edited_notebook(EXAMPLES / "ben.ipynb", {'STUDENT_ID = "ben"': 'STUDENT_ID = "ada"'}))
    deep = deep_folders(subs / "zoe", 1100)   # 1,100 folders: a recursive walk would have crashed the batch
    shutil.copy(EXAMPLES / "ben.ipynb", deep / "ben.ipynb")
    (subs / "max.ipynb").write_text(   # 400,000 characters of code: more than the grader parses on the host
        edited_notebook(EXAMPLES / "ben.ipynb", {'STUDENT_ID = "ben"': 'STUDENT_ID = "max"\n' + "x = 1\n" * 66_667}))
    out = tmp_path / "out"
    rows = _grade(subs, out, released[1])
    assert (rows["ada/backward-vs-grad.ipynb"]["student"], rows["ada/backward-vs-grad.ipynb"]["score"],
            rows["ada/backward-vs-grad.ipynb"]["counts"]) == ("ada", "26", "yes")
    theirs = rows["mallory/ada/backward-vs-grad.ipynb"]
    assert theirs["student"] == "mallory" and theirs["status"] == "not_gradable"   # never ada's grade
    too_deep = "zoe/" + "/".join(["d"] * (16))
    assert rows[too_deep]["status"] == "not_gradable"
    assert rows["max.ipynb"]["status"] == "not_gradable"
    reason = json.loads((out / "reports" / "max.json").read_text())["reason"]
    assert reason.startswith("max.ipynb holds 40") and "characters of code, more than the 300,000" in reason
    grades = {g["student_id"]: g["score"] for g in csv.DictReader(io.StringIO((out / "grades.csv").read_text()))}
    assert grades["ada"] == "26.0"


def test_what_a_function_raises_or_prints_at_a_fresh_point_does_not_reach_a_graded_report(key, worker):
    """A function that raises with its input in the message (or prints it) at every point but the student's own
    would have put the fresh points into the feedback."""
    from autograder.grading.grade import grade_notebook

    spy = ("def ex1(x):\n    print('seen', repr(x))\n    if abs(x.item() - P.x0) > 1e-6:\n"
           "        raise ValueError(f'x={x.item()!r}')\n    return (x * x).backward()")
    data = edited_notebook(EXAMPLES / "ada.ipynb", {"def ex1(x):\n    return (x * x).backward()": spy}).encode()
    r = grade_notebook("ada.ipynb", key, "ada", data=data, worker=worker)
    o = next(o for o in r.outcomes if o.check_id == "1.produce.returns")
    assert o.status == "error" and o.message.startswith("ex1(x) raised ValueError at fresh point 1 (a graded run's "
                                                        "fresh points are not shown")
    text = json.dumps(r.to_dict())
    assert set(re.findall(r"x=-?[0-9.]+", text)) <= {f"x={r.parameters['x0']}"} and "seen tensor" not in text


def test_reading_the_code_on_the_host_has_a_bound_and_feedback_pages_never_overwrite_each_other(released, tmp_path):
    """shared: attack, second pass. A cell of 400 names bound to 20,000 constants, which every prediction then
    uses: tracing them name by name (judging.worked) took 7 minutes of the grader's own time, outside the sandbox's
    limits. And "kim.json.ipynb" and "kim.html.ipynb" were written to one feedback page."""
    import nbformat

    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    names = [f"a{i}" for i in range(400)]
    nb.cells.insert(3, nbformat.v4.new_code_cell(" = ".join(names) + " = (" + "0," * 20_000 + ")"))
    cell = next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex1-predict")
    cell.source += f"\np1_grad = p1_grad + 0 * len([{', '.join(names)}])"
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(nb, subs / "ada.ipynb")   # her own work, with the cell added
    text = (EXAMPLES / "ben.ipynb").read_text().replace('STUDENT_ID = \\"ben\\"', 'STUDENT_ID = \\"your-student-id\\"')
    for name in ("kim.json", "kim.html"):
        (subs / f"{name}.ipynb").write_text(text)
    out = tmp_path / "out"
    rows = _grade(subs, out, released[1], "--feedback")
    report = json.loads((out / "reports" / "ada.json").read_text())
    o = next(o for o in report["outcomes"] if o["check_id"] == "1.predict.grad")
    assert o["status"] == "passed"   # plain constants: worked out, and now read once each (statements' names cached)
    assert report["seconds"] < 60, report["seconds"]   # before: 434 s (a busy machine may take a few)
    assert {n: r["status"] for n, r in rows.items()} == {"kim.html.ipynb": "graded", "kim.json.ipynb": "graded",
                                                         "ada.ipynb": "graded"}
    pages = sorted(p.name for p in (out / "feedback").iterdir())
    assert pages == ["ada.html", "kim.html.html", "kim.json.html"]
    assert "student kim.json" in (out / "feedback" / "kim.json.html").read_text()


def test_staff_choose_in_a_choices_file_without_a_header_and_the_terminal_says_a_choice_is_waiting(released, tmp_path):
    """A staff trial: "a line student,submission" into out/choices.csv was dropped unless the file began with
    that header, a choice naming no submission chose nothing without a word, and nothing in the terminal said
    that a student's submissions awaited a choice."""
    subs = tmp_path / "subs"
    (subs / "mia").mkdir(parents=True)
    text = (EXAMPLES / "ben.ipynb").read_text().replace('STUDENT_ID = \\"ben\\"', 'STUDENT_ID = \\"mia\\"')
    for name in ("backward-vs-grad.ipynb", "backward-vs-grad (1).ipynb"):
        (subs / "mia" / name).write_text(text + ("\n" if "(1)" in name else ""))   # two files, not one twice
    out = tmp_path / "out"
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(released[1]), timeout=900)
    assert p.returncode == 0 and "choose: 1 student(s) handed in more than one graded submission and none counts " \
                                 "yet (mia)" in p.stdout, p.stdout
    (out / "choices.csv").write_text("\ufeffmia,mia/backward-vs-grad (1).ipynb\nzed,zed.ipynb\n", encoding="utf-8")
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(released[1]), timeout=900)
    assert "choose:" not in p.stdout and "names no graded submission for zed -> zed.ipynb" in p.stdout, p.stdout
    with (out / "gradebook.csv").open(encoding="utf-8") as f:
        rows = {row["submission"]: row["counts"] for row in csv.DictReader(f)}
    assert rows == {"mia/backward-vs-grad (1).ipynb": "yes",
                    "mia/backward-vs-grad.ipynb": "no (mia/backward-vs-grad (1).ipynb counts)"}
