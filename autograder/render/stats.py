"""render.stats: ClassStats -> the class view: a standalone HTML page (stats.html: tables and plots drawn with
matplotlib as inline SVG; no script, nothing loaded from the network) and the item analysis as CSV. Pure
views of one ClassStats; matplotlib is imported only here, and only to draw.

May import: stdlib, jinja2, markupsafe, matplotlib (lazily), autograder.report, autograder.render.class_stats,
autograder.render.html, autograder.render.gradebook, autograder.render.terminal.
"""
from __future__ import annotations

import csv
import io
import re
from itertools import groupby
from typing import Any

from markupsafe import Markup, escape

from autograder.render.gradebook import cell
from autograder.render.html import environment
from autograder.render.terminal import printable
from autograder.report import STATUS_WORDS, STATUSES, points
from autograder.render.class_stats import ClassStats

PREDICT, PRODUCE = "#0969da", "#bf8700"   # bar colours of prediction and produce checks (and their legend)
ITEM_COLUMNS = ("check", "exercise", "kind", "title", "max_score", "submissions", *STATUSES, "difficulty",
                "discrimination", "misconceptions", "unnamed_wrong", "common_wrong_answers")


def _number(x: float | None, digits: int = 2) -> str:
    return "" if x is None else f"{x:.{digits}f}"


def to_csv(stats: ClassStats) -> str:
    """item-analysis.csv: one row per check (ITEM_COLUMNS): its counts per status among the counted
    submissions, difficulty (share passed) and discrimination (point-biserial, empty when undefined) to 3
    decimals, the named misconceptions by id ("one-pass-only: 12; one-pass-short: 3", 0 counts included) and
    the most common unnamed wrong answers. Text cells are neutralised for spreadsheets and terminals
    (render.gradebook.cell): wrong answers are a submission's text, titles an instructor's."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(ITEM_COLUMNS)
    for c in stats.checks:
        w.writerow([c.check_id, c.exercise, c.kind, cell(c.title), points(c.max_score), c.n,
                    *(c.counts[s] for s in STATUSES), _number(c.difficulty, 3), _number(c.discrimination, 3),
                    "; ".join(f"{m.id}: {m.count}" for m in c.misconceptions), c.unnamed,
                    cell("; ".join(f"{a.answer}: {a.count}" for a in c.wrong_answers))])
    return buf.getvalue()


# ------------------------------------------------------------------------------------------------ plots

def _svg(fig: Any, alt: str) -> Markup:
    """A matplotlib figure as inline SVG markup (text kept as text, no XML prolog, reproducible ids), an image whose
    text alternative is `alt` (its numbers in words, for a screen reader: WCAG 2.1's 1.1.1)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    label = str(escape(printable(alt)))
    return Markup(re.sub(r"<svg ", lambda _: f'<svg role="img" aria-label="{label}" ', text, count=1))   # no \-escapes


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=96)
    fig.set_layout_engine("constrained")
    return fig


def _rc() -> Any:
    import matplotlib

    # text.parse_math off: a "$" in a check's title or a misconception's name is a dollar, never TeX to parse
    return matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": "autograd-lab", "font.size": 9,
                                  "font.family": "DejaVu Sans", "axes.spines.top": False,
                                  "axes.spines.right": False, "text.parse_math": False})


def _label(text: str, limit: int = 60) -> str:
    """A plot label: control characters made visible (SVG cannot hold them), cut to `limit` characters."""
    text = printable(text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def score_plot(stats: ClassStats) -> Markup:
    """The score distribution of the counted submissions: a histogram, one bar per point (or per 1/20 of
    the maximum for more than 40 points)."""
    with _rc():
        fig = _figure(7.5, 2.6)
        ax = fig.add_subplot()
        top = stats.max_score or 1.0
        step = 1.0 if top <= 40 else top / 20
        edges = [i * step - step / 2 for i in range(int(top / step) + 2)]
        ax.hist(stats.scores, bins=edges, color="#57606a", edgecolor="white")
        ax.set_xlim(-step, top + step)
        ax.set_xlabel(f"score (out of {points(top)})")
        ax.set_ylabel("submissions")
        ax.yaxis.get_major_locator().set_params(integer=True)
        if stats.mean is not None:
            ax.axvline(stats.mean, color="#cf222e", linewidth=1.2, linestyle="--", label=f"mean {stats.mean:.1f}")
            ax.legend(frameon=False, loc="upper left")
        counts = {score: stats.scores.count(score) for score in sorted(set(stats.scores))}
        return _svg(fig, f"Histogram of the scores of {len(stats.scores)} counted submissions (out of {points(top)})"
                         + (f", mean {stats.mean:.1f}" if stats.mean is not None else "") + ": "
                         + "; ".join(f"{points(score)}: {n}" for score, n in counts.items()) + ".")


def pass_rate_plot(stats: ClassStats) -> Markup:
    """The share of counted submissions that passed each check: one bar per check (labelled with its id, less
    the exercise), grouped by exercise, predictions then produce checks side by side in each exercise (two
    colours, a legend)."""
    with _rc():
        checks = sorted(stats.checks, key=lambda c: (_exercise_order(stats, c.exercise), c.kind != "predict"))
        fig = _figure(max(7.5, 0.2 * len(checks) + 1.5), 4.4)
        ax = fig.add_subplot()
        xs, x, groups = [], 0.0, []
        for exercise, group in groupby(checks, key=lambda c: c.exercise):
            group = list(group)
            start = x
            for _ in group:
                xs.append(x)
                x += 1
            groups.append(((start + x - 1) / 2, f"ex {exercise}"))
            x += 0.8
        ax.bar(xs, [100 * (c.difficulty or 0.0) for c in checks], width=0.8,
               color=[PREDICT if c.kind == "predict" else PRODUCE for c in checks])
        ax.set_xticks(xs, [_label(c.check_id.split(".", 1)[-1], 28) for c in checks], rotation=90, fontsize=7)
        for at, label in groups:
            ax.text(at, 104, label, ha="center", va="bottom", fontsize=8)
        ax.set_ylim(0, 100)
        ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
        ax.set_ylabel("% passed")
        from matplotlib.patches import Patch

        ax.legend(handles=[Patch(color=PREDICT, label="predict"), Patch(color=PRODUCE, label="produce")],
                  frameon=False, ncols=2, loc="lower left", bbox_to_anchor=(0, 1.06))
        return _svg(fig, "Share of counted submissions that passed each check: " + "; ".join(
            f"{c.check_id} ({c.kind}) {100 * (c.difficulty or 0.0):.0f} %" for c in checks) + ".")


def misconception_plot(stats: ClassStats, most: int = 15) -> Markup | None:
    """The `most` most common named misconceptions, one bar each (an exercise's misconception, its prediction
    and produce checks together: predictions' count blue, produce checks' gold, as in the pass-rate plot),
    labelled "ex N · name" with the total; None when no submission showed one."""
    totals: dict[tuple[str, str], dict[str, Any]] = {}
    for c in stats.checks:
        for m in c.misconceptions:
            if m.count:
                row = totals.setdefault((c.exercise, m.id), {"label": f"ex {c.exercise} · {m.name}", "predict": 0,
                                                             "produce": 0})
                row[c.kind] += m.count
    rows = sorted(totals.values(), key=lambda r: -(r["predict"] + r["produce"]))[:most]
    if not rows:
        return None
    with _rc():
        fig = _figure(7.5, 0.28 * len(rows) + 1.1)
        ax = fig.add_subplot()
        ys = range(len(rows))
        ax.barh(ys, [r["predict"] for r in rows], color=PREDICT, label="in predictions")
        ax.barh(ys, [r["produce"] for r in rows], left=[r["predict"] for r in rows], color=PRODUCE,
                label="in produced values")
        ax.set_yticks(ys, [_label(r["label"]) for r in rows])
        ax.invert_yaxis()
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel("submissions")
        for i, r in enumerate(rows):
            ax.text(r["predict"] + r["produce"], i, f" {r['predict'] + r['produce']}", va="center", fontsize=8)
        ax.legend(frameon=False, ncols=2, loc="lower left", bbox_to_anchor=(0, 1.0))
        return _svg(fig, "The most common named misconceptions, submissions whose failed value matched one: " + "; ".join(
            f"{r['label']}: {r['predict']} in predictions, {r['produce']} in produced values" for r in rows) + ".")


def _exercise_order(stats: ClassStats, exercise: str) -> int:
    order = list(dict.fromkeys(c.exercise for c in stats.checks))
    return order.index(exercise)


def to_html(stats: ClassStats, collusion: str | None = None, links: tuple[tuple[str, str], ...] = ()) -> str:
    """stats.html: the batch's counts (counted, superseded, not gradable: apart, never zeros), the score
    summary and distribution, the pass rate per check (predict and produce side by side per exercise), the
    named misconceptions' counts, then per exercise a table of every check's counts per status, difficulty,
    discrimination, misconceptions and most common unnamed wrong answers, and the not-gradable submissions
    with their reasons; with `collusion` (an address relative to the page), a link to the collusion view. Inline CSS
    and SVG; no script; everything a submission wrote is escaped. `links`: (text, a path relative to the page's)
    of other staff pages, shown under the notes (the course service's overrides page)."""
    return environment().get_template("stats.html.j2").render(
        s=stats, statuses=STATUS_WORDS, status_names=STATUSES, number=_number, links=links,
        exercises=[(ex, list(cs)) for ex, cs in groupby(stats.checks, key=lambda c: c.exercise)],
        plots={"scores": score_plot(stats) if stats.scores else None,
               "pass_rate": pass_rate_plot(stats) if stats.checks else None,
               "misconceptions": misconception_plot(stats)},
        colours={"predict": PREDICT, "produce": PRODUCE}, collusion=collusion)
