"""The course service (`autograder serve`), as a course uses it: staff add a roster and release 01 for the course; a
student's real kernel (nbclient) checks exercise 1 through a real service on 127.0.0.1 (SQLite, and PostgreSQL);
the service commits first, keeps the first commit whatever the kernel or the notebook does, and batch grading uses
its commits. Its refusals, limits, log, and a kill -9 under load."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from autograder import wire
from autograder.grading.plan import draw_point
from autograder.judging import commit
from autograder.keyfile import load_key
from autograder.service.commands import publish
from autograder.student.lab import REPORT_MIME
from conftest import ASSIGNMENT, run_cli
from servers.course import Service, busy_course, call

NB = "backward-vs-grad.ipynb"


def _cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def _run(nb, folder: Path, token: str | None, monkeypatch) -> nbformat.NotebookNode:
    """Restart and Run all, in a real kernel whose environment holds the student's course token."""
    if token is None:
        monkeypatch.delenv("AUTOGRAD_LAB_TOKEN", raising=False)
    else:
        monkeypatch.setenv("AUTOGRAD_LAB_TOKEN", token)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(folder / ".config"))   # no token file of this machine's user
    NotebookClient(nb, timeout=120, startup_timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(folder)}}).execute()
    return nb


def _shown(nb, exercise: str) -> tuple[dict | None, str]:
    """(the report the check cell showed, or None; its plain text)."""
    outs = _cell(nb, f"ex{exercise}-check").outputs
    report = next((o["data"][REPORT_MIME] for o in outs if REPORT_MIME in o.get("data", {})), None)
    text = "".join(o.get("data", {}).get("text/plain", "") for o in outs)
    return report, text


def _outcomes(report) -> dict:
    return {o["check_id"]: o for o in report["outcomes"]}


def _student_notebook(course, tmp_path: Path, student: str) -> tuple[nbformat.NotebookNode, Path]:
    folder = tmp_path / student
    shutil.copytree(course.student, folder)
    nb = nbformat.read(folder / NB, as_version=4)
    _cell(nb, "student-id").source = f'STUDENT_ID = "{student}"'
    return nb, folder


def test_the_course_folder_holds_the_notebook_and_no_answer_in_any_form(course, released):
    assert sorted(p.name for p in course.student.iterdir()) == [NB, "course.json"]
    handed, own = (nbformat.read(folder / NB, as_version=4) for folder in (course.student, released[0]))
    added = ("course-intro", "hand-in-intro", "hand-in", "feedback-intro", "feedback")   # the course copy's own
    handed_cells = [c for c in handed.cells if c.metadata["nbgrader"]["grade_id"] not in added]
    assert [(c.cell_type, c.metadata) for c in handed_cells] == [(c.cell_type, c.metadata) for c in own.cells]
    assert handed.metadata["autograd_lab"] == {**own.metadata["autograd_lab"], "course": course.svc.url}
    assert [c.source for c in handed_cells if c.cell_type == "code"] == [c.source for c in own.cells
                                                                         if c.cell_type == "code"]
    assert [c.source for c in handed.cells[-4:] if c.cell_type == "code"] == ["lab.submit()", "lab.feedback()"]
    prose = "\n".join(c.source for c in handed.cells if c.cell_type == "markdown")
    assert "autograder check" not in prose and prose.count("the answers are on the course service") == 2
    text = (course.student / "course.json").read_text()
    key = json.loads(course.key_path.read_text())
    exprs = [c["expect"]["expr"] for c in key["checks"] if "expr" in c["expect"]]
    exprs += [m["value"]["expr"] for c in key["checks"] for m in c.get("misconceptions", []) if "expr" in m["value"]]
    assert len(exprs) > 20
    for expr in exprs:   # every answer with an operator in it (a bare parameter name is in the plan, rightly)
        if any(ch in expr for ch in "*+-/()"):
            assert expr not in text, expr
    for c in key["checks"]:
        assert c["why"] not in text
    for secret in (key["digest"], key["secret"], key["digest_salt"]):
        assert secret not in text
    data = json.loads(text)
    assert set(data) == {"schema", "v", "assignment", "title", "notebook", "service", "auth", "plan", "checks"}
    assert data["service"] == course.svc.url and data["checks"] == {"public": 26, "hidden": 0}
    assert course.digest == key["digest"]


def test_predict_commit_reveal_revise_reset_then_grade_with_the_services_commits(course, tmp_path, monkeypatch):
    token = course.tokens["amy"]
    nb, folder = _student_notebook(course, tmp_path, "amy")
    x = draw_point(load_key(course.key_path).parameters, ASSIGNMENT, "amy", "own")["x0"]
    _cell(nb, "ex1-produce").source = "def ex1(x):\n    return (x * x).backward()"
    mine = f"/students/amy/assignments/{ASSIGNMENT}"

    # 1. a prediction still `...`: nothing is committed, nothing expected is shown
    _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = ..."
    report, _ = _shown(_run(nb, folder, token, monkeypatch), "1")
    shown = _outcomes(report)
    assert shown["1.predict.grad"]["status"] == "missing" and shown["1.predict.returns"]["status"] == "sealed"
    assert all(o["expected"] is None for o in shown.values() if o["kind"] == "predict")
    status, held = call(course.svc.url + "/api/v1" + mine + "/commits", token)
    assert status == 200 and held["commits"] == [] and held["predictions"][0]["kind"] == "incomplete"

    # 2. every prediction filled in: the service commits them, with its own clock, then the answers are shown
    _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 1.0"
    before = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 1))
    report, _ = _shown(_run(nb, folder, token, monkeypatch), "1")
    after = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 1))
    shown = _outcomes(report)
    assert shown["1.predict.grad"]["status"] == "failed" and shown["1.predict.grad"]["expected"] == f"{2 * x:g}"
    assert shown["1.produce.grad"]["status"] == "passed"
    status, held = call(course.svc.url + "/api/v1" + mine + "/commits", token)
    first = held["commits"][0]
    assert first["values"]["p1_grad"] == {"t": "float", "v": 1.0} and before <= first["time"] <= after
    assert report["commits"]["1"] == first

    # 3. revised after the answer was shown: the service keeps the first commit and records the revision as such
    _cell(nb, "ex1-predict").source = f"p1_returns = None\np1_grad = {2 * x!r}"
    report, _ = _shown(_run(nb, folder, token, monkeypatch), "1")
    grad = _outcomes(report)["1.predict.grad"]
    assert grad["status"] == "failed" and "revised after the answer was shown" in grad["commit"]
    status, held = call(course.svc.url + "/api/v1" + mine + "/commits", token)
    assert held["commits"] == [first]
    sent = [p for p in held["predictions"] if p["exercise"] == "1"]
    assert [p["kind"] for p in sent] == ["incomplete", "commit", "revision"] and sent[-1]["after_reveal"] is True

    # 4. the commit-reset attack: Clear All Outputs, delete every local file, Run All: still the first commit
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    for stray in folder.glob(".autograd-lab*"):
        stray.unlink()
    report, _ = _shown(_run(nb, folder, token, monkeypatch), "1")
    assert _outcomes(report)["1.predict.grad"]["status"] == "failed"
    assert report["commits"]["1"] == first

    # 5. the handed-in notebook carries a forged record (digest recomputed, earlier time, the right value):
    #    the batch trusts it from the notebook alone, and never with --service
    forged = commit.make(ASSIGNMENT, "amy", "1", {"p1_returns": {"t": "none"}, "p1_grad": {"t": "float", "v": 2 * x}},
                         [f"p1_returns = None\np1_grad = {2 * x!r}"], when=time.time() - 3600)
    for out in _cell(nb, "ex1-check").outputs:
        if commit.COMMIT_MIME in out.get("data", {}):
            out["data"][commit.COMMIT_MIME] = forged
    subs = tmp_path / "subs"
    subs.mkdir()
    nbformat.write(nb, subs / "amy.ipynb")
    env = {"AUTOGRAD_LAB_TOKEN": course.staff}
    own = run_cli("grade", str(subs), "--out", str(tmp_path / "own"), "--key", str(course.key_path), "--json", env=env)
    assert own.returncode == 0, own.stderr
    ours = run_cli("grade", str(subs), "--out", str(tmp_path / "ours"), "--key", str(course.key_path), "--json",
                   "--service", course.svc.url, env=env)
    assert ours.returncode == 0, ours.stderr
    assert any("handed out by the course service" in n for n in json.loads(own.stdout)[0]["notes"])
    by_notebook = _outcomes(json.loads(own.stdout)[0])["1.predict.grad"]
    by_course = _outcomes(json.loads(ours.stdout)[0])["1.predict.grad"]
    assert by_notebook["status"] == "passed"    # what a notebook's own record can do: why a course needs the service
    assert by_course["status"] == "failed" and by_course["observed"] == "1.0" and first["time"][11:16] in by_course["commit"]
    # a notebook the service never saw a commit of scores nothing for its predictions, whoever hands it in
    for who in ("ben", "zed"):
        _cell(nb, "student-id").source = f'STUDENT_ID = "{who}"'
        nbformat.write(nb, subs / f"{who}.ipynb")
    late = run_cli("grade", str(subs), "--out", str(tmp_path / "late"), "--key", str(course.key_path),
                   "--service", course.svc.url, env=env)
    assert late.returncode == 0, late.stderr
    assert "a prediction the service did not record scores nothing" in late.stderr
    assert "note: not on the course's roster: zed" in late.stderr
    for who in ("ben", "zed"):
        report = json.loads((tmp_path / "late" / "reports" / f"{who}.json").read_text())
        grad = _outcomes(report)["1.predict.grad"]
        assert grad["status"] == "failed" and grad["score"] == 0 and "not committed on the course service" in grad["message"]
        assert any("no commit on the course service" in n for n in report["notes"])
        assert _outcomes(report)["1.produce.grad"]["status"] == "passed"
    # a student's token cannot read the class's commits
    denied = run_cli("grade", str(subs), "--out", str(tmp_path / "denied"), "--key", str(course.key_path),
                     "--service", course.svc.url, env={"AUTOGRAD_LAB_TOKEN": token})
    assert denied.returncode == 2 and "this needs a staff token" in denied.stderr


def test_the_roster_refuses_bad_names_withdraws_tokens_and_never_opens_an_empty_course_by_mistake(tmp_path):
    db = f"sqlite:///{tmp_path / 'c.db'}"
    for bad in ("x y", "a,b", "AMY", "your-student-id", "../x", ""):
        r = run_cli("course", "add", bad, "--db", db)
        assert r.returncode == 2 and "nobody was added" in r.stderr, (bad, r.stderr)
    assert not (tmp_path / "c.db").exists()
    r = run_cli("course", "list", "--db", db)
    assert r.returncode == 2 and "no course database at" in r.stderr and not (tmp_path / "c.db").exists()
    r = run_cli("course", "add", "amy", "--db", db)
    assert r.returncode == 0 and "a new course database" in r.stderr
    assert oct((tmp_path / "c.db").stat().st_mode & 0o777) == "0o600"   # it holds the answer keys
    first = r.stdout.split("\t")[1].strip()
    r = run_cli("course", "add", "amy", "--db", db)
    assert "amy had a token already; it still works" in r.stderr
    second = r.stdout.split("\t")[1].strip()
    from autograder.service.store import Course

    course = Course(db)
    assert course.user_for_token(first).name == course.user_for_token(second).name == "amy"
    r = run_cli("course", "revoke", "amy", "--db", db)
    assert r.returncode == 0 and "amy: 2 token(s) withdrawn" in r.stdout
    assert course.user_for_token(first) is None and course.user_for_token(second) is None
    assert run_cli("course", "revoke", "nobody", "--db", db).returncode == 2


def test_login_checks_the_token_with_the_service_course_json_names(course, tmp_path):
    import subprocess
    import sys

    shutil.copytree(course.student, tmp_path / "amy")
    env = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    env.pop("AUTOGRAD_LAB_TOKEN", None)

    def login(token: str, *args: str, cwd=tmp_path / "amy"):
        return subprocess.run([sys.executable, "-m", "autograder", "login", *args], input=token + "\n", cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=120)

    r = login("wrong")
    assert r.returncode == 2 and "not saved" in r.stderr and "not one this course issued" in r.stderr
    assert not (tmp_path / "config" / "autograd-lab" / "token").exists()
    r = login(course.tokens["amy"], cwd=tmp_path)
    assert r.returncode == 2 and "pass --service URL" in r.stderr
    r = login(course.tokens["amy"], "--service", "127.0.0.1:1")
    assert r.returncode == 2 and "http://" in r.stderr
    r = login(course.tokens["amy"])
    assert r.returncode == 0 and "as amy (student)" in r.stdout and 'STUDENT_ID = "amy"' in r.stdout
    saved = tmp_path / "config" / "autograd-lab" / "token"
    assert json.loads(saved.read_text()) == {"service": course.svc.url, "token": course.tokens["amy"]}
    assert oct(saved.stat().st_mode & 0o777) == "0o600"


def _names(values: dict, cells: int) -> str:
    """A results stream of prediction variables only, as a kernel sends it first."""
    lines = [{"k": "hello", "schema": wire.SCHEMA, "v": wire.VERSION, "torch": "2.13.0", "cells": cells, "cuda": False}]
    lines += [{"k": "cell", "i": i, "status": "ok"} for i in range(cells)]
    lines += [{"k": "name", "name": n, "value": v} for n, v in values.items()]
    return "".join(json.dumps(r) + "\n" for r in [*lines, {"k": "done"}])


def _body(student: str, grad: float) -> dict:
    cells = [f"p1_returns = None\np1_grad = {grad!r}", 'lab.check("1")']
    return {"assignment": ASSIGNMENT, "exercise": "1", "student": student, "cells": cells, "labels": ["", ""],
            "results": _names({"p1_returns": {"t": "none"}, "p1_grad": {"t": "float", "v": grad}}, 2)}


def test_every_route_needs_a_token_a_student_acts_only_as_themself_and_errors_say_why(course):
    api, amy, ben = course.svc.url + "/api/v1", course.tokens["amy"], course.tokens["ben"]
    refusals = [
        (call(api + "/me", None), 401, "needs a token"),
        (call(api + "/me", "not-a-token"), 403, "not one this course issued"),
        (call(api + "/me?token=" + amy, None), 400, "never in the URL"),
        (call(api + f"/students/ben/assignments/{ASSIGNMENT}/commits", amy), 403, "only your own records"),
        (call(api + f"/students/ben/assignments/{ASSIGNMENT}/reports", amy), 403, "only your own records"),
        (call(api + "/predictions", amy, "POST", _body("ben", 1.0)), 403, "a student checks only their own work"),
        (call(api + "/check", amy, "POST", _body("ben", 1.0)), 403, "a student checks only their own work"),
        (call(api + "/users", amy), 403, "staff token"),
        (call(api + "/users", amy, "POST", {"name": "mallory", "role": "staff"}), 403, "staff token"),
        (call(api + f"/assignments/{ASSIGNMENT}/commits", amy), 403, "staff token"),
        (call(api + f"/assignments/{ASSIGNMENT}/key", amy, "PUT", {"assignment": ASSIGNMENT}), 403, "staff token"),
        (call(api + "/predictions", amy, "POST", raw=b"{not json"), 400, "not JSON"),
        (call(api + "/predictions", amy, "POST", [1, 2]), 400, "a JSON object"),
        (call(api + "/predictions", amy, "POST", {**_body("amy", 1.0), "results": 7}), 400, "'results' must be"),
        (call(api + "/predictions", amy, "POST", {**_body("amy", 1.0), "results": "nonsense\n"}), 400, "malformed"),
        (call(api + "/predictions", amy, "POST", {**_body("amy", 1.0), "cells": "x"}), 400, "'cells' must be"),
        (call(api + "/predictions", amy, "POST", {**_body("amy", 1.0), "assignment": "99-none"}), 404, "not on this course"),
        (call(api + "/predictions", amy, "POST", {**_body("amy", 1.0), "exercise": "9"}), 404, "no exercise '9'"),
        (call(api + "/nowhere", amy), 404, "no such route"),
        (call(api + "/me", amy, "DELETE"), 405, "does not take that method"),
        (call(api + f"/assignments/{ASSIGNMENT}/key", course.staff, "PUT", {"assignment": ASSIGNMENT}), 400, "digest"),
    ]
    for (status, answer), want, phrase in refusals:
        assert status == want and phrase in answer["error"], (status, answer, want, phrase)
        assert "Traceback" not in json.dumps(answer)
    status, answer = call(api + "/predictions", amy, "POST", raw=b"x" * 5_000_000)
    assert 400 <= status < 500
    assert call(api + "/me", amy) == (200, {"name": "amy", "role": "student"})
    # staff read anyone's records
    assert call(api + f"/students/amy/assignments/{ASSIGNMENT}/commits", course.staff)[0] == 200
    # a malformed header that tornado quotes in its log: the log never holds a token
    with socket.create_connection(("127.0.0.1", course.svc.port)) as s:
        s.sendall(f"GET /api/v1/me HTTP/1.1\r\nHost: x\r\nAuthorization: token {ben}\r\r\n\r\n".encode())
        s.recv(1000)
    time.sleep(0.5)
    log = course.svc.log.read_text()
    assert "[hidden]" in log
    for token in [*course.tokens.values(), course.staff]:
        assert token not in log


def _calls(student: str, grad: float, produced: float) -> dict:
    """A check request of exercise 1: the predictions, and the calls of ex1 at each point returning None with x.grad =
    `produced` (a student's PRODUCE function that was never run for real)."""
    body = _body(student, grad)
    lines = body["results"].splitlines()[:-1]
    tensor = {"t": "tensor", "dtype": "float32", "shape": [], "data": [produced], "truncated": False,
              "requires_grad": True, "is_leaf": True, "grad_fn": None, "grad": None}
    for i in range(4):
        lines.append(json.dumps({"k": "call", "call": "ex1", "point": i, "status": "ok", "returned": {"t": "none"},
                                 "args": {"x": {**tensor, "data": [1.0], "grad": {**tensor, "requires_grad": False}}},
                                 "warnings": []}))
    return {**body, "results": "\n".join([*lines, json.dumps({"k": "done"})]) + "\n"}


def test_before_a_commit_a_course_check_says_nothing_of_the_answers_not_even_through_produce_checks(course):
    api, ben = course.svc.url + "/api/v1", course.tokens["ben"]
    body = _calls("ben", 1.0, 2.0)
    body["results"] = body["results"].replace('"name", "name": "p1_grad", "value": {"t": "float", "v": 1.0}',
                                              '"name", "name": "p1_grad", "value": {"t": "ellipsis"}')
    status, report = call(api + "/check", ben, "POST", body)
    assert status == 200
    shown = _outcomes(report)
    assert {o["status"] for c, o in shown.items() if c.startswith("1.produce")} == {"sealed"}
    assert all(o["expected"] is None and o["observed"] is None for c, o in shown.items() if c.startswith("1.produce"))
    assert "judged once exercise 1's predictions are committed" in shown["1.produce.grad"]["message"]


def test_an_exercise_whose_predictions_are_all_hidden_is_sealed_until_its_commit(course, tmp_path):
    import copy

    from autograder.keyfile import digest_of

    key = json.loads(course.key_path.read_text())
    hidden = copy.deepcopy(key)
    hidden["assignment"] = "01-hidden"
    for c in hidden["checks"]:
        if c["exercise"] == "1" and c["kind"] == "predict":
            c["visibility"] = "hidden"
    hidden["digest"] = digest_of(hidden)
    api, cat = course.svc.url + "/api/v1", course.tokens["cat"]
    assert call(api + "/assignments/01-hidden/key", course.staff, "PUT", hidden)[0] == 200
    body = {**_body("cat", 1.0), "assignment": "01-hidden"}
    status, report = call(api + "/check", cat, "POST", body)
    assert status == 200 and {o["status"] for o in report["outcomes"] if o["exercise"] == "1"} == {"sealed"}
    assert all(o["expected"] is None for o in report["outcomes"])


def test_one_students_heavy_checks_never_hold_up_another_and_deep_json_is_a_400(course):
    api, amy, ben = course.svc.url + "/api/v1", course.tokens["amy"], course.tokens["ben"]
    bulk = {**_body("amy", 1.0), "cells": ["x = 1\n" * 60_000]}
    status, answer = call(api + "/check", amy, "POST", bulk)
    assert status == 413 and "more than the 300,000 the grader reads" in answer["error"]
    for raw in (b"[" * 100_000 + b"]" * 100_000, json.dumps({**_body("amy", 1.0), "results": "[" * 50_000 + "]" * 50_000 + "\n"}).encode()):
        status, answer = call(api + "/predictions", amy, "POST", raw=raw)
        assert status == 400 and ("nested too deeply" in answer["error"] or "malformed" in answer["error"]), answer
    status, answer = call(api + "/predictions", amy, "POST", raw=b"{}", headers={"Content-Length": "abc"})
    assert 400 <= status < 500
    # wrong tokens from one address never lock out a right one
    for _ in range(40):
        call(api + "/me", "wrong-token")
    assert call(api + "/me", "wrong-token")[0] == 429
    assert call(api + "/me", ben) == (200, {"name": "ben", "role": "student"})
    # a token in the path is never logged
    call(api + f"/me/{ben}", ben)
    call(api + f"/students/{ben}/assignments/x/commits", ben)
    time.sleep(0.5)
    assert ben not in course.svc.log.read_text()


def test_the_same_sending_is_kept_once(course):
    api = course.svc.url + "/api/v1"
    status, dee = call(api + "/users", course.staff, "POST", {"name": "dee"})   # staff add a student by the API
    assert status == 201 and dee["role"] == "student"
    for grad in (9.5, 9.5, 9.5, 8.5, 8.5):
        assert call(api + "/predictions", dee["token"], "POST", _body("dee", grad))[0] == 200
    sent = call(api + f"/students/dee/assignments/{ASSIGNMENT}/commits", dee["token"])[1]["predictions"]
    assert [p["kind"] for p in sent] == ["commit", "same", "revision"]


def test_a_bad_request_cannot_change_or_delete_a_recorded_commit(course):
    api, cat = course.svc.url + "/api/v1", course.tokens["cat"]
    status, first = call(api + "/predictions", cat, "POST", _body("cat", 1.5))
    assert status == 200 and first["kind"] == "commit"
    for grad in (2.5, 3.5):
        status, again = call(api + "/predictions", cat, "POST", _body("cat", grad))
        assert status == 200 and again["kind"] == "revision" and again["commit"] == first["commit"]
    for method in ("DELETE", "PUT", "PATCH"):
        status, _ = call(api + f"/students/cat/assignments/{ASSIGNMENT}/commits", cat, method, {})
        assert status == 405
    status, held = call(api + f"/students/cat/assignments/{ASSIGNMENT}/commits", cat)
    assert held["commits"] == [first["commit"]]


def test_the_service_unreachable_then_back_loses_nothing_and_shows_no_answer(course, tmp_path, monkeypatch):
    svc = Service(tmp_path / "service")
    staff, token = svc.add("prof", staff=True)["prof"], svc.add("dan")["dan"]
    try:
        publish(course.key_path, svc.url, tmp_path / "student", "token", course.student / NB, token=staff)
        shutil.copytree(tmp_path / "student", tmp_path / "dan")
        nb = nbformat.read(tmp_path / "dan" / NB, as_version=4)
        _cell(nb, "student-id").source = 'STUDENT_ID = "dan"'
        _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 1.0"
        svc.stop()
        report, text = _shown(_run(nb, tmp_path / "dan", token, monkeypatch), "1")
        assert report is None and "cannot be reached right now" in text and "nothing is lost" in text
        assert "expected" not in text
        svc.start()
        report, _ = _shown(_run(nb, tmp_path / "dan", token, monkeypatch), "1")
        assert _outcomes(report)["1.predict.grad"]["status"] == "failed" and report["commits"]["1"]["values"]["p1_grad"]["v"] == 1.0
        report, text = _shown(_run(nb, tmp_path / "dan", None, monkeypatch), "1")   # no token: said, nothing sent
        assert report is None and "needs your token" in text
    finally:
        svc.stop()


def test_requests_over_the_rate_are_refused_with_429_and_retry_after(course, tmp_path):
    svc = Service(tmp_path / "service", args=("--rate", "0.1", "--burst", "3"))
    try:
        token = svc.add("eve")["eve"]
        statuses = [call(svc.url + "/api/v1/me", token)[0] for _ in range(10)]
        assert statuses[:3] == [200, 200, 200] and statuses.count(429) >= 5
        status, answer = call(svc.url + "/api/v1/me", token)
        assert status == 429 and "too many requests" in answer["error"]
    finally:
        svc.stop()
    svc = Service(tmp_path / "default-rate")   # 5 a second: the wait past the burst is a fraction of a second
    try:
        token = svc.add("fay")["fay"]
        waits = [float(re.fullmatch(r"too many requests: wait ([0-9.]+) s", a["error"]).group(1))
                 for s, a in (call(svc.url + "/api/v1/me", token) for _ in range(60)) if s == 429]
        assert waits and min(waits) >= 0.1, waits   # never "wait 0.0 s"
    finally:
        svc.stop()


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_commit_the_service_acknowledged_survives_kill_9_under_load(course, tmp_path, database, request):
    db = None if database == "sqlite" else _fresh_database(request.getfixturevalue("postgres_url"), tmp_path.name)
    svc, staff, tokens = busy_course(tmp_path, course.key_path, course.student / NB, 60, db)
    students = list(tokens)
    acked: dict[str, dict] = {}
    lock = threading.Lock()

    def hand_in(name: str) -> None:
        try:
            status, answer = call(svc.url + "/api/v1/predictions", tokens[name], "POST", _body(name, 1.25), timeout=30)
        except OSError:
            return   # the service died before it answered: not acknowledged
        if status == 200 and answer.get("commit"):
            with lock:
                acked[name] = answer["commit"]

    threads = [threading.Thread(target=hand_in, args=(n,)) for n in students]
    for t in threads:
        t.start()
    end = time.monotonic() + 60
    while len(acked) < 10 and time.monotonic() < end:
        time.sleep(0.01)
    svc.stop(kill=True)   # kill -9 in the middle of the load
    for t in threads:
        t.join(60)
    assert 10 <= len(acked), len(acked)
    svc.start()
    status, answer = call(svc.url + f"/api/v1/assignments/{ASSIGNMENT}/commits", staff)
    assert status == 200
    held = {name: records for name, records in answer["commits"].items()}
    for name, record in acked.items():
        assert held.get(name) == [record], name
    assert all(len(records) == 1 for records in held.values())
    svc.stop()


def _fresh_database(url: str, name: str) -> str:
    """A new database on the test's PostgreSQL server (each test its own)."""
    import sqlalchemy as sa

    db = "t_" + "".join(c for c in name.lower() if c.isalnum())[:40]
    with sa.create_engine(url, isolation_level="AUTOCOMMIT").connect() as conn:
        conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{db}"'))
        conn.execute(sa.text(f'CREATE DATABASE "{db}"'))
    return url.rsplit("/", 1)[0] + "/" + db


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_the_migrations_make_the_schema_the_code_uses(tmp_path, database, request):
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from autograder.service import db

    url = f"sqlite:///{tmp_path / 'c.db'}" if database == "sqlite" else _fresh_database(
        request.getfixturevalue("postgres_url"), tmp_path.name)
    assert db.revision(url) is None
    db.migrate(url)
    db.migrate(url)   # again: nothing to do
    assert db.revision(url) == "0005"
    with db.engine(url).connect() as conn:
        assert compare_metadata(MigrationContext.configure(conn), db.metadata) == []


def test_a_student_in_a_kernel_through_a_service_on_postgresql(course, tmp_path, monkeypatch, postgres_url):
    svc = Service(tmp_path / "service", db=_fresh_database(postgres_url, tmp_path.name))
    try:
        staff, token = svc.add("prof", staff=True)["prof"], svc.add("fay")["fay"]
        publish(course.key_path, svc.url, tmp_path / "student", "token", course.student / NB, token=staff)
        shutil.copytree(tmp_path / "student", tmp_path / "fay")
        nb = nbformat.read(tmp_path / "fay" / NB, as_version=4)
        _cell(nb, "student-id").source = 'STUDENT_ID = "fay"'
        _cell(nb, "ex1-predict").source = "p1_returns = None\np1_grad = 0.5"
        report, _ = _shown(_run(nb, tmp_path / "fay", token, monkeypatch), "1")
        assert _outcomes(report)["1.predict.grad"]["status"] == "failed"
        svc.stop(kill=True)
        svc.start()
        status, held = call(svc.url + f"/api/v1/students/fay/assignments/{ASSIGNMENT}/commits", token)
        assert status == 200 and held["commits"][0]["values"]["p1_grad"] == {"t": "float", "v": 0.5}
        status, shown = call(svc.url + f"/api/v1/students/fay/assignments/{ASSIGNMENT}/reports", token)
        assert [r["exercise"] for r in shown["reports"]] == ["1", "2", "3", "4", "5", "6"]
    finally:
        svc.stop()
