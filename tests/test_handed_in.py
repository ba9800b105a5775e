"""What courses really hand in, round three (issue 45): public reports of other autograders' users, each as an input of
our own, with the outcome it should have."""
from __future__ import annotations

import json
from pathlib import Path

import nbformat

from conftest import EXAMPLES, run_cli


def grade(*args, key_path) -> list[dict]:
    p = run_cli("grade", *map(str, args), "--key", str(key_path), "--json")
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_matplotlib_inline_at_the_top_of_a_produce_cell_runs_as_in_jupyter(released, tmp_path):
    """`%matplotlib inline` (and `widget`, `qt`), pasted from tutorials at the top of a PRODUCE cell, with a figure
    drawn: before, the grader's shell raised "Implement enable_gui in a subclass" and the exercise's checks were
    errors, where Jupyter runs the cell. Now the grader takes matplotlib's Agg backend and grades the cell."""
    _, key_path = released
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    magics = iter(("inline", "widget", "qt", "inline", "", "inline"))
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.source.startswith("def ex"):
            cell.source = (f"%matplotlib {next(magics)}\nimport matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4])\n"
                           f"plt.show()\n" + cell.source)
    assert next(magics, None) is None
    nbformat.write(nb, tmp_path / "ada.ipynb")
    [r] = grade(tmp_path / "ada.ipynb", "--out", tmp_path / "out", key_path=key_path)
    assert (r["status"], r["score"]) == ("graded", 26), [(o["check_id"], o["status"], o.get("message"))
                                                         for o in r["outcomes"] if o["status"] != "passed"]


def test_a_notebook_a_browser_saved_as_ipynb_json_is_graded_as_the_notebook_it_is(released, tmp_path):
    """otter-grader #617: Chrome saves an opened .ipynb as "….ipynb.json" (Windows hides the last extension). Before,
    a batch skipped it without a word and Gradescope said "no .ipynb file in the upload" naming nothing. Now it is
    graded, with a note that names the file; a batch lists the files it does not grade; an upload without a notebook
    names what it holds."""
    import shutil

    from autograder.integrations.gradescope import run

    _, key_path = released
    batch = tmp_path / "batch"
    for student, name in (("jade", "backward-vs-grad.ipynb.json"), ("ada", "backward-vs-grad.ipynb.txt")):
        (batch / student).mkdir(parents=True)
        shutil.copy(EXAMPLES / f"{student}.ipynb", batch / student / name)
    (batch / "ben").mkdir()
    (batch / "ben" / "backward-vs-grad.pdf").write_bytes(b"%PDF-1.4\n")
    p = run_cli("grade", str(batch), "--out", str(tmp_path / "out"), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    assert "not graded, not notebooks (1 file(s)): ben/backward-vs-grad.pdf" in p.stderr, p.stderr
    reports = {r["student"]: r for r in (json.loads(f.read_text()) for f in (tmp_path / "out" / "reports").glob("*.json"))}
    assert {s: (r["status"], r["score"]) for s, r in reports.items()} == {"jade": ("graded", 26), "ada": ("graded", 26)}
    assert ("backward-vs-grad.ipynb.json was saved with an extra .json (by the browser); it was graded as the notebook "
            "it is: next time rename it to backward-vs-grad.ipynb") in reports["jade"]["notes"]

    root = tmp_path / "gs"
    (root / "submission").mkdir(parents=True)
    shutil.copy(EXAMPLES / "jade.ipynb", root / "submission" / "backward-vs-grad.ipynb.json")
    assert run(root, key_path) == 0
    res = json.loads((root / "results" / "results.json").read_text())
    assert (res["score"], res["extra_data"]["autograd_lab"]["submission"]) == (26, "backward-vs-grad.ipynb.json")

    empty = tmp_path / "gs2"
    (empty / "submission").mkdir(parents=True)
    (empty / "submission" / "backward-vs-grad.pdf").write_bytes(b"%PDF-1.4\n")
    assert run(empty, key_path) == 0
    res = json.loads((empty / "results" / "results.json").read_text())
    assert res["score"] == 0 and "no .ipynb file in the upload that the grader can read (it holds " \
        "backward-vs-grad.pdf); upload your notebook (backward-vs-grad.ipynb)" in res["output"], res["output"]


def test_on_a_latin_1_machine_a_utf_8_name_is_its_student_and_the_summary_is_printed(released, tmp_path):
    """nbgrader #1297: on a machine whose locale is ISO-8859-1, the folder `zoë` (UTF-8 bytes, as every course's are)
    was read as `zoÃ«` (not gradable: its STUDENT_ID says zoë) and the batch ended in a UnicodeEncodeError traceback
    (exit 1) printing its summary. Now the grader reads names as UTF-8 and writes the terminal's encoding, escaping
    what it cannot show. (The locale is made here with glibc's localedef.)"""
    import os
    import shutil
    import subprocess
    import sys

    _, key_path = released
    locales = tmp_path / "locales"
    locales.mkdir()
    subprocess.run(["localedef", "-i", "de_DE", "-f", "ISO-8859-1", str(locales / "de_DE.ISO-8859-1")], check=True)
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    [sid] = [c for c in nb.cells if c.source.startswith("STUDENT_ID")]
    sid.source = 'STUDENT_ID = "zoë"'
    (tmp_path / "subs" / "zoë").mkdir(parents=True)
    nbformat.write(nb, tmp_path / "subs" / "zoë" / "backward-vs-grad.ipynb")
    env = {**os.environ, "LOCPATH": str(locales), "LC_ALL": "de_DE.ISO-8859-1"}
    env.pop("PYTHONUTF8", None)
    probe = subprocess.run([sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"], env=env,
                           capture_output=True, text=True)
    assert probe.stdout.strip() == "iso8859-1"   # the machine the report describes
    p = subprocess.run([shutil.which("autograder") or str(Path(sys.executable).with_name("autograder")), "grade",
                        str(tmp_path / "subs"), "--out", str(tmp_path / "out"), "--key", str(key_path), "--jobs", "1"],
                       env=env, capture_output=True)
    assert p.returncode == 0, p.stderr.decode("latin-1")[-2000:]
    out = p.stdout.decode("latin-1")   # the terminal's encoding
    assert "zoë/backward-vs-grad.ipynb zoë     graded" in out, out
    [report] = (tmp_path / "out" / "reports").glob("*.json")
    assert json.loads(report.read_text())["student"] == "zoë"


def test_a_misconception_is_named_only_where_it_explains_the_students_own_point(released, tmp_path):
    """data-x #25: a value right at the student's own point but wrong at a fresh one was reported with a misconception
    that merely gave the same number there. ex1 here is right at the own point (P.x0) and writes x*x into x.grad
    elsewhere, which is the value of the misconception "grad-holds-the-output" at those points: that does not explain
    the student's work at their own point, so the report names none, and says a number may be hard-coded."""
    _, key_path = released
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    [ex1] = [c for c in nb.cells if c.source.startswith("def ex1(x):")]
    ex1.source = ("def ex1(x):\n    out = (x * x).backward()\n    if abs(float(x) - P.x0) > 1e-4:\n"
                  "        x.grad = (x * x).detach()\n    return out")
    nbformat.write(nb, tmp_path / "ada.ipynb")
    [r] = grade(tmp_path / "ada.ipynb", "--out", tmp_path / "out", key_path=key_path)
    [o] = [o for o in r["outcomes"] if o["check_id"] == "1.produce.grad"]
    assert o["status"] == "failed" and "it is right at your own point but not at" in o["message"], o
    assert o["misconception"] is None, o["misconception"]
    assert r["score"] == 25


def test_a_notebook_saved_as_utf_16_says_so(released, tmp_path):
    """A notebook saved by Windows Notepad as "Unicode" (UTF-16 with a byte-order mark): Jupyter cannot open it
    either, so it is not gradable, and the reason says what happened and what to do (before: "is not UTF-8 text
    (byte 0)"). A UTF-8 byte-order mark is read as UTF-8."""
    _, key_path = released
    (tmp_path / "subs" / "jade").mkdir(parents=True)
    (tmp_path / "subs" / "jade" / "backward-vs-grad.ipynb").write_bytes((EXAMPLES / "jade.ipynb").read_text().encode("utf-16"))
    (tmp_path / "subs" / "ada").mkdir()
    (tmp_path / "subs" / "ada" / "backward-vs-grad.ipynb").write_bytes(b"\xef\xbb\xbf" + (EXAMPLES / "ada.ipynb").read_bytes())
    reports = {r["student"]: r for r in grade(tmp_path / "subs", "--out", tmp_path / "out",
                                              key_path=key_path)}
    assert (reports["ada"]["status"], reports["ada"]["score"]) == ("graded", 26)
    assert reports["jade"]["status"] == "not_gradable" and reports["jade"]["reason"] == (
        'backward-vs-grad.ipynb is UTF-16 text (an editor saved it as "Unicode"); a notebook is UTF-8: open it in '
        "Jupyter, or save it again as UTF-8, and hand it in again")


def test_a_mac_zip_an_id_in_capitals_a_file_handed_in_twice_and_a_copied_check_cell_are_graded(released, tmp_path):
    """Four public reports, in one batch and one Gradescope upload:
    - codabench #1655: macOS's Finder puts __MACOSX/._<name>.ipynb (binary AppleDouble files) into the zips it makes.
      Before, a batch graded them as a student "__MACOSX" (not gradable) and Gradescope refused the upload ("2
      notebooks ... cannot tell which one"). Now they are not notebooks and are skipped.
    - nbgrader #1534: an id in other capitals ("Jade" in the notebook, jade's folder; SID "ADA" on Gradescope, "ada" in
      the notebook) is one student, with one set of parameters. Before: not gradable.
    - django_autograder #53: the same file twice (ben.ipynb and "ben (1).ipynb", the same bytes) counts once, the file
      and not its copy; before, none counted until staff chose. On Gradescope, one is graded and the other named.
    - nbgrader #108: a copied lab.check cell is judged once and the report says so."""
    import shutil

    from autograder.grading.plan import draw_point
    from autograder.integrations.gradescope import run
    from autograder.keyfile import load_key

    _, key_path = released
    subs = tmp_path / "subs"
    (subs / "jade").mkdir(parents=True)
    (subs / "__MACOSX" / "jade").mkdir(parents=True)
    jade = nbformat.read(EXAMPLES / "jade.ipynb", as_version=4)
    [sid] = [c for c in jade.cells if c.source.startswith("STUDENT_ID")]
    sid.source = 'STUDENT_ID = "Jade"'
    [check] = [c for c in jade.cells if c.source.strip() == 'lab.check("1")']
    jade.cells.append(nbformat.v4.new_code_cell(check.source, metadata=check.metadata))
    nbformat.write(jade, subs / "jade" / "backward-vs-grad.ipynb")
    apple = b"\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        " + bytes(4000)   # an AppleDouble header, then padding
    (subs / "__MACOSX" / "jade" / "._backward-vs-grad.ipynb").write_bytes(apple)
    (subs / "jade" / "._backward-vs-grad.ipynb").write_bytes(apple)
    shutil.copy(EXAMPLES / "ben.ipynb", subs / "ben.ipynb")
    shutil.copy(EXAMPLES / "ben.ipynb", subs / "ben (1).ipynb")
    (subs / "Ben").mkdir()
    shutil.copy(EXAMPLES / "ben.ipynb", subs / "Ben" / "backward-vs-grad.ipynb")   # "Ben" is ben: the same file again
    shutil.copy(EXAMPLES / "gus.ipynb", subs / "__MACOSX" / "gus.ipynb")   # a notebook there is no resource fork
    scratch = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("import torch\nprint(torch.ones(2))")])
    nbformat.write(scratch, subs / "jade" / "Untitled.ipynb")   # beside jade's work: not work, left out
    nbformat.write(scratch, subs / "Untitled1.ipynb")   # alone: it names no student (before: a student "Untitled1", 0)
    p = run_cli("grade", str(subs), "--out", str(tmp_path / "out"), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    assert ("not graded, not work on 01-backward-vs-grad beside a notebook of the same student that is: "
            "jade/Untitled.ipynb (no cell of the assignment)") in p.stderr.splitlines()[-1], p.stderr[-1500:]
    assert "note: 1 student(s) handed in the same file more than once, which counts once: ben (ben (1).ipynb, " \
           "ben.ipynb, Ben/backward-vs-grad.ipynb)" in p.stdout, p.stdout
    reports = {r["submission"]: r for r in (json.loads(f.read_text()) for f in (tmp_path / "out" / "reports").glob("*.json"))}
    assert {n: (r["student"], r["status"], r["score"], r["superseded_by"]) for n, r in reports.items()} == {
        "jade/backward-vs-grad.ipynb": ("jade", "graded", 26, ""), "ben.ipynb": ("ben", "graded", 20, ""),
        "ben (1).ipynb": ("ben", "graded", 20, "ben.ipynb"), "Ben/backward-vs-grad.ipynb": ("Ben", "graded", 20, "ben.ipynb"),
        "__MACOSX/gus.ipynb": ("__MACOSX", "not_gradable", None, ""),
        "Untitled1.ipynb": ("Untitled1", "not_gradable", None, "")}
    assert reports["Untitled1.ipynb"]["reason"].startswith("whose submission is this? Untitled1.ipynb is the name "
                                                          "Jupyter gives a new notebook")
    grades = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert [row.split(",")[3] for row in grades[1:]] == ["__MACOSX", "ben", "jade", "Untitled1"], grades   # one ben
    notes = reports["jade/backward-vs-grad.ipynb"]["notes"]
    assert any(n.startswith('exercise 1: the notebook has 2 lab.check("1") cells (') and
               n.endswith("): a copied cell; the exercise was judged once") for n in notes), notes
    assert not any("graded as" in n for n in notes), notes   # "Jade" is jade: nothing to say
    key = load_key(key_path)
    assert draw_point(key.parameters, key.assignment, "Jade", "own") == draw_point(key.parameters, key.assignment,
                                                                                   "jade", "own")

    root = tmp_path / "gs"
    (root / "submission" / "__MACOSX").mkdir(parents=True)
    shutil.copy(EXAMPLES / "ada.ipynb", root / "submission" / "backward-vs-grad.ipynb")
    shutil.copy(EXAMPLES / "ada.ipynb", root / "submission" / "backward-vs-grad (1).ipynb")
    (root / "submission" / "__MACOSX" / "._backward-vs-grad.ipynb").write_bytes(apple)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": "ADA", "name": "Ada"}]}))
    assert run(root, key_path) == 0
    res = json.loads((root / "results" / "results.json").read_text())
    lab = res["extra_data"]["autograd_lab"]
    assert (res["score"], lab["student"], lab["submission"]) == (26, "ADA", "backward-vs-grad.ipynb"), res["output"][:2000]
    assert "backward-vs-grad (1).ipynb (the same file as backward-vs-grad.ipynb)" in res["output"]

    # an SID beyond ASCII letters is the id as it is (before: graded as "Jos_", with Jos_'s parameters)
    (root / "submission_metadata.json").write_text(json.dumps({"users": [{"sid": "José"}]}))
    nb = nbformat.read(EXAMPLES / "ada.ipynb", as_version=4)
    [sid] = [c for c in nb.cells if c.source.startswith("STUDENT_ID")]
    sid.source = 'STUDENT_ID = "josé"'
    nbformat.write(nb, root / "submission" / "backward-vs-grad.ipynb")
    (root / "submission" / "backward-vs-grad (1).ipynb").unlink()
    assert run(root, key_path) == 0
    res = json.loads((root / "results" / "results.json").read_text())
    x0 = draw_point(key.parameters, key.assignment, "José", "own")["x0"]
    assert res["extra_data"]["autograd_lab"]["student"] == "José" and f"`x0 = {x0}`" in res["output"], res["output"][:1500]


def test_a_course_batch_finds_the_services_commits_of_an_id_in_other_capitals(released, worker):
    """`grade --service`: the service keeps its students' commits under their roster names (lower case). A
    notebook whose id resolves as "Ada" (its folder) is ada's, and her commits count (before: her predictions
    scored nothing, "not committed on the course service")."""
    from autograder.grading.grade import grade_notebook
    from autograder.grading.identity import Source
    from autograder.judging.commit import COMMIT_MIME
    from autograder.keyfile import load_key

    _, key_path = released
    key = load_key(key_path)
    path = EXAMPLES / "ada.ipynb"
    records = [o["data"][COMMIT_MIME] for c in json.loads(path.read_text())["cells"] for o in c.get("outputs", [])
               if COMMIT_MIME in o.get("data", {})]
    assert len(records) == 6   # one per exercise
    report = grade_notebook(path, key, worker=worker, source=Source(path, "Ada", "folder"),
                            course_commits={"ada": records})
    assert (report.student, report.status, report.score) == ("Ada", "graded", 26), [
        (o.check_id, o.status, o.message) for o in report.outcomes if o.status != "passed"][:3]
