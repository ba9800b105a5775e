"""render.collusion: the collusion view's vocabulary and its views. `Collusion` holds, for one assignment's counted
submissions, the pairs of students where one's wrong predictions equal the values at the other's point (with the
chance of so many matches by chance) and the pairs whose produce functions are the same syntax tree after names,
literals and formatting are normalised. It is evidence for staff to look at, never a score. Pure views of one
Collusion: the CSV (collusion.csv) and the page (collusion.html; no script). The numbers are made by
autograder.authoring.collusion.

May import: stdlib, jinja2, markupsafe, autograder.report, autograder.render.html, autograder.render.gradebook.
"""
from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass
from typing import Any, Literal

from autograder.render.gradebook import cell
from autograder.render.html import environment
from autograder.report import STATUS_WORDS

SCHEMA = "autograd-lab/collusion"
VERSION = 1
ALPHA = 0.01   # a pair is "unlikely by chance" when the class-wide chance of its count is at most this
NOT_MEANT = ("What a match does not mean: it says that A's wrong answers are right at B's point. It is no evidence "
             "against B, both may have copied from a third student, and it is never a score.")
EVIDENCE_ONLY = ("Evidence only: nothing here changes a score. A match is a reason to look at two notebooks and "
                 "talk with the students, not a finding of copying.")
PairEvidence = Literal["unlikely by chance", "consistent with chance"]


@dataclass(frozen=True)
class Match:
    """One prediction check where `student`'s wrong prediction (`value`, as the report shows it) equals, within the
    check's prediction tolerance, the right value at the other student's point (`there`, from the key). `chance`:
    the probability (0..1) that this wrong value equals the right value at a random classmate's point, over the
    parameter grid."""

    check_id: str
    value: str
    there: str
    chance: float


@dataclass(frozen=True)
class PredictionPair:
    """An ordered pair: `student`'s wrong predictions match the right values at `source`'s point (so `student`'s
    answers may have been worked out for `source`'s parameters: copied from `source`, or both from a third).
    `opportunities`: `student`'s wrong predictions of checks whose answer depends on the parameters (each could
    match by chance); `expected`: how many matches chance gives on average (the sum of their chances);
    `chance`: the probability of at least len(matches) matches by chance for this pair (a Poisson-binomial tail);
    `class_chance`: that times the number of ordered pairs compared (Bonferroni, at most 1): the chance that some
    pair of the class shows as many. `evidence`: "unlikely by chance" when `class_chance` <= ALPHA."""

    student: str
    source: str
    submission: str
    source_submission: str
    matches: tuple[Match, ...]
    opportunities: int
    expected: float
    chance: float
    class_chance: float
    evidence: PairEvidence


@dataclass(frozen=True)
class SharedFunction:
    """A produce function (`function`, of exercise `exercise`) that two students wrote as the same syntax tree after
    normalising names, literals and formatting; `nodes`: the size of that tree; `shared_by`: how many counted
    students wrote it so (2: a form more share is a usual solution or mistake, and is not listed)."""

    function: str
    exercise: str
    nodes: int
    shared_by: int


@dataclass(frozen=True)
class CellPair:
    """An unordered pair of students (`students`, sorted; their `submissions`) with produce functions that are the same
    after normalising and that few classmates wrote so (`functions`). Which of them wrote it first is not known."""

    students: tuple[str, str]
    submissions: tuple[str, str]
    functions: tuple[SharedFunction, ...]


@dataclass(frozen=True)
class Collusion:
    """The collusion view of one assignment: `students` counted submissions were compared (`pairs_compared` ordered
    pairs for predictions), `prediction_pairs` (most unlikely first) and `cell_pairs` (evidence first); `cells_read`:
    how many submissions' produce cells were read (0 when no notebook was at hand); `notes`: what was left out."""

    assignment: str
    students: int
    pairs_compared: int
    prediction_pairs: tuple[PredictionPair, ...]
    cell_pairs: tuple[CellPair, ...]
    cells_read: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The JSON-native form, with "schema" and "v"."""
        return {"schema": SCHEMA, "v": VERSION, "evidence_only": EVIDENCE_ONLY, **asdict(self)}

    @property
    def flagged(self) -> tuple[PredictionPair, ...]:
        """The prediction pairs whose evidence is "unlikely by chance"."""
        return tuple(p for p in self.prediction_pairs if p.evidence == "unlikely by chance")


COLUMNS = ("kind", "student", "other", "direction", "submission", "other_submission", "matches", "checks",
           "opportunities", "expected_by_chance", "chance", "class_chance", "evidence", "score_effect")


def _p(x: float) -> str:
    """A probability as the views write it: "0.0123", "3.2e-07"."""
    return f"{x:.3g}" if x >= 1e-3 or x == 0 else f"{x:.2g}"


def to_csv(view: Collusion) -> str:
    """collusion.csv: one row per pair (COLUMNS). Prediction pairs: `student` is whose wrong predictions matched,
    `other` whose point they fit (`direction` says so in words), `checks` lists "check: value = the value at other's
    point"; produce-cell pairs: `checks` lists the shared functions ("ex2 (31 nodes, written so by 2)"), `evidence` is "the
    same code" and the chance columns are empty. `score_effect` is "none: evidence only" on every row. Text cells are neutralised for spreadsheets
    (render.gradebook.cell): ids and values come from submissions."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n", quoting=csv.QUOTE_ALL)   # a ';'-separated spreadsheet splits no cell
    w.writerow(COLUMNS)
    for p in view.prediction_pairs:
        w.writerow(["predictions", cell(p.student), cell(p.source),
                    cell(f"{p.student}'s wrong predictions are right at {p.source}'s point"),
                    cell(p.submission), cell(p.source_submission), len(p.matches),
                    cell("; ".join(f"{m.check_id}: {m.value} = {m.there}" for m in p.matches)), p.opportunities,
                    f"{p.expected:.3f}", _p(p.chance), _p(p.class_chance), p.evidence, "none: evidence only"])
    for c in view.cell_pairs:
        w.writerow(["produce cells", cell(c.students[0]), cell(c.students[1]), "either way (the same code)",
                    cell(c.submissions[0]), cell(c.submissions[1]), len(c.functions),
                    cell("; ".join(f"{f.function} ({f.nodes} nodes, written so by {f.shared_by})" for f in c.functions)),
                    "", "", "", "", "the same code", "none: evidence only"])
    return buf.getvalue()


def to_html(view: Collusion) -> str:
    """collusion.html: what the view is and that it changes no score, the model in a sentence, the pairs of wrong
    predictions (most unlikely first, with each match) and of produce functions. Inline CSS; no script; everything a
    submission wrote is escaped."""
    return environment().get_template("collusion.html.j2").render(v=view, p=_p, alpha=ALPHA, evidence_only=EVIDENCE_ONLY,
                                                                     not_meant=NOT_MEANT, statuses=STATUS_WORDS)
