"""rules: the per-user rules of the course service, held in the database so that every process of one course, on one
machine or several, keeps them together: rate limits (a token bucket per user and per client address), one check or
hand-in at a time per user (a lease with an expiry, renewed while its request runs), browsers' sign-ins (sessions)
and the secret their cookies are signed with. Each operation is one short statement (see db.rules for the tables).
Nothing here knows HTTP.

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
    """The rules of the course whose database is at `url` (their own engine: db.rules_engine). `process`: who this
    process is, in the leases it holds (random by default)."""

    def __init__(self, url: str, process: str | None = None) -> None:
        self.engine = db.rules_engine(url)
        self.process = process or secrets.token_hex(6)
        self._made = 0
        b, ls = db.buckets.c, db.leases.c
        now, rate, burst = sa.bindparam("now"), sa.bindparam("rate"), sa.bindparam("burst")
        refill = b.tokens + sa.case((now > b.stamp, now - b.stamp), else_=0.0) * rate
        refill = sa.case((refill > burst, burst), else_=refill)
        upsert = _insert(self.engine, db.buckets).values(key=sa.bindparam("key"), tokens=burst - 1, stamp=now, granted=1)
        self._take = upsert.on_conflict_do_update(
            index_elements=[b.key],
            set_={"tokens": sa.case((refill >= 1, refill - 1), else_=refill), "stamp": now,
                  "granted": sa.case((refill >= 1, 1), else_=0)}).returning(b.tokens, b.granted)
        lease = _insert(self.engine, db.leases).values(key=sa.bindparam("key"), holder=sa.bindparam("holder"),
                                                       expires=sa.bindparam("expires"))
        self._lease = lease.on_conflict_do_update(
            index_elements=[ls.key], set_={"holder": lease.excluded.holder, "expires": lease.excluded.expires},
            where=ls.expires < sa.bindparam("now")).returning(ls.holder)
        self._holder = sa.select(ls.holder).where(ls.key == sa.bindparam("key"))
        self._release = db.leases.delete().where(ls.key == sa.bindparam("key"), ls.holder == sa.bindparam("holder"))

    # ------------------------------------------------------------------------------------------ rate limits

    def take(self, key: str, rate: float, burst: float) -> float:
        """Take one token from `key`'s bucket (`burst` at most, refilled at `rate` a second): 0 when there was one,
        else the seconds until there is. One statement, atomic however many processes ask at once."""
        with self.engine.begin() as conn:
            row = conn.execute(self._take, {"key": key, "now": time.time(), "rate": float(rate),
                                            "burst": float(burst)}).one()
        return 0.0 if row.granted else (1.0 - row.tokens) / rate

    # ------------------------------------------------------------------------------------------ leases

    def holder(self, what: str) -> str:
        """A new holder name for a lease: this process, a counter, and `what` it is held for."""
        self._made += 1
        return f"{self.process}:{self._made}:{what}"

    def lease(self, key: str, holder: str, seconds: float = LEASE_SECONDS) -> str | None:
        """Hold `key` for `holder` unless someone else holds it and their lease has not expired. Returns None when
        it is held now, else what the other holder holds it for (the part after the holder's second colon)."""
        now = time.time()
        with self.engine.begin() as conn:
            got = conn.execute(self._lease, {"key": key, "holder": holder, "expires": now + seconds, "now": now}).first()
            if got is not None and got.holder == holder:
                return None
            other = conn.execute(self._holder, {"key": key}).scalar()
        return (other or "::request").split(":", 2)[-1]

    def release(self, key: str, holder: str) -> None:
        """Let go of `key`, if `holder` still holds it."""
        with self.engine.begin() as conn:
            conn.execute(self._release, {"key": key, "holder": holder})

    def renew(self, holders: list[str], seconds: float = LEASE_SECONDS) -> None:
        """Extend the leases of `holders` (the requests this process still works on)."""
        if holders:
            with self.engine.begin() as conn:
                conn.execute(db.leases.update().where(db.leases.c.holder.in_(holders))
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

    def session(self, sid: str) -> tuple[str, str, str] | None:
        """(name, role, the token's digest) of a live session, or None."""
        s = db.sessions.c
        with self.engine.connect() as conn:
            row = conn.execute(sa.select(s.name, s.role, s.token).where(s.digest == _digest(sid),
                                                                         s.expires > time.time())).first()
        return (row.name, row.role, row.token) if row else None

    def secret(self, name: str = "cookie") -> str:
        """A secret shared by every process of the course (made by the first that asks)."""
        with self.engine.begin() as conn:
            conn.execute(_insert(self.engine, db.settings).values(name=name, value=secrets.token_hex(32))
                         .on_conflict_do_nothing(index_elements=[db.settings.c.name]))
            return str(conn.execute(sa.select(db.settings.c.value).where(db.settings.c.name == name)).scalar())
