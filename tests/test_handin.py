"""Hand-in through the course service, as a course uses it: a student hands in from a terminal (`autograder submit`)
and from the notebook (`lab.submit()` in a real kernel); the service keeps the bytes with its own clock; course.toml
decides which hand-in counts and what lateness costs (read again when staff edit it); staff grade the hand-ins
(`grade --service` with no paths, again only what changed), release the feedback, and the student reads it in the
notebook (`lab.feedback()`, hidden checks included once released); the gradebook as CSV and into nbgrader's
gradebook.db; refusals; kill -9 during 200 concurrent hand-ins; the live class view in Chromium."""
from __future__ import annotations

import datetime as dt
import hashlib
import importlib.util
import json
import re
import shutil
import threading
import time
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from autograder.keyfile import load_key, to_json, with_digest
from autograder.service.commands import publish
from conftest import ASSIGNMENT, EXAMPLES, ROOT, run_cli
from servers.course import Service, busy_course, call
from test_course import _body, _cell, _fresh_database, _names, _outcomes, _run

NB = "backward-vs-grad.ipynb"
HIDDEN = "4.produce.after_k"   # hidden in this course's key: graded, and shown only in the released feedback


def _toml(due: dt.datetime, **more: str) -> str:
    lines = [f'[assignments."{ASSIGNMENT}"]', f"due = {due.isoformat()}"]
    lines += [f"{k} = {v}" for k, v in more.items() if k != "extensions"]
    if "extensions" in more:
        lines += [f'[assignments."{ASSIGNMENT}".extensions]', more["extensions"]]
    return "\n".join(lines) + "\n"


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).astimezone(dt.timezone.utc)


@pytest.fixture(scope="module")
def lab_course(tmp_path_factory, released):
    """A course service with course.toml (01 due in a week), staff prof, students amy, ada, cat, dan, eve, fay, gus; 01 released
    for it with check HIDDEN hidden."""
    from types import SimpleNamespace

    folder = tmp_path_factory.mktemp("handin")
    config = folder / "course.toml"
    config.write_text(_toml(dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(days=7)))
    svc = Service(folder / "service", args=("--config", str(config), "--rate", "200", "--burst", "400"))
    staff = svc.add("prof", staff=True)["prof"]
    tokens = svc.add("amy", "ada", "cat", "dan", "eve", "fay", "gus")
    assignments, key_path = released
    key = load_key(key_path)
    key = with_digest(replace(key, checks=tuple(replace(c, visibility="hidden") if c.id == HIDDEN else c
                                                for c in key.checks)))
    hidden_key = folder / "key.json"
    hidden_key.write_text(json.dumps(to_json(key)))
    publish(hidden_key, svc.url, folder / "student", "token", assignments / NB, token=staff)
    yield SimpleNamespace(svc=svc, staff=staff, tokens=tokens, student=folder / "student", key_path=hidden_key,
                          config=config, folder=folder)
    svc.stop()


def _saved(course, tmp_path: Path, student: str, source: Path | None = None) -> Path:
    """`student`'s folder (the course's student folder) with the notebook saved: the released one, or `source`
    (an example submission), with STUDENT_ID set."""
    folder = tmp_path / student
    shutil.copytree(course.student, folder)
    nb = nbformat.read(source or folder / NB, as_version=4)
    _cell(nb, "student-id").source = f'STUDENT_ID = "{student}"'
    nbformat.write(nb, folder / NB)
    return folder / NB


def _submit(path: Path, token: str, *more: str):
    return run_cli("submit", str(path), *more, env={"AUTOGRAD_LAB_TOKEN": token})


def test_a_hand_in_keeps_the_services_time_and_course_toml_decides_what_counts_and_costs(lab_course, tmp_path):
    c = lab_course
    saved = c.config.read_text()
    try:
        _deadlines_and_what_counts(c, tmp_path)
    finally:
        c.config.write_text(saved)   # the other tests' deadline: a week from now


def _deadlines_and_what_counts(c, tmp_path: Path) -> None:
    path = _saved(c, tmp_path, "amy")
    import os

    os.utime(path, (315532800, 315532800))   # the file says 1980: only the service's clock counts
    before = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=1)
    r = _submit(path, c.tokens["amy"], "--json")
    assert r.returncode == 0, r.stderr
    first = json.loads(r.stdout)
    assert before <= _utc(first["received"]) <= dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    assert (first["assignment"], first["student"], first["size"]) == (ASSIGNMENT, "amy", path.stat().st_size)
    assert first["digest"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert (first["late_by"], first["penalty"], first["why"], first["counts"]) == (0.0, 0.0, "on time", True)

    # staff move the deadline to one second after that hand-in, with 25 % off per started day: read at once
    due = _utc(first["received"]).replace(microsecond=0) + dt.timedelta(seconds=1)
    c.config.write_text(_toml(due, late='"per-day"', penalty_per_day="0.25"))
    while dt.datetime.now(dt.timezone.utc) < due + dt.timedelta(seconds=0.3):
        time.sleep(0.1)
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_markdown_cell("One more thought."))
    nbformat.write(nb, path)
    r = _submit(path, c.tokens["amy"])
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"handed in {ASSIGNMENT} as amy at ") and "(the course's clock)" in r.stdout
    assert f"due {due.isoformat()}" in r.stdout and "1 started day(s) at 25% each, 25% off" in r.stdout
    assert "An earlier hand-in, made before the deadline, still counts." in r.stdout
    status, mine = call(c.svc.url + f"/api/v1/students/amy/assignments/{ASSIGNMENT}/handins", c.tokens["amy"])
    assert status == 200 and [(h["id"] == first["id"], h["counts"], h["penalty"]) for h in mine["handins"]] == [
        (True, True, 0.0), (False, False, 0.25)]
    assert 0 < mine["handins"][1]["late_by"] < 60
    again = _submit(path, c.tokens["amy"], "--json")   # the same bytes again: kept once, the same receipt
    assert again.returncode == 0 and json.loads(again.stdout)["id"] == mine["handins"][1]["id"]
    assert json.loads(again.stdout)["again"] is True
    assert "this is the same notebook as your last hand-in" in _submit(path, c.tokens["amy"]).stdout
    assert len(call(c.svc.url + f"/api/v1/students/amy/assignments/{ASSIGNMENT}/handins", c.tokens["amy"])[1]
               ["handins"]) == 2

    # an extension for amy: her late hand-in is now on time, and the last one on time counts
    c.config.write_text(_toml(due, late='"per-day"', penalty_per_day="0.25",
                              extensions=f"amy = {(due + dt.timedelta(days=2)).isoformat()}"))
    status, mine = call(c.svc.url + f"/api/v1/students/amy/assignments/{ASSIGNMENT}/handins", c.tokens["amy"])
    assert [(h["counts"], h["why"]) for h in mine["handins"]] == [(False, "on time"), (True, "on time")]
    assert mine["handins"][1]["due"] == (due + dt.timedelta(days=2)).isoformat() and mine["handins"][1]["extension"]
    assert mine["handins"][0]["extension"] is True   # amy's own due time holds for each of her hand-ins

    # a course.toml edited into one that cannot be used: the last good one stays, the log says why
    c.config.write_text(_toml(due, late='"sometimes"'))
    status, mine = call(c.svc.url + f"/api/v1/students/amy/assignments/{ASSIGNMENT}/handins", c.tokens["amy"])
    assert status == 200 and mine["handins"][1]["counts"] is True
    assert 'late must be "none", "per-day" or "zero"' in c.svc.log.read_text()
    c.config.write_text(_toml(due, late='"per-day"', penalty_per_day="0.25",
                              extensions=f"amy = {(due + dt.timedelta(days=2)).isoformat()}"))

    # serve refuses to start with it, naming the file
    bad = tmp_path / "bad.toml"
    bad.write_text(_toml(due, late='"sometimes"'))
    r = run_cli("serve", "--db", f"sqlite:///{tmp_path / 'x.db'}", "--port", "0", "--config", str(bad), timeout=60)
    assert r.returncode == 2 and str(bad) in r.stderr and "late must be" in r.stderr


def test_what_is_not_this_students_notebook_is_refused_with_a_reason_and_nothing_is_kept(lab_course, tmp_path):
    c = lab_course
    api = c.svc.url + "/api/v1"
    route = f"{api}/assignments/{ASSIGNMENT}/handins"
    good = _saved(c, tmp_path, "cat").read_bytes()
    nb = nbformat.reads(good.decode(), as_version=4)
    other = nbformat.reads(good.decode(), as_version=4)
    setup = next(cell for cell in other.cells if cell.cell_type == "code" and f'Lab("{ASSIGNMENT}"' in cell.source)
    setup.source = setup.source.replace(f'Lab("{ASSIGNMENT}"', 'Lab("02-accumulation"')
    _cell(nb, "student-id").source = 'STUDENT_ID = "ben"'
    placeholder = nbformat.read(c.student / NB, as_version=4)
    count = len(call(route, c.staff)[1]["handins"])
    refusals = [
        (call(route, c.tokens["cat"], "POST", raw=b""), 400, "the request holds no notebook"),
        (call(route, c.tokens["cat"], "POST", raw=b"print('hi')\n"), 400, "the file handed in is not a Jupyter notebook"),
        (call(route, c.tokens["cat"], "POST", raw=nbformat.writes(other).encode()), 400,
         f"this notebook is assignment '02-accumulation', not '{ASSIGNMENT}'"),
        (call(route, c.tokens["cat"], "POST", raw=nbformat.writes(nb).encode()), 400,
         "its STUDENT_ID is 'ben', but you are signed in as 'cat'"),
        (call(route, c.tokens["cat"], "POST", raw=nbformat.writes(placeholder).encode()), 400,
         'its STUDENT_ID is still the placeholder: set STUDENT_ID = "cat"'),
        (call(route, c.tokens["cat"], "POST", raw=b" " * 20_000_001), 413, "not handed in: the notebook is over 20 MB"),
        (call(f"{api}/assignments/99-none/handins", c.tokens["cat"], "POST", raw=good), 404, "not on this course"),
        (call(route, None, "POST", raw=good), 401, "needs a token"),
        (call(route, c.tokens["cat"]), 403, "staff token"),
        (call(f"{api}/students/amy/assignments/{ASSIGNMENT}/handins", c.tokens["cat"]), 403, "only your own"),
        (call(f"{api}/handins/1", c.tokens["cat"]), 403, "staff token"),
        (call(f"{api}/handins/1", c.tokens["cat"], "POST", {"assignment": ASSIGNMENT}), 403, "staff token"),
        (call(f"{api}/assignments/{ASSIGNMENT}/feedback", c.tokens["cat"], "PUT", {}), 403, "staff token"),
        (call(f"{api}/assignments/{ASSIGNMENT}/gradebook", c.tokens["cat"]), 403, "staff token"),
        (call(f"{api}/handins/999999", c.staff), 404, "no hand-in 999999"),
    ]
    for (status, answer), want, says in refusals:
        assert status == want and says in answer["error"], (status, answer, says)
    assert "not handed in:" in refusals[1][0][1]["error"] and "your work stays in your notebook" in refusals[1][0][1]["error"]
    assert len(call(route, c.staff)[1]["handins"]) == count   # nothing was kept

    # at most MAX_HANDINS hand-ins per student and assignment (each up to 20 MB): then 409, with the reason
    from autograder.service.store import MAX_HANDINS

    nb = nbformat.reads(_saved(c, tmp_path, "eve").read_text(), as_version=4)
    for i in range(MAX_HANDINS):
        nb.cells[-1].source = f"# version {i}"
        assert call(route, c.tokens["eve"], "POST", raw=nbformat.writes(nb).encode())[0] == 201, i
    nb.cells[-1].source = "# one more"
    status, answer = call(route, c.tokens["eve"], "POST", raw=nbformat.writes(nb).encode())
    assert status == 409 and f"you have handed in {ASSIGNMENT} {MAX_HANDINS} times" in answer["error"]

    # a lone surrogate in a JSON body is no text, nor is UTF-16: 400, not a failure of the service
    lone = json.dumps({**_body("cat", 1.0), "results": "\ud800"})
    for raw, says in ((lone.encode(), "lone surrogate"), (lone.encode("utf-16"), "not UTF-8 text"),
                      (json.dumps({**_body("cat", 1.0), "assignment": "x"}).replace('"x"', '"x\xed\xa0\x80"')
                       .encode("latin-1"), "not UTF-8 text")):
        status, answer = call(f"{api}/predictions", c.tokens["cat"], "POST", raw=raw)
        assert status == 400 and says in answer["error"], (status, answer)
    # a method a route does not take, or a GET with a body, is refused before any body is read
    assert call(route, c.tokens["cat"], "PUT", raw=b"x" * 1000)[0] == 405
    assert call(f"{api}/me", c.tokens["cat"], "GET", raw=b"x" * 1000)[0] == 400
    assert call(f"{api}/login", None, "POST", raw=b"token=" + b"x" * 5000)[0] == 413

    # one hand-in at a time per student, counted from its first byte: a second one while the first still
    # arrives is refused at once (a student cannot hold the service's memory with many slow uploads); the first one's
    # place is given back when its client hangs up
    import socket

    def slow_upload() -> socket.socket:
        slow = socket.create_connection(("127.0.0.1", c.svc.port))
        slow.sendall(f"POST /api/v1/assignments/{ASSIGNMENT}/handins HTTP/1.1\r\nHost: x\r\nAuthorization: token "
                     f"{c.tokens['cat']}\r\nContent-Length: 1000000\r\n\r\n".encode() + good[:1000])
        return slow

    for _ in range(20):   # (should this test's own request arrive first, the slow one is the one refused: again)
        slow = slow_upload()
        time.sleep(0.5)
        status, answer = call(route, c.tokens["cat"], "POST", raw=good)
        if status == 429:
            break
        slow.close()
    try:
        assert status == 429 and "your previous hand-in is still under way: hand in again" in answer["error"], answer
    finally:
        slow.close()
    deadline = time.monotonic() + 60
    while call(route, c.tokens["cat"], "POST", raw=good)[0] not in (200, 201):   # freed when it hung up
        assert time.monotonic() < deadline
        time.sleep(0.2)

    # from a terminal: a file that is not a notebook, beside the course's course.json
    broken = tmp_path / "cat" / NB
    broken.write_text('{"cells": [')
    r = _submit(broken, c.tokens["cat"])
    assert r.returncode == 2 and "not handed in: the file handed in is not valid JSON" in r.stderr, r.stderr
    assert "your work stays in your notebook" in r.stderr and broken.read_text() == '{"cells": ['
    r = _submit(tmp_path / "nowhere" / NB, c.tokens["cat"])
    assert r.returncode == 2 and "no course.json beside" in r.stderr


def _feedback_cells(nb) -> list:
    """The notebook's cells up to its setup cell, then `lab.feedback()`: a learner reading their feedback."""
    upto = next(i for i, cell in enumerate(nb.cells) if cell.metadata.get("nbgrader", {}).get("grade_id") == "setup")
    return [*nb.cells[: upto + 1], nbformat.v4.new_code_cell("lab.feedback()")]


def _text(cell) -> str:
    return "".join(o.get("data", {}).get("text/plain", "") + o.get("text", "") for o in cell.outputs)


def test_hand_in_from_the_notebook_grade_release_and_read_the_feedback_there(lab_course, tmp_path, monkeypatch):
    from autograder.student.lab import REPORT_MIME

    c = lab_course
    path = _saved(c, tmp_path, "ada", EXAMPLES / "ada.ipynb")   # every answer right, saved before Run all
    nb = nbformat.read(path, as_version=4)
    nb.cells += [nbformat.v4.new_code_cell("lab.submit()"), nbformat.v4.new_code_cell("lab.feedback()")]
    nbformat.write(nb, path)   # saved with its lab.submit() cell (which does nothing while it is graded)
    _run(nb, path.parent, c.tokens["ada"], monkeypatch)
    check4 = next(o["data"][REPORT_MIME] for o in _cell(nb, "ex4-check").outputs if REPORT_MIME in o.get("data", {}))
    assert HIDDEN not in _outcomes(check4) and "4.predict.after_k" in _outcomes(check4)   # hidden until released
    submitted, early = _text(nb.cells[-2]), _text(nb.cells[-1])
    assert submitted.startswith(f"handed in {ASSIGNMENT} as ada at ") and "It is the hand-in that counts now." in submitted
    assert "no feedback yet: the feedback of 01-backward-vs-grad is not released yet" in early

    # staff grade the hand-ins that count (each report goes back), then again: nothing new is graded or sent
    env = {"AUTOGRAD_LAB_TOKEN": c.staff}
    out = tmp_path / "out"
    args = ("grade", "--service", c.svc.url, "--assignment", ASSIGNMENT, "--key", str(c.key_path), "--out", str(out))
    r = run_cli(*args, env=env)
    assert r.returncode == 0, r.stderr
    handed = call(c.svc.url + f"/api/v1/assignments/{ASSIGNMENT}/handins", c.staff)[1]["handins"]
    counting = sorted(h["student"] for h in handed if h["counts"])
    assert f"reports: {len(counting)} new sent to the course service" in r.stderr
    assert sorted(p.stem for p in (out / "handins").glob("*.ipynb")) == counting
    ada = json.loads((out / "reports" / "ada.json").read_text())
    assert (ada["status"], ada["score"], ada["max_score"]) == ("graded", 26.0, 26.0)
    assert _outcomes(ada)[HIDDEN]["status"] == "passed"
    assert not [n for n in ada["notes"] if "raised" in n], ada["notes"]
    again = run_cli(*args, env=env)
    assert again.returncode == 0 and "reports: 0 new sent" in again.stderr, again.stderr
    assert f"({len(counting)} unchanged since the last run, kept" in again.stdout

    # before the release the student sees no feedback; staff release it; the student reads it in the notebook
    status, answer = call(c.svc.url + f"/api/v1/students/ada/assignments/{ASSIGNMENT}/feedback", c.tokens["ada"])
    assert status == 404 and "not released yet" in answer["error"]
    r = run_cli("course", "release-feedback", ASSIGNMENT, "--service", c.svc.url, env=env)
    assert r.returncode == 0 and f"feedback of {ASSIGNMENT} released at " in r.stdout, r.stdout + r.stderr
    reader = nbformat.v4.new_notebook(cells=_feedback_cells(nbformat.read(path, as_version=4)),
                                      metadata=nb.metadata)
    _run(reader, path.parent, c.tokens["ada"], monkeypatch)
    shown = reader.cells[-1]
    assert any(REPORT_MIME in o.get("data", {}) for o in shown.outputs), shown.outputs
    report = next(o["data"][REPORT_MIME] for o in shown.outputs if REPORT_MIME in o.get("data", {}))
    assert _outcomes(report)[HIDDEN]["status"] == "passed" and report["score"] == 26.0
    assert _text(shown).startswith(f"graded hand-in of {_counting_time(c, 'ada')}: on time; score 26 / 26")


def _counting_time(course, student: str) -> str:
    handed = call(course.svc.url + f"/api/v1/students/{student}/assignments/{ASSIGNMENT}/handins",
                  course.tokens[student])[1]["handins"]
    return next(h["received"] for h in handed if h["counts"])


def test_the_gradebook_names_late_hand_ins_as_csv_and_in_nbgraders_gradebook(lab_course, released, tmp_path):
    from nbgrader.api import Gradebook

    from test_nbgrader import make_course

    c = lab_course
    env = {"AUTOGRAD_LAB_TOKEN": c.staff}
    saved = c.config.read_text()
    due = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(days=1, hours=2)
    c.config.write_text(_toml(due, late='"per-day"', penalty_per_day="0.25"))   # dan hands in 1 d 2 h late
    try:
        r = _submit(_saved(c, tmp_path, "dan", EXAMPLES / "ada.ipynb"), c.tokens["dan"], "--json")
        assert r.returncode == 0, r.stderr
        receipt = json.loads(r.stdout)
        assert receipt["penalty"] == 0.5 and "2 started day(s) at 25% each, 50% off" in receipt["why"]
        out = tmp_path / "out"
        r = run_cli("grade", "--service", c.svc.url, "--assignment", ASSIGNMENT, "--key", str(c.key_path),
                    "--out", str(out), env=env)
        assert r.returncode == 0, r.stderr
        score = json.loads((out / "reports" / "dan.json").read_text())["score"]   # no commits: the produce checks
        assert 0 < score < 26
        c.svc.add("hal")   # on the roster, never hands in: a row of his own, with empty scores (issue 46)
        r = run_cli("course", "export", ASSIGNMENT, "--service", c.svc.url, "--csv", str(tmp_path / "grades.csv"),
                    env=env)
        assert r.returncode == 0, r.stderr
        import csv

        rows = {row["student"]: row for row in csv.DictReader((tmp_path / "grades.csv").open())}
        assert set(rows) >= {"amy", "ada", "cat", "dan", "eve", "fay", "gus", "hal"} and "prof" not in rows
        handed_in = {s for s, row in rows.items() if row["handin"]}
        assert f"({len(rows)} student(s): {len(handed_in)} handed in, {len(rows) - len(handed_in)} not)" in r.stdout
        assert {k: rows["hal"][k] for k in ("status", "score", "max_score", "final_score", "submitted_at", "handin")} \
            == {"status": "not handed in", "score": "", "max_score": "", "final_score": "", "submitted_at": "",
                "handin": ""}
        dan = rows["dan"]
        assert list(dan) == ["student", "status", "score", "max_score", "submitted_at", "late_by", "penalty",
                             "final_score", "late", "handin", "overrides"]
        assert dan["overrides"] == ""   # no staff override of dan's checks
        assert (dan["status"], float(dan["score"]), dan["max_score"], dan["penalty"]) == ("graded", score, "26.0", "0.5")
        assert float(dan["final_score"]) == pytest.approx(score * 0.5) and dan["submitted_at"] == receipt["received"]
        assert 93600 <= float(dan["late_by"]) < 93600 + 120 and dan["handin"] == str(receipt["id"])

        course = make_course(tmp_path / "nbgrader", released[1], "c = get_config()\nc.CourseDirectory.course_id = 'x'\n", {})
        r = run_cli("course", "export", ASSIGNMENT, "--service", c.svc.url, "--nbgrader", str(course),
                    "--key", str(c.key_path), env=env)
        assert r.returncode == 0, r.stderr
        assert f"nbgrader: {len(handed_in)} submission(s) with their hand-in times" in r.stdout   # not hal's row
        with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gb:
            sub = gb.find_submission(ASSIGNMENT, "dan")
            stamp, nb_score = sub.timestamp, sub.score
        assert stamp == _utc(receipt["received"]).replace(tzinfo=None) and nb_score == score
    finally:
        c.config.write_text(saved)


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_a_hand_in_the_service_acknowledged_survives_kill_9_during_200_at_once(lab_course, tmp_path, database,
                                                                                request):
    db = None if database == "sqlite" else _fresh_database(request.getfixturevalue("postgres_url"), tmp_path.name)
    svc, staff, tokens = busy_course(tmp_path, lab_course.key_path, lab_course.student / NB, 200, db)
    students = list(tokens)
    released = nbformat.read(lab_course.student / NB, as_version=4)
    bodies = {}
    for s in students:
        _cell(released, "student-id").source = f'STUDENT_ID = "{s}"'
        bodies[s] = nbformat.writes(released).encode()
    acked: dict[str, dict] = {}
    lock = threading.Lock()
    go = threading.Event()

    def hand_in(name: str) -> None:
        go.wait()
        try:
            status, answer = call(svc.url + f"/api/v1/assignments/{ASSIGNMENT}/handins", tokens[name], "POST",
                                  raw=bodies[name], timeout=60)
        except OSError:
            return   # the service died before it answered: not acknowledged
        if status == 201:
            with lock:
                acked[name] = answer

    threads = [threading.Thread(target=hand_in, args=(n,)) for n in students]
    for t in threads:
        t.start()
    go.set()
    end = time.monotonic() + 120
    while len(acked) < 20 and time.monotonic() < end:
        time.sleep(0.005)
    svc.stop(kill=True)   # kill -9 in the middle of the hand-ins
    for t in threads:
        t.join(90)
    assert 20 <= len(acked) < 200, len(acked)
    svc.start()
    status, answer = call(svc.url + f"/api/v1/assignments/{ASSIGNMENT}/handins", staff)
    assert status == 200
    held = {h["student"]: h for h in answer["handins"]}
    for name, receipt in acked.items():
        kept = held.get(name)
        assert kept is not None and (kept["id"], kept["received"], kept["digest"]) == (
            receipt["id"], receipt["received"], hashlib.sha256(bodies[name]).hexdigest()), name
    assert len(answer["handins"]) == len(held)   # one each, none twice
    for name in list(acked)[:3]:   # and the bytes are the bytes handed in
        got = call(svc.url + f"/api/v1/handins/{acked[name]['id']}", staff)
        assert got[0] == 200 and got[1] == json.loads(bodies[name])
    svc.stop()


def _class_batch():
    spec = importlib.util.spec_from_file_location("class_batch", ROOT / "examples" / "class_batch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_staff_see_the_class_view_live_with_the_planted_counts_and_a_student_gets_403(released, worker, tmp_path,
                                                                                      browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    sys_path = str(ROOT / "examples")
    import sys

    sys.path.insert(0, sys_path)
    try:
        from make_submissions import observed_names
    finally:
        sys.path.remove(sys_path)
    from autograder.grading.notebook import code_cells

    n = 60
    planted = _class_batch().make_class(ASSIGNMENT, n, tmp_path / "subs", seed=7, missing=0.0)
    key_path = released[1]
    key = load_key(key_path)
    svc, staff, tokens = busy_course(tmp_path, key_path, released[0] / NB, n, burst=2000)
    students = list(tokens)
    api = svc.url + "/api/v1"
    stats = f"{api}/assignments/{ASSIGNMENT}/stats"
    assert call(stats, staff)[0] == 404   # nothing graded yet
    refused = 0
    for s in students:   # each student's kernel sends the predictions of each exercise (committed), then hands in
        data = (tmp_path / "subs" / f"{s}.ipynb").read_bytes()
        try:
            cells = code_cells(nbformat.reads(data.decode(), as_version=4))
        except Exception:   # the generator's cut-off files: not a notebook, so never handed in
            status, answer = call(f"{api}/assignments/{ASSIGNMENT}/handins", tokens[s], "POST", raw=data)
            assert status == 400 and "the file handed in is not valid JSON" in answer["error"], answer
            refused += 1
            continue
        names = observed_names(key, cells, s, worker)
        for ex in {c.exercise for c in key.checks if c.kind == "predict" and c.name}:
            mine = {c.name: names[c.name] for c in key.checks if c.exercise == ex and c.kind == "predict" and c.name}
            body = {"assignment": ASSIGNMENT, "exercise": ex, "student": s, "cells": cells,
                    "labels": [""] * len(cells), "results": _names(mine, len(cells))}
            status, answer = call(f"{api}/predictions", tokens[s], "POST", body)
            assert status == 200 and answer["kind"] == "commit", answer
    for s in students:
        data = (tmp_path / "subs" / f"{s}.ipynb").read_bytes()
        if call(f"{api}/assignments/{ASSIGNMENT}/handins", tokens[s], "POST", raw=data)[0] != 400:
            assert call(f"{api}/students/{s}/assignments/{ASSIGNMENT}/handins", tokens[s])[1]["handins"]
    assert refused == planted["not_gradable"] == 1
    r = run_cli("grade", "--service", svc.url, "--assignment", ASSIGNMENT, "--key", str(key_path), "--out",
                str(tmp_path / "out"), env={"AUTOGRAD_LAB_TOKEN": staff}, timeout=1200)
    assert r.returncode == 0, r.stderr
    assert f"reports: {n - 1} new sent" in r.stderr

    status, answer = call(stats, tokens["s000"])
    assert status == 403 and "staff token" in answer["error"]
    browser.get(f"{api}/login?next=/api/v1/assignments/{ASSIGNMENT}/stats")
    browser.find_element(By.ID, "token").send_keys(tokens["s000"])   # a student's token signs in nobody
    browser.find_element(By.ID, "signin").click()
    WebDriverWait(browser, 60).until(lambda d: "That is not a staff token of this course." in d.page_source)
    browser.get(stats)
    assert "this service needs a token" in browser.page_source
    browser.get(f"{api}/login?next=/api/v1/assignments/{ASSIGNMENT}/stats")
    browser.find_element(By.ID, "token").send_keys(staff)
    browser.find_element(By.ID, "signin").click()
    WebDriverWait(browser, 60).until(lambda d: d.current_url == stats)
    import base64

    cookie = browser.get_cookie("autograd_lab_staff")   # a random session id: the token never leaves the service
    assert cookie["httpOnly"] is True and staff not in cookie["value"]
    held = base64.b64decode(cookie["value"].strip('"').split("|")[4].split(":", 1)[1]).decode()   # tornado's v2 form
    assert len(held) == 43 and held != staff
    assert call(f"{api}/me", cookie["value"])[0] == 403
    assert browser.find_element(By.ID, "counted").text.startswith(str(n - 1))
    notes = [p.text for p in browser.find_elements(By.CSS_SELECTOR, "p.agl-stats-note")]
    assert "1 of the roster's 60 students has not handed in (not counted, never as 0): s039." in notes, notes
    assert any(t.startswith("Scores here are before any late penalty") for t in notes), notes
    shown = {}
    for li in browser.find_elements(By.CSS_SELECTOR, "tr.agl-item li.agl-misc"):
        check = li.find_element(By.XPATH, "./ancestor::tr").get_attribute("data-check")
        count = int(li.find_element(By.TAG_NAME, "strong").text)
        if count:
            shown.setdefault(check, {})[li.get_attribute("data-misconception")] = count
    assert shown == planted["misconceptions"] and sum(sum(m.values()) for m in shown.values()) > 100
    row = browser.find_element(By.ID, "check-4.predict.after_k")
    cells = {td.get_attribute("data-status"): int(td.text) for td in row.find_elements(By.CSS_SELECTOR, "td.agl-count")}
    assert {s: k for s, k in cells.items() if k} == planted["statuses"]["4.predict.after_k"]
    assert not browser.find_elements(By.TAG_NAME, "script")

    # live: the page is made from the graded hand-ins at each request (s039, whose file was cut off, hands in the
    # released notebook: its predictions are all missing)
    fresh = nbformat.read(released[0] / NB, as_version=4)
    _cell(fresh, "student-id").source = 'STUDENT_ID = "s039"'
    assert call(f"{api}/assignments/{ASSIGNMENT}/handins", tokens["s039"], "POST",
                raw=nbformat.writes(fresh).encode())[0] == 201
    r = run_cli("grade", "--service", svc.url, "--assignment", ASSIGNMENT, "--key", str(key_path), "--out",
                str(tmp_path / "out"), env={"AUTOGRAD_LAB_TOKEN": staff}, timeout=1200)
    assert r.returncode == 0 and "reports: 1 new sent" in r.stderr, r.stderr
    browser.refresh()
    assert browser.find_element(By.ID, "counted").text.startswith(str(n))
    assert not [p.text for p in browser.find_elements(By.CSS_SELECTOR, "p.agl-stats-note") if "handed in" in p.text]
    row = browser.find_element(By.ID, "check-4.predict.after_k")
    cells = {td.get_attribute("data-status"): int(td.text) for td in row.find_elements(By.CSS_SELECTOR, "td.agl-count")}
    assert cells["missing"] == 1
    svc.stop()


def test_grade_follow_grades_each_hand_in_as_it_arrives_and_stops_when_none_came(lab_course, tmp_path):
    import subprocess
    import sys

    c = lab_course
    out = tmp_path / "out"
    follow = subprocess.Popen([sys.executable, "-m", "autograder", "grade", "--service", c.svc.url, "--assignment",
                               ASSIGNMENT, "--key", str(c.key_path), "--out", str(out), "--follow", "20"],
                              cwd=ROOT, env={**__import__("os").environ, "AUTOGRAD_LAB_TOKEN": c.staff},
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 300
        r = _submit(_saved(c, tmp_path, "cat", EXAMPLES / "ada.ipynb"), c.tokens["cat"], "--json")
        assert r.returncode == 0, r.stderr
        hid = json.loads(r.stdout)["id"]
        feedback = c.svc.url + f"/api/v1/students/cat/assignments/{ASSIGNMENT}/feedback"
        while True:   # staff read a student's feedback before it is released
            status, answer = call(feedback, c.staff)
            if status == 200 and answer["handin"]["id"] == hid:
                break
            assert follow.poll() is None and time.monotonic() < end, (status, answer, follow.communicate())
            time.sleep(0.2)
        assert answer["report"]["student"] == "cat" and answer["report"]["status"] == "graded"
        _, err = follow.communicate(timeout=120)
    finally:
        if follow.poll() is None:
            follow.kill()
    assert follow.returncode == 0 and "no new hand-in for 20 s: stopped following" in err, err
    assert f"following the hand-ins of {ASSIGNMENT} on {c.svc.url}" in err and "reports: 1 new sent" in err


def test_a_prediction_committed_after_the_hand_in_is_not_part_of_it(lab_course, tmp_path):
    """gus commits exercise 1 before he hands in; fay hands in first and commits afterwards (after the deadline,
    or after reading released feedback): her commit is not part of the notebook she handed in."""
    c = lab_course
    api = c.svc.url + "/api/v1"
    assert call(f"{api}/predictions", c.tokens["gus"], "POST", _body("gus", 1.25))[1]["kind"] == "commit"
    for who in ("gus", "fay"):
        r = _submit(_saved(c, tmp_path, who), c.tokens[who])
        assert r.returncode == 0, r.stderr
    assert call(f"{api}/predictions", c.tokens["fay"], "POST", _body("fay", 1.25))[1]["kind"] == "commit"
    out = tmp_path / "out"
    r = run_cli("grade", "--service", c.svc.url, "--assignment", ASSIGNMENT, "--key", str(c.key_path), "--out",
                str(out), env={"AUTOGRAD_LAB_TOKEN": c.staff})
    assert r.returncode == 0, r.stderr
    assert f"late penalties are the course service's: {out / 'gradebook.csv'} and {out / 'grades.csv'}" in r.stderr
    unseen = r.stderr.split("not handed in: ", 1)[1].splitlines()[0]   # the roster's students with no hand-in
    assert "student(s) of the roster, not graded (never as 0): " in unseen and "hal" in unseen.split(": ")[-1], unseen
    gus = _outcomes(json.loads((out / "reports" / "gus.json").read_text()))["1.predict.grad"]
    fay = _outcomes(json.loads((out / "reports" / "fay.json").read_text()))["1.predict.grad"]
    assert gus["observed"] == "1.25"
    assert (fay["status"], fay["score"]) == ("missing", 0) and "1.25" not in str(fay["observed"])   # her notebook's `...`


def test_a_due_time_moved_earlier_is_noted_in_each_receipt_it_changed_warned_to_staff_and_read_in_the_notebook(
        lab_course, tmp_path, monkeypatch):
    """Issue 46: moving a due time earlier silently made hand-ins late after their receipts and released feedback
    said "on time". Now each hand-in it changed gets a note in its history (once, however often course.toml is read),
    the log warns staff with the list, the class view says so, and the student reads it with lab.feedback()."""
    c = lab_course
    saved = c.config.read_text()
    ada = next(h for h in call(c.svc.url + f"/api/v1/students/ada/assignments/{ASSIGNMENT}/handins",
                               c.tokens["ada"])[1]["handins"] if h["counts"])
    assert ada["why"] == "on time"   # graded, and its feedback released, on time (its history: earlier tests' moves)
    noted = len(ada["history"])
    old_due = _utc(call(c.svc.url + f"/api/v1/students/ada/assignments/{ASSIGNMENT}/handins",
                        c.tokens["ada"])[1]["handins"][0]["due"])
    new_due = _utc(ada["received"]).replace(microsecond=0) - dt.timedelta(minutes=5)
    try:
        c.config.write_text(_toml(new_due, late='"per-day"', penalty_per_day="0.1"))
        mine = call(c.svc.url + f"/api/v1/students/ada/assignments/{ASSIGNMENT}/handins", c.tokens["ada"])[1]
        ada = next(h for h in mine["handins"] if h["id"] == ada["id"])
        assert ada["why"].endswith("1 started day(s) at 10% each, 10% off")
        assert [n["text"] for n in ada["history"][noted:]] == [
            f"the due time moved earlier, from {old_due.isoformat()} to {new_due.isoformat()}: this hand-in, on time "
            f"until then, became {ada['why']}"]
        c.config.write_text(_toml(new_due, late='"per-day"', penalty_per_day="0.1") + "# read again\n")
        staff_view = call(c.svc.url + f"/api/v1/assignments/{ASSIGNMENT}/handins", c.staff)[1]["handins"]
        assert [len(h["history"]) for h in staff_view if h["id"] == ada["id"]] == [noted + 1]   # noted once
        warning = [line for line in c.svc.log.read_text().splitlines() if "moved the due time of" in line][-1]
        changed = [h for h in staff_view if any(new_due.isoformat() in n["text"] for n in h["history"])]
        assert ada["id"] in [h["id"] for h in changed]
        assert re.search(rf"moved the due time of {ASSIGNMENT} earlier: {len(changed)} hand-in\(s\) it made late or "
                         rf"later: \w+ \(hand-in \d+: on time before, [^)]+ late: 1 started day\(s\) at 10% each, 10% "
                         rf"off now\)", warning), warning

        import urllib.request

        req = urllib.request.Request(f"{c.svc.url}/api/v1/assignments/{ASSIGNMENT}/stats",
                                     headers={"Authorization": f"token {c.staff}"})
        with urllib.request.urlopen(req, timeout=60) as r:
            page = r.read().decode()
        assert "A due time moved earlier in course.toml made" in page and "hand-in(s) that count late, or later" in page

        reader = nbformat.v4.new_notebook(cells=_feedback_cells(nbformat.read(_saved(c, tmp_path, "ada"),
                                                                              as_version=4)))
        _run(reader, tmp_path / "ada", c.tokens["ada"], monkeypatch)
        shown = _text(reader.cells[-1]).splitlines()
        assert shown[0].startswith(f"graded hand-in of {ada['received']}: {ada['why']}; score 26 / 26, after the late "
                                   f"penalty 23.4")
        assert shown[1 + noted] == f"{ada['history'][noted]['made']}: {ada['history'][noted]['text']}"

        # moved back later: on time again, and the class view names no one; moved earlier again: noted again
        c.config.write_text(_toml(old_due))
        mine = call(c.svc.url + f"/api/v1/students/ada/assignments/{ASSIGNMENT}/handins", c.tokens["ada"])[1]
        assert [h["why"] for h in mine["handins"] if h["id"] == ada["id"]] == ["on time"]
        with urllib.request.urlopen(req, timeout=60) as r:
            assert "A due time moved earlier" not in r.read().decode()
        c.config.write_text(_toml(new_due, late='"per-day"', penalty_per_day="0.1"))
        mine = call(c.svc.url + f"/api/v1/students/ada/assignments/{ASSIGNMENT}/handins", c.tokens["ada"])[1]
        history = next(h["history"] for h in mine["handins"] if h["id"] == ada["id"])
        assert len(history) == noted + 2 and history[-1]["text"] == history[noted]["text"]
    finally:
        c.config.write_text(saved)
