"""Pages everyone can read (issue 46): the feedback page, the in-notebook report and the class view pass axe-core's
WCAG 2.1 A and AA rules in Chromium (axe-core from npm, installed by scripts/setup.sh into .venv/axe and injected
by the test); status badges carry words, not colour alone; the class view's charts have text alternatives; the
keyboard reaches every control of the sign-in page and of the class view."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from autograder.keyfile import load_key
from autograder.render.class_stats import class_stats
from autograder.render.html import to_html, to_html_fragment
from autograder.render.stats import to_html as stats_html
from autograder.report import STATUS_WORDS, Report
from autograder.service.app import LOGIN_PAGE

from conftest import ROOT

AXE = ROOT / ".venv" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
WCAG21AA = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
ASSIGNMENTS = ("01-backward-vs-grad", "08-calculus-vs-autograd", "12-hooks-and-processes", "13-source-contract")


def reports(assignment: str) -> list[Report]:
    return [Report.from_dict(json.loads(p.read_text())) for p in sorted((ROOT / "tests" / "golden" / assignment)
                                                                        .glob("*.json"))]


def notebook_page(report: Report) -> str:
    """The in-notebook report as a learner's browser gets it: the fragment inside a page of its own."""
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(report.assignment)}'
            f'</title></head><body><main>{to_html_fragment(report)}</main></body></html>')


@pytest.fixture(scope="module")
def axe_source() -> str:
    if not AXE.is_file():
        pytest.fail(f"the accessibility tests need axe-core at {AXE}: run scripts/setup.sh (npm install --prefix "
                    f".venv/axe axe-core@4.14.1)", pytrace=False)
    return AXE.read_text()


def violations(browser, path: Path, axe_source: str) -> list[dict]:
    """axe-core's WCAG 2.1 A/AA violations of the page at `path`, each {id, help, nodes: [html ...]}."""
    browser.get(path.as_uri())
    browser.execute_script(axe_source)
    browser.set_script_timeout(120)
    return browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {runOnly: {type: 'tag', values: arguments[0]}}).then(r => done(r.violations.map(v => "
        "({id: v.id, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.html.slice(0, 200))}))));", WCAG21AA)


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_feedback_pages_and_notebook_reports_pass_axe_cores_wcag_21_aa_rules(assignment, browser, axe_source,
                                                                            tmp_path):
    found = {}
    for report in reports(assignment):   # every status, misconceptions, conventions, not-gradable reports
        for kind, page in (("feedback", to_html(report)), ("notebook", notebook_page(report))):
            path = tmp_path / f"{report.student}-{kind}.html"
            path.write_text(page, encoding="utf-8")
            bad = violations(browser, path, axe_source)
            if bad:
                found[path.name] = bad
    assert not found, json.dumps(found, indent=1)[:4000]


def test_status_badges_carry_words_not_colour_alone(browser, tmp_path):
    ben = next(r for r in reports("01-backward-vs-grad") if r.student == "ben")
    path = tmp_path / "ben.html"
    path.write_text(to_html(ben), encoding="utf-8")
    browser.get(path.as_uri())
    words = {w.mark for w in STATUS_WORDS.values()}
    badges = browser.execute_script("return [...document.querySelectorAll('.agl-st')].map(e => e.textContent.trim())")
    # each check's badge is its status word; the header's counts say the number and the word ("6 failed")
    assert {"ok", "FAILED"} <= set(badges) and all(b in words or re.fullmatch(r"\d+ [a-z ]+", b) for b in badges), \
        badges


def test_the_class_view_passes_axe_its_charts_say_their_numbers_and_the_keyboard_reaches_it_all(browser, axe_source,
                                                                                              tmp_path):
    assignment = "01-backward-vs-grad"
    stats = class_stats(reports(assignment), assignment,
                        load_key(ROOT / "assignments" / assignment / "public_key.json"))
    path = tmp_path / "stats.html"
    path.write_text(stats_html(stats), encoding="utf-8")
    assert violations(browser, path, axe_source) == []
    browser.get(path.as_uri())
    alts = browser.execute_script("return [...document.querySelectorAll('svg[role=img]')].map(e => "
                                  "e.getAttribute('aria-label'))")
    assert len(alts) == 3 and alts[0].startswith(f"Histogram of the scores of {stats.counted} counted submissions")
    assert alts[1].startswith("Share of counted submissions that passed each check: 1.predict.returns (predict) ")
    assert alts[2].startswith("The most common named misconceptions") and " in predictions, " in alts[2]
    assert reached_by_tab(browser) == focusable(browser) == [f"A:{n}" for n in "123456"]   # the exercises' links
    browser.execute_script("document.querySelector('a[href=\"#exercise-4\"]').click()")
    assert browser.execute_script("return location.hash") == "#exercise-4"


def test_the_sign_in_page_passes_axe_and_the_keyboard_reaches_its_field_and_button(browser, axe_source, tmp_path):
    path = tmp_path / "login.html"
    path.write_text(LOGIN_PAGE.format(action="/api/v1/login", next="", note=""), encoding="utf-8")
    assert violations(browser, path, axe_source) == []
    browser.get(path.as_uri())
    assert reached_by_tab(browser) == focusable(browser) == ["token", "signin"]


def focusable(browser) -> list[str]:
    """Every control of the page a keyboard must reach, in document order (by id, or by tag and text)."""
    return browser.execute_script(
        "return [...document.querySelectorAll('a[href], button, input:not([type=hidden]), select, textarea, "
        "[tabindex]:not([tabindex=\"-1\"]), details > summary')].filter(e => !e.disabled).map(e => e.id || "
        "(e.tagName + ':' + e.textContent.trim().slice(0, 40)))")


def reached_by_tab(browser, most: int = 400) -> list[str]:
    """The controls Tab visits from the top of the page, once round, in order."""
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    browser.execute_script("document.activeElement && document.activeElement.blur(); window.focus();")
    seen: list[str] = []
    for _ in range(most):
        ActionChains(browser).send_keys(Keys.TAB).perform()
        now = browser.execute_script("const e = document.activeElement; return (!e || e === document.body) ? null : "
                                     "(e.id || (e.tagName + ':' + e.textContent.trim().slice(0, 40)))")
        if now is None or (seen and now == seen[0]):
            break
        seen.append(now)
    return seen


def test_a_charts_text_alternative_holds_any_text_as_text():
    """An attack trial (issue 46): a misconception name with a backslash (`\\delta`) made the class view a 500, since
    the text alternative went through re.sub as a replacement; quotes and markup must stay text."""
    from autograder.render.stats import _figure, _rc, _svg

    with _rc():
        fig = _figure(2, 1)
        fig.add_subplot().bar([0], [1])
        svg = str(_svg(fig, 'a bare \\delta f, \\g<0> "quoted" <script>x</script> \x07'))
    head = svg[:svg.index(">")]
    assert 'aria-label="a bare \\delta f, \\g&lt;0&gt; &#34;quoted&#34; &lt;script&gt;x&lt;/script&gt; \\x07"' in head, \
        head
