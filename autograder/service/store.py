"""store: the course's operations on its database: roster and tokens, released keys, the first commit of each
exercise (kept, never replaced), every prediction a kernel sent, and the reports shown. Each operation is one
transaction. Nothing here knows HTTP.

May import: stdlib, sqlalchemy, autograder.service.db, autograder.keyfile, autograder.model,
autograder.grading.identity (the placeholder id).
"""
from __future__ import annotations

import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa

from autograder import keyfile
from autograder.model import Key
from autograder.service import db

Role = Literal["student", "staff"]
ROLES = ("student", "staff")
PredictionKind = Literal["commit", "same", "revision", "incomplete"]
MAX_NAME = 100
MAX_HANDINS = 100     # hand-ins kept per student and assignment (20 MB each at most: 2 GB per student at worst)
MAX_SENDINGS = 1000   # prediction rows kept per student and exercise (the first commit is kept whatever happens)


def token_digest(token: str) -> str:
    """What the database keeps of a token: its sha256 (hex). A token is 32 random bytes, so no salt is needed."""
    return hashlib.sha256(token.encode("utf-8", "surrogateescape")).hexdigest()


ROSTER_NAME = re.compile(r"[a-z0-9][a-z0-9._@+-]{0,99}")


def valid_name(name: object) -> bool:
    """Is `name` a user name the service accepts from JupyterHub (1-100 printable characters, no slash, no leading
    or trailing space)? A roster's names are stricter: `roster_name_problem`."""
    return (isinstance(name, str) and 0 < len(name) <= MAX_NAME and name == name.strip() and name.isprintable()
            and "/" not in name)


def roster_name_problem(name: object) -> str | None:
    """Why `name` cannot be a roster's user name, or None: lower-case letters, digits and . _ @ + - (the ids
    students type as STUDENT_ID and that name files and CSV rows), at most 100, not the notebook's placeholder."""
    from autograder.grading.identity import PLACEHOLDER_ID

    if not isinstance(name, str) or not ROSTER_NAME.fullmatch(name):
        return (f"not a user name: {name!r} (lower-case letters, digits and . _ @ + -, starting with a letter or digit, "
                f"at most {MAX_NAME})")
    if name == PLACEHOLDER_ID:
        return f"{name!r} is the notebook's placeholder STUDENT_ID, not a student's"
    return None


@dataclass(frozen=True)
class User:
    """Who a request acts as: a user name and role."""

    name: str
    role: Role

    @property
    def staff(self) -> bool:
        return self.role == "staff"


class TooManyHandIns(ValueError):
    """A student has handed in an assignment MAX_HANDINS times; the message says so, for the student."""


def _insert(eng: sa.Engine, table: sa.Table) -> Any:
    """The dialect's INSERT that takes ON CONFLICT (SQLite 3.24+ and PostgreSQL both have it)."""
    if eng.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


class _Statements:
    """The statements of the service's hot paths (a check, a hand-in, who a token is), built once: SQLAlchemy
    caches how each compiles, but building one costs more than SQLite takes to run it."""

    def __init__(self, eng: sa.Engine) -> None:
        p = sa.bindparam
        c, r, pr, h, t, u, a = (db.commits.c, db.reports.c, db.predictions.c, db.handins.c, db.tokens.c, db.users.c,
                                db.assignments.c)
        mine = (c.assignment == p("assignment"), c.student == p("student"), c.exercise == p("exercise"))
        self.user = sa.select(u.name, u.role).join(db.tokens).where(t.digest == p("digest"))
        self.digest = sa.select(a.digest).where(a.id == p("assignment"))
        self.key = sa.select(a.key).where(a.id == p("assignment"))
        self.commit = sa.select(c.record).where(*mine)
        revealed = sa.exists().where(r.assignment == p("assignment"), r.student == p("student"),
                                     r.exercise == p("exercise"), r.revealed)
        theirs = (pr.assignment == p("assignment"), pr.student == p("student"), pr.exercise == p("exercise"))
        sent = sa.select(sa.func.count()).select_from(db.predictions).where(*theirs).scalar_subquery()
        last = lambda col: sa.select(col).where(*theirs).order_by(pr.id.desc()).limit(1).scalar_subquery()
        # what recording one sending needs to know, in one statement: the commit, whether answers were shown, the
        # last sending and how many there are
        self.known = sa.select(self.commit.scalar_subquery().label("record"), revealed.label("revealed"),
                               last(pr.kind).label("kind"), last(pr["values"]).label("last_values"),
                               last(pr.after_reveal).label("after_reveal"), sent.label("n"))
        self.add_commit = _insert(eng, db.commits).values(
            assignment=p("assignment"), student=p("student"), exercise=p("exercise"), record=p("record"),
            committed=p("committed")).on_conflict_do_nothing().returning(c.id)
        self.add_sent = db.predictions.insert()
        self.add_report = db.reports.insert()
        hs = (h.assignment == p("assignment"), h.student == p("student"))
        many = sa.select(sa.func.count()).select_from(db.handins).where(*hs).scalar_subquery()
        self.last_handin = sa.select(h.id, h.received, h.size, h.digest, many.label("n")).where(*hs) \
            .order_by(h.id.desc()).limit(1)
        self.add_handin = db.handins.insert()
        self.handins_of_student = sa.select(h.id, h.student, h.received, h.size, h.digest).where(*hs).order_by(h.id)


class Course:
    """The course's database (see autograder.service.db): open it with `Course(url)` after `db.migrate(url)`."""

    def __init__(self, url: str = db.DEFAULT_URL) -> None:
        self.url = url
        self.engine = db.engine(url)
        # one statement's work (a read, or one write that is atomic by itself) needs no transaction around it: on
        # PostgreSQL that saves the BEGIN and COMMIT (or ROLLBACK) round trips of every such call (db.single)
        self.single = db.single(self.engine)
        self._keys: dict[tuple[str, str], Key] = {}
        self._q = _Statements(self.engine)

    # ------------------------------------------------------------------------------------------ people

    def add_user(self, name: str, role: Role = "student") -> str:
        """Add `name` (or keep them, with `role` set) and issue a new token for them; returns the token (shown
        once: only its digest is kept). Tokens issued earlier keep working until `revoke`. Raises ValueError for a
        bad name (`roster_name_problem`) or role."""
        problem = roster_name_problem(name)
        if problem:
            raise ValueError(problem)
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        token = secrets.token_urlsafe(32)
        with self.engine.begin() as conn:
            found = conn.execute(sa.select(db.users.c.role).where(db.users.c.name == name)).first()
            if found is None:
                conn.execute(db.users.insert().values(name=name, role=role, created=db.now()))
            elif found.role != role:
                conn.execute(db.users.update().where(db.users.c.name == name).values(role=role))
            conn.execute(db.tokens.insert().values(digest=token_digest(token), name=name, created=db.now()))
        return token

    def ensure_user(self, name: str, role: Role = "student") -> User:
        """The user `name`, added with `role` if new (JupyterHub mode: the Hub vouches for the name). An existing
        user keeps their role, except that a Hub admin (`role` staff) is staff."""
        if not valid_name(name):
            raise ValueError(f"not a user name: {name!r}")
        with self.engine.begin() as conn:
            found = conn.execute(sa.select(db.users.c.role).where(db.users.c.name == name)).first()
            if found is None:
                try:
                    conn.execute(db.users.insert().values(name=name, role=role, created=db.now()))
                except sa.exc.IntegrityError:   # added meanwhile by another request
                    pass
                return User(name, role)
            if role == "staff" and found.role != "staff":
                conn.execute(db.users.update().where(db.users.c.name == name).values(role="staff"))
                return User(name, "staff")
            return User(name, found.role)

    def tokens_of(self, name: str) -> int:
        """How many tokens `name` holds."""
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(db.tokens)
                                    .where(db.tokens.c.name == name)).scalar())

    def revoke(self, name: str) -> int:
        """Withdraw every token of `name` (their records stay); returns how many. Raises ValueError for no such user."""
        if self.user(name) is None:
            raise ValueError(f"no user {name!r} in this course")
        with self.engine.begin() as conn:
            return conn.execute(db.tokens.delete().where(db.tokens.c.name == name)).rowcount

    def user_for_token(self, token: str) -> User | None:
        """The user a token was issued to, or None."""
        return self.user_for_digest(token_digest(token))

    def user_for_digest(self, digest: str, conn: sa.Connection | None = None) -> User | None:
        """The user a token whose digest is `digest` was issued to, or None (withdrawn); in `conn`'s transaction when
        given."""
        if conn is None:
            with self.single.begin() as own:
                return self.user_for_digest(digest, own)
        row = conn.execute(self._q.user, {"digest": digest}).first()
        return User(row.name, row.role) if row else None

    def user(self, name: str) -> User | None:
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(db.users.c.name, db.users.c.role).where(db.users.c.name == name)).first()
        return User(row.name, row.role) if row else None

    def roster(self) -> list[User]:
        """Everyone, by name."""
        with self.engine.connect() as conn:
            rows = conn.execute(sa.select(db.users.c.name, db.users.c.role).order_by(db.users.c.name)).all()
        return [User(r.name, r.role) for r in rows]

    # ------------------------------------------------------------------------------------------ keys

    def put_key(self, data: dict[str, Any]) -> Key:
        """Keep a full key (its JSON form) as its assignment's key, replacing an earlier one. Raises ValueError
        for a public key, a malformed key or one whose digest does not match its content."""
        if data.get("public"):
            raise ValueError("this is a public key; the service needs the full key (build/<id>/key.json)")
        if keyfile.digest_of(data) != data.get("digest"):
            raise ValueError("the key's digest does not match its content; rebuild it with autograder release")
        key = keyfile.from_json(data)
        text = json.dumps(data, sort_keys=True)
        with self.engine.begin() as conn:
            conn.execute(db.assignments.delete().where(db.assignments.c.id == key.assignment))
            conn.execute(db.assignments.insert().values(id=key.assignment, key=text, digest=key.digest,
                                                        uploaded=db.now()))
        return key

    def key(self, assignment: str, conn: sa.Connection | None = None) -> Key | None:
        """The assignment's full key (read once per digest), or None (on `conn` when given)."""
        if conn is None:
            with self.single.begin() as own:
                return self.key(assignment, own)
        row = conn.execute(self._q.digest, {"assignment": assignment}).first()
        if row is None:
            return None
        if (assignment, row.digest) not in self._keys:
            text = conn.execute(self._q.key, {"assignment": assignment}).scalar()
            self._keys[(assignment, row.digest)] = keyfile.from_json(json.loads(text))
        return self._keys[(assignment, row.digest)]

    def assignment_ids(self) -> list[str]:
        with self.engine.connect() as conn:
            return [r.id for r in conn.execute(sa.select(db.assignments.c.id).order_by(db.assignments.c.id))]

    # ------------------------------------------------------------------------------------------ commits

    def commit_record(self, assignment: str, student: str, exercise: str,
                      conn: sa.Connection | None = None) -> dict[str, Any] | None:
        """The exercise's commit record, or None (on `conn` when given)."""
        if conn is None:
            with self.single.begin() as own:
                return self.commit_record(assignment, student, exercise, own)
        text = conn.execute(self._q.commit, {"assignment": assignment, "student": student,
                                             "exercise": exercise}).scalar()
        return json.loads(text) if text is not None else None

    def record_predictions(self, assignment: str, student: str, exercise: str, values: dict[str, Any] | None,
                           record: dict[str, Any] | None) -> tuple[dict[str, Any] | None, PredictionKind, bool]:
        """Record the predictions a kernel sent for one exercise, in one transaction, before anything is judged:
        `record` (the commit record made of them now, or None while one is missing) becomes the exercise's commit
        unless it has one; every sending is also kept as a row of `predictions`. Returns (the exercise's commit
        record, or None; what this sending was: "commit" (the first), "same" (as committed), "revision" (other
        values) or "incomplete"; whether a report had shown the answers before). A sending the same as the one before
        it is kept once, and at most MAX_SENDINGS per exercise are kept."""
        mine = {"assignment": assignment, "student": student, "exercise": exercise}
        q = self._q
        with self.engine.begin() as conn:
            known = conn.execute(q.known, mine).one()
            kept = json.loads(known.record) if known.record is not None else None
            revealed = bool(known.revealed)
            if kept is None and record is not None:
                if conn.execute(q.add_commit, {**mine, "record": json.dumps(record), "committed": db.now()}).first():
                    kept, kind = record, "commit"
                else:   # another request of this student committed it a moment ago
                    kept = json.loads(conn.execute(q.commit, mine).scalar())
                    kind = "same" if kept["values"] == record["values"] else "revision"
            elif values is None or record is None and kept is None:
                kind = "incomplete"
            else:
                kind = "same" if kept["values"] == values else "revision"
            again = known.kind is not None and (known.kind, json.loads(known.last_values), bool(known.after_reveal)) \
                == (kind, values, revealed)   # the same sending as the last one: kept once
            if not again and known.n < MAX_SENDINGS:
                conn.execute(q.add_sent, {**mine, "values": json.dumps(values), "received": db.now(), "kind": kind,
                                          "after_reveal": revealed})
        return kept, kind, revealed

    def add_report(self, assignment: str, student: str, exercise: str, report: dict[str, Any] | str,
                   revealed: bool, conn: sa.Connection | None = None) -> None:
        """Keep a report that was shown to the student (its dict, or its JSON text as sent; `revealed`: it showed
        expected values of predictions). One INSERT: kept once it returns, or, on `conn` (a connection of
        `single`), once that connection commits."""
        if conn is None:
            with self.single.begin() as own:
                return self.add_report(assignment, student, exercise, report, revealed, own)
        text = report if isinstance(report, str) else json.dumps(report)
        conn.execute(self._q.add_report, {"assignment": assignment, "student": student, "exercise": exercise,
                                          "report": text, "made": db.now(), "revealed": revealed})

    def commits_of(self, assignment: str, student: str | None = None,
                   until: dict[str, Any] | None = None) -> dict[str, list[dict[str, Any]]]:
        """student -> their commit records of `assignment` (one student's only, with `student`). `until`: student ->
        an aware datetime; that student's commits made after it (the service's own time, to the microsecond) are
        left out."""
        q = sa.select(db.commits.c.student, db.commits.c.record, db.commits.c.committed).where(
            db.commits.c.assignment == assignment)
        if student is not None:
            q = q.where(db.commits.c.student == student)
        out: dict[str, list[dict[str, Any]]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(q.order_by(db.commits.c.id)):
                if until is not None and row.student in until and _aware(row.committed) > until[row.student]:
                    continue
                out.setdefault(row.student, []).append(json.loads(row.record))
        return out

    def history(self, assignment: str, student: str) -> list[dict[str, Any]]:
        """Every prediction the student's kernel sent for `assignment`, oldest first: exercise, values, received
        (ISO 8601), kind and after_reveal."""
        q = sa.select(db.predictions).where(db.predictions.c.assignment == assignment,
                                            db.predictions.c.student == student).order_by(db.predictions.c.id)
        with self.engine.connect() as conn:
            return [{"exercise": r.exercise, "values": json.loads(r.values), "received": _iso(r.received),
                     "kind": r.kind, "after_reveal": bool(r.after_reveal)} for r in conn.execute(q)]

    def reports_of(self, assignment: str, student: str) -> list[dict[str, Any]]:
        """The reports shown to the student for `assignment`, oldest first: exercise, made (ISO 8601), report."""
        q = sa.select(db.reports).where(db.reports.c.assignment == assignment,
                                        db.reports.c.student == student).order_by(db.reports.c.id)
        with self.engine.connect() as conn:
            return [{"exercise": r.exercise, "made": _iso(r.made), "report": json.loads(r.report)}
                    for r in conn.execute(q)]

    # ------------------------------------------------------------------------------------------ hand-ins

    def add_handin(self, assignment: str, student: str, data: bytes, received: Any = None) -> dict[str, Any]:
        """Keep a handed-in notebook's bytes with the service's time (`received`: when its last byte arrived, an
        aware datetime; default now), in one transaction; returns its receipt:
        {id, assignment, student, received (ISO 8601), size, digest (sha256 hex), again}. The same bytes as the
        student's last hand-in are kept once: its receipt comes back, with again = True; this holds across service
        processes, since each hand-in names the one it follows, once (db.handins' unique index), and the second of
        two that arrive at once is read again as following the first. Raises TooManyHandIns past MAX_HANDINS
        hand-ins of one student and assignment."""
        digest = hashlib.sha256(data).hexdigest()
        mine = {"assignment": assignment, "student": student}
        for _ in range(MAX_HANDINS):
            try:
                with self.engine.begin() as conn:
                    last = conn.execute(self._q.last_handin, mine).first()
                    if last is not None and last.digest == digest:
                        return {"id": int(last.id), "assignment": assignment, "student": student,
                                "received": _iso(last.received), "size": int(last.size), "digest": digest, "again": True}
                    if last is not None and last.n >= MAX_HANDINS:
                        raise TooManyHandIns(f"you have handed in {assignment} {last.n} times, the most this course "
                                             f"keeps: your course staff can grade the last of them")
                    received = received or db.now()
                    hid = conn.execute(self._q.add_handin, {
                        **mine, "received": received, "size": len(data), "digest": digest, "notebook": data,
                        "follows": int(last.id) if last is not None else 0}).inserted_primary_key[0]
            except sa.exc.IntegrityError:   # another process kept a hand-in after the same one a moment ago: again
                continue
            return {"id": int(hid), "assignment": assignment, "student": student, "received": _iso(received),
                    "size": len(data), "digest": digest, "again": False}
        raise RuntimeError("a hand-in could not be kept after as many tries as a student may hand in")

    def handins_of(self, assignment: str, student: str | None = None,
                   conn: sa.Connection | None = None) -> list[dict[str, Any]]:
        """The hand-ins of `assignment` (one student's, with `student`), oldest first: receipts, with `when` (an
        aware datetime) for the late policy. On `conn` when given."""
        h = db.handins.c
        if conn is None:
            with self.single.begin() as own:
                return self.handins_of(assignment, student, own)
        if student is not None:
            rows = conn.execute(self._q.handins_of_student, {"assignment": assignment, "student": student}).all()
        else:
            rows = conn.execute(sa.select(h.id, h.student, h.received, h.size, h.digest)
                                .where(h.assignment == assignment).order_by(h.id)).all()
        return [{"id": int(r.id), "assignment": assignment, "student": r.student, "received": _iso(r.received),
                 "when": _aware(r.received), "size": int(r.size), "digest": r.digest} for r in rows]

    def handin(self, hid: int) -> tuple[str, str, bytes] | None:
        """(assignment, student, the notebook's bytes) of hand-in `hid`, or None."""
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(db.handins.c.assignment, db.handins.c.student, db.handins.c.notebook)
                               .where(db.handins.c.id == hid)).first()
        return (row.assignment, row.student, bytes(row.notebook)) if row else None

    def add_graded(self, hid: int, report: dict[str, Any]) -> None:
        """Keep the graded report of hand-in `hid` (the latest one counts). Raises ValueError for no such hand-in,
        or a report of another assignment or student."""
        found = self.handin(hid)
        if found is None:
            raise ValueError(f"no hand-in {hid}")
        assignment, student, _ = found
        if report.get("assignment") != assignment or report.get("student") != student:
            raise ValueError(f"this report is of {report.get('assignment')!r}, {report.get('student')!r}; hand-in {hid} "
                             f"is {assignment!r}, {student!r}")
        with self.engine.begin() as conn:
            conn.execute(db.graded.insert().values(handin=hid, assignment=assignment, student=student,
                                                   report=json.dumps(report, allow_nan=False), made=db.now()))

    def graded_of(self, assignment: str) -> dict[int, dict[str, Any]]:
        """hand-in id -> its latest graded report, for `assignment`."""
        g = db.graded.c
        out: dict[int, dict[str, Any]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(sa.select(g.handin, g.report).where(g.assignment == assignment).order_by(g.id)):
                out[int(row.handin)] = json.loads(row.report)
        return out

    def handins_version(self, assignment: str) -> tuple[int, int]:
        """(the last hand-in id, the last graded-report id) of `assignment`: what the class view is made from
        changes only when one of them does (rows are never updated or deleted)."""
        with self.engine.connect() as conn:
            last = conn.execute(sa.select(sa.func.max(db.handins.c.id)).where(db.handins.c.assignment == assignment)).scalar()
            graded = conn.execute(sa.select(sa.func.max(db.graded.c.id)).where(db.graded.c.assignment == assignment)).scalar()
        return int(last or 0), int(graded or 0)

    def release_feedback(self, assignment: str) -> str:
        """Let students see their graded feedback of `assignment` from now on; returns when (ISO 8601)."""
        when = db.now()
        with self.engine.begin() as conn:
            if conn.execute(sa.select(db.feedback.c.released).where(db.feedback.c.assignment == assignment)).first():
                return self.feedback_released(assignment) or _iso(when)
            conn.execute(db.feedback.insert().values(assignment=assignment, released=when))
        return _iso(when)

    def feedback_released(self, assignment: str) -> str | None:
        with self.engine.connect() as conn:
            when = conn.execute(sa.select(db.feedback.c.released).where(db.feedback.c.assignment == assignment)).scalar()
        return _iso(when) if when is not None else None

    # ------------------------------------------------------------------------------------------ due times

    def swap_dues(self, assignment: str, dues: dict[str, Any]) -> dict[str, Any] | None:
        """Keep `dues` ("" -> the assignment's due time, a student -> their own; aware datetimes) as the due times last
        seen of `assignment`, and return the ones seen before: None when none were (a first look) or nothing
        changed, or when another process swapped them at the same moment (it notes what changed)."""
        seen = db.deadlines_seen.c
        try:
            with self.engine.begin() as conn:
                rows = conn.execute(sa.select(seen.student, seen.due).where(seen.assignment == assignment)).all()
                before = {r.student: _aware(r.due) for r in rows}
                if before == dues:
                    return None
                conn.execute(db.deadlines_seen.delete().where(seen.assignment == assignment))
                if dues:
                    conn.execute(db.deadlines_seen.insert(), [{"assignment": assignment, "student": who, "due": due}
                                                              for who, due in dues.items()])
        except sa.exc.IntegrityError:
            return None
        return before or None

    def add_handin_notes(self, notes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Add notes to hand-ins' histories ({handin, change, text}), each (handin, change) once; returns those this
        call added (another process may have noted the same change already)."""
        added = []
        q = _insert(self.engine, db.handin_notes)
        with self.engine.begin() as conn:
            for n in notes:
                row = conn.execute(q.values(handin=n["handin"], made=db.now(), change=n["change"][:120], text=n["text"])
                                   .on_conflict_do_nothing().returning(db.handin_notes.c.id)).first()
                if row is not None:
                    added.append(n)
        return added

    def handin_notes_of(self, assignment: str, student: str | None = None) -> dict[int, list[dict[str, str]]]:
        """hand-in id -> its history, oldest first ({made (ISO 8601), text}), for `assignment` (one student's)."""
        n, h = db.handin_notes.c, db.handins.c
        q = sa.select(n.handin, n.made, n.text).join(db.handins, n.handin == h.id).where(h.assignment == assignment)
        if student is not None:
            q = q.where(h.student == student)
        out: dict[int, list[dict[str, str]]] = {}
        with self.engine.connect() as conn:
            for row in conn.execute(q.order_by(n.id)):
                out.setdefault(int(row.handin), []).append({"made": _iso(row.made), "text": row.text})
        return out

    # ------------------------------------------------------------------------------------------ overrides

    def add_override(self, assignment: str, student: str, check: str, score: float | None, why: str, who: str,
                     before: float | None, check_digest: str, handin: int | None) -> dict[str, Any]:
        """Keep staff's score for one check of one student (score None: clear it), in one transaction; returns the row
        as `overrides_of` gives it. Rows are only added: the last one of a student's check stands."""
        row = {"assignment": assignment, "student": student, "check_id": check, "score": score, "before": before,
               "why": why, "who": who, "made": db.now(), "check_digest": check_digest, "handin": handin}
        with self.engine.begin() as conn:
            oid = conn.execute(db.overrides.insert().values(**row)).inserted_primary_key[0]
        return _override(int(oid), row)

    def overrides_of(self, assignment: str, student: str | None = None) -> list[dict[str, Any]]:
        """Every override of `assignment` (one student's, with `student`), oldest first: {id, student, check, score
        (None: cleared), before, why, who, made (ISO 8601), check_digest, handin}."""
        o = db.overrides.c
        q = sa.select(db.overrides).where(o.assignment == assignment)
        if student is not None:
            q = q.where(o.student == student)
        with self.engine.connect() as conn:
            return [_override(int(r.id), r._asdict()) for r in conn.execute(q.order_by(o.id))]

    def overrides_version(self, assignment: str) -> int:
        """The last override id of `assignment` (0: none): the class view changes with it."""
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.max(db.overrides.c.id))
                                    .where(db.overrides.c.assignment == assignment)).scalar() or 0)

    def count(self, table: str) -> int:
        """How many rows `table` (a name of db.metadata) has."""
        t = db.metadata.tables[table]
        with self.engine.connect() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(t)).scalar())


def _override(oid: int, row: dict[str, Any]) -> dict[str, Any]:
    return {"id": oid, "student": row["student"], "check": row["check_id"], "score": row["score"],
            "before": row["before"], "why": row["why"], "who": row["who"], "made": _iso(row["made"]),
            "check_digest": row["check_digest"], "handin": row["handin"]}


def _aware(when: Any) -> Any:
    """A stored time as an aware datetime (SQLite gives it back without its zone: it is UTC)."""
    import datetime as dt

    return when if when.tzinfo is not None else when.replace(tzinfo=dt.timezone.utc)


def _iso(when: Any) -> str:
    text = when.isoformat() if hasattr(when, "isoformat") else str(when)
    return text if ("+" in text[10:] or text.endswith("Z")) else text + "+00:00"   # SQLite drops the zone
