"""render.html: Report -> HTML. `to_html` is a whole standalone page (a feedback page for a student
or staff: inline CSS, no JavaScript, nothing fetched from the network); `to_html_fragment` is the same
body with CSS scoped to it, for Jupyter (`SelfCheck._repr_html_`). Pure views of a Report, rendered
with jinja2 with autoescaping on: everything a submission wrote is shown as text, never as markup.
The templates are in render/templates/; the status badges' words and colours come from report.STATUS_WORDS.

May import: stdlib, jinja2, markupsafe (jinja2's), css_inline, autograder.report, autograder.render.terminal.
"""
from __future__ import annotations

import re
from functools import cache
from itertools import groupby
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup, escape

from autograder.render.terminal import printable
from autograder.report import STATUS_WORDS, Report, points, torch_line, torch_note

TEMPLATES = Path(__file__).resolve().with_name("templates")

def _shown(value: Any) -> Any:
    """Every `{{ value }}` goes through here before it is escaped: control characters a submission
    could put into a message are made visible ("\\x1b"), as in the terminal view."""
    if isinstance(value, str) and not hasattr(value, "__html__"):   # not markup the templates made
        return printable(value)
    return value


@cache
def environment() -> Environment:
    """The jinja2 environment of every page: render/templates/, autoescaping on, every value through
    `_shown`, StrictUndefined (a template's typo is an error, not an empty string)."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                      finalize=_shown, trim_blocks=True, lstrip_blocks=True)
    env.filters["points"] = points
    env.filters["breakable"] = _breakable
    env.filters["code"] = _code_spans
    return env


def _code_spans(text: str) -> Markup:
    """`text` escaped, with each `span` between backticks (how messages quote code: "`x.grad`") set as <code>
    rather than shown with its backticks; the span's text is escaped like the rest."""
    parts = re.split(r"`([^`\n]{1,300})`", printable(str(text)))
    return Markup("").join(Markup("<code>{}</code>").format(p) if i % 2 else escape(p) for i, p in enumerate(parts))


def _breakable(text: str) -> Markup:
    """`text` escaped, with a line-break opportunity (<wbr>) after each dot: a narrow column breaks a check id
    between its parts ("1.predict.<wbr>returns"), never inside a word."""
    return Markup("<wbr>").join(escape(printable(p)) for p in re.split(r"(?<=\.)", str(text)))


def _context(report: Report) -> dict[str, Any]:
    return {
        "r": report,
        "versions": {k: report.versions.get(k) or "?" for k in ("torch", "torch_key", "sympy", "grader")},
        "exercises": [(ex, list(outs)) for ex, outs in groupby(report.outcomes, key=lambda o: o.exercise)],
        "counts": [(s, n) for s, n in report.counts().items() if n],
        "labels": {status: w.mark for status, w in STATUS_WORDS.items()},
        "statuses": STATUS_WORDS,
        "torch_note": torch_note(report),
        "torch_line": torch_line(report.versions),
    }


def to_html(report: Report) -> str:
    """The open report as a whole standalone HTML page (UTF-8): header (assignment, submission,
    student), the student's parameters, versions and sandbox line, the score with counts per status,
    then per exercise a table of checks with, for anything not passed, what you gave, what was
    expected, where that expectation comes from and why it matters; a not-gradable report says
    "Not graded", why, and that it is not a 0. Inline CSS only; no script, no network."""
    return environment().get_template("page.html.j2").render(_context(report))


def to_html_fragment(report: Report) -> str:
    """The same body as `to_html`, without <html>/<head>, in one <div class="agl-report">, for a Jupyter output
    cell: report.css is inlined into each element's `style` attribute (css_inline), since a notebook opened
    untrusted (another machine, a fresh JupyterLab, a TA's computer) has its <style> blocks dropped by
    JupyterLab's and Notebook's sanitizers, which keep `style` attributes of the properties report.css uses; and
    an inline style beats JupyterLab's own table rules (`.jp-RenderedHTMLCommon td {text-align: right}`)."""
    import css_inline

    return css_inline.inline_fragment(environment().get_template("fragment.html.j2").render(_context(report)),
                                      _report_css())


@cache
def _report_css() -> str:
    """report.css, rendered once: it depends only on report.STATUS_WORDS."""
    return environment().get_template("report.css").render(statuses=STATUS_WORDS)
