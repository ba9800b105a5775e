"""Fixtures of the HTML report's tests (tests/test_html.py, tests/fast/test_html_views.py): markup a submission
may write, a parser that reads a page as a browser lays it out, and a report carrying that markup in every field."""
from __future__ import annotations

from html.parser import HTMLParser

from conftest import ASSIGNMENT

from autograder.report import Outcome, Report

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


def hostile_report() -> Report:
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
