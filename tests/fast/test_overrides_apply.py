"""An override is a visible adjustment of a real report (tests/golden: the grader's reports of the example
submissions): staff's score counts, the grader's outcome stays beside it, applying never stacks, a not-gradable report
gets no score from overrides, and a check's digest follows its definition, not the release's secret."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from autograder.grading.overrides import Override, apply, check_digest, current, machine, problem
from autograder.keyfile import load_key
from autograder.report import Report

ROOT = Path(__file__).resolve().parents[2]
BEN = ROOT / "tests" / "golden" / "01-backward-vs-grad" / "ben.json"
KEY = ROOT / "assignments" / "01-backward-vs-grad" / "public_key.json"


def _ben() -> Report:
    return Report.from_dict(json.loads(BEN.read_text()))


def _o(check: str, score: float | None, why: str = "a fair appeal", student: str = "ben") -> Override:
    return Override(student, check, score, why, "prof", "2026-12-07T13:00:00+00:00")


def test_staffs_score_counts_the_graders_outcome_stays_and_applying_again_never_stacks():
    ben = _ben()
    assert (ben.score, next(o for o in ben.outcomes if o.check_id == "2.predict.returns").score) == (20.0, 0.0)
    once, used = apply(ben, [_o("2.predict.returns", 1), _o("1.predict.returns", 0.5, student="Ben")])
    assert once.score == 21.5 and len(used) == 2   # ids that differ only in case are one student
    two = next(o for o in once.outcomes if o.check_id == "2.predict.returns")
    assert (two.status, two.score, two.adjusted.machine_score, two.adjusted.why) == ("failed", 1.0, 0.0, "a fair appeal")
    assert apply(once, [_o("2.predict.returns", 1), _o("1.predict.returns", 0.5)])[0] == once
    assert apply(once, [])[0].to_dict() == machine(once).to_dict() == ben.to_dict()
    assert Report.from_dict(json.loads(json.dumps(once.to_dict()))) == once
    assert "adjusted" not in ben.to_dict()["outcomes"][0]   # a report without overrides is as it was


def test_the_last_override_of_a_check_stands_and_a_clear_gives_it_back_to_the_grader():
    given = [_o("2.predict.returns", 1), _o("2.predict.returns", 0.5, "half"), _o("1.predict.returns", 1)]
    assert {k: o.score for k, o in current(given).items()} == {("ben", "2.predict.returns"): 0.5,
                                                               ("ben", "1.predict.returns"): 1}
    assert apply(_ben(), given)[0].score == 21.5
    cleared = [*given, _o("2.predict.returns", None, "withdrawn")]
    assert apply(_ben(), cleared)[0].score == 21.0 and [o.check_id for o in apply(_ben(), cleared)[0].adjusted()] \
        == ["1.predict.returns"]


def test_a_not_gradable_report_gets_no_score_from_overrides():
    broken = replace(_ben(), status="not_gradable", score=None, outcomes=(), reason="not a notebook")
    assert apply(broken, [_o("2.predict.returns", 1)]) == (broken, ())


def test_what_an_override_may_be_and_a_checks_digest():
    key = load_key(KEY)
    assert problem(key, "2.predict.returns", 1, "fair") == ""
    assert problem(key, "2.predict.returns", 1.5, "fair").startswith("the score 1.5 is outside 0..1")
    assert problem(key, "2.predict.returns", -1, "fair").startswith("the score -1 is outside 0..1")
    assert problem(key, "2.predict.returns", 1, "  ").startswith("an override needs a reason")
    assert problem(key, "2.predict.nope", 1, "fair").startswith("01-backward-vs-grad has no check '2.predict.nope'")
    check = next(c for c in key.checks if c.id == "2.predict.returns")
    assert check_digest(check) == check_digest(replace(check)) != check_digest(replace(check, why=check.why + "!"))
    assert check_digest(check) != check_digest(replace(check, points=2.0))


def test_a_csv_saved_by_excel_with_semicolons_or_tabs_is_read_and_a_wrong_header_says_the_separator(tmp_path):
    import pytest

    from autograder.grading.overrides import OverrideError, read_csv

    key = load_key(KEY)
    when = "2026-12-07T13:00:00+00:00"
    files = {
        "semicolons.csv": "student;check;score;why\nben;2.predict.returns;0,5;half: a fair appeal\n",
        "excel.csv": "sep=;\r\nstudent;check;score;why\r\nben;2.predict.returns;1;fair, by hand\r\n",
        "tabs.tsv": "student\tcheck\tscore\twhy\nben\t1.predict.returns\t0,5\thalf\n",
        "commas.csv": 'student,check,score,why\nben,2.predict.returns,0.5,"half, on appeal"\n',
    }
    got = {}
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        got[name] = [(o.student, o.check, o.score, o.why, o.where) for o in
                     read_csv(tmp_path / name, key, "prof", when)]
    assert got == {
        "semicolons.csv": [("ben", "2.predict.returns", 0.5, "half: a fair appeal", f"{tmp_path / 'semicolons.csv'}, line 2")],
        "excel.csv": [("ben", "2.predict.returns", 1.0, "fair, by hand", f"{tmp_path / 'excel.csv'}, line 3")],
        "tabs.tsv": [("ben", "1.predict.returns", 0.5, "half", f"{tmp_path / 'tabs.tsv'}, line 2")],
        "commas.csv": [("ben", "2.predict.returns", 0.5, "half, on appeal", f"{tmp_path / 'commas.csv'}, line 2")],
    }
    (tmp_path / "comma.csv").write_text("student,check,score,why\nben,2.predict.returns,\"0,5\",half\n")
    with pytest.raises(OverrideError) as e:   # a decimal comma only where ',' does not separate the columns
        read_csv(tmp_path / "comma.csv", key, "prof", when)
    assert f"{tmp_path / 'comma.csv'}, line 2: the score '0,5' of ben 2.predict.returns is not a number" in str(e.value)
    (tmp_path / "empty.csv").write_text("student;check;score;why\nben;2.predict.returns;;fair\n")
    with pytest.raises(OverrideError) as e:
        read_csv(tmp_path / "empty.csv", key, "prof", when)
    assert str(e.value).endswith(f"{tmp_path / 'empty.csv'}, line 2 (ben, 2.predict.returns): give a score (points "
                                 "from 0 to 1)")
    (tmp_path / "short.csv").write_text("sep=;\nstudent;check;points;why\nben;2.predict.returns;1;fair\n")
    with pytest.raises(OverrideError) as e:
        read_csv(tmp_path / "short.csv", key, "prof", when)
    assert str(e.value) == (f"{tmp_path / 'short.csv'}, line 2: no column score (read as separated by semicolons): "
                            "the header line must name the columns student, check, score, why (and, if you like, who), "
                            "separated by commas, semicolons or tabs")
