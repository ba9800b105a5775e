"""Is the HTML report a faithful and safe view of a Report: student text escaped, every part of the open
report on the page, the notebook fragment's CSS scoped, the templates shipped? (What Chromium shows, and the
view in Jupyter: tests/test_html.py.)"""
from __future__ import annotations

import re
import tomllib

from autograder.render.html import TEMPLATES, to_html, to_html_fragment

from conftest import ROOT
from html_fixtures import BAD, Parsed, hostile_report


def test_student_text_is_escaped_never_markup():
    report = hostile_report()
    for html in (to_html(report), to_html_fragment(report)):
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "&#34;&gt;&lt;img src=x onerror=alert(1)&gt;" in html or '"&gt;&lt;img src=x onerror=alert(1)&gt;' in html
        assert "<script" not in html.lower() and "<img" not in html.lower()
        page = Parsed(html)
        assert not {"script", "img", "iframe", "object", "embed", "link", "base"} & set(page.tags)
        assert not [a for a in page.attrs if a.startswith("on")]
        assert f"student {BAD}" in page.text and f"got {BAD}" in page.text   # shown whole, as text
        assert "\x1b" not in html and "\\x1b[2J" in page.text               # control characters made visible


def test_the_page_shows_every_part_of_the_open_report():
    text = Parsed(to_html(hostile_report())).text
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
        assert f'<span class="agl-st agl-st-{status}">{label}</span>' in to_html(hostile_report())


# The style properties JupyterLab 4.6's sanitizer keeps in a `style` attribute of an untrusted output (its
# apputils Sanitizer's allowedStyles["*"], read from the installed jlab_core bundle), of those report.css uses.
KEPT = {"font", "color", "background", "padding", "border-radius", "max-width", "margin", "font-size", "font-weight",
        "white-space", "overflow-wrap", "border", "border-collapse", "width", "table-layout", "text-align",
        "border-bottom", "vertical-align", "border-left", "border-left-color", "display", "grid-template-columns",
        "gap", "padding-left", "margin-top", "border-left-width", "box-shadow", "background-color", "border-width",
        "border-style", "border-color"}


def test_the_fragment_has_no_document_and_is_styled_only_in_style_attributes():
    """Issue 29: opened untrusted, JupyterLab drops a <style> block: the fragment's look is in style attributes
    of properties the sanitizer keeps, and each cell's text-align is its own (JupyterLab right-aligns td)."""
    html = to_html_fragment(hostile_report())
    assert html.startswith('<div class="agl-report" style="font: 15px/1.45') and html.rstrip().endswith("</div>")
    page = Parsed(html)
    assert not {"html", "head", "body", "meta", "title", "style"} & set(page.tags) and "table" in page.tags
    used = {d.split(":")[0].strip() for s in re.findall(r'style="([^"]*)"', html) for d in s.split(";") if d.strip()}
    assert used and used <= KEPT, used - KEPT
    cells = re.findall(r"<td[^>]*>", html)
    assert cells and all("text-align: " in c for c in cells), [c for c in cells if "text-align" not in c][:2]
    assert '<span class="agl-st agl-st-failed" style="display: inline-block;' in html   # the badge keeps its colour
    assert '<code class="agl-id" style="' in html and ">1.<wbr>produce.<wbr>grad</code>" in html   # breaks at dots


def test_the_templates_ship_with_the_package():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    shipped = {p for g in globs["autograder.render"] for p in TEMPLATES.parent.glob(g)}
    assert set(TEMPLATES.iterdir()) <= shipped and (TEMPLATES / "page.html.j2") in shipped
