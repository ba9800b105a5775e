"""The class view: does a generated class of 200 with planted misconceptions come out of `grade --stats` with
exactly the planted counts, in stats.json, the item analysis and the page Chromium shows? (The numbers worked out
by hand: tests/fast/test_class_stats.py.)"""
from __future__ import annotations

import csv
import importlib.util
import json

import pytest


from conftest import ROOT, run_cli


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


def test_the_collusion_view_flags_no_one_in_a_class_of_200_honest_learners_with_planted_misconceptions(graded_class,
                                                                                                       released):
    """Misconceptions planted at known counts, wrong answers scaled, typical wrong produce code written alike by many:
    chance matches at classmates' points happen, and none is unlikely by chance; no pair of produce functions."""
    _, out = graded_class
    p = run_cli("collusion", str(out), "--key", str(released[1]), "--submissions", str(out.parent / "subs"))
    assert p.returncode == 0, p.stderr
    view = json.loads((out / "collusion.json").read_text())
    assert view["students"] == 195 and view["pairs_compared"] == 195 * 194 and view["cells_read"] == 195
    assert len(view["prediction_pairs"]) > 20   # chance matches, each shown with its chance
    assert [p for p in view["prediction_pairs"] if p["evidence"] != "consistent with chance"] == []
    assert all(p["class_chance"] > 0.01 for p in view["prediction_pairs"])
    assert view["cell_pairs"] == []


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
