"""Is the HTML report what a real browser shows (student markup as text), a not-gradable page without a score, and
the self-check's rich view in Jupyter? (The page's parts and its escaping: tests/fast/test_html_views.py.)"""
from __future__ import annotations

import re

from autograder.render.html import to_html

from conftest import ASSIGNMENT, EXAMPLES
from html_fixtures import BAD, Parsed, hostile_report


def test_a_not_gradable_report_says_not_graded_and_shows_no_score(key, worker):
    from autograder.grading.grade import grade_notebook

    report = grade_notebook(EXAMPLES / "ivan.ipynb", key, "ivan", worker=worker)   # a truncated notebook
    assert report.status == "not_gradable" and report.score is None
    html = to_html(report)
    page = Parsed(html)
    assert "Not graded" in page.text and report.reason in page.text and "this is not a 0" in page.text
    assert "student ivan" in page.text
    assert not re.search(r"score \d", page.text) and 'class="agl-score"' not in html and "table" not in page.tags


# ----------------------------------------------------------------------------- in a real browser

def _open(browser, html: str, path):
    from selenium.webdriver.common.by import By

    path.write_text(html, encoding="utf-8")
    browser.get(path.as_uri())
    return browser.find_element(By.TAG_NAME, "body").text


def test_chromium_shows_a_graded_submission(key, browser, tmp_path, worker):
    from selenium.webdriver.common.by import By

    from autograder.grading.grade import grade_notebook

    report = grade_notebook(EXAMPLES / "dev.ipynb", key, "dev", worker=worker)
    failing = next(o for o in report.outcomes if o.check_id == "2.produce.returns")
    assert failing.status == "failed" and failing.expected and failing.oracle
    text = _open(browser, to_html(report), tmp_path / "dev.html")

    assert "student dev" in text
    assert f"x0 = {report.parameters['x0']}" in text and f"k = {report.parameters['k']}" in text
    assert failing.expected in text and f"expected value from: {failing.oracle}" in text
    assert f"why it matters: {failing.why}" in text
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n)
    assert f"score {report.score:g} / {report.max_score:g} · {counts}" in text
    assert counts == "21 passed, 5 failed"

    row = browser.find_element(By.XPATH, "//tr[td/code[string(.)='2.produce.returns']]")
    assert "FAILED" in row.text and "0 / 1" in row.text
    failed = row.find_element(By.CLASS_NAME, "agl-st-failed")
    passed = browser.find_element(By.XPATH, "//tr[td/code[string(.)='1.predict.grad']]//span[contains(@class, 'agl-st')]")
    assert failed.is_displayed() and failed.text == "FAILED" and passed.text == "ok"
    assert failed.value_of_css_property("background-color") != passed.value_of_css_property("background-color")
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0   # nothing fetched


def test_chromium_shows_student_markup_as_text(browser, tmp_path):
    text = _open(browser, to_html(hostile_report()), tmp_path / "hostile.html")
    assert f"student {BAD}" in text and f"got {BAD}" in text
    assert browser.execute_script("return document.querySelectorAll('script, img').length") == 0


# ----------------------------------------------------------------------------- the notebook's view

def test_a_self_check_shows_as_an_html_table_in_jupyter(released, tmp_path, monkeypatch):
    import torch

    from autograder.student.lab import Lab, SelfCheck

    def ex2(x):                     # the classic mix-up: backward() where autograd.grad was asked for
        (x**2 * torch.sin(x)).backward()
        return x.grad

    monkeypatch.chdir(tmp_path)   # the commit records are kept beside the notebook: here
    lab = Lab(ASSIGNMENT, "dev", key=released[0] / "public_key.json")
    result = lab.check("2", namespace={"ex2": ex2, "p2_returns": 1.5, "p2_grad": None})
    html = result._repr_html_()
    page = Parsed(html)
    assert html.startswith('<div class="agl-report" style="') and not {"html", "head", "body"} & set(page.tags)
    assert "table" in page.tags and "th" in page.tags
    assert "2.produce.returns ex2: what autograd.grad returns FAILED 0 / 1" in page.text
    assert "2.predict.returns predicted: what autograd.grad returns FAILED 0 / 1" in page.text
    assert "commit: p2_returns = 1.5, committed " in page.text
    assert "2.predict.grad predicted: x.grad after autograd.grad ok 1 / 1" in page.text
    assert "expected a tuple of 1 item" in page.text and "student dev" in page.text
    # the misconception the wrong value matches, named in the notebook's table and in its text view
    assert "misconception: a bare derivative, not a tuple — torch.autograd.grad returns a tuple" in page.text
    assert result.text.count('misconception: "autograd.grad fills .grad too"') == 1   # x.grad, not p2_grad = None
    assert 'misconception: "a bare derivative, not a tuple" (that thinking gives' in " ".join(result.text.split())
    assert repr(result) == result.text and "2.produce.returns" in repr(result)   # the text view is unchanged
    assert SelfCheck("(self-check of exercise 2 skipped while grading)")._repr_html_() is None


def test_a_check_with_the_placeholder_id_commits_nothing_and_warns_first(released, tmp_path, monkeypatch):
    """The student trial in JupyterLab: predictions worked out for the placeholder id's numbers were committed,
    and then held against the learner's own numbers once the id was set. Until STUDENT_ID is set, a check commits
    no prediction, reveals nothing, and says so first (once)."""
    from autograder.student.lab import Lab

    monkeypatch.chdir(tmp_path)
    lab = Lab(ASSIGNMENT, "your-student-id", key=released[0] / "public_key.json")
    result = lab.check("1", namespace={"p1_returns": None, "p1_grad": 2.0, "ex1": lambda x: (x * x).backward()})
    assert result.record is None and not result.report.commits
    assert [o.status for o in result.report.outcomes if o.kind == "predict"] == ["sealed", "sealed"]
    assert all(o.expected is None for o in result.report.outcomes)
    warning = "STUDENT_ID is still 'your-student-id'"
    assert result.text.count(warning) == 1 and result.text.splitlines()[4].startswith(f"WARNING: {warning}")
    assert "until then, a check commits no prediction and shows no expected value" in " ".join(result.text.split())
    html = result._repr_html_()
    assert html.count(warning) == 1 and html.index(warning) < html.index("<table")
    assert not (tmp_path / ".autograd-lab-commits.json").exists()
