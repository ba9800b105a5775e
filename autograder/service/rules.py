"""rules: the per-user rules of the course service, held in the database so that every process of one course, on one
machine or several, keeps them together: rate limits (a token bucket per user and per client address), one check or
hand-in at a time per user (a lease on the user's bucket row, with an expiry, renewed while its request runs), browsers'
sign-ins (sessions) and the secret their cookies are signed with. A request's rate and lease are one statement, on the
connection that has just read who its token is (see db.rules for the tables). Nothing here knows HTTP.

May import: stdlib, sqlalchemy, autograder.service.db.
"""
from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

import sqlalchemy as sa

from autograder.service import db

LEASE_SECONDS = 20.0   # a lease lasts this long unless renewed (its process renews it every LEASE_SECONDS / 4)
SESSION_SECONDS = 86400.0


def _insert(eng: sa.Engine, table: sa.Table) -> Any:
    """The dialect's INSERT that takes ON CONFLICT (SQLite 3.24+ and PostgreSQL both have it)."""
    if eng.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


class Rules:
    """The rules of the course whose engine is `engine` (db.engine: the rules' tables are made here when missing).
    `process`: who this process is, in the leases it holds (random by default). Each method runs in a transaction of
    its own, or, given `conn`, in that one."""

    def __init__(self, engine: sa.Engine, process: str | None = None) -> None:
        self.engine = engine
        self.single = db.single(engine)   # a rule is one statement: no transaction around it (db.single)
        db.make_rules(engine)
        self.process = process or secrets.token_hex(6)
        self._made = 0
        b, p = db.buckets.c, sa.bindparam
        now, rate, burst, holder = p("now"), p("rate"), p("burst"), p("b_holder")   # (a bind may not share a column's name)
        refill = b.tokens + sa.case((now > b.stamp, now - b.stamp), else_=0.0) * rate
        refill = sa.case((refill > burst, burst), else_=refill)
        granted = refill >= 1
        leased = sa.and_(granted, holder != "", sa.or_(b.holder == "", b.expires < now))   # free, or expired
        upsert = _insert(engine, db.buckets).values(key=p("b_key"), tokens=burst - 1, stamp=now, granted=1,
                                                    holder=holder, expires=p("b_expires"))
        self._admit = upsert.on_conflict_do_update(index_elements=[b.key], set_={
            # a stamp never goes back: `now` is taken before the statement waits for the lock, and another process
            # may have written a later one meanwhile (going back would count that refill time twice)
            "tokens": sa.case((granted, refill - 1), else_=refill), "stamp": sa.case((now > b.stamp, now), else_=b.stamp),
            "granted": sa.case((granted, 1), else_=0),
            "holder": sa.case((leased, holder), else_=b.holder),
            "expires": sa.case((leased, p("b_expires")), else_=b.expires)}).returning(b.tokens, b.granted, b.holder)
        self._release = db.buckets.update().where(b.key == p("b_key"), b.holder == p("b_holder")).values(holder="",
                                                                                                         expires=0.0)

    def _run(self, conn: sa.Connection | None, fn: Any) -> Any:
        if conn is not None:
            return fn(conn)
        with self.single.begin() as own:   # each rule's statement is atomic by itself
            return fn(own)

    # ------------------------------------------------------------------------------------------ rates and leases

    def holder(self, what: str) -> str:
        """A new holder name for a lease: this process, a counter, and `what` it is held for."""
        self._made += 1
        return f"{self.process}:{self._made}:{what}"

    def admit(self, key: str, rate: float, burst: float, holder: str | None = None,
              conn: sa.Connection | None = None) -> tuple[float, str | None]:
        """Take one token from `key`'s bucket (`burst` at most, refilled at `rate` a second) and, when there was one
        and `holder` is given, hold `key`'s lease for it unless another holder's lease has not expired: one statement,
        atomic however many processes ask at once. Returns (0, None) when both were given; (seconds to wait, None)
        when there was no token; (0, what the other holder holds it for) when the lease is someone else's."""
        now = time.time()
        row = self._run(conn, lambda c: c.execute(self._admit, {
            "b_key": key, "now": now, "rate": float(rate), "burst": float(burst), "b_holder": holder or "",
            "b_expires": now + LEASE_SECONDS if holder else 0.0}).one())
        if not row.granted:
            return (1.0 - row.tokens) / rate, None
        if not holder or row.holder == holder:
            return 0.0, None
        return 0.0, (row.holder or "::request").split(":", 2)[-1]

    def take(self, key: str, rate: float, burst: float) -> float:
        """`admit` without a lease: 0 when a token was given, else the seconds until there is one."""
        return self.admit(key, rate, burst)[0]

    def release(self, key: str, holder: str, conn: sa.Connection | None = None) -> None:
        """Let go of `key`'s lease, if `holder` still holds it."""
        self._run(conn, lambda c: c.execute(self._release, {"b_key": key, "b_holder": holder}))

    def renew(self, holders: list[str], seconds: float = LEASE_SECONDS) -> None:
        """Extend the leases of `holders` (the requests this process still works on)."""
        if holders:
            with self.single.begin() as conn:
                conn.execute(db.buckets.update().where(db.buckets.c.holder.in_(holders))
                             .values(expires=time.time() + seconds))

    # ------------------------------------------------------------------------------------------ sign-ins

    def open_session(self, name: str, role: str, token_digest: str, seconds: float = SESSION_SECONDS) -> str:
        """A new browser session for `name` (a staff sign-in): its id, for the cookie (only its digest is kept).
        `token_digest`: the token it was opened with ("" when JupyterHub vouched), so that withdrawing the token
        ends it. Expired sessions are cleaned away."""
        sid = secrets.token_urlsafe(32)
        now = time.time()
        with self.engine.begin() as conn:
            conn.execute(db.sessions.delete().where(db.sessions.c.expires <= now))
            conn.execute(db.sessions.insert().values(digest=_digest(sid), name=name, role=role, token=token_digest,
                                                     expires=now + seconds))
        return sid

    def session(self, sid: str, conn: sa.Connection | None = None) -> tuple[str, str, str] | None:
        """(name, role, the token's digest) of a live session, or None."""
        s = db.sessions.c
        row = self._run(conn, lambda c: c.execute(sa.select(s.name, s.role, s.token).where(
            s.digest == _digest(sid), s.expires > time.time())).first())
        return (row.name, row.role, row.token) if row else None

    def secret(self, name: str = "cookie") -> str:
        """A secret shared by every process of the course (made by the first that asks)."""
        with self.engine.begin() as conn:
            conn.execute(_insert(self.engine, db.settings).values(name=name, value=secrets.token_hex(32))
                         .on_conflict_do_nothing(index_elements=[db.settings.c.name]))
            return str(conn.execute(sa.select(db.settings.c.value).where(db.settings.c.name == name)).scalar())
