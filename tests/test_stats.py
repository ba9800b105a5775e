"""The class view: are a batch's numbers right (by hand on a few Report fixtures), and does a generated class of
200 with planted misconceptions come out of `grade --stats` with exactly the planted counts, in stats.json, the
item analysis and the page Chromium shows?"""
from __future__ import annotations

import csv
import importlib.util
import json
import math

import pytest

from autograder.report import Diagnosis, Outcome, Report
from autograder.render.class_stats import class_stats, point_biserial, wrong_answer

from conftest import ROOT, run_cli


def outcome(cid: str, status: str, observed: str | None = None, expected: str | None = None, named: str | None = None,
            kind: str = "predict") -> Outcome:
    d = Diagnosis(named, named.replace("-", " "), "feedback", "x", observed or "", "x=1.0") if named else None
    return Outcome(cid, cid[0], f"title {cid}", kind, status, 1.0 if status == "passed" else 0.0, 1.0,
                   observed=observed, expected=expected, misconception=d)


def report(student: str, statuses: list[tuple], **kw) -> Report:
    outs = tuple(outcome(*s) for s in statuses)
    return Report("01-a", f"{student}.ipynb", student, "graded", sum(o.score for o in outs), 2.0, outs, **kw)


def test_counts_difficulty_and_discrimination_are_those_worked_out_by_hand():
    reports = [
        report("a", [("1.p", "passed"), ("1.q", "passed")]),
        report("b", [("1.p", "passed"), ("1.q", "failed", "3.0", "2.0")]),
        report("c", [("1.p", "failed", "4.0", "2.0", "twice"), ("1.q", "failed", "6.0", "2.0")]),
        report("d", [("1.p", "failed", "None", "2.0", "twice"), ("1.q", "missing")]),
        report("d-old", [("1.p", "passed"), ("1.q", "passed")], superseded_by="d.ipynb"),
        Report("01-a", "e.ipynb", "e", "not_gradable", None, 2.0, reason="e.ipynb is not valid JSON"),
    ]
    s = class_stats(reports)
    assert (s.submissions, s.counted, s.superseded, s.not_gradable) == (6, 4, 1, 1)
    assert s.scores == (0.0, 0.0, 1.0, 2.0) and s.mean == 0.75 and s.median == 0.5
    assert s.not_graded == (("e.ipynb", "e.ipynb is not valid JSON"),)   # apart, never a 0
    p, q = s.checks
    assert p.counts == {"passed": 2, "failed": 2, "error": 0, "missing": 0, "timeout": 0} and p.difficulty == 0.5
    # item p = (1, 1, 0, 0), rest = q's score = (1, 0, 0, 0): r = 0.57735 (= 1/sqrt(3))
    assert math.isclose(p.discrimination, 1 / math.sqrt(3))
    assert [(m.id, m.count) for m in p.misconceptions] == [("twice", 2)] and p.unnamed == 0
    assert q.counts["missing"] == 1 and q.unnamed == 2
    assert [(a.answer, a.count) for a in q.wrong_answers] == [("1.5 × the answer", 1), ("3 × the answer", 1)]
    assert s.misconception_counts() == {"1.p": {"twice": 2}}


def test_a_check_nobody_varies_on_has_no_discrimination_and_numbers_group_by_their_ratio():
    assert point_biserial([1.0, 1.0, 1.0], [0.0, 1.0, 2.0]) is None
    assert point_biserial([1.0, 0.0], [1.0, 1.0]) is None
    assert point_biserial([1.0, 0.0, 1.0, 0.0], [3.0, 1.0, 3.0, 1.0]) == 1.0
    assert wrong_answer(outcome("1.p", "failed", "tensor(12.)", "tensor(6.)")) == "2 × the answer"
    assert wrong_answer(outcome("1.p", "failed", "2.001", "2.0")) == "within 1 % of the answer"
    assert wrong_answer(outcome("1.p", "failed", "(2.0, None)", "(2.0, 0.0)")) == "(2.0, None)"
    assert wrong_answer(outcome("1.p", "failed", "3.0", "0.0")) == "3.0"
    assert wrong_answer(outcome("1.p", "failed", "(4.11,)", "(3.0,)")) == "1.37 × the answer"   # a tuple too
    assert wrong_answer(outcome("1.p", "failed", "tensor([2., -4.], dtype=float64)",
                                "tensor([1., -2.], dtype=float64)")) == "2 × the answer"
    assert wrong_answer(outcome("1.p", "failed", "tensor([2., 4.])", "tensor([1., 1.])")) == "tensor([2., 4.])"


def test_reports_of_several_assignments_must_be_told_apart():
    a = report("a", [("1.p", "passed")])
    b = Report("02-b", "b.ipynb", "b", "graded", 0.0, 1.0, (outcome("1.p", "failed"),))
    with pytest.raises(ValueError, match="2 assignments"):
        class_stats([a, b])
    assert class_stats([a, b], "02-b").counted == 1


# ----------------------------------------------------------------------------- a generated class of 200

def _class_batch():
    spec = importlib.util.spec_from_file_location("class_batch", ROOT / "examples" / "class_batch.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def graded_class(released, tmp_path_factory):
    """200 generated submissions of 01 with planted misconceptions, graded with --stats: (planted, out folder)."""
    folder = tmp_path_factory.mktemp("class")
    planted = _class_batch().make_class("01-backward-vs-grad", 200, folder / "subs", seed=12)
    out = folder / "out"
    p = run_cli("grade", str(folder / "subs"), "--out", str(out), "--key", str(released[1]), "--stats", timeout=1200)
    assert p.returncode == 0, p.stderr
    return planted, out


def test_the_class_view_counts_exactly_what_the_generator_planted(graded_class):
    planted, out = graded_class
    stats = json.loads((out / "stats.json").read_text())
    assert stats["schema"] == "autograd-lab/stats" and stats["submissions"] == 200
    assert stats["not_gradable"] == planted["not_gradable"] == 5 and stats["counted"] == 195
    named = {c["check_id"]: {m["id"]: m["count"] for m in c["misconceptions"] if m["count"]} for c in stats["checks"]}
    assert {c: m for c, m in named.items() if m} == planted["misconceptions"]
    assert sum(sum(m.values()) for m in planted["misconceptions"].values()) > 500
    assert any(".produce." in c for c in planted["misconceptions"])
    for c in stats["checks"]:
        assert {s: n for s, n in c["counts"].items() if n} == planted["statuses"][c["check_id"]], c["check_id"]
    rows = {r["check"]: r for r in csv.DictReader((out / "item-analysis.csv").open())}
    assert len(rows) == 26 and rows["4.produce.after_k"]["submissions"] == "195"
    k = planted["misconceptions"]["4.predict.after_k"]
    assert f"one-pass-short: {k['one-pass-short']}" in rows["4.predict.after_k"]["misconceptions"]
    assert float(rows["4.predict.after_k"]["difficulty"]) == pytest.approx(
        planted["statuses"]["4.predict.after_k"]["passed"] / 195, abs=5e-4)


def test_chromium_shows_the_planted_counts_and_the_plots(graded_class, browser):
    from selenium.webdriver.common.by import By

    planted, out = graded_class
    browser.get((out / "stats.html").as_uri())
    assert browser.find_element(By.ID, "counted").text.startswith("195")
    assert browser.find_element(By.ID, "not-gradable").text.startswith("5")
    shown = {}
    for li in browser.find_elements(By.CSS_SELECTOR, "tr.agl-item li.agl-misc"):
        check = li.find_element(By.XPATH, "./ancestor::tr").get_attribute("data-check")
        count = int(li.find_element(By.TAG_NAME, "strong").text)
        assert count == int(li.get_attribute("data-count")) and li.is_displayed()
        if count:
            shown.setdefault(check, {})[li.get_attribute("data-misconception")] = count
    assert shown == planted["misconceptions"]
    row = browser.find_element(By.ID, "check-4.predict.after_k")
    cells = {td.get_attribute("data-status"): int(td.text) for td in row.find_elements(By.CSS_SELECTOR, "td.agl-count")}
    assert {s: n for s, n in cells.items() if n} == planted["statuses"]["4.predict.after_k"]
    for plot in ("plot-scores", "plot-pass-rate", "plot-misconceptions"):
        svg = browser.find_element(By.CSS_SELECTOR, f"#{plot} svg")
        assert svg.size["width"] > 300 and svg.size["height"] > 100, plot
    labels = browser.find_element(By.CSS_SELECTOR, "#plot-misconceptions svg").text
    totals: dict = {}   # an exercise's misconception, its prediction and produce checks together
    for c, ms in planted["misconceptions"].items():
        for m, n in ms.items():
            totals[(c.split(".")[0], m)] = totals.get((c.split(".")[0], m), 0) + n
    (exercise, mid), total = max(totals.items(), key=lambda t: t[1])
    name = next(m["name"] for c in json.loads((out / "stats.json").read_text())["checks"] for m in c["misconceptions"]
                if c["exercise"] == exercise and m["id"] == mid)
    assert f"ex {exercise} · {name}" in labels and str(total) in labels   # the most common one, with its total
    assert len(browser.find_elements(By.CSS_SELECTOR, "#not-graded li")) == 5
    assert not browser.find_elements(By.TAG_NAME, "script")


def test_autograder_stats_rewrites_the_view_from_the_reports(graded_class, released):
    _, out = graded_class
    before = json.loads((out / "stats.json").read_text())
    (out / "stats.json").unlink()
    p = run_cli("stats", str(out), "--key", str(released[1]))
    assert p.returncode == 0, p.stderr
    assert "195 counted submissions" in p.stdout and "5 not gradable (apart, never 0)" in p.stdout
    assert json.loads((out / "stats.json").read_text()) == before
    times = sum(m["count"] for c in before["checks"] for m in c["misconceptions"])
    kinds = len({m["id"] for c in before["checks"] for m in c["misconceptions"] if m["count"]})
    assert f"a named misconception {times} times ({kinds} different)" in p.stdout, p.stdout
    p = run_cli("stats", str(out / "nothing-here"))
    assert p.returncode == 2 and "no reports in" in p.stderr


def test_autograder_stats_leaves_out_what_is_not_a_usable_report_and_escapes_the_rest(graded_class, released,
                                                                                      tmp_path):
    import os

    _, out = graded_class
    forged = tmp_path / "forged"
    (forged / "reports").mkdir(parents=True)
    names = sorted((out / "reports").glob("*.json"))[:4]
    for i, p in enumerate(names):
        d = json.loads(p.read_text())
        if i == 0:
            d["score"] = float("nan")             # not finite
        elif i == 1:
            d["max_score"] = "26"                 # not a number
        elif i == 2:
            d["submission"] = "'=quote.ipynb"     # the gradebook writes it as it is: still this batch's
            d["outcomes"][0].update(status="failed", misconception={
                "id": "x", "name": "$a$ <script>alert(1)</script>", "feedback": "f", "formula": "f", "value": "v",
                "where": "w"})
        (forged / "reports" / p.name).write_text(json.dumps(d))
    (forged / "reports" / "deep.json").write_text("[" * 100_000)
    os.mkfifo(forged / "reports" / "fifo.json")   # reading it would never end
    p = run_cli("stats", str(forged), "--key", str(released[1]), timeout=120)
    assert p.returncode == 0, p.stderr
    assert "4 file(s) in" in p.stderr and "deep.json, fifo.json" in p.stderr
    assert "2 counted submissions" in p.stdout
    page = (forged / "stats.html").read_text()
    assert "<script>" not in page and "$a$ &lt;script&gt;" in page
    other = json.loads(released[1].read_text())
    other["title"] += " (another release)"
    p = run_cli("stats", str(out), "--key", str(_write(tmp_path / "other.json", other)))
    assert p.returncode == 2 and "not the key these reports were graded with" in p.stderr


def _write(path, data):
    from autograder.keyfile import digest_of

    path.write_text(json.dumps({**data, "digest": digest_of(data)}))
    return path
