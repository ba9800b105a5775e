"""overrides (service): a course's overrides of single checks: the staff routes (list; add or clear; the form page
behind the staff sign-in, with its CSRF token) and how the overrides apply to the graded report of a student's hand-in
that counts (`effective`), each with its state. The records are store's; applying one is grading.overrides'.

May import: stdlib, tornado, autograder.service.app, autograder.service.store, autograder.grading.overrides,
autograder.model, autograder.report, autograder.render.overrides.

Routes (under /api/v1; staff only: a student's token is refused with 403 on each):
    GET  /assignments/<id>/overrides        {assignment, overrides: [row + state, state_note], to_confirm: n}
    POST /assignments/<id>/overrides        {student, check, score, why} or {student, check, clear: true[, why]}
                                            -> the row kept (201); a staff token in the Authorization header
    GET  /assignments/<id>/overrides/page   the page (HTML): every override and the form
    POST /assignments/<id>/overrides/page   the form (student, check, score, why, clear, _csrf): a signed-in browser's
                                            post must carry the page's CSRF token (403 without it: the page, saying
                                            so); a refused form comes back filled in as it was sent
"""
from __future__ import annotations

import hashlib
import hmac
from typing import Any, Literal

from autograder.grading.overrides import Override, apply, check_digest, machine, problem
from autograder.model import Key, student_key
from autograder.report import Report, points
from autograder.service.app import COOKIE, Base, HTTPError, staff_page_headers

State = Literal["applied", "superseded", "cleared", "to confirm", "not gradable", "not graded yet"]
MAX_FORM = 16_000   # bytes of a form post


def marked(rows: list[dict[str, Any]], key: Key | None, reports: dict[str, dict[str, Any] | None]) -> list[dict[str, Any]]:
    """Each override row with its `state` and a `state_note` (for staff): "superseded" (a later row of the same
    student's check), "cleared" (the row that clears it), "to confirm" (its check changed, or is gone, in a release
    after it: the grader's score counts until staff give it again), "not gradable" / "not graded yet" (the hand-in
    that counts has no graded check now), else "applied". `reports`: student -> the graded report (JSON form) of
    their hand-in that counts, or None."""
    last = {(student_key(r["student"]), r["check"]): r["id"] for r in rows}
    digests = {c.id: check_digest(c) for c in key.checks} if key is not None else {}
    out = []
    for r in rows:
        note = ""
        if last[(student_key(r["student"]), r["check"])] != r["id"]:
            state: State = "superseded"
        elif r["score"] is None:
            state = "cleared"
        elif digests.get(r["check"]) != r["check_digest"]:
            state = "to confirm"
            note = ("the check is not in the assignment's key any more" if r["check"] not in digests else
                    "the check changed in a re-release since: give the override again to confirm it, or clear it")
        else:
            report = reports.get(r["student"])
            if report is None:
                state, note = "not graded yet", "it applies once the hand-in that counts is graded"
            elif report.get("status") != "graded":
                state, note = "not gradable", "the hand-in that counts was not graded, so it has no check to adjust"
            else:
                state = "applied"
        out.append({**r, "state": state, "state_note": note})
    return out


def effective(report: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The graded report (JSON form) of a student's hand-in that counts with the overrides `marked` "applied" for
    them, as adjustments (grading.overrides.apply: the grader's outcome kept beside staff's score)."""
    standing = [Override(r["student"], r["check"], r["score"], r["why"], r["who"], r["made"])
                for r in rows if r["state"] == "applied" and student_key(r["student"]) == student_key(report["student"])]
    if not standing and not any(o.get("adjusted") for o in report.get("outcomes", ())):
        return report
    adjusted, _ = apply(Report.from_dict(report), standing)
    return adjusted.to_dict()


def _counting(service: Any, assignment: str, student: str | None = None) -> dict[str, dict[str, Any] | None]:
    """student -> the graded report (JSON) of their hand-in that counts, or None (not graded yet)."""
    from autograder.service.app import _with_counts

    handins = _with_counts(service, assignment, service.course.handins_of(assignment, student))
    graded = service.course.graded_of(assignment)
    return {h["student"]: graded.get(h["id"]) for h in handins if h["counts"]}


def with_overrides(service: Any, assignment: str, student: str | None = None,
                   reports: dict[str, dict[str, Any] | None] | None = None
                   ) -> tuple[dict[str, dict[str, Any] | None], list[dict[str, Any]]]:
    """(student -> the graded report of their hand-in that counts with its overrides applied, or None; every override
    row of the assignment (one student's), marked). `reports`: student -> the graded report of their hand-in that
    counts, where the caller has them already (else read here). In the database's pool."""
    if reports is None:
        reports = _counting(service, assignment, student)
    rows = marked(service.course.overrides_of(assignment, student), service.key(assignment), reports)
    return {s: effective(r, rows) if r is not None else None for s, r in reports.items()}, rows


def export_text(rows: list[dict[str, Any]]) -> str:
    """A gradebook cell: one student's standing overrides ("2.predict.returns 0 -> 1 by prof: a fair appeal"; one
    waiting: "2.predict.returns waits for staff to confirm (its check changed)"), "; "-separated."""
    parts = []
    for r in rows:
        if r["state"] == "applied":
            before = "?" if r["before"] is None else points(r["before"])
            parts.append(f"{r['check']} {before} -> {points(r['score'])} by {r['who']}: {r['why']}")
        elif r["state"] == "to confirm":
            parts.append(f"{r['check']} waits for staff to confirm (its check changed)")
    return "; ".join(parts)


def add(service: Any, who: str, assignment: str, data: dict[str, Any]) -> dict[str, Any]:
    """Keep an override (or, with `clear`, the row that clears one) from `data` {student, check, score, why, clear},
    by staff user `who`, checked first: the assignment is released here, the student is on the roster, the check is
    the key's, the score within 0..its points, a reason given; and the student's hand-in that counts is graded (an
    override never makes a score for a hand-in that has none). Returns the row, marked. Raises HTTPError 400 (what is
    wrong and the fix), 404 (no such assignment or student), 409 (nothing to adjust or clear)."""
    student, check = data.get("student"), data.get("check")
    clear = data.get("clear") in (True, "1", "true", "on")
    why = data.get("why") if isinstance(data.get("why"), str) else ""
    if not (isinstance(student, str) and student and len(student) <= 100):
        raise HTTPError(400, "'student' must be a student's id")
    if not (isinstance(check, str) and check and len(check) <= 200):
        raise HTTPError(400, "'check' must be a check id, such as 2.predict.returns")
    key = service.key(assignment)
    if key is None:
        raise HTTPError(404, f"assignment {assignment!r} is not on this course service")
    user = service.course.user(student) or service.course.user(student_key(student))
    if user is None or user.staff:
        raise HTTPError(404, f"no student {student!r} in this course (autograder course list names them)")
    student = user.name
    rows = service.course.overrides_of(assignment, student)
    standing = next((r for r in reversed(rows) if r["check"] == check), None)
    if clear:
        if standing is None or standing["score"] is None:
            raise HTTPError(409, f"{student} has no override of {check} to clear")
        if len(why) > 1000:
            raise HTTPError(400, "the reason is over 1000 characters")
        found = next((c for c in key.checks if c.id == check), None)
        row = service.course.add_override(assignment, student, check, None, why.strip() or "cleared", who, None,
                                          check_digest(found) if found else "", None)
        return marked([*rows, row], key, {})[-1]
    score = data.get("score")
    found = next((c for c in key.checks if c.id == check), None)
    if score is None or (isinstance(score, str) and not score.strip()):
        raise HTTPError(400, problem(key, check, None, why) if found is None else
                        f"give a score (points from 0 to {points(found.points)})")
    try:
        score = float(score)
        if score != score or abs(score) == float("inf"):
            raise ValueError
    except (TypeError, ValueError):
        raise HTTPError(400, f"the score {str(score)[:40]!r} is not a number: give the points, such as 1 or 0.5") from None
    bad = problem(key, check, score, why)
    if bad:
        raise HTTPError(400, bad)
    report = _counting(service, assignment, student).get(student)
    if report is None:
        handed = service.course.handins_of(assignment, student)
        raise HTTPError(409, f"{student}'s hand-in that counts is not graded yet: grade it first (autograder grade "
                             f"--service URL --assignment {assignment} --out OUT), then override" if handed else
                        f"{student} has handed in nothing for {assignment}: an override changes a graded check's score")
    if report.get("status") != "graded":
        raise HTTPError(409, f"{student}'s hand-in that counts is not gradable ({report.get('reason', '')}): an override "
                             f"changes a graded check's score, and this hand-in has none (it is not a 0 either); once "
                             f"a hand-in of theirs is graded, override it")
    graded = machine(Report.from_dict(report))
    outcome = next((o for o in graded.outcomes if o.check_id == check), None)
    if outcome is None:
        raise HTTPError(409, f"{student}'s graded report has no check {check} (graded with another release?): grade "
                             f"the hand-ins again (autograder grade --service URL ...), then override")
    hid = next((h["id"] for h in _hand_ins(service, assignment, student) if h["counts"]), None)
    row = service.course.add_override(assignment, student, check, score, why.strip(), who, outcome.score,
                                      check_digest(next(c for c in key.checks if c.id == check)), hid)
    return marked([*rows, row], key, {student: report})[-1]


def _hand_ins(service: Any, assignment: str, student: str) -> list[dict[str, Any]]:
    from autograder.service.app import _with_counts

    return _with_counts(service, assignment, service.course.handins_of(assignment, student))


class Overrides(Base):
    """Staff: every override of an assignment (GET), and a new one or a clear (POST, JSON)."""

    async def get(self, assignment: str) -> None:
        self.need_staff()
        _, rows = await self.db(with_overrides, self.service, assignment)
        self.reply({"assignment": assignment, "overrides": rows,
                    "to_confirm": sum(1 for r in rows if r["state"] == "to confirm")})

    async def post(self, assignment: str) -> None:
        self.need_staff()
        data = self.body()
        self.reply(await self.db(add, self.service, self.user.name, assignment, data), 201)


class OverridesPage(Base):
    """Staff: the overrides page and its form. A browser signed in at /login may post the form with its cookie, and
    then must send the page's CSRF token (an HMAC of its session, made with the service's cookie secret): a page of
    another site cannot read it, so it cannot post for the browser (the cookie is SameSite=Strict besides)."""

    max_body = MAX_FORM

    def _credentials(self) -> tuple[str, str]:
        if not self.request.headers.get("Authorization") and self.request.method == "POST":
            signed = self.get_signed_cookie(COOKIE, max_age_days=1)
            if signed:   # a signed-in browser's form: its CSRF token is checked in post()
                self._session = signed.decode("ascii", "replace")
                return "session", self._session
        kind, secret = super()._credentials()
        if kind == "session":
            self._session = secret
        return kind, secret

    def csrf(self) -> str:
        """The CSRF token of this browser's session ("" for a request with a token in its header)."""
        sid = getattr(self, "_session", "")
        if not sid:
            return ""
        return hmac.new(self.service.cookie_secret.encode(), f"overrides:{sid}".encode(), hashlib.sha256).hexdigest()

    async def get(self, assignment: str) -> None:
        self.need_staff()
        await self._page(assignment)

    async def post(self, assignment: str) -> None:
        from urllib.parse import parse_qs

        self.need_staff()
        try:
            form = {k: v[0] for k, v in parse_qs(self.raw_body().decode("utf-8"), max_num_fields=10).items()}
        except (UnicodeDecodeError, ValueError):
            raise HTTPError(400, "the form is not a form (application/x-www-form-urlencoded, UTF-8)") from None
        if getattr(self, "_session", "") and not hmac.compare_digest(form.get("_csrf", ""), self.csrf()):
            # the page, not JSON (a browser shows it); never refilled: the form may be another site's
            return await self._page(assignment, "Not saved: this form's CSRF token is missing or wrong: send the "
                                                "form from this page again.", 403)
        try:
            row = await self.db(add, self.service, self.user.name, assignment, form)
        except HTTPError as e:   # back with what staff typed, to correct it
            typed = {k: form.get(k, "") for k in ("student", "check", "score", "why")}
            return await self._page(assignment, f"Not saved: {e.why}", e.status_code, typed)
        said = (f"Saved: {row['student']}'s {row['check']} is cleared (the grader's score counts)." if row["score"] is None
                else f"Saved: {row['student']}'s {row['check']} is {points(row['score'])} (the grader gave "
                     f"{points(row['before'])}).")
        await self._page(assignment, said, 201)

    async def _page(self, assignment: str, note: str = "", status: int = 200,
                    typed: dict[str, str] | None = None) -> None:
        from autograder.render.overrides import to_html

        if self.service.key(assignment) is None:
            raise HTTPError(404, f"assignment {assignment!r} is not on this course service")
        _, rows = await self.db(with_overrides, self.service, assignment)
        key = self.service.key(assignment)
        roster = await self.db(self.service.course.roster)
        page = to_html(assignment, rows, self.csrf(), self.request.path, note,
                       tuple(u.name for u in roster if not u.staff), tuple((c.id, c.points) for c in key.checks),
                       typed or {})
        self.set_status(status)
        self.set_header("Content-Type", "text/html; charset=utf-8")
        staff_page_headers(self, "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
        self.finish(page)


def routes(name: str) -> list[tuple[str, Any]]:
    """The routes of this module, for app.make_app (`name`: the pattern of an assignment id)."""
    return [(f"/assignments/{name}/overrides", Overrides), (f"/assignments/{name}/overrides/page", OverridesPage)]
