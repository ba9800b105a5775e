"""report: the canonical record of one graded submission (Outcome, Report), its JSON form, and the status
vocabulary every view uses. Pure data; every view (terminal, notebook, HTML, CSV, Gradescope) is a
function of a Report.

May import: stdlib.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

Status = Literal["passed", "failed", "error", "missing", "timeout", "sealed"]
SubmissionStatus = Literal["graded", "not_gradable"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "error", "missing", "timeout")   # what a grade holds
# "sealed" is a self-check's only: a prediction written down, judged once it is committed (never in a grade)


@dataclass(frozen=True)
class StatusWord:
    """How every view shows a check status: the `mark` (terminal, notebook and HTML badge text: colour is
    never the only signal); for HTML the badge's `colour` and `background`, the `accent` of its row's left
    edge and the `tint` of its detail row (CSS colours, None for none); and its `meaning` in words."""

    mark: str
    colour: str
    background: str
    accent: str | None
    tint: str | None
    meaning: str


STATUS_WORDS: dict[str, StatusWord] = {
    "passed": StatusWord("ok", "#116329", "#dafbe1", None, None, "passed"),
    "failed": StatusWord("FAILED", "#a40e26", "#ffebe9", "#cf222e", "#fff8f7",
                         "failed — a wrong value, state or exception"),
    "error": StatusWord("ERROR", "#953800", "#fff1e5", "#bc4c00", "#fffaf5",
                        "error — the code raised an exception where a value was expected"),
    "missing": StatusWord("missing", "#424a53", "#eaeef2", "#8c959f", None,
                          "missing — not attempted (a `...` placeholder, an undefined name, or NotImplementedError)"),
    "timeout": StatusWord("TIMEOUT", "#6639ba", "#fbefff", "#8250df", None,
                          "timeout — a call ran past its time limit and was stopped"),
    "sealed": StatusWord("sealed", "#0550ae", "#ddf4ff", "#54aeff", None,
                         "sealed — written down, and judged once it is committed (run the exercise's check cell in "
                         "the notebook)"),
}


def installed_torch() -> str:
    """The version of the torch this process would import, without importing it (importlib.metadata);
    "not installed" if there is none. Every report states a torch: a not-gradable one the grader's."""
    from importlib import metadata

    try:
        return metadata.version("torch").split("+")[0]
    except metadata.PackageNotFoundError:
        return "not installed"


def torch_note(report: Report) -> str | None:
    """What every view says at the top when the run's torch is not the key's reference release, else None."""
    run, ref = report.versions.get("torch"), report.versions.get("torch_key")
    if not run or not ref or run == ref or report.status != "graded":
        return None
    return (f"This run used torch {run}; the expected values come from sympy and from a reference run on torch "
            f"{ref}. Checks marked version-sensitive say where your torch may behave differently.")


def torch_line(versions: dict[str, str]) -> str:
    """The run's torch as every view writes it: "torch 2.13.0, CUDA not available" ("torch ?" when unknown)."""
    cuda = versions.get("cuda")
    return f"torch {versions.get('torch') or '?'}" + (f", CUDA {cuda}" if cuda else "")


def points(x: float) -> str:
    """Points as every view writes them: "4", "0.5"."""
    return f"{x:g}"
SCHEMA = "autograd-lab/report"
VERSION = 1


# How the notes about a notebook's identity begin (autograder.grading.identity writes them).
ID_NOTES = ("STUDENT_ID is still", "the notebook says STUDENT_ID", "graded as its STUDENT_ID")


@dataclass(frozen=True)
class Diagnosis:
    """The named misconception a failed check's value matches (autograder.judging.judge): its `id` (unique in the
    exercise) and `name`, the `feedback` for the learner, the value that mental model leads to (`formula`,
    the spec's text, and `value`, shown at the point) and `where` (that point's arguments, "x=1.5, k=3")."""

    id: str
    name: str
    feedback: str
    formula: str
    value: str
    where: str

    FORMULA_CHARS = 40   # a longer formula (the spec's sympy text) is left out of `evidence`: the value says it

    @property
    def evidence(self) -> str:
        """Why the value is taken for this misconception, in words: "that thinking gives diff(x**3, x) = 1.6875
        at x=0.75, k=3, which is your value"; the formula only where it is short and not the value itself
        ("that thinking gives None, which is your value"); at a point not shown (a graded run's fresh point),
        the formula alone."""
        if not self.value:
            return f"your value is what {self.formula if len(self.formula) <= self.FORMULA_CHARS else 'that thinking'} gives there"
        if self.formula == self.value and re.fullmatch(r"[A-Z]\w*(Error|Exception|Warning|Interrupt|Exit)", self.value):
            return f"that thinking ends in {self.value}, as yours did"   # an exception class: predicted or raised
        if self.formula == self.value or len(self.formula) > self.FORMULA_CHARS:
            return f"that thinking gives {self.value}, which is your value"
        return f"that thinking gives {self.formula} = {self.value} at {self.where}, which is your value"


@dataclass(frozen=True)
class Adjustment:
    """Staff changed this check's score (an override: autograder.grading.overrides): the outcome's `score` is
    theirs, and this keeps the machine's (`machine_score`, points), who (`by`, a staff user name), when (`when`, ISO
    8601 UTC) and why (`why`, for the student). The outcome's status stays the machine's: an override changes points,
    never what the grader observed."""

    machine_score: float
    by: str
    when: str
    why: str

    def line(self, max_score: float) -> str:
        """How every view says it: "adjusted by staff: <why> (the grader gave 0 / 1; prof, 2026-12-07 13:00 UTC)"."""
        when = self.when[:16].replace("T", " ") + " UTC" if len(self.when) >= 16 else self.when
        return (f"adjusted by staff: {self.why} (the grader gave {points(self.machine_score)} / {points(max_score)}; "
                f"{self.by}, {when})")


@dataclass(frozen=True)
class Outcome:
    """The result of one check for one submission.

    `message` is one line (what was called and what differed); `expected`/`observed` are short
    renderings, `oracle` names where the expectation came from (sympy; reference torch X run;
    API contract), `why` says in one line why it matters, `details` hold extra lines
    (per point, warnings). `convention` names a convention where torch and sympy differ and shows
    both values; `version_note` flags a version-sensitive check graded on another torch version
    than the one it was observed on. `commit` (predictions) says which value was committed before the
    answer was shown, and when, and whether the final cell differs ("revised after the answer was shown").
    `misconception` names the misconception a failed value matches, unambiguously, with its feedback.
    `adjusted`: staff overrode the score (then `score` is staff's and the Adjustment keeps the machine's); None
    otherwise, and then the JSON form has no "adjusted" key (reports without overrides are as they were).
    Hidden checks keep `expected`, `oracle`, `details`, `convention` and `misconception` empty.
    """

    check_id: str
    exercise: str
    title: str
    kind: Literal["predict", "produce"]
    status: Status
    score: float
    max_score: float
    visibility: Literal["public", "hidden"] = "public"
    message: str = ""
    expected: str | None = None
    oracle: str | None = None
    observed: str | None = None
    why: str | None = None
    details: tuple[str, ...] = ()
    convention: str | None = None
    version_note: str | None = None
    commit: str | None = None
    misconception: Diagnosis | None = None
    adjusted: Adjustment | None = None

    def to_dict(self) -> dict[str, Any]:
        """The JSON-native form of the outcome (as dataclasses.asdict gives it, without "adjusted" when None)."""
        out = {f: getattr(self, f) for f in _OUTCOME_FIELDS}
        out["details"] = list(self.details)
        out["misconception"] = None if self.misconception is None else dict(vars(self.misconception))
        if self.adjusted is None:
            del out["adjusted"]
        else:
            out["adjusted"] = dict(vars(self.adjusted))
        return out


@dataclass(frozen=True)
class Report:
    """One submission's grading. `score` is None when `status` is "not_gradable" (never 0); it is the sum of the
    outcomes' scores, staff's where an outcome is `adjusted` (an override).

    `parameters` is the student's own point; `versions` holds "torch" (the run; for a not-gradable
    report, the grader's), "cuda" ("available" or "not available": torch.cuda.is_available() in the run; a
    not-gradable report has none), "torch_key" (the key's reference run), "sympy" and "grader"; `seconds` is
    wall time. A batch sets `fingerprint` (the submission's content, the key and the grader version it
    was made from), `modified` (the file's time, information only) and, when the batch has several graded
    submissions of one student, `superseded_by` on those that do not count (staff chose another one), or, until
    staff choose, `choose_among` on each of them (the student's other submissions; none of them counts yet).
    `commits` holds, per exercise id, the commit record (see autograder.judging.commit) its predictions were
    judged with. `released_key`: the key digest the notebook records it was released with, when that is not the key
    it was graded with (the assignment was released again since; the notebook's claim, information only).
    """

    assignment: str
    submission: str
    student: str
    status: SubmissionStatus
    score: float | None
    max_score: float
    outcomes: tuple[Outcome, ...] = ()
    reason: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    versions: dict[str, str] = field(default_factory=dict)
    key_digest: str = ""
    seconds: float = 0.0
    released_key: str = ""              # the key the notebook says it was released with, when not key_digest
    isolation: str = ""                 # how the submission's run was separated from the grader
    fingerprint: str = ""               # what the report depends on (batch.fingerprint): unchanged -> not regraded
    modified: str = ""                  # the file's modification time (UTC, ISO 8601), set by a batch
    superseded_by: str = ""             # set by a batch: another submission of the same student counts instead
    choose_among: tuple[str, ...] = ()  # set by a batch: the student's other submissions; staff choose which counts
    commits: dict[str, Any] = field(default_factory=dict)
    graded_by: str = ""                 # the Dask worker that graded it (grade --scheduler); "" on this machine

    @property
    def counted(self) -> bool:
        """Does this report count for its student: graded, not superseded, and not awaiting staff's choice?"""
        return self.status == "graded" and not self.superseded_by and not self.choose_among

    def id_notes(self) -> tuple[str, ...]:
        """The notes about whose notebook this is (STUDENT_ID still the placeholder, another id than the one graded):
        every view shows them first, above the checks."""
        return tuple(n for n in self.notes if n.startswith(ID_NOTES))

    def other_notes(self) -> tuple[str, ...]:
        """The notes that are not id_notes, shown after the checks."""
        return tuple(n for n in self.notes if not n.startswith(ID_NOTES))

    def counts(self) -> dict[str, int]:
        """Number of outcomes per status, in STATUSES order (and "sealed", a self-check's, last when there are)."""
        out = {s: sum(1 for o in self.outcomes if o.status == s) for s in STATUSES}
        sealed = sum(1 for o in self.outcomes if o.status == "sealed")
        return {**out, "sealed": sealed} if sealed else out

    def adjusted(self) -> tuple[Outcome, ...]:
        """The outcomes whose score staff overrode."""
        return tuple(o for o in self.outcomes if o.adjusted is not None)

    def sealed_points(self) -> float:
        """The points of the checks sealed in a self-check (judged once their exercise's predictions are committed)."""
        return float(sum(o.max_score for o in self.outcomes if o.status == "sealed"))

    def to_dict(self) -> dict[str, Any]:
        """The JSON-native canonical form (with "schema" and "v"). As dataclasses.asdict gives it, but
        without its deep copies (the values are JSON-native already): the dict shares them with the report."""
        out: dict[str, Any] = {"schema": SCHEMA, "v": VERSION}
        for f in _REPORT_FIELDS:
            out[f] = getattr(self, f)
        out["outcomes"] = [o.to_dict() for o in self.outcomes]
        out["notes"] = list(self.notes)
        out["choose_among"] = list(self.choose_among)
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Report:
        """Inverse of to_dict. Raises ValueError for another schema or version."""
        if d.get("schema") != SCHEMA or d.get("v") != VERSION:
            raise ValueError(f"not an autograd-lab report v{VERSION}: {d.get('schema')!r} v{d.get('v')!r}")
        body = {k: v for k, v in d.items() if k not in ("schema", "v")}
        body["outcomes"] = tuple(Outcome(**{**o, "details": tuple(o.get("details", ())),
                                            "misconception": Diagnosis(**o["misconception"]) if o.get("misconception")
                                            else None,
                                            "adjusted": Adjustment(**o["adjusted"]) if o.get("adjusted") else None})
                                for o in body["outcomes"])
        body["notes"] = tuple(body.get("notes", ()))
        body["choose_among"] = tuple(body.get("choose_among", ()))
        return cls(**body)

    def encodable(self) -> Report:
        """This report with every text encodable as UTF-8 (see `encodable`): itself when it is so already."""
        d = self.to_dict()
        try:
            json.dumps(d, ensure_ascii=False).encode("utf-8")   # a lone surrogate anywhere fails here
            return self
        except UnicodeEncodeError:
            return Report.from_dict(encodable(d))

    def write(self, path: str | Path) -> None:
        """Write the JSON form atomically (a temp file in the same folder, then rename)."""
        write_json_atomic(path, self.to_dict())


_OUTCOME_FIELDS = tuple(f.name for f in fields(Outcome))
_REPORT_FIELDS = tuple(f.name for f in fields(Report))


def encodable(value: Any) -> Any:
    """A JSON-native `value` with each string made encodable as UTF-8: a lone surrogate (from a JSON
    escape such as "\\udcff" in a submission's output or notebook, or a file name that is not UTF-8)
    is shown as its escape, so that printing or writing the report cannot fail."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {encodable(k): encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(v) for v in value]
    return value


def write_json_atomic(path: str | Path, data: Any, mode: int = 0o644, durable: bool = False) -> None:
    """Write `data` as JSON to `path` so that readers see the old file or the whole new one."""
    write_text_atomic(path, json.dumps(data, indent=1, allow_nan=False) + "\n", mode, durable)


def write_text_atomic(path: str | Path, text: str, mode: int = 0o644, durable: bool = False) -> None:
    """Write `text` (UTF-8) to `path` so that readers see the old file or the whole new one: a temp
    file in the same folder, then renamed over `path` (atomic even if the writer is killed). `mode`:
    the file's permissions (0o600 for a full key); `durable`: also fsync it before the rename (so
    that it survives a power cut; used for keys)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace") as f:
            f.write(text)
            f.flush()
            os.fchmod(f.fileno(), mode)
            if durable:
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def read_report(path: str | Path) -> Report:
    """Read a report.json written by `Report.write`."""
    return Report.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
