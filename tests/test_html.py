"""Is the HTML report a faithful and safe view of a Report: student text escaped, what a real browser
shows, a not-gradable page without a score, and the self-check's rich view in Jupyter?"""
from __future__ import annotations

import re
import tomllib
from html.parser import HTMLParser


from autograder.render.html import TEMPLATES, to_html, to_html_fragment
from autograder.report import Outcome, Report

from conftest import ASSIGNMENT, EXAMPLES, ROOT

SCRIPT = "<script>alert(1)</script>"
IMG = '"><img src=x onerror=alert(1)>'
BAD = SCRIPT + IMG


BLOCKS = {"p", "div", "section", "header", "main", "h1", "h2", "table", "tr", "td", "th", "dl", "dt", "dd", "ul", "li"}


class Parsed(HTMLParser):
    """An HTML document's tags, attribute names and text (outside <style>, <title> and <script>), with
    a space around each block or cell, as a browser lays them out, and whitespace collapsed."""

    def __init__(self, html: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.attrs: list[str] = []
        self.styles: list[str] = []
        self._text: list[str] = []
        self._inside: list[str] = []
        self.feed(html)
        self.close()
        self.text = " ".join("".join(self._text).split())

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += [name for name, _ in attrs]
        if tag in BLOCKS:
            self._text.append(" ")
        if tag in ("style", "title", "script"):
            self._inside.append(tag)

    def handle_endtag(self, tag):
        if tag in BLOCKS:
            self._text.append(" ")
        if self._inside and self._inside[-1] == tag:
            self._inside.pop()

    def handle_data(self, data):
        if not self._inside:
            self._text.append(data)
        elif self._inside[-1] == "style":
            self.styles.append(data)


def _hostile_report() -> Report:
    """A report whose every student-written field carries markup, plus each optional field a view shows."""
    return Report(
        assignment=ASSIGNMENT, submission=f"{BAD}.ipynb", student=BAD, status="graded", score=1, max_score=5,
        outcomes=(
            Outcome("1.predict.grad", "1", "predicted: x.grad after backward()", "predict", "failed", 0, 1,
                    message=f"p1_grad: expected 2.0, got {BAD}", expected="2.0", observed=BAD,
                    oracle="sympy: diff(x*x, x) at x=1.0", why="backward() writes d(x*x)/dx = 2x into x.grad.",
                    details=(f"warning (information, not graded): UserWarning: {BAD}",)),
            Outcome("1.produce.grad", "1", "ex1: x.grad afterwards", "produce", "error", 0, 1,
                    message=f"ex1(x) raised RuntimeError: {SCRIPT}\x1b[2J", oracle="API contract",
                    why="never shown for an error"),
            Outcome("7.produce.relu", "7", "ex7: relu'(0)", "produce", "passed", 1, 1,
                    convention="relu'(0) = 0: torch picks the subgradient 0 — torch 2.13.0 gives 0.0; sympy's "
                               "diff(Max(0, x), x) gives no number. Graded against torch's value.",
                    version_note="version-sensitive: this behaviour was observed on torch 2.13.0, and this run "
                                 "used torch 2.12.0"),
            Outcome("7.produce.secret", "7", "ex7: the hidden one", "produce", "failed", 0, 1, visibility="hidden",
                    message="HIDDEN-MESSAGE", expected="HIDDEN-EXPECTED", oracle="HIDDEN-ORACLE", why="HIDDEN-WHY",
                    details=("HIDDEN-DETAIL",), version_note="HIDDEN-NOTE"),
            Outcome("7.predict.k", "7", "predicted: k", "predict", "missing", 0, 1, message="p7_k is still ..."),
        ),
        parameters={"x0": 1.0, "k": 3}, notes=(f"2 lines the probe did not write were ignored: {BAD}",),
        versions={"torch": "2.12.0", "torch_key": "2.13.0", "sympy": "1.14.0", "grader": "0.1.0"},
        isolation="none: a self-check observes your code in your own notebook kernel")


def test_student_text_is_escaped_never_markup():
    report = _hostile_report()
    for html in (to_html(report), to_html_fragment(report)):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
        assert "<script" not in html.lower() and "<img" not in html.lower()
        page = Parsed(html)
        assert not {"script", "img", "iframe", "object", "embed", "link", "base"} & set(page.tags)
        assert not [a for a in page.attrs if a.startswith("on")]
        assert f"student {BAD}" in page.text and f"got {BAD}" in page.text   # shown whole, as text
        assert "\x1b" not in html and "\\x1b[2J" in page.text               # control characters made visible


def test_the_page_shows_every_part_of_the_open_report():
    text = Parsed(to_html(_hostile_report())).text
    assert "Your parameters: x0 = 1.0, k = 3" in text
    assert ("torch 2.12.0 (key observed on torch 2.13.0) · sympy 1.14.0 · autograder 0.1.0" in text
            and "sandbox: none: a self-check observes your code" in text)
    assert "score 1 / 5 · 1 passed, 2 failed, 1 error, 1 missing" in text
    assert "Exercise 1" in text and "Exercise 7" in text
    assert f"you {BAD} expected 2.0" in text and "expected value from: sympy: diff(x*x, x) at x=1.0" in text
    assert "why it matters: backward() writes" in text and "never shown for an error" not in text
    assert f"warning (information, not graded): UserWarning: {BAD}" in text
    assert "convention: relu'(0) = 0: torch picks the subgradient 0 — torch 2.13.0 gives 0.0; sympy's" in text
    assert "note: version-sensitive: this behaviour was observed on torch 2.13.0" in text
    assert f"note: 2 lines the probe did not write were ignored: {BAD}" in text
    # a hidden check: its id, title, status and points, nothing else
    assert "7.produce.secret ex7: the hidden one hidden FAILED 0 / 1" in text and "HIDDEN-" not in text
    for status, label in [("failed", "FAILED"), ("error", "ERROR"), ("missing", "missing"), ("passed", "ok")]:
        assert f'<span class="agl-st agl-st-{status}">{label}</span>' in to_html(_hostile_report())


def test_a_not_gradable_report_says_not_graded_and_shows_no_score(key, worker):
    from autograder.grading.grade import grade_notebook

    report = grade_notebook(EXAMPLES / "ivan.ipynb", key, "ivan", worker=worker)   # a truncated notebook
    assert report.status == "not_gradable" and report.score is None
    html = to_html(report)
    page = Parsed(html)
    assert "Not graded" in page.text and report.reason in page.text and "this is not a 0" in page.text
    assert "student ivan" in page.text
    assert not re.search(r"score \d", page.text) and 'class="agl-score"' not in html and "table" not in page.tags


def test_the_fragment_has_no_document_and_its_css_is_scoped():
    html = to_html_fragment(_hostile_report())
    assert html.startswith('<div class="agl-report">') and html.rstrip().endswith("</div>")
    page = Parsed(html)
    assert not {"html", "head", "body", "meta", "title"} & set(page.tags) and "table" in page.tags
    css = re.sub(r"/\*.*?\*/", "", "".join(page.styles), flags=re.S)
    selectors = [s.strip() for rule in css.split("}") if "{" in rule for s in rule.split("{")[0].split(",")]
    assert selectors and all(s.startswith(".agl-report") for s in selectors), selectors


def test_the_templates_ship_with_the_package():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {p for g in globs["autograder.render"] for p in TEMPLATES.parent.glob(g)}
    assert set(TEMPLATES.iterdir()) <= shipped and (TEMPLATES / "page.html.j2") in shipped


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

    row = browser.find_element(By.XPATH, "//tr[td/code[text()='2.produce.returns']]")
    assert "FAILED" in row.text and "0 / 1" in row.text
    failed = row.find_element(By.CLASS_NAME, "agl-st-failed")
    passed = browser.find_element(By.XPATH, "//tr[td/code[text()='1.predict.grad']]//span[contains(@class, 'agl-st')]")
    assert failed.is_displayed() and failed.text == "FAILED" and passed.text == "ok"
    assert failed.value_of_css_property("background-color") != passed.value_of_css_property("background-color")
    assert browser.execute_script("return performance.getEntriesByType('resource').length") == 0   # nothing fetched


def test_chromium_shows_student_markup_as_text(browser, tmp_path):
    text = _open(browser, to_html(_hostile_report()), tmp_path / "hostile.html")
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
    assert html.startswith('<div class="agl-report">') and not {"html", "head", "body"} & set(page.tags)
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
