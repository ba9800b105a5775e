"""render.terminal: Report -> plain text for a terminal or a notebook. Pure.

May import: stdlib, autograder.report.
"""
from __future__ import annotations

import textwrap

from autograder.report import STATUS_WORDS, Outcome, Report, points, torch_line, torch_note

# Control characters a submission could put in a message (terminal escapes that clear the screen or
# fake a score) are shown as visible escapes instead.
_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0, 9), *range(11, 32), 127]}
# ... and so are the C1 controls and Unicode's invisible formatting characters that reorder or hide text in a
# terminal or a spreadsheet (the bidirectional overrides and isolates, zero-width marks: "Trojan Source").
_CONTROL |= {c: f"\\u{c:04x}" for c in [*range(0x80, 0xA0), 0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F,
                                        *range(0x202A, 0x202F), *range(0x2066, 0x206A), 0xFEFF]}


def duration(seconds: float) -> str:
    """A length of time in words, to its two largest units: "4 d 10 h", "3 h 20 min", "12 min", "45 s"; the minutes
    too where a day's hours are 0 ("1 d 0 h 59 min", not "1 d 0 h" for nearly 25 hours); under a second, to one
    significant figure ("0.5 s", not "0 s")."""
    if 0 < seconds < 1:
        return f"{seconds:.1g} s"
    s = int(seconds)
    days, hours, minutes = s // 86400, s % 86400 // 3600, s % 3600 // 60
    if days:
        return f"{days} d {hours} h" + (f" {minutes} min" if not hours and minutes else "")
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min" if minutes else f"{s} s"


def printable(text: str) -> str:
    """`text` with control characters other than newline and tab made visible ("\\x1b"), and so are the bytes of a
    name that is not UTF-8 ("\\xff"; a lone surrogate from elsewhere: "\\udcff"), so that any view can print it."""
    text = text.translate(_CONTROL)
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        try:
            return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return text.encode("utf-8", "backslashreplace").decode("utf-8")

def outcome_lines(o: Outcome, width: int = 100, id_width: int = 22, title_width: int = 46) -> list[str]:
    """One line per outcome (id, title, status, points), then for anything but a pass the detail:
    what you produced, what was expected and from which oracle, and why it matters (the "why"
    only for failed outcomes: for an error the exception is what matters)."""
    title = o.title if len(o.title) <= title_width else o.title[: title_width - 1] + "…"
    head = (f"{o.check_id:<{id_width}}  {title:<{title_width}}  {STATUS_WORDS[o.status].mark:<8} "
            f"{points(o.score)} / {points(o.max_score)}")
    lines = [head]
    wrap = lambda s, indent="    ": textwrap.wrap(s, width, initial_indent=indent, subsequent_indent=indent + "  ")
    if o.adjusted is not None:   # staff's word, shown for a hidden check too (it says nothing of the answer)
        lines += wrap(o.adjusted.line(o.max_score))
    if o.visibility == "hidden":
        return lines
    if o.status != "passed":
        lines += wrap(o.message)
        if o.observed is not None and o.expected is not None and not (o.observed in o.message and o.expected in o.message):
            lines += wrap(f"you: {o.observed}    expected: {o.expected}")
        if o.oracle:
            lines += wrap(f"expected value from: {o.oracle}")
        if o.misconception:
            m = o.misconception
            lines += wrap(f"misconception: \"{m.name}\" ({m.evidence}). {m.feedback}")
        if o.why and o.status == "failed":
            lines += wrap(f"why it matters: {o.why}")
    if o.convention:
        lines += wrap(f"convention: {o.convention}")
    if o.version_note:
        lines += wrap(f"note: {o.version_note}")
    if o.commit:
        lines += wrap(f"commit: {o.commit}")
    for d in o.details:
        lines += wrap(d)
    return lines


def render(report: Report, width: int = 100) -> str:
    """The whole open report as text: header with the student's parameters and the versions, one
    block per check, notes, and a summary line ("score 20 / 26 · 20 passed, 4 failed")."""
    out = [f"{report.assignment} · {report.submission} · student {report.student}"]
    if report.parameters:
        out.append("your parameters: " + ", ".join(f"{k} = {v}" for k, v in report.parameters.items()))
    v = report.versions
    out.append(f"{torch_line(v)} (key observed on torch {v.get('torch_key', '?')}) · "
               f"sympy {v.get('sympy', '?')} · autograder {v.get('grader', '?')}")
    if report.isolation:
        out.append(f"sandbox: {report.isolation}")
    if report.graded_by:
        out.append(f"graded by: {report.graded_by}")
    if torch_note(report):
        out.append(f"NOTE: {torch_note(report)}")
    for n in report.id_notes():   # whose notebook this is: above everything it decides
        out += textwrap.wrap("WARNING: " + n, width, subsequent_indent="         ")
    if report.status == "not_gradable":
        out += ["", "NOT GRADED: " + report.reason, "No score was given: this is not a 0."]
        return printable("\n".join(out))
    out.append("")
    current = None
    id_width = max((len(o.check_id) for o in report.outcomes), default=10)
    title_width = min(50, max((len(o.title) for o in report.outcomes), default=10))
    for o in report.outcomes:
        if o.exercise != current:
            current = o.exercise
            out.append(f"Exercise {o.exercise}")
        out += ["  " + line for line in outcome_lines(o, width - 2, id_width, title_width)]
    for n in report.other_notes():
        out += textwrap.wrap("note: " + n, width, subsequent_indent="      ")
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n)
    sealed = report.sealed_points()
    waiting = (f" ({points(sealed)} point{'' if sealed == 1 else 's'} sealed: judged once the exercise's predictions are committed)"
               if sealed else "")
    adjusted = report.adjusted()
    by_staff = (f" · {len(adjusted)} check{'' if len(adjusted) == 1 else 's'} adjusted by staff" if adjusted else "")
    out += ["", f"score {points(report.score or 0)} / {points(report.max_score)} · {counts}{waiting}{by_staff}"]
    return printable("\n".join(out))
