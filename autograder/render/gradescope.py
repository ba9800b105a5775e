"""render.gradescope: Report -> Gradescope's results.json (a dict). Pure.

May import: stdlib, autograder.report, autograder.render.terminal.

The format is Gradescope's published autograder specification, "Autograder Specifications",
https://gradescope-autograders.readthedocs.io/en/latest/specs/ (source: the gradescope/autograder_samples
repository, docs/specs.md; sections "Output format", "Controlling Test Case Visibility", "Controlling
standard output visibility", "Test case status" and "Output String Formatting"). Gradescope runs
`run_autograder`, which must leave /autograder/results/results.json; this module makes its content.

The mapping, and why:

- `score`: the report's score, hidden checks included (Gradescope shows a student the total only once
  no test of the submission is hidden any more; see below). `execution_time`: the report's seconds,
  as a whole number (the specification's example is an integer of seconds).
- `output` (`output_format: "md"`): a summary: the assignment, the student id the submission was
  graded as (it seeds the parameters), the parameters, the versions, the sandbox used, the points
  and the status counts of the visible checks, and the report's notes. While hidden checks exist it
  gives the points of the visible checks only and says how many hidden checks (and points) are
  shown when grades are published: the summary never tells what the hidden checks scored.
- `visibility: "visible"` at the top; every test sets its own. `stdout_visibility: "hidden"`: the
  grader's printed log (which includes the whole score) is for course staff only.
- `tests`: one per check (Outcome), in the report's order: `name` "<check id> · <title>",
  `number` the check id, `score`, `max_score`, `status` and `tags` (exercise, kind, our status).
  Gradescope knows two statuses, "passed" and "failed": our `passed` is "passed"; `failed`, `error`,
  `missing` and `timeout` are "failed", and the test's `output` says which of them it was and what
  that means. `output` (`output_format: "md"`) gives what was checked, what was expected and from
  which oracle (sympy, the reference torch run, the API contract), what was observed, why it
  matters, the misconception its wrong value matches (named, with its feedback), the convention (torch
  versus sympy) and a torch-version note where the check has them, and extra lines (warnings, which are information and never cost points).
- A public check is `visibility: "visible"`. A hidden check is `"after_published"` (shown only when
  course staff publish the grades), and its output holds only its status and points: never the
  expected value, the oracle, the observed value, the message, the reason or the details, even when
  the Outcome given here carries them.
- A `not_gradable` report (for example a truncated notebook, or a fault of the grader) has no
  score in our model, but Gradescope needs a number ("score: optional, but required if not on each
  test case"), so `score` is 0.0 and `tests` is empty (a row of per-check zeros would look like a
  graded result). The `output` starts with the heading "NOT GRADED", gives the reason, and says in
  words that this 0 is not a grade; `extra_data.autograd_lab.status` is "not_gradable" so that an
  export can tell it from a real 0. It is never a silent 0.

Markdown safety: everything a submission can influence (messages, observed values, exception texts,
notes, the file name and student id) is shown in code spans or fenced code blocks whose fence is
longer than any run of backticks in the text, so it cannot end the fence, open HTML or add
emphasis; control characters are shown as visible escapes (render.terminal.printable). The
instructor's prose (titles, "why", oracles, conventions) is escaped for markdown.
"""
from __future__ import annotations

import re
from typing import Any

from autograder.render.terminal import printable
from autograder.report import STATUS_WORDS, Outcome, Report, points, torch_line, torch_note

VISIBILITY = {"public": "visible", "hidden": "after_published"}
MEANING = {status: w.meaning for status, w in STATUS_WORDS.items()}
_MD_SPECIAL = re.compile(r"([\\`*_\[\]~|#])")


def _plural(n: float, word: str) -> str:
    return f"{points(n)} {word}" + ("" if n == 1 else "s")


def _text(s: str) -> str:
    """Instructor prose as one line of markdown text: markdown punctuation backslash-escaped and
    `<`, `>`, `&` written as entities (so no HTML and no emphasis can start)."""
    s = " ".join(printable(s).split())
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", s)


def _longest_run(s: str, ch: str) -> int:
    return max((len(m) for m in re.findall(re.escape(ch) + "+", s)), default=0)


def _code(s: str) -> str:
    """`s` as one inline code span (newlines become spaces): fenced by more backticks than any run
    inside it, so that nothing in it can end the span."""
    s = " ".join(printable(s).replace("\t", " ").split("\n")).strip() or " "
    fence = "`" * (_longest_run(s, "`") + 1)
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


def _block(s: str) -> str:
    """`s` as a fenced code block (a fence of backticks longer than any run inside it, at least 3)."""
    fence = "`" * max(3, _longest_run(s, "`") + 1)
    return f"{fence}text\n{printable(s).rstrip()}\n{fence}"


def _value(s: str) -> str:
    """A short one-line value as a code span; anything longer or on several lines as a block."""
    return _code(s) if "\n" not in s and len(s) <= 100 else "\n\n" + _block(s) + "\n"


def check_output(o: Outcome) -> str:
    """The markdown shown for one check. For a hidden check: its status and points only."""
    head = f"**Status: {MEANING[o.status]}** · {points(o.score)} / {_plural(o.max_score, 'point')}"
    if o.status != "passed":
        head += " (Gradescope shows every status but passed as failed)"
    if o.adjusted is not None:   # staff's override: its reason, and the grader's own score beside it
        head += f"\n\n**{_text(o.adjusted.line(o.max_score)[:1].upper() + o.adjusted.line(o.max_score)[1:])}**"
    if o.visibility != "public":
        return head + "\n\nThis check is hidden: only its status and points are shown."
    parts = [head]
    if o.message:
        parts.append(_block(o.message))
    items = []
    if o.expected is not None:
        items.append(f"- **Expected:** {_value(o.expected)}")
    if o.oracle:
        items.append(f"- **Expected value from:** {_text(o.oracle)}")
    if o.observed is not None:
        label = "Your prediction" if o.kind == "predict" else "Observed"
        items.append(f"- **{label}:** {_value(o.observed)}")
    if o.misconception:
        m = o.misconception
        items.append(f"- **Misconception:** **{_text(m.name)}**: {_text(m.feedback)} ({_text(m.evidence)})")
    if o.why:
        items.append(f"- **Why it matters:** {_text(o.why)}")
    if o.convention:
        items.append(f"- **Convention (torch and calculus differ here):** {_text(o.convention)}")
    if o.version_note:
        items.append(f"- **Torch version note:** {_text(o.version_note)}")
    if o.commit:   # it holds the learner's own values: a code span, so that nothing in it becomes a link
        items.append(f"- **Commit (predicted before the answer was shown):** {_code(o.commit)}")
    if items:
        parts.append("\n".join(items))
    if o.details:
        parts.append("**Details** (information; warnings never cost points):\n\n" + _block("\n".join(o.details)))
    return "\n\n".join(parts)


def _test(o: Outcome) -> dict[str, Any]:
    return {
        "name": f"{o.check_id} · {o.title}",
        "name_format": "text",
        "number": o.check_id,
        "score": float(o.score),
        "max_score": float(o.max_score),
        "status": "passed" if o.status == "passed" else "failed",
        "output": check_output(o),
        "output_format": "md",
        "tags": [f"exercise {o.exercise}", o.kind, o.status],
        "visibility": VISIBILITY.get(o.visibility, "after_published"),
    }


def _context(report: Report) -> list[str]:
    lines = [f"- Student id {_code(report.student)} (it chooses your parameters) · submission {_code(report.submission)}"]
    if report.parameters:
        lines.append("- Your parameters: " + ", ".join(_code(f"{k} = {v}") for k, v in report.parameters.items()))
    v = report.versions
    run = f"{_text(torch_line(v))} (key observed on torch " if "torch" in v else "(key observed on torch "
    lines.append(f"- {run}{_text(v.get('torch_key', '?'))}) · sympy {_text(v.get('sympy', '?'))} · "
                 f"autograd-lab {_text(v.get('grader', '?'))}")
    if report.isolation:
        lines.append(f"- Sandbox: {_text(report.isolation)}")
    return lines


def summary_output(report: Report) -> str:
    """The markdown of the top-level `output` (see the module docstring)."""
    title = f"## {_text(report.assignment)} · autograd-lab"
    if report.status == "not_gradable":
        return "\n\n".join([
            "# NOT GRADED",
            f"{title}\n\nThis submission could not be graded, so it has **no score**. Gradescope needs a "
            f"number and shows 0, but **this 0 is not a grade for your work**.",
            "**Why it was not graded:**\n\n" + _block(report.reason or "no reason was recorded"),
            "If the reason is a problem with your file, fix it and submit again; otherwise ask course staff, "
            "who can see the autograder's log.",
            "\n".join(_context(report)),
        ])
    visible = [o for o in report.outcomes if o.visibility == "public"]
    hidden = [o for o in report.outcomes if o.visibility != "public"]
    counts = {s: sum(1 for o in visible if o.status == s) for s in MEANING}
    got, of = sum(o.score for o in visible), sum(o.max_score for o in visible)
    if hidden:
        score = (f"**Visible checks: {points(got)} / {_plural(of, 'point')}** · {len(hidden)} hidden "
                 f"check{'s' if len(hidden) != 1 else ''} worth {_plural(sum(o.max_score for o in hidden), 'point')} "
                 f"{'are' if len(hidden) != 1 else 'is'} graded too: their results, and your total, are shown when "
                 f"course staff publish the grades.")
    else:
        score = f"**Score: {points(got)} / {_plural(of, 'point')}**"
    tally = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    parts = [title, score + (f"\n\nVisible checks: {tally}." if tally else ""), "\n".join(_context(report))]
    if torch_note(report):
        parts.append(f"**Note:** {_text(torch_note(report))}")
    if report.notes:
        parts.append("**Notes**\n\n" + _block("\n".join(f"- {n}" for n in report.notes)))
    parts.append("Each check below shows what was expected, where that expectation comes from, what was "
                 "observed and why it matters. Statuses: " + "; ".join(MEANING.values()) + ".")
    return "\n\n".join(parts)


def to_results(report: Report) -> dict[str, Any]:
    """Gradescope's results.json content for one Report (JSON-native; see the module docstring)."""
    graded = report.status == "graded"
    return {
        "score": float(report.score) if graded and report.score is not None else 0.0,
        "execution_time": max(0, round(report.seconds)),
        "output": summary_output(report),
        "output_format": "md",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "extra_data": {"autograd_lab": {
            "status": report.status, "assignment": report.assignment, "submission": report.submission,
            "student": report.student, "score": report.score, "max_score": report.max_score,
            "key_digest": report.key_digest, **({"reason": report.reason} if not graded else {}),
        }},
        "tests": [_test(o) for o in report.outcomes] if graded else [],
    }
