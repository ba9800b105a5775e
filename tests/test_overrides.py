"""Staff overrides of a check's score (issue 48): a batch's `grade --overrides FILE.csv` (applied, reported, refused
with the file's line and the fix), and the course service's overrides (`autograder course override`, the staff
form with CSRF protection): kept across regrades, flagged when a re-release changes the check, refused to students,
carried into the export CSV and nbgrader's gradebook.db, and shown in the student's feedback."""
from __future__ import annotations

import csv
import json
import shutil

from conftest import EXAMPLES, run_cli

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
    good = _csv(tmp_path / "overrides.csv", ["ben", BEN_WRONG, "1", "a fair appeal: None is what I meant"],
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
        {"machine_score": 0.0, "why": "a fair appeal: None is what I meant"}
    assert "adjusted" not in _outcome(ben, "1.predict.returns") and _report(out, "ada")["score"] == 26.0
    zed = _report(out, "zed")
    assert (zed["status"], zed["score"]) == ("not_gradable", None)   # never a score made of overrides
    rows = {r["student"]: r for r in csv.DictReader((out / "gradebook.csv").open())}
    assert (rows["ben"]["score"], rows["ben"][BEN_WRONG]) == ("21", "failed, adjusted by staff to 1")
    assert f"adjusted by staff: {BEN_WRONG} 0 -> 1" in p.stdout
    page = (out / "feedback" / "ben.html").read_text()
    assert "adjusted by staff: a fair appeal: None is what I meant (the grader gave 0 / 1;" in page

    # graded again (forced): the override holds; without --overrides the batch's reports are the machine's again
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path), "--overrides",
                str(_csv(good, ["ben", BEN_WRONG, "1", "a fair appeal: None is what I meant"])), "--force")
    assert p.returncode == 0, p.stderr
    assert f"overrides: 1 of 1 from {good} applied: ben {BEN_WRONG} = 1" in p.stdout
    assert _report(out, "ben")["score"] == 21.0
    p = run_cli("grade", str(subs), "--out", str(out), "--key", str(key_path))
    assert p.returncode == 0, p.stderr
    assert "(3 unchanged since the last run, kept" in p.stdout
    ben = _report(out, "ben")
    assert ben["score"] == 20.0 and "adjusted" not in _outcome(ben, BEN_WRONG)
