"""Staff overrides of a check's score (issue 48): a batch's `grade --overrides FILE.csv` (applied, reported, refused
with the file's line and the fix), and the course service's overrides (`autograder course override`, the staff
form with CSRF protection): kept across regrades, flagged when a re-release changes the check, refused to students,
carried into the export CSV and nbgrader's gradebook.db, and shown in the student's feedback."""
from __future__ import annotations

import csv
import json
import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import ASSIGNMENT, EXAMPLES, run_cli
from servers.course import call

NB = "backward-vs-grad.ipynb"

BEN_WRONG = "2.predict.returns"   # ben's prediction there fails (0 / 1): the check staff correct


def _subs(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    for student in ("ada", "ben"):
        shutil.copy(EXAMPLES / f"{student}.ipynb", subs / f"{student}.ipynb")
    (subs / "zed.ipynb").write_text('{"cells": [')   # truncated: not gradable
    return subs


def _csv(path, *rows):
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["student", "check", "score", "why"])
        w.writerows(rows)
    return path


def _report(out, student):
    return json.loads((out / "reports" / f"{student}.json").read_text())


def _outcome(report, check):
    return next(o for o in report["outcomes"] if o["check_id"] == check)


def test_a_batch_applies_the_csvs_overrides_says_which_and_refuses_lines_it_cannot_use(released, tmp_path):
    _, key_path = released
    subs, out = _subs(tmp_path), tmp_path / "out"

    # lines that cannot be used: nothing is graded, and each is named with its line and the fix
    bad = _csv(tmp_path / "bad.csv", ["ben", "9.predict.nothing", "1", "typo"], ["ben", BEN_WRONG, "5", "too many"],
               ["ben", BEN_WRONG, "one", "not a number"], ["ben", BEN_WRONG, "1", ""])
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path), "--overrides", str(bad))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "4 override(s) cannot be used, and nothing was graded" in p.stderr
    assert f"{bad}, line 2 (ben, 9.predict.nothing): 01-backward-vs-grad has no check '9.predict.nothing'" in p.stderr
    assert f"{bad}, line 3 (ben, {BEN_WRONG}): the score 5 is outside 0..1, the points of {BEN_WRONG}: give a " \
           f"score from 0 to 1" in p.stderr
    assert f"{bad}, line 4: the score 'one' of ben {BEN_WRONG} is not a number" in p.stderr
    assert f"{bad}, line 5 (ben, {BEN_WRONG}): an override needs a reason" in p.stderr
    assert not list(out.glob("reports/*.json"))   # nothing graded

    # ben's is applied; zed's (not gradable) and nobody's (no submission) are not, each said with its line: exit 2
    good = _csv(tmp_path / "overrides.csv", ["ben", BEN_WRONG, "1", "fair: right value, not a 1-tuple"],
                ["zed", BEN_WRONG, "1", "no"], ["nobody", BEN_WRONG, "0.5", "no"])
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path), "--overrides", str(good),
                "--feedback")
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"overrides: 1 of 3 from {good} applied: ben {BEN_WRONG} = 1" in p.stdout
    assert f"{good}, line 3: not applied: zed's submission is not gradable (" in p.stderr
    assert f"{good}, line 4: not applied: no submission of nobody in this batch" in p.stderr
    ben = _report(out, "ben")
    assert (ben["score"], ben["max_score"]) == (21.0, 26.0)
    adjusted = _outcome(ben, BEN_WRONG)
    assert (adjusted["status"], adjusted["score"]) == ("failed", 1.0)   # the machine's status stays
    assert {k: adjusted["adjusted"][k] for k in ("machine_score", "why")} == \
        {"machine_score": 0.0, "why": "fair: right value, not a 1-tuple"}
    assert "adjusted" not in _outcome(ben, "1.predict.returns") and _report(out, "ada")["score"] == 26.0
    zed = _report(out, "zed")
    assert (zed["status"], zed["score"]) == ("not_gradable", None)   # never a score made of overrides
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert (rows["ben"]["score"], rows["ben"][BEN_WRONG]) == ("21", "failed, adjusted by staff to 1")
    assert f"adjusted by staff: {BEN_WRONG} 0 -> 1" in p.stdout
    page = (out / "feedback" / "ben.html").read_text()
    assert "adjusted by staff: fair: right value, not a 1-tuple (the grader gave 0 / 1;" in page
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path), "--overrides", str(good), "--json")
    assert p.returncode == 2 and f"{good}, line 3: not applied: zed's submission is not gradable (" in p.stderr
    assert {r["student"]: r["score"] for r in json.loads(p.stdout)} == {"ada": 26.0, "ben": 21.0, "zed": None}

    # graded again (forced, two at once): the override holds, and the progress lines (whole lines, however the graders'
    # threads finish) show the scores with it; one that gives the grader's own score is applied, and says so;
    # without --overrides the batch's reports are the machine's again
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path), "--jobs", "2", "--overrides",
                str(_csv(good, ["ben", BEN_WRONG, "1", "fair: right value, not a 1-tuple"],
                         ["ada", "1.predict.returns", "1", "checked by hand: right"])), "--force")
    assert p.returncode == 0, p.stderr
    assert f"overrides: 2 of 2 from {good} applied: ben {BEN_WRONG} = 1; ada 1.predict.returns = 1 (1 -> 1: no " \
           f"change)" in p.stdout
    assert "adjusted by staff: 1.predict.returns 1 -> 1: no change" in p.stdout
    progress = sorted(line for line in p.stderr.splitlines() if "graded" in line and ".ipynb" in line)
    assert progress[:2] == ["graded ada.ipynb (ada): graded 26/26 (with 1 override; the grader gave 26)",
                            "graded ben.ipynb (ben): graded 21/26 (with 1 override; the grader gave 20)"], p.stderr
    assert len(progress) == 3 and progress[2].startswith("graded zed.ipynb (zed): not_gradable (")
    assert _report(out, "ben")["score"] == 21.0
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    assert "(3 unchanged since the last run, kept" in p.stdout
    ben = _report(out, "ben")
    assert ben["score"] == 20.0 and "adjusted" not in _outcome(ben, BEN_WRONG)


# ------------------------------------------------------------------------------------------ the course service

@pytest.fixture(scope="module")
def oc(tmp_path_factory, released):
    """A course service with staff prof, students amy, ben, zed, and 01 released for it (its own copy of the key)."""
    from types import SimpleNamespace

    from autograder.service.commands import publish
    from servers.course import Service

    folder = tmp_path_factory.mktemp("overrides")
    svc = Service(folder / "service", args=("--rate", "200", "--burst", "400"))
    staff = svc.add("prof", staff=True)["prof"]
    tokens = svc.add("amy", "ben", "zed")
    assignments, key_path = released
    own_key = folder / "key.json"
    shutil.copy(key_path, own_key)
    publish(own_key, svc.url, folder / "student", "token", assignments / NB, token=staff)
    yield SimpleNamespace(svc=svc, staff=staff, tokens=tokens, student=folder / "student", key_path=own_key,
                          assignments=assignments, folder=folder, api=f"{svc.url}/api/v1")
    svc.stop()


def _hand_in(c, tmp_path, student: str, source) -> dict:
    """`student` hands in `source` (an example submission) with their STUDENT_ID, from a terminal."""
    import nbformat

    from test_course import _cell

    folder = tmp_path / student
    shutil.copytree(c.student, folder)
    nb = nbformat.read(source, as_version=4)
    _cell(nb, "student-id").source = f'STUDENT_ID = "{student}"'
    nbformat.write(nb, folder / NB)
    r = run_cli("submit", str(folder / NB), "--json", env={"AUTOGRAD_LAB_TOKEN": c.tokens[student]})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _grade(c, out, *more):
    r = run_cli("grade", "--service", c.svc.url, "--assignment", ASSIGNMENT, "--key", str(c.key_path), "--out",
                str(out), *more, env={"AUTOGRAD_LAB_TOKEN": c.staff})
    assert r.returncode == 0, r.stdout + r.stderr
    return r


def _feedback(c, student):
    status, answer = call(f"{c.api}/students/{student}/assignments/{ASSIGNMENT}/feedback", c.tokens[student])
    assert status == 200, answer
    return answer


def _override(c, *args):
    return run_cli("course", "override", ASSIGNMENT, *args, "--service", c.svc.url,
                   env={"AUTOGRAD_LAB_TOKEN": c.staff})


def test_overrides_on_the_service_survive_a_regrade_reach_the_feedback_and_the_exports_and_a_changed_check_waits(
        oc, released, tmp_path):
    from nbgrader.api import Gradebook

    from autograder.grading.grade import not_gradable_report
    from autograder.keyfile import load_key, to_json, with_digest
    from autograder.render.terminal import render
    from autograder.report import Report
    from autograder.service.commands import publish
    from test_nbgrader import make_course

    c = oc
    ben = _hand_in(c, tmp_path, "ben", EXAMPLES / "ben.ipynb")
    zed = _hand_in(c, tmp_path, "zed", EXAMPLES / "ada.ipynb")
    out = tmp_path / "out"
    _grade(c, out)
    graded = json.loads((out / "reports" / "ben.json").read_text())   # no commits on the service: predictions score 0
    base, machine_status = graded["score"], _outcome(graded, BEN_WRONG)["status"]
    assert _outcome(graded, BEN_WRONG)["score"] == _outcome(graded, "1.predict.returns")["score"] == 0.0
    key = load_key(c.key_path)
    broken = replace(not_gradable_report(key, "zed.ipynb", "zed", "the notebook could not be run (the sandbox stopped)"),
                     fingerprint=json.loads((out / "reports" / "zed.json").read_text())["fingerprint"])
    assert call(f"{c.api}/handins/{zed['id']}", c.staff, "POST", broken.to_dict())[0] == 201   # as grade sends it

    # what cannot be overridden is refused, with why and the fix
    url = f"{c.api}/assignments/{ASSIGNMENT}/overrides"
    refusals = {
        ("ben", BEN_WRONG, 2): (400, "the score 2 is outside 0..1, the points of 2.predict.returns"),
        ("ben", "9.predict.nothing", 1): (400, "01-backward-vs-grad has no check '9.predict.nothing'"),
        ("zed", BEN_WRONG, 1): (409, "zed's hand-in that counts is not gradable (the notebook could not be run"),
        ("amy", BEN_WRONG, 1): (409, "amy has handed in nothing for 01-backward-vs-grad"),
        ("nobody", BEN_WRONG, 1): (404, "no student 'nobody' in this course"),
    }
    for (student, check, score), (status, why) in refusals.items():
        got = call(url, c.staff, "POST", {"student": student, "check": check, "score": score, "why": "appeal"})
        assert got[0] == status and why in got[1]["error"], got
    got = call(url, c.staff, "POST", {"student": "ben", "check": BEN_WRONG, "score": 1})
    assert got[0] == 400 and "an override needs a reason" in got[1]["error"]

    # staff override two of ben's checks: kept with who, when, the score before and the reason
    r = _override(c, "ben", BEN_WRONG, "--score", "1", "--why", "fair: right value, not a 1-tuple")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == f"ben {BEN_WRONG}: 0 -> 1 by prof (applied): fair: right value, not a 1-tuple"
    assert _override(c, "ben", "1.predict.returns", "--score", "0.5", "--why", "half: the spec missed it").returncode == 0
    rows = call(url, c.staff)[1]["overrides"]
    assert [(r["student"], r["check"], r["before"], r["score"], r["who"], r["state"], r["handin"]) for r in rows] == \
        [("ben", BEN_WRONG, 0.0, 1.0, "prof", "applied", ben["id"]),
         ("ben", "1.predict.returns", 0.0, 0.5, "prof", "applied", ben["id"])]

    # the student reads it in the feedback: staff's score and reason beside the grader's outcome
    assert run_cli("course", "release-feedback", ASSIGNMENT, "--service", c.svc.url,
                   env={"AUTOGRAD_LAB_TOKEN": c.staff}).returncode == 0
    report = _feedback(c, "ben")["report"]
    assert report["score"] == base + 1.5 and _feedback(c, "ben")["final_score"] == base + 1.5
    assert _outcome(report, BEN_WRONG)["status"] == machine_status   # the grader's
    assert _outcome(report, BEN_WRONG)["adjusted"]["why"] == "fair: right value, not a 1-tuple"
    shown = render(Report.from_dict(report))
    assert "adjusted by staff: fair: right value, not a 1-tuple (the grader gave 0 / 1; prof," in shown
    assert f"score {base + 1.5:g} / 26 · " in shown and " · 2 checks adjusted by staff" in shown

    # ben hands in again (a note added to his notebook); the regrade's new report keeps them
    again = tmp_path / "again.ipynb"
    nb = json.loads((EXAMPLES / "ben.ipynb").read_text())
    nb["cells"].append({"cell_type": "markdown", "id": "late-note", "metadata": {}, "source": "One more note."})
    again.write_text(json.dumps(nb))
    second = _hand_in(c, tmp_path / "2", "ben", again)
    assert second["id"] != ben["id"] and second["counts"]
    r = _grade(c, out)
    assert "reports: 1 new sent" in r.stderr and "overrides: 2 of staff's overrides apply" in r.stderr, r.stderr
    assert json.loads((out / "reports" / "ben.json").read_text())["score"] == base   # the batch's: the grader's
    feedback = _feedback(c, "ben")
    assert feedback["handin"]["id"] == second["id"] and feedback["report"]["score"] == base + 1.5

    # a new override of a check supersedes the old one (both kept); a clear is recorded too
    assert _override(c, "ben", BEN_WRONG, "--score", "0.5", "--why", "half, on second thought").returncode == 0
    r = _override(c, "ben", "1.predict.returns", "--clear", "--why", "the appeal was withdrawn")
    assert r.returncode == 0 and "override cleared by prof; the grader's score counts again" in r.stdout
    rows = call(url, c.staff)[1]["overrides"]
    assert [(r["check"], r["score"], r["state"]) for r in rows] == [
        (BEN_WRONG, 1.0, "superseded"), ("1.predict.returns", 0.5, "superseded"), (BEN_WRONG, 0.5, "applied"),
        ("1.predict.returns", None, "cleared")]
    assert _feedback(c, "ben")["report"]["score"] == base + 0.5

    # the export CSV and nbgrader's gradebook.db carry it (a manual score beside the grader's auto score)
    env = {"AUTOGRAD_LAB_TOKEN": c.staff}
    r = run_cli("course", "export", ASSIGNMENT, "--service", c.svc.url, "--csv", str(tmp_path / "grades.csv"), env=env)
    assert r.returncode == 0, r.stderr
    rows = {row["student"]: row for row in csv.DictReader((tmp_path / "grades.csv").open())}
    assert float(rows["ben"]["score"]) == float(rows["ben"]["final_score"]) == base + 0.5
    assert rows["ben"]["overrides"] == f"{BEN_WRONG} 0 -> 0.5 by prof: half, on second thought"
    assert (rows["zed"]["status"], rows["zed"]["score"], rows["zed"]["overrides"]) == ("not_gradable", "", "")
    course = make_course(tmp_path / "nbgrader", released[1], "c = get_config()\nc.CourseDirectory.course_id = 'x'\n", {})
    r = run_cli("course", "export", ASSIGNMENT, "--service", c.svc.url, "--nbgrader", str(course),
                "--key", str(c.key_path), env=env)
    assert r.returncode == 0, r.stderr
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
        grades = {g.name: (g.auto_score, g.manual_score, g.score) for g in
                  gb.find_submission_notebook(Path(NB).stem, ASSIGNMENT, "ben").grades}
        total = gb.find_submission(ASSIGNMENT, "ben").score
    two = next(v for k, v in grades.items() if v[1] is not None)
    assert two[1] == two[2] == two[0] + 0.5 and total == base + 0.5
    assert sum(1 for v in grades.values() if v[1] is not None) == 1   # exercise 2's cell only

    # a re-release that changes the check: the override waits for staff to confirm (the grader's score counts); an
    # override of a check the release kept as it was stays
    assert _override(c, "ben", "6.predict.strict", "--score", "1", "--why", "the error's name was right").returncode == 0
    changed = with_digest(replace(key, checks=tuple(replace(ch, why=ch.why + " (reworded)") if ch.id == BEN_WRONG
                                                    else ch for ch in key.checks)))
    c.key_path.write_text(json.dumps(to_json(changed)))
    publish(c.key_path, c.svc.url, c.folder / "student", "token", c.assignments / NB, token=c.staff)
    r = _grade(c, out)
    assert f"overrides to confirm: 1 whose check changed in a re-release (the grader's score counts until you " \
           f"confirm): ben {BEN_WRONG}; confirm with autograder course override {ASSIGNMENT}" in r.stderr
    listed = call(url, c.staff)[1]
    assert listed["to_confirm"] == 1 and listed["overrides"][2]["state"] == "to confirm"
    assert [r["state"] for r in listed["overrides"] if r["check"] == "6.predict.strict"] == ["applied"]
    assert _feedback(c, "ben")["report"]["score"] == base + 1
    r = run_cli("course", "overrides", ASSIGNMENT, "--service", c.svc.url, env=env)
    assert r.returncode == 0 and "[to confirm]  half, on second thought" in r.stdout
    listed = [line.split("  ")[1:3] + [line.split("[")[1].split("]")[0]] for line in r.stdout.splitlines()[1:6]]
    assert r.stdout.splitlines()[0] == f"overrides of {ASSIGNMENT}, newest first:"   # as the page lists them
    assert listed == [["ben", "6.predict.strict", "applied"], ["ben", "1.predict.returns", "cleared"],
                      ["ben", BEN_WRONG, "to confirm"], ["ben", "1.predict.returns", "superseded"],
                      ["ben", BEN_WRONG, "superseded"]]
    assert _override(c, "ben", BEN_WRONG, "--score", "0.5", "--why", "half, on second thought").returncode == 0
    assert call(url, c.staff)[1]["to_confirm"] == 0 and _feedback(c, "ben")["report"]["score"] == base + 1.5


def test_students_are_refused_on_every_override_route_and_a_form_post_needs_its_csrf_token(oc, tmp_path):
    import http.client
    from urllib.parse import urlencode

    c = oc
    _hand_in(c, tmp_path, "ben", EXAMPLES / "ben.ipynb")   # (kept once, when the test above handed it in already)
    _grade(c, tmp_path / "out")
    routes = [("GET", f"/assignments/{ASSIGNMENT}/overrides", None),
              ("POST", f"/assignments/{ASSIGNMENT}/overrides", {"student": "amy", "check": BEN_WRONG, "score": 1,
                                                                 "why": "mine"}),
              ("GET", f"/assignments/{ASSIGNMENT}/overrides/page", None),
              ("POST", f"/assignments/{ASSIGNMENT}/overrides/page", None)]
    for method, path, body in routes:
        raw = urlencode({"student": "amy", "check": BEN_WRONG, "score": "1", "why": "mine"}).encode() \
            if body is None and method == "POST" else None
        status, answer = call(c.api + path, c.tokens["amy"], method, body, raw=raw)
        assert (status, answer["error"]) == (403, "this needs a staff token"), (method, path)
    assert call(f"{c.api}/assignments/{ASSIGNMENT}/overrides", c.staff)[0] == 200

    # a browser signed in with the staff token: its cookie opens the page, and a form post must carry the CSRF token
    conn = http.client.HTTPConnection("127.0.0.1", c.svc.port, timeout=60)
    conn.request("POST", "/api/v1/login", body=urlencode({"token": c.staff, "next": "/api/v1/me"}),
                 headers={"Content-Type": "application/x-www-form-urlencoded"})
    signed = conn.getresponse()
    signed.read()
    assert signed.status == 302
    cookie, *attributes = [a.strip() for a in signed.getheader("Set-Cookie").split(";")]
    # scoped to the API's own path (under JupyterHub a student's server at /user/amy/ shares the origin), HTTP-only,
    # SameSite=Strict; a staff page is never framed
    assert {a.split("=")[0].lower(): a for a in attributes if not a.startswith(("expires", "Max-Age"))} == \
        {"path": "Path=/api/v1/", "httponly": "HttpOnly", "samesite": "SameSite=Strict"}
    assert signed.getheader("X-Frame-Options") == "DENY" and \
        signed.getheader("Content-Security-Policy") == "default-src 'none'; form-action 'self'; frame-ancestors 'none'"
    for view, csp in (("stats", "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'"),
                      ("collusion", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'"),
                      ("overrides/page", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; "
                                         "frame-ancestors 'none'")):
        conn.request("GET", f"/api/v1/assignments/{ASSIGNMENT}/{view}", headers={"Cookie": cookie})
        r = conn.getresponse()
        r.read()
        assert (r.status, r.getheader("Content-Security-Policy"), r.getheader("X-Frame-Options")) == \
            (200, csp, "DENY"), view
    page_path = f"/api/v1/assignments/{ASSIGNMENT}/overrides/page"

    def browser(method, body=None):
        conn.request(method, page_path, body=body, headers={"Cookie": cookie, **(
            {"Content-Type": "application/x-www-form-urlencoded"} if body is not None else {})})
        r = conn.getresponse()
        return r.status, r.read().decode()

    status, page = browser("GET")
    assert status == 200 and "<h1>Overrides of 01-backward-vs-grad</h1>" in page
    token = re.search(r'name="_csrf" value="([0-9a-f]{64})"', page).group(1)
    form = {"student": "ben", "check": "3.predict.grad", "score": "1", "why": "fair appeal, by the form"}
    for wrong in ({}, {"_csrf": "0" * 64}):   # none, or another's: refused before anything is kept, with the page
        status, answer = browser("POST", urlencode({**form, **wrong}))
        assert status == 403 and "<h1>Overrides of 01-backward-vs-grad</h1>" in answer
        assert ('<p class="note" role="status">Not saved: this form&#39;s CSRF token is missing or wrong: send the '
                'form from this page again.</p>') in answer
        assert 'name="student" list="students" required autocomplete="off" value=""' in answer   # not refilled
    assert not [r for r in call(f"{c.api}/assignments/{ASSIGNMENT}/overrides", c.staff)[1]["overrides"]
                if r["check"] == "3.predict.grad"]
    status, page = browser("POST", urlencode({**form, "_csrf": token}))
    assert status == 201 and "Saved: ben&#39;s 3.predict.grad is 1 (the grader gave 0)." in page, page[:2000]
    assert "fair appeal, by the form" in page
    kept = [r for r in call(f"{c.api}/assignments/{ASSIGNMENT}/overrides", c.staff)[1]["overrides"]
            if r["check"] == "3.predict.grad"]
    assert [(r["who"], r["score"], r["state"]) for r in kept] == [("prof", 1.0, "applied")]
    status, page = browser("POST", urlencode({**form, "score": "7", "_csrf": token}))
    assert status == 400 and "Not saved: the score 7 is outside 0..1" in page
    # a refused form comes back as staff typed it, to correct it
    assert 'required autocomplete="off" value="ben">' in page and 'value="3.predict.grad">' in page
    assert 'inputmode="decimal" value="7">' in page and 'maxlength="1000">fair appeal, by the form</textarea>' in page
    status, page = browser("POST", urlencode({**form, "score": "", "why": 'a "quoted" <reason>', "_csrf": token}))
    assert status == 400 and '<p class="note" role="status">Not saved: give a score (points from 0 to 1)</p>' in page
    assert 'inputmode="decimal" value="">' in page and '>a &#34;quoted&#34; &lt;reason&gt;</textarea>' in page
    got = call(f"{c.api}/assignments/{ASSIGNMENT}/overrides", c.staff, "POST",
               {"student": "ben", "check": "3.predict.grad", "why": "no score"})
    assert (got[0], got[1]["error"]) == (400, "give a score (points from 0 to 1)")
    conn.close()


@pytest.fixture(scope="module")
def axe_js() -> str:
    from test_accessibility import AXE

    if not AXE.is_file():
        pytest.fail(f"the accessibility checks need axe-core at {AXE}: run scripts/setup.sh", pytrace=False)
    return AXE.read_text()


def test_staff_correct_a_grade_in_chromium_from_the_class_view_and_the_pages_pass_axe(oc, browser, axe_js, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    from autograder.render.html import to_html
    from autograder.report import Report
    from test_accessibility import violations

    c = oc
    _hand_in(c, tmp_path, "ben", EXAMPLES / "ben.ipynb")
    _grade(c, tmp_path / "out")
    stats = f"{c.api}/assignments/{ASSIGNMENT}/stats"
    page = f"{c.api}/assignments/{ASSIGNMENT}/overrides/page"
    browser.get(f"{c.api}/login?next=/api/v1/assignments/{ASSIGNMENT}/stats")
    browser.find_element(By.ID, "token").send_keys(c.staff)
    browser.find_element(By.ID, "signin").click()
    WebDriverWait(browser, 60).until(lambda d: d.current_url == stats)
    browser.find_element(By.LINK_TEXT, "Correct a grade: overrides").click()   # from the class view
    WebDriverWait(browser, 60).until(lambda d: d.current_url == page)
    browser.find_element(By.ID, "student").send_keys("ben")
    browser.find_element(By.ID, "check").send_keys("4.predict.after_k")
    browser.find_element(By.ID, "score").send_keys("1")
    browser.find_element(By.ID, "why").send_keys("counted by hand: k passes, as the spec meant")
    browser.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    WebDriverWait(browser, 60).until(lambda d: "Saved: ben's 4.predict.after_k is 1" in d.page_source)
    kept = [r for r in call(f"{c.api}/assignments/{ASSIGNMENT}/overrides", c.staff)[1]["overrides"]
            if r["check"] == "4.predict.after_k"]
    assert [(r["who"], r["score"], r["why"], r["state"]) for r in kept] == \
        [("prof", 1.0, "counted by hand: k passes, as the spec meant", "applied")]

    saved = tmp_path / "overrides.html"
    saved.write_text(browser.page_source, encoding="utf-8")
    assert violations(browser, saved, axe_js) == []
    assert call(f"{c.api}/students/ben/assignments/{ASSIGNMENT}/feedback", c.staff)[0] == 200
    report = Report.from_dict(call(f"{c.api}/students/ben/assignments/{ASSIGNMENT}/feedback", c.staff)[1]["report"])
    assert [o.check_id for o in report.adjusted()] and report.adjusted()[-1].adjusted is not None
    feedback = tmp_path / "feedback.html"
    feedback.write_text(to_html(report), encoding="utf-8")
    assert violations(browser, feedback, axe_js) == []


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_overrides_are_kept_append_only_with_who_when_and_the_score_before(database, request, tmp_path):
    from autograder.service import db
    from autograder.service.store import Course
    from test_course import _fresh_database

    url = f"sqlite:///{tmp_path / 'c.db'}" if database == "sqlite" else _fresh_database(
        request.getfixturevalue("postgres_url"), tmp_path.name)
    db.migrate(url)
    course = Course(url)
    first = course.add_override(ASSIGNMENT, "ben", BEN_WRONG, 1.0, "an appeal", "prof", 0.0, "d1", 7)
    second = course.add_override(ASSIGNMENT, "ben", BEN_WRONG, 0.5, "half", "tia", 0.0, "d1", 7)
    cleared = course.add_override(ASSIGNMENT, "ben", BEN_WRONG, None, "withdrawn", "prof", None, "d1", None)
    course.add_override("02-accumulation", "ben", "1.predict.grad", 1.0, "other", "prof", 0.0, "d2", 9)
    rows = course.overrides_of(ASSIGNMENT)
    assert [(r["id"], r["score"], r["before"], r["why"], r["who"], r["handin"]) for r in rows] == [
        (first["id"], 1.0, 0.0, "an appeal", "prof", 7), (second["id"], 0.5, 0.0, "half", "tia", 7),
        (cleared["id"], None, None, "withdrawn", "prof", None)]
    assert all(r["made"].endswith("+00:00") for r in rows) and rows[0]["made"] <= rows[2]["made"]
    assert course.overrides_of(ASSIGNMENT, "amy") == [] and course.overrides_version(ASSIGNMENT) == cleared["id"]
