"""app: the course service's web app (tornado): its routes, who a request acts as, and its limits. The grading is
grade's and judge's; the records are store's, the per-user rules (rate limits, one check at a time, sign-ins) are
rules', all in the database: a process keeps caches only, so any number of processes serve one course. Every route
needs a token; a student reads and writes only their own records; staff routes need a staff token. Errors are JSON
{"error": reason} with a 4xx status; a database that cannot be reached, is locked, slow or full is a 503 with
Retry-After and a sentence for the student; any other fault of the service is a 500 whose body says only that
(the traceback goes to the service's log, tokens never do).

May import: stdlib, tornado, sqlalchemy (its errors), autograder.service.store, autograder.service.db,
autograder.service.overrides (its routes, and the overrides applied to feedback and the gradebook),
autograder.service.rules, autograder.service.hub (JupyterHub mode),
autograder.service.late, autograder.render.class_stats, autograder.render.stats,
autograder.authoring.collusion, autograder.render.collusion (the collusion view),
autograder.render.gradebook, autograder.report, autograder.grading.grade, autograder.grading.identity, autograder.grading.notebook (its reading limits), autograder.keyfile, autograder.wire, autograder.report, autograder.model.

Routes (JSON in and out; the token in the header `Authorization: token <token>` or `Bearer <token>`):
    GET  /api/v1/me                                         who the token is: {name, role}
    POST /api/v1/predictions                                 commit: {assignment, exercise, student, cells, labels,
                                                             results} -> {commit, kind, missing, after_reveal}
    POST /api/v1/check                                       judge: the same body (results now with the calls) ->
                                                             the Report's JSON
    GET  /api/v1/students/<name>/assignments/<id>/commits    {commits: [record], predictions: [sent]} (self or staff)
    GET  /api/v1/students/<name>/assignments/<id>/reports    {reports: [{exercise, made, report}]} (self or staff)
    PUT  /api/v1/assignments/<id>/key                        staff: the full key's JSON -> {assignment, digest}
    GET  /api/v1/assignments                                 staff: {assignments: [id]}
    GET  /api/v1/assignments/<id>/commits[?until=handin]     staff: {commits: {student: [record]}} (with until:
                                                             only commits made before the hand-in that counts)
    GET  /api/v1/users                                       staff: {users: [{name, role}]}
    POST /api/v1/users                                       staff: {name, role} -> {name, role, token}
    POST /api/v1/assignments/<id>/handins                    hand in: the notebook's bytes -> its receipt {id,
                                                             received, size, digest, late_by, penalty, why, counts,
                                                             again} (201; 200 with again: the same bytes as the
                                                             last hand-in, kept once; 409 past store.MAX_HANDINS)
    GET  /api/v1/students/<name>/assignments/<id>/handins    {handins: [receipt]} (self or staff)
    GET  /api/v1/students/<name>/assignments/<id>/feedback   the graded report of the hand-in that counts, once
                                                             released: {released, handin, report, final_score}
    GET  /api/v1/assignments/<id>/handins                    staff: every hand-in's receipt, with `graded` (the
                                                             fingerprint of its graded report, or null)
    GET  /api/v1/handins/<n>                                 staff: the hand-in's notebook (its bytes)
    POST /api/v1/handins/<n>                                 staff: its graded report (the Report's JSON)
    PUT  /api/v1/assignments/<id>/feedback                   staff: release the graded feedback to students
    GET  /api/v1/assignments/<id>/gradebook[?format=csv]     staff: a row per student of the roster (GRADEBOOK_COLUMNS)
    GET  /api/v1/assignments/<id>/stats                      staff: the class view (HTML), as of the last report
    GET  /api/v1/assignments/<id>/collusion[?format=csv]     staff: the collusion view (HTML, or its CSV): evidence only
    GET, POST /api/v1/login                                  a browser signs in with a staff token (a cookie for
                                                             the staff pages, GET only; and the overrides form,
                                                             with its CSRF token)
    GET, POST /api/v1/assignments/<id>/overrides[/page]      staff: overrides of single checks (autograder.service.
                                                             overrides' docstring)
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import json
import logging
import math
import os
import re
import time
import traceback
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

import sqlalchemy as sa
import tornado.web

from autograder.model import same_student
from autograder.service.rules import Rules
from autograder.service.store import Course, User, token_digest

log = logging.getLogger("autograder.service")
API = "/api/v1"
MAX_BODY = 4_000_000          # bytes of one request (a results stream is at most wire.MAX_RESULT_BYTES)
READ_AT_MOST = 64_000_000     # bytes read of a request over MAX_BODY (to answer 413), beyond which it is cut off
MAX_CELLS = 500               # cells of one check request
MAX_CELL_TEXT = 1_000_000     # characters of all its cells together (and at most what the grader reads)
MAX_PREDICTIONS = 20_000      # bytes of one exercise's committed values (JSON)


@dataclass
class Limits:
    """Request rates: each user may send `burst` requests at once and `rate` per second on average; each client
    address may present `bad_tokens` wrong tokens per minute (then it waits). Held in the database (rules.Rules):
    the same for every process of the course."""

    rate: float = 5.0
    burst: int = 40
    bad_tokens: int = 30


RETRY_SECONDS = 5   # what a 503 for an unavailable database asks the client to wait
POOL = 4   # threads per process for the database and the judge (more only contend for the interpreter's lock)
DB_ERRORS = (sa.exc.OperationalError, sa.exc.InterfaceError, sa.exc.TimeoutError, sa.exc.DisconnectionError)
BUSY = {"check": "your previous check is still under way", "hand-in": "your previous hand-in is still under way"}


@dataclass(frozen=True)
class Admission:
    """What the rules said of a request: who it is (None: the token is no one's); `wait` > 0: over its rate (that
    many seconds to wait); `holder`: the lease it holds (one check or hand-in at a time; "" none); `busy`: the user's
    lease is held by another request, for what ("check", "hand-in")."""

    user: User | None
    wait: float = 0.0
    holder: str = ""
    busy: str = ""


class HTTPError(tornado.web.HTTPError):
    """A refusal with a reason the client sees (never an answer, a token or a traceback)."""

    def __init__(self, status: int, reason: str, retry_after: float | None = None) -> None:
        super().__init__(status, log_message=None)
        self.why, self.retry_after = reason, retry_after


@tornado.web.stream_request_body
class Base(tornado.web.RequestHandler):
    """Identity, limits and JSON errors for every route. The body is read as it streams in, and only its first
    MAX_BODY bytes are kept: a larger request is answered 413 once it has been read (so the client sees why)."""

    course: Course
    user: User

    def initialize(self, service: Service) -> None:
        self.service = service
        self.course = service.course

    def set_default_headers(self) -> None:
        self.set_header("Content-Type", "application/json; charset=utf-8")
        self.set_header("Cache-Control", "no-store")
        self.set_header("X-Content-Type-Options", "nosniff")

    def _credentials(self) -> tuple[str, str]:
        """("token", the token) from the Authorization header, or ("session", the session id) from a signed-in
        browser's cookie (GET only). Raises HTTPError 400 for a token in the URL, 401 for none."""
        if any(k.lower() in ("token", "access_token") for k in self.request.query_arguments):
            raise HTTPError(400, "send the token in the Authorization header, never in the URL (URLs are logged)")
        auth = self.request.headers.get("Authorization", "")
        if not auth and self.request.method == "GET":   # a browser signed in at /login: its cookie (GET only)
            signed = self.get_signed_cookie(COOKIE, max_age_days=1)
            if signed:   # a random session id: the token stays with the service (its digest, in the database)
                return "session", signed.decode("ascii", "replace")
        kind, _, token = auth.partition(" ")
        if kind.lower() not in ("token", "bearer") or not token.strip():
            raise HTTPError(401, "this service needs a token: send the header 'Authorization: token <your token>'")
        return "token", token.strip()

    max_body = MAX_BODY   # bytes of a request this route keeps

    def client_address(self) -> str:
        """The client's address: the connection's; behind a proxy (`Service.behind_proxy`), what that proxy says, and
        only in the header it sets itself: "x-forwarded-for", the last address of X-Forwarded-For (the one the proxy
        appended: JupyterHub's configurable-http-proxy, Caddy, nginx's $proxy_add_x_forwarded_for; what a client
        wrote is before it), or "x-real-ip", X-Real-Ip (nginx's `proxy_set_header X-Real-IP $remote_addr`, which
        replaces a client's). A client's own X-Real-Ip behind a proxy that passes it on is never read."""
        return client_address(self.request, self.service.behind_proxy)

    def data_received(self, chunk: bytes) -> None:
        self._size = getattr(self, "_size", 0) + len(chunk)
        if self._size > self.max_body or getattr(self, "_crowded", False):
            return   # read and dropped: answered 413 (or 503) once it has all come
        if self.service.arriving + len(chunk) > MAX_ARRIVING:   # the bytes all requests hold while they arrive
            self._crowded = True
            self._release()
            return
        self.service.arriving += len(chunk)
        self._held = getattr(self, "_held", 0) + len(chunk)
        self._chunks = [*getattr(self, "_chunks", []), chunk]

    def raw_body(self) -> bytes:
        """The request's bytes. Raises HTTPError 413 over this route's limit, 503 when the service held too much."""
        if getattr(self, "_crowded", False):
            raise HTTPError(503, "the course service is receiving a lot right now: send this again in a few "
                                 "seconds (nothing of it was recorded)", 5)
        if getattr(self, "_size", 0) > self.max_body:
            raise HTTPError(413, f"the request is over {self.max_body} bytes")
        return b"".join(getattr(self, "_chunks", []))

    def _release(self) -> None:
        """Give back what this request holds: its place as the user's one request arriving, its bytes, and its lease
        (one check or hand-in at a time): at its end, or when its client hangs up (the work may go on; the student
        may run the cell again meanwhile, in another process, or here once the work has ended: a client that hangs
        up at once cannot start one costly request after another in this process)."""
        self.service.arriving -= getattr(self, "_held", 0)
        self._held = 0
        if getattr(self, "_sending", False) and not getattr(self, "_working", 0):   # its work has ended too
            self.service.sending.discard(self.user.name)
            self._sending = False
        holder = getattr(self, "_holder", "")
        if holder:
            self._holder = ""
            self.service.let_go(self.user.name, holder)

    def on_finish(self) -> None:
        self._release()

    def on_connection_close(self) -> None:
        self._hung_up = True
        self._release()
        super().on_connection_close()

    # A student route that runs one at a time per user (across every process): what it is, for the message a second
    # one gets ("check", "hand-in"); None: any number at once.
    alone: str | None = None
    # What a student reads when the database cannot be used right now (a 503, with Retry-After).
    unavailable = ("the course service cannot read or store its records right now; nothing is lost: try again in "
                   f"{RETRY_SECONDS} s")

    async def prepare(self) -> None:
        if any(_CONTROL.search(part) for part in (*self.path_args, *self.path_kwargs.values())):
            raise HTTPError(400, "a name in this route's path holds a control character (such as NUL): no name here "
                                 "has one")
        length = self.request.headers.get("Content-Length", "0")
        if not (length.isascii() and length.isdigit()):   # "²".isdigit() is True, and int() refuses it
            raise HTTPError(400, "the Content-Length header is not a number")
        if int(length) > READ_AT_MOST:
            raise HTTPError(413, f"the request is over {MAX_BODY} bytes")
        method = (self.request.method or "").lower()
        if getattr(type(self), method, None) is getattr(tornado.web.RequestHandler, method, None):
            raise HTTPError(405, "this route does not take that method")   # now, before any body is read
        with_body = int(length) > 0 or "chunked" in self.request.headers.get("Transfer-Encoding", "").lower()
        if with_body and method in ("get", "head", "delete", "options"):
            raise HTTPError(400, f"a {method.upper()} request has no body")
        kind, secret = self._credentials()
        where = self.client_address()
        user = None
        if kind == "token" and self.service.hub_identify is not None:
            try:
                user = await self.service.hub_identify(secret)
            except HTTPError:
                raise
            except DB_ERRORS as e:   # the Hub answered; the roster could not be written
                log.error("the database cannot be used: %s", _short_error(e))
                raise HTTPError(503, self.unavailable, RETRY_SECONDS) from None
            except Exception as e:   # JupyterHub mode: the Hub did not answer (never the student's fault)
                log.error("asking the hub who a request is failed: %s", type(e).__name__)
                raise HTTPError(503, "the service cannot ask who you are right now (the hub did not answer): try "
                                     "again in a minute", 60) from None
            if user is None:
                kind = "nobody"
        alone = self.alone if method == "post" else None
        got = await self.db(self.service.admit, kind, secret, user, where, alone)
        if got.holder:   # (`held` is the event loop's: renewed from it, changed only in it)
            self._holder = got.holder
            self.service.held.add(got.holder)
        if got.user is None:   # a wrong token costs its address; a right one is never held up by others' wrong ones
            if got.wait > 0:
                raise HTTPError(429, "too many wrong tokens from this address: wait a minute", 60)
            if kind == "session":
                raise HTTPError(401, f"your sign-in has ended: sign in again at {api_base(self)}/login")
            raise HTTPError(403, "this token is not one this course issued (or it was withdrawn)")
        self.user = got.user
        if got.wait > 0:
            wait = max(0.1, math.ceil(got.wait * 10) / 10)   # never "wait 0.0 s"
            raise HTTPError(429, f"too many requests: wait {wait:.1f} s", got.wait)
        if got.busy:
            again = "hand in again" if self.alone == "hand-in" else "run this cell again"
            raise HTTPError(429, f"{BUSY.get(got.busy, 'your previous request is still under way')}: {again} when it "
                                 f"has finished", 2)
        if with_body:   # one request with a body arriving per user at a time, in this process (its memory)
            if self.user.name in self.service.sending:
                raise HTTPError(429, "your previous request (a check or a hand-in) is still arriving or being worked "
                                     "on: send this again when it has finished", 5)
            self.service.sending.add(self.user.name)
            self._sending = True

    def body(self) -> dict[str, Any]:
        """The request's JSON object, from UTF-8 text. Raises HTTPError 400 when it is not one."""
        if getattr(self, "_crowded", False):
            self.raw_body()   # the 503
        if getattr(self, "_size", 0) > self.max_body:
            raise HTTPError(413, f"the request is over {self.max_body} bytes (a check's cells and results are far "
                                 f"less: is a cell's output pasted into its code?)")
        try:   # strict UTF-8 first: json.loads of bytes would take UTF-16 and encoded surrogates too
            data = json.loads((b"".join(getattr(self, "_chunks", [])) or b"").decode("utf-8"))
        except UnicodeDecodeError as e:
            raise HTTPError(400, f"the body is not UTF-8 text (at byte {e.start})") from None
        except ValueError as e:
            raise HTTPError(400, f"the body is not JSON ({type(e).__name__} at byte {getattr(e, 'pos', '?')})") from None
        except RecursionError:
            raise HTTPError(400, "the body's JSON is nested too deeply") from None
        if not isinstance(data, dict):
            raise HTTPError(400, "the body must be a JSON object")
        if _SURROGATE.search(b"".join(getattr(self, "_chunks", []))):   # a lone one is no text: 400, not a 500 later
            try:
                json.dumps(data, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise HTTPError(400, "the body's JSON holds a lone surrogate (\\ud800-\\udfff): it is not text") from None
        return data

    def need_staff(self) -> None:
        if not self.user.staff:
            raise HTTPError(403, "this needs a staff token")

    def need_self_or_staff(self, name: str) -> None:
        if name != self.user.name and not self.user.staff:
            raise HTTPError(403, f"you are {self.user.name!r}: you may read only your own records")

    def reply(self, data: Any, status: int = 200) -> None:
        self.set_status(status)
        self.finish(json.dumps(data, allow_nan=False))

    async def db(self, fn: Callable[..., Any], *args: Any, pool: concurrent.futures.Executor | None = None) -> Any:
        """Run `fn(*args)` (database or judging work) off the event loop, in `pool` (default the service's). A database
        that cannot be used now (unreachable, locked, slow, full: every call is bounded by db.TIMEOUT) is a 503 that
        says so in the student's words (`unavailable`), with Retry-After; the log gets the cause."""
        self._working = getattr(self, "_working", 0) + 1
        try:
            return await asyncio.get_running_loop().run_in_executor(pool or self.service.pool, fn, *args)
        except DB_ERRORS as e:
            log.error("%s %s: the database cannot be used: %s", self.request.method, self.request.path,
                      _short_error(e))
            raise HTTPError(503, self.unavailable, RETRY_SECONDS) from None
        finally:
            self._working -= 1
            if not self._working and getattr(self, "_hung_up", False):   # its client is gone: nothing else releases
                self._release()

    async def lease_kept(self, fn: Callable[[], Awaitable[None]]) -> None:
        """Run a route that runs alone (`alone`), giving its lease back before any answer, an error's too, is sent:
        in its last database work (`db_last`), else here once it has ended."""
        try:
            await fn()
        finally:
            holder, self._holder = getattr(self, "_holder", ""), ""
            if holder:
                self.service.held.discard(holder)
                try:
                    await self.service.run(self.service.rules.release, "user:" + self.user.name, holder)
                except DB_ERRORS as e:
                    log.warning("a lease could not be released (it expires by itself): %s", _short_error(e))

    async def db_last(self, fn: Callable[[sa.Connection], Any]) -> Any:
        """`db(fn)`, this request's last database work, on one connection of the course's (`Course.single`: on
        PostgreSQL each statement commits by itself) that `fn` is given and that commits after it; then, on the same
        connection, the request's lease is given back (in a transaction of its own: on SQLite the rules' file is not
        locked while the records' commit waits for the disk), so that it is free before the answer reaches the
        client, whose next check may come at once. One connection for all of it: each one taken from the pool and
        given back costs as much as a short statement."""
        holder, self._holder = getattr(self, "_holder", ""), ""
        if holder:
            self.service.held.discard(holder)
        key = "user:" + self.user.name
        rules = self.service.rules

        def then_release() -> Any:
            with self.course.single.connect() as conn:
                try:
                    out = fn(conn)
                    conn.commit()
                    return out
                except BaseException:
                    with contextlib.suppress(*DB_ERRORS):
                        conn.rollback()
                    raise
                finally:
                    if holder:
                        try:
                            rules.release(key, holder, conn)
                            conn.commit()
                        except DB_ERRORS:   # this connection failed: once more on one of its own
                            try:
                                rules.release(key, holder)
                            except DB_ERRORS as e:
                                log.warning("a lease could not be released (it expires by itself): %s",
                                            _short_error(e))
        return await self.db(then_release)

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        exc = kwargs.get("exc_info", (None, None, None))[1]
        if isinstance(exc, HTTPError):
            if exc.retry_after is not None:
                self.set_header("Retry-After", str(max(1, round(exc.retry_after))))
            why = exc.why
        elif isinstance(exc, tornado.web.HTTPError) and status_code < 500:
            why = {404: "no such route", 405: "this route does not take that method",
                   413: f"the request is over {MAX_BODY} bytes"}.get(status_code, self._reason)
        else:
            why = "the course service failed on this request (its log says why); nothing of it was recorded"
        self.finish(json.dumps({"error": why, "status": status_code}))

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        if isinstance(value, tornado.web.HTTPError):
            return
        log.error("%s %s failed:\n%s", self.request.method, self.request.path,
                  "".join(traceback.format_exception(typ, value, tb)))


def _text(data: dict[str, Any], name: str, limit: int = 100) -> str:
    value = data.get(name)
    if not isinstance(value, str) or not value or len(value) > limit:
        raise HTTPError(400, f"{name!r} must be a string of 1-{limit} characters")
    if _CONTROL.search(value):
        raise HTTPError(400, f"{name!r} holds a control character (such as NUL): no name here has one")
    return value


def _cells(data: dict[str, Any]) -> tuple[list[str], list[str]]:
    from autograder.grading.notebook import code_beyond_reading

    cells, labels = data.get("cells", []), data.get("labels", [])
    if (not isinstance(cells, list) or not all(isinstance(c, str) for c in cells) or len(cells) > MAX_CELLS
            or sum(map(len, cells)) > MAX_CELL_TEXT):
        raise HTTPError(400, f"'cells' must be a list of at most {MAX_CELLS} strings, {MAX_CELL_TEXT} characters in all")
    too_much = code_beyond_reading(cells)   # what the batch grader reads, no more: the judge reads cells as syntax trees
    if too_much:
        raise HTTPError(413, f"the cells this kernel ran {too_much}")
    if not isinstance(labels, list) or not all(isinstance(c, str) and len(c) <= 200 for c in labels) or len(labels) > MAX_CELLS:
        raise HTTPError(400, "'labels' must be a list of short strings")
    return cells, labels


class Me(Base):
    async def get(self) -> None:
        self.reply({"name": self.user.name, "role": self.user.role})


class _Exercise(Base):
    """The body of a predictions or check request, read and checked."""

    def parsed(self) -> tuple[Any, str, str, list[str], list[str], bytes]:
        from autograder.grading.identity import PLACEHOLDER_ID

        data = self.body()
        assignment, exercise, student = _text(data, "assignment"), _text(data, "exercise"), _text(data, "student")
        if not same_student(student, self.user.name):
            if student == PLACEHOLDER_ID:
                raise HTTPError(403, f"STUDENT_ID is still the placeholder: you are signed in as {self.user.name!r}, "
                                     f"so set STUDENT_ID = \"{self.user.name}\" in the notebook's first cell, then run "
                                     f"that cell and the set-up cell after it (or Run All)")
            raise HTTPError(403, f"this notebook's STUDENT_ID is {student!r}, but you are signed in as "
                                 f"{self.user.name!r}: a student checks only their own work")
        student = self.user.name   # the course's spelling of the id ("Amy" in the notebook is amy: one student)
        cells, labels = _cells(data)
        results = data.get("results")
        if not isinstance(results, str):
            raise HTTPError(400, "'results' must be the probe's results stream as a string")
        return assignment, exercise, student, cells, labels, results.encode("utf-8", "surrogateescape")

    def key_of(self, assignment: str, exercise: str, conn: sa.Connection | None = None) -> Any:
        key = self.service.key(assignment, conn)
        if key is None:
            raise HTTPError(404, f"assignment {assignment!r} is not on this course service "
                                 f"(staff release it with: autograder release solutions/{assignment} --course URL)")
        if exercise not in {e.id for e in key.exercises}:
            raise HTTPError(404, f"assignment {assignment!r} has no exercise {exercise!r}")
        return key


class Predictions(_Exercise):
    """Phase one of a check: the predictions as written. Committed (the first complete set) and recorded, in one
    transaction, before anything is judged. (It takes no lease: one short transaction, and idempotent.)"""

    unavailable = (f"the course service cannot store your check right now; nothing is lost: run this cell again in "
                   f"{RETRY_SECONDS} s")

    async def post(self) -> None:
        from autograder import wire
        from autograder.grading.grade import commit_from_results

        assignment, exercise, student, cells, labels, results = self.parsed()

        def commit() -> dict[str, Any]:   # in the pool, one call: the key, the commit record, the transaction
            key = self.key_of(assignment, exercise)
            try:
                record, missing = commit_from_results(key, results, student, exercise, cells, labels)
            except wire.WireError as e:
                raise HTTPError(400, f"the results stream is malformed: {e}") from None
            except RecursionError:
                raise HTTPError(400, "the results stream is nested too deeply") from None
            values = record["values"] if record is not None else None
            if values is not None and len(json.dumps(values)) > MAX_PREDICTIONS:
                raise HTTPError(413, f"these predictions take more than {MAX_PREDICTIONS} bytes: a prediction is a "
                                     f"few numbers, a shape or an answer, not a large tensor")
            kept, kind, revealed = self.course.record_predictions(assignment, student, exercise, values, record)
            return {"commit": kept, "kind": kind, "missing": missing, "after_reveal": revealed}

        self.reply(await self.db(commit))


COURSE_SELF_CHECK = "self-check of your notebook as it runs (it counts once handed in: lab.submit())"


def _after_handin(counting: dict[str, Any], deadline: Any, student: str) -> str:
    """What a check says once the student has handed in: which hand-in counts, and whether handing in again would
    change that (after the due time, under "last-on-time", a late hand-in does not replace an on-time one)."""
    from autograder.service import db

    head = f"your hand-in that counts is of {counting['received']} (the course's clock); this check shows the " \
           f"notebook as it runs now"
    if deadline is not None and db.now() > deadline.due_for(student) and deadline.counts == "last-on-time" \
            and not counting["late_by"]:
        return f"{head}: the due time has passed, so a hand-in now would be late and would not replace it"
    return f"{head}: if you changed it since, save it and run lab.submit() again for that to count"


class Check(_Exercise):
    """Phase two: the observations (the calls made after the commit). Judged with the public checks and the
    exercise's commit as the service holds it; the report is kept and returned."""

    alone = "check"
    unavailable = Predictions.unavailable

    async def post(self) -> None:
        await self.lease_kept(self._judge)

    async def _judge(self) -> None:
        from autograder.grading.grade import report_from_results

        assignment, exercise, student, cells, labels, results = self.parsed()

        # in the pool, one call on one connection: the key, the commit, the judge, the record (its JSON, once)
        def judge(conn: sa.Connection) -> str:
            key = self.key_of(assignment, exercise, conn)
            record = self.course.commit_record(assignment, student, exercise, conn)
            public = self.service.public(key)
            predicting = frozenset(c.exercise for c in key.checks if c.kind == "predict" and c.name)   # hidden too
            judged = report_from_results(
                public, results, student, [exercise], COURSE_SELF_CHECK, cells, labels,
                [record] if record else [], seal=True, commit_now=False, course=True, predicting=predicting)
            counting = next((h for h in _with_counts(self.service, assignment, self.course.handins_of(
                assignment, student, conn)) if h["counts"]), None)
            if counting is not None:   # a check after a hand-in: the hand-in that counts is older than what it shows
                judged = dataclasses.replace(judged, notes=(*judged.notes, _after_handin(
                    counting, self.service.deadlines().get(assignment), student)))
            report = json.dumps(judged.to_dict(), allow_nan=False)
            predicts = any(c.kind == "predict" and c.exercise == exercise for c in key.checks)
            self.course.add_report(assignment, student, exercise, report, bool(record) and predicts, conn)
            return report

        self.finish(await self.db_last(judge))


class StudentCommits(Base):
    async def get(self, name: str, assignment: str) -> None:
        self.need_self_or_staff(name)
        commits = await self.db(self.course.commits_of, assignment, name)
        history = await self.db(self.course.history, assignment, name)
        self.reply({"commits": commits.get(name, []), "predictions": history})


class StudentReports(Base):
    async def get(self, name: str, assignment: str) -> None:
        self.need_self_or_staff(name)
        self.reply({"reports": await self.db(self.course.reports_of, assignment, name)})


class AssignmentKey(Base):
    async def put(self, assignment: str) -> None:
        self.need_staff()
        data = self.body()
        if data.get("assignment") != assignment:
            raise HTTPError(400, f"this key is of assignment {data.get('assignment')!r}, not {assignment!r}")
        try:
            key = await self.db(self.course.put_key, data)
        except ValueError as e:
            raise HTTPError(400, str(e)) from None
        self.service.forget(key.assignment)
        from autograder.grading.grade import prepare_grading

        self.service.pool.submit(prepare_grading, key)   # its expressions compiled now, not in a student's first check
        self.reply({"assignment": key.assignment, "digest": key.digest})


class Assignments(Base):
    async def get(self) -> None:
        self.need_staff()
        self.reply({"assignments": await self.db(self.course.assignment_ids)})


class AssignmentCommits(Base):
    """Staff: everyone's commits; with ?until=handin, only those made before each student's hand-in that counts (a
    prediction committed later is not part of the notebook handed in)."""

    async def get(self, assignment: str) -> None:
        self.need_staff()
        until = None
        if self.get_query_argument("until", "") == "handin":
            handins = await self.db(self.course.handins_of, assignment)
            when = {h["id"]: h["when"] for h in handins}
            until = {h["student"]: when[h["id"]] for h in _with_counts(self.service, assignment, handins) if h["counts"]}
        self.reply({"commits": await self.db(self.course.commits_of, assignment, None, until)})


class Users(Base):
    async def get(self) -> None:
        self.need_staff()
        roster = await self.db(self.course.roster)
        self.reply({"users": [{"name": u.name, "role": u.role} for u in roster]})

    async def post(self) -> None:
        self.need_staff()
        data = self.body()
        name, role = data.get("name"), data.get("role", "student")
        try:
            token = await self.db(self.course.add_user, name, role)
        except ValueError as e:
            raise HTTPError(400, str(e)) from None
        self.reply({"name": name, "role": role, "token": token}, 201)


_SURROGATE = re.compile(rb"\\[uU][dD][89a-fA-F]")   # a JSON escape of a UTF-16 surrogate
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")   # in a name (an id, a path's part): PostgreSQL refuses NUL in text
MAX_HANDIN = 20_000_000   # bytes of a handed-in notebook
MAX_ARRIVING = 200_000_000   # bytes all requests arriving at once may hold, together (one per user at a time)
COOKIE = "autograd_lab_staff"
# the staff pages (HTML) are never shown in a frame: no other page (a student's server under JupyterHub shares the
# service's origin) may lay them under its own
NO_FRAMES = "frame-ancestors 'none'"


def api_base(handler: tornado.web.RequestHandler) -> str:
    """The API's base a request came to: /api/v1, or under JupyterHub the service's prefix + /api/v1 (the proxy
    keeps the prefix)."""
    bases = handler.application.settings.get("api_bases", (API,))
    return max((b for b in bases if handler.request.path.startswith(b + "/")), key=len, default=API)


def staff_page_headers(handler: tornado.web.RequestHandler, csp: str) -> None:
    """The headers of a staff HTML page: its Content-Security-Policy `csp` with frame-ancestors 'none', and
    X-Frame-Options: DENY (for browsers that know only that)."""
    handler.set_header("Content-Security-Policy", f"{csp}; {NO_FRAMES}")
    handler.set_header("X-Frame-Options", "DENY")


def _lateness(deadline: Any, student: str, when: Any) -> dict[str, Any]:
    """A hand-in's lateness under `deadline` (a late.Deadline, or None), with the student's own due time."""
    from autograder.service import late

    out = late.lateness(when, deadline, student).to_dict()
    if deadline is not None:   # in the course's time zone where course.toml names one (else UTC)
        due = deadline.due_for(student)
        out["due"] = (due.astimezone(deadline.zone) if deadline.zone else due).isoformat()
        out["extension"] = student in deadline.extensions
    return out


def _with_counts(service: Service, assignment: str, handins: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Receipts with their lateness and whether each is the one that counts (late.counted, per student)."""
    from autograder.service import late

    deadline = service.deadlines().get(assignment)
    by_student: dict[str, list[tuple[int, Any]]] = {}
    for h in handins:
        by_student.setdefault(h["student"], []).append((h["id"], h["when"]))
    counting = {late.counted(v, deadline, s) for s, v in by_student.items()}
    return [{**{k: v for k, v in h.items() if k != "when"}, **_lateness(deadline, h["student"], h["when"]),
             "counts": h["id"] in counting} for h in handins]


class HandIns(Base):
    """POST: hand in a notebook (its bytes) as the token's student; GET (staff): every hand-in, with the ones that
    count marked."""

    max_body = MAX_HANDIN

    def raw_body(self) -> bytes:
        if getattr(self, "_size", 0) > self.max_body:
            raise HTTPError(413, f"not handed in: the notebook is over {self.max_body // 1_000_000} MB (it is "
                                 f"{self._size / 1e6:.1f} MB: a large output or image in it?); your work stays in "
                                 f"your notebook")
        try:
            return super().raw_body()
        except HTTPError as e:
            raise HTTPError(e.status_code, f"not handed in: {e.why}; your work stays in your notebook",
                            e.retry_after) from None

    alone = "hand-in"
    unavailable = (f"not handed in: the course service cannot store hand-ins right now; nothing is lost and your work "
                   f"stays in your notebook: hand in again in {RETRY_SECONDS} s")

    async def post(self, assignment: str) -> None:
        await self.lease_kept(lambda: self._hand_in(assignment))

    async def _hand_in(self, assignment: str) -> None:
        from autograder.service import db
        from autograder.service.store import TooManyHandIns

        arrived = db.now()   # the hand-in's time: when its last byte came, not when the database got to it
        data = self.raw_body()
        student = self.user.name

        def keep(conn: sa.Connection) -> tuple[dict[str, Any], list[dict[str, Any]]]:   # in the pool, one call
            self._known(assignment, conn)
            problem = _handin_problem(data, assignment, student)
            if problem:
                raise HTTPError(400, f"not handed in: {problem}; your work stays in your notebook")
            try:
                receipt = self.course.add_handin(assignment, student, data, arrived)
            except TooManyHandIns as e:
                raise HTTPError(409, f"not handed in: {e}; your work stays in your notebook") from None
            return receipt, self.course.handins_of(assignment, student, conn)

        receipt, mine = await self.db_last(keep)
        shown = next(h for h in _with_counts(self.service, assignment, mine) if h["id"] == receipt["id"])
        self.reply({**shown, "again": receipt["again"]}, 200 if receipt["again"] else 201)

    async def get(self, assignment: str) -> None:
        self.need_staff()
        await self.db(self.service.deadlines)   # course.toml read first: a change it notes is in this answer
        handins = await self.db(self.course.handins_of, assignment)
        graded = await self.db(self.course.graded_of, assignment)
        notes = await self.db(self.course.handin_notes_of, assignment)
        self.reply({"handins": [{**h, "graded": (graded[h["id"]].get("fingerprint") or "graded")
                                 if h["id"] in graded else None, "history": notes.get(h["id"], [])}
                                for h in _with_counts(self.service, assignment, handins)]})

    def _known(self, assignment: str, conn: sa.Connection | None = None) -> None:
        if self.service.key(assignment, conn) is None:
            raise HTTPError(404, f"assignment {assignment!r} is not on this course service")


def _handin_problem(data: bytes, assignment: str, student: str) -> str:
    """Why `data` cannot be this student's hand-in of `assignment` ("" when it can): not a notebook, another
    assignment's, or another student's (its STUDENT_ID). Never quotes the file."""
    from autograder.grading.identity import PLACEHOLDER_ID
    from autograder.grading.notebook import NotebookError, declared_assignment, declared_student_id, parse_notebook

    if not data:
        return "the request holds no notebook"
    try:
        nb = parse_notebook(data, "the file handed in", outputs=False)
    except NotebookError as e:
        return str(e)
    except RecursionError:
        return "this is not a Jupyter notebook (its JSON is nested too deeply)"
    other = declared_assignment(nb)
    if other and other != assignment:
        return f"this notebook is assignment {other!r}, not {assignment!r}"
    declared = declared_student_id(nb)
    if declared == PLACEHOLDER_ID:
        return f"its STUDENT_ID is still the placeholder: set STUDENT_ID = \"{student}\", save, and hand in again"
    if declared and not same_student(declared, student):
        return f"its STUDENT_ID is {declared[:100]!r}, but you are signed in as {student!r}"
    return ""


class StudentHandIns(Base):
    async def get(self, name: str, assignment: str) -> None:
        self.need_self_or_staff(name)
        await self.db(self.service.deadlines)   # course.toml read first: a change it notes is in this answer
        handins = await self.db(self.course.handins_of, assignment, name)
        counted = _with_counts(self.service, assignment, handins)
        notes = await self.db(self.course.handin_notes_of, assignment, name)
        self.reply({"handins": [{**h, "history": notes.get(h["id"], [])} for h in counted]})


class StudentFeedback(Base):
    """The graded feedback of the student's hand-in that counts, once staff released it."""

    async def get(self, name: str, assignment: str) -> None:
        from autograder.service import late

        self.need_self_or_staff(name)
        released = await self.db(self.course.feedback_released, assignment)
        if released is None and not self.user.staff:
            raise HTTPError(404, f"the feedback of {assignment} is not released yet: your course staff release it "
                                 f"after grading")
        handins = _with_counts(self.service, assignment, await self.db(self.course.handins_of, assignment, name))
        counting = next((h for h in handins if h["counts"]), None)
        if counting is None:
            raise HTTPError(404, f"{name} has handed in nothing for {assignment}")
        report = (await self.db(self.course.graded_of, assignment)).get(counting["id"])
        if report is None:
            raise HTTPError(404, f"the hand-in of {counting['received']} is not graded yet")
        from autograder.service.overrides import with_overrides

        report = (await self.db(with_overrides, self.service, assignment, name, {name: report}))[0][name]   # staff's
        lateness = late.Lateness(counting["late_by"], counting["penalty"], counting["why"])
        counting["history"] = (await self.db(self.course.handin_notes_of, assignment, name)).get(counting["id"], [])
        self.reply({"released": released, "handin": counting, "report": report,
                    "final_score": late.final_score(report.get("score"), lateness)})


class HandIn(Base):
    """Staff: a hand-in's notebook (GET: its bytes) and its graded report (POST)."""

    async def get(self, hid: str) -> None:
        self.need_staff()
        found = await self.db(self.course.handin, int(hid))
        if found is None:
            raise HTTPError(404, f"no hand-in {hid}")
        self.set_header("Content-Type", "application/x-ipynb+json")
        self.finish(found[2])

    async def post(self, hid: str) -> None:
        self.need_staff()
        report = self.body()
        try:
            await self.db(self.course.add_graded, int(hid), report)
        except ValueError as e:
            raise HTTPError(400, str(e)) from None
        self.reply({"handin": int(hid), "stored": True}, 201)


class Feedback(Base):
    async def put(self, assignment: str) -> None:
        self.need_staff()
        self.reply({"assignment": assignment, "released": await self.db(self.course.release_feedback, assignment)})


NOT_HANDED_IN = "not handed in"   # a gradebook row's status for a roster student with no hand-in (its scores empty)


def gradebook_rows(service: Service, assignment: str) -> list[dict[str, Any]]:
    """One row per student of the roster, and per student with a hand-in (with JupyterHub, students are added as they
    come): the hand-in that counts, when it came, how late, its score and the score after the late penalty (the one
    place the policy is applied to a score), with staff's overrides applied (`overrides`: the standing ones in
    words, service.overrides.export_text); a student who has not handed in has status NOT_HANDED_IN and empty
    scores (never 0), so that staff see the whole class."""
    from autograder.service import late
    from autograder.service.overrides import export_text, with_overrides

    handins = _with_counts(service, assignment, service.course.handins_of(assignment))
    graded = service.course.graded_of(assignment)
    adjusted, overrides = with_overrides(service, assignment, None, {   # the reports that count, with staff's overrides
        h["student"]: graded.get(h["id"]) for h in handins if h["counts"]})
    handed_in = {h["student"] for h in handins}
    rows = [{"student": u.name, "handin": None, "submitted_at": None, "late_by": None, "penalty": None,
             "status": NOT_HANDED_IN, "score": None, "max_score": None, "final_score": None, "late": "",
             "overrides": ""}
            for u in service.course.roster() if not u.staff and u.name not in handed_in]
    for h in (h for h in handins if h["counts"]):
        report = adjusted.get(h["student"]) or graded.get(h["id"])
        score = report.get("score") if report else None
        status = report.get("status", "graded") if report else "not graded yet"
        lateness = late.Lateness(h["late_by"], h["penalty"], h["why"])
        rows.append({"student": h["student"], "handin": h["id"], "submitted_at": h["received"],
                     "late_by": h["late_by"], "penalty": h["penalty"], "status": status, "score": score,
                     "max_score": report.get("max_score") if report else None,
                     "final_score": late.final_score(score, lateness), "late": h["why"],
                     "overrides": export_text([r for r in overrides if r["student"] == h["student"]])})
    return sorted(rows, key=lambda r: r["student"])


GRADEBOOK_COLUMNS = ("student", "status", "score", "max_score", "submitted_at", "late_by", "penalty", "final_score",
                     "late", "handin", "overrides")


class Gradebook(Base):
    async def get(self, assignment: str) -> None:
        import csv
        import io

        self.need_staff()
        rows = await self.db(gradebook_rows, self.service, assignment)
        if self.get_query_argument("format", "json") != "csv":
            return self.reply({"assignment": assignment, "rows": rows})
        from autograder.render.gradebook import cell

        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(GRADEBOOK_COLUMNS)
        for r in rows:
            w.writerow([cell(str(r[c])) if isinstance(r[c], str) else ("" if r[c] is None else r[c])
                        for c in GRADEBOOK_COLUMNS])
        self.set_header("Content-Type", "text/csv; charset=utf-8")
        self.finish(buf.getvalue())


class Stats(Base):
    """Staff: the class view (render.stats' page) of the graded hand-ins that count, made again once a hand-in, a report,
    the key or course.toml changed."""

    async def get(self, assignment: str) -> None:
        self.need_staff()
        page = await self.db(_stats_page, self.service, assignment, pool=self.service.judging)
        if page is None:
            raise HTTPError(404, f"no graded hand-in of {assignment} yet")
        self.set_header("Content-Type", "text/html; charset=utf-8")
        staff_page_headers(self, "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
        self.finish(page)


def _class_stamp(service: Service, assignment: str) -> tuple[Any, tuple[str, ...], tuple[Any, ...]]:
    """What a class-wide staff page of `assignment` depends on, after course.toml is looked at again (deadlines,
    extensions and `counts` decide which hand-in counts): (its key, the roster's students, a stamp that changes when a
    hand-in, a report, the key, the deadlines or the roster does)."""
    service.deadlines()
    key = service.course.key(assignment)
    students = tuple(u.name for u in service.course.roster() if not u.staff)
    return key, students, (service.course.handins_version(assignment), key.digest if key else "",
                           service.deadlines_stamp, students)


def _counting(service: Service, assignment: str) -> tuple[dict[int, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """(the graded reports by hand-in id, every hand-in with whether it counts, the graded hand-ins that count, by
    student)."""
    graded = service.course.graded_of(assignment)
    handins = _with_counts(service, assignment, service.course.handins_of(assignment))
    return graded, handins, sorted((h for h in handins if h["counts"] and h["id"] in graded),
                                   key=lambda h: h["student"])


def _stats_page(service: Service, assignment: str) -> str | None:
    """The class view of `assignment`, made again only when a hand-in, a graded report, the key or the deadlines
    changed since the last one (None: nothing graded yet)."""
    from autograder.render.class_stats import class_stats
    from autograder.render.stats import to_html
    from autograder.report import Report

    key, students, stamp = _class_stamp(service, assignment)
    stamp += (service.course.overrides_version(assignment),)
    cached = service.stats_pages.get(assignment)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    graded, handins, counting = _counting(service, assignment)
    reports = [Report.from_dict(graded[h["id"]]) for h in counting]
    page = None
    if reports:
        stats = class_stats(reports, assignment, key)
        moved = service.course.handin_notes_of(assignment)
        page = to_html(dataclasses.replace(stats, notes=(*stats.notes, *_class_notes(students, handins, moved,
                                                                                      set(graded)))),
                       collusion="collusion",   # the staff page beside this one: /assignments/<id>/collusion
                       links=_staff_links(service, assignment))
    service.stats_pages[assignment] = (stamp, page)
    return page


class CollusionView(Base):
    """Staff: the collusion view (render.collusion's page, or its CSV with ?format=csv) of the graded hand-ins that
    count: evidence only, it changes no score. Made again once a hand-in, a report, the key or course.toml changed."""

    async def get(self, assignment: str) -> None:
        self.need_staff()
        csv = self.get_query_argument("format", "html") == "csv"
        view = await self.db(_collusion_view, self.service, assignment, pool=self.service.judging)
        if view is None:
            raise HTTPError(404, f"no graded hand-in of {assignment} yet, or no key for it on this service")
        from autograder.render.collusion import to_csv, to_html

        if csv:
            self.set_header("Content-Type", "text/csv; charset=utf-8")
            self.set_header("Content-Disposition", f'attachment; filename="collusion-{assignment}.csv"')
            return self.finish(to_csv(view))
        self.set_header("Content-Type", "text/html; charset=utf-8")
        staff_page_headers(self, "default-src 'none'; style-src 'unsafe-inline'")
        self.finish(to_html(view))


def _collusion_view(service: Service, assignment: str) -> Any:
    """The collusion view (render.collusion.Collusion) of `assignment`'s graded hand-ins that count, with their
    notebooks' produce cells; None when nothing is graded or the service holds no key of it. Kept until a hand-in, a
    report, the key, the roster or course.toml (deadlines, extensions: which hand-in counts) changes, as the class
    view is."""
    from autograder.authoring.collusion import collusion
    from autograder.report import Report

    key, _, stamp = _class_stamp(service, assignment)
    cached = service.collusion_views.get(assignment)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    graded, _, counting = _counting(service, assignment)
    view = None
    if counting and key is not None:
        reports = [Report.from_dict(graded[h["id"]]) for h in counting]
        notebooks = {}
        for h, r in zip(counting, reports, strict=True):
            found = service.course.handin(h["id"])
            if found is not None:
                notebooks[r.submission] = found[2]
        try:
            view = collusion(reports, key, notebooks)
        except ValueError:   # no counted report of the key's assignment
            view = None
    service.collusion_views[assignment] = (stamp, view)
    return view


def _staff_links(service: Service, assignment: str) -> tuple[tuple[str, str], ...]:
    """The class view's links to the other staff pages of `assignment` (paths relative to the class view's): its
    overrides (with how many wait for staff to confirm)."""
    from autograder.service.overrides import with_overrides

    waiting = sum(1 for r in with_overrides(service, assignment)[1] if r["state"] == "to confirm")
    return (("Correct a grade: overrides" + (f" ({waiting} to confirm: their check changed)" if waiting else ""),
             "overrides/page"),)   # beside the class view's own path (/api/v1/assignments/<id>/stats), under a prefix too


def _class_notes(students: tuple[str, ...], handins: list[dict[str, Any]],
                 history: dict[int, list[dict[str, str]]] | None = None, graded: set[int] | None = None
                 ) -> tuple[str, ...]:
    """What the service's class view says beside the batch's numbers: the scores are before the late penalty, which
    students of the roster have not handed in (issue 46: staff saw 9 rows for a roster of 28, with no word of the
    other 19), and which hand-ins that count a due time moved earlier made late (`history`: hand-in id -> notes)."""
    handed_in = {h["student"] for h in handins}
    missing = [name for name in students if name not in handed_in]
    notes = ["Scores here are before any late penalty: the gradebook (autograder course export) has each student's "
             "final score."]
    if missing:
        shown = ", ".join(missing[:40]) + (f" and {len(missing) - 40} more" if len(missing) > 40 else "")
        verb = "has" if len(missing) == 1 else "have"
        notes.append(f"{len(missing)} of the roster's {len(students)} students {verb} not handed in (not counted, "
                     f"never as 0): {shown}.")
    waiting = sorted(h["student"] for h in handins if h["counts"] and graded is not None and h["id"] not in graded)
    if waiting:   # the hand-in that counts is not graded (yet): such a student is in no number above
        notes.append(f"{len(waiting)} student(s) whose hand-in that counts is not graded yet, so not in the numbers "
                     f"above: {', '.join(waiting[:40])}{' and more' if len(waiting) > 40 else ''} (grade them: "
                     f"autograder grade --service).")
    moved = sorted({h["student"] for h in handins if h["counts"] and h["late_by"] and (history or {}).get(h["id"])})
    if moved:
        shown = ", ".join(moved[:40]) + (f" and {len(moved) - 40} more" if len(moved) > 40 else "")
        notes.append(f"A due time moved earlier in course.toml made {len(moved)} hand-in(s) that count late, or later, "
                     f"after their receipts said otherwise: {shown} (each receipt's history says how; the service's "
                     f"log lists them).")
    return tuple(notes)


LOGIN_PAGE = """<!doctype html><html lang="en"><head><meta charset="utf-8"><title>autograd-lab: sign in</title></head>
<body><main><h1>autograd-lab course service</h1><form method="post" action="{action}">
<label>Staff token <input type="password" name="token" autocomplete="off" id="token"></label>
<input type="hidden" name="next" value="{next}"><button type="submit" id="signin">Sign in</button></form>
<p role="status">{note}</p></main></body></html>"""


@tornado.web.stream_request_body
class Login(tornado.web.RequestHandler):
    """A browser signs in with a staff token (the form's POST body, never the URL) and gets a signed, HTTP-only cookie
    for the staff pages (GET only, for a day). The cookie holds a random session id and the token stays in the
    service's memory: whoever reads the cookie can read those pages, never use the token's other powers, and a
    revoked token signs the browser out. The one route without a token: it is where one is given."""

    def initialize(self, service: Service) -> None:
        self.service = service
        self._form, self._size = b"", 0

    def prepare(self) -> None:   # before its body is read
        length = self.request.headers.get("Content-Length", "0")
        digits = length.isascii() and length.isdigit()
        if not digits or int(length) > 4096:
            raise tornado.web.HTTPError(413 if digits else 400)

    def data_received(self, chunk: bytes) -> None:   # a sign-in form is a few hundred bytes: keep at most 4 kB
        self._size += len(chunk)
        if self._size <= 4096:
            self._form += chunk

    def _field(self, name: str) -> str:
        from urllib.parse import parse_qs

        if self._size > 4096:
            raise tornado.web.HTTPError(413)
        try:
            return parse_qs(self._form.decode("utf-8"), max_num_fields=10).get(name, [""])[0]
        except (UnicodeDecodeError, ValueError):
            raise tornado.web.HTTPError(400) from None

    def set_default_headers(self) -> None:
        self.set_header("Cache-Control", "no-store")
        staff_page_headers(self, "default-src 'none'; form-action 'self'")

    def _base(self) -> str:
        """The API's base this sign-in came to (api_base). The cookie is scoped to it: a student's server under the
        same origin (/user/amy/) never receives it."""
        return api_base(self)

    def _page(self, note: str = "", status: int = 200) -> None:
        import html

        nxt = self.get_argument("next", "")
        nxt = nxt if nxt.startswith(self._base() + "/") else ""
        self.set_status(status)
        self.finish(LOGIN_PAGE.format(action=html.escape(self.request.path), next=html.escape(nxt),
                                      note=html.escape(note)))

    def get(self) -> None:
        self._page()

    async def post(self) -> None:
        token = self._field("token").strip()
        where = client_address(self.request, self.service.behind_proxy)
        try:
            user = await self.service.identify(token) if token else None
            if user is None or not user.staff:
                wait = await self.service.run(self.service.rules.take, "addr:" + where, self.service.limits.bad_tokens
                                              / 60.0, self.service.limits.bad_tokens)
                if wait > 0:
                    return self._page("Too many wrong tokens from this address: wait a minute.", 429)
                return self._page("That is not a staff token of this course.", 403)
            digest = "" if self.service.hub_identify is not None else token_digest(token)
            sid = await self.service.run(self.service.rules.open_session, user.name, user.role, digest)
        except DB_ERRORS as e:
            log.error("a sign-in failed: the database cannot be used: %s", _short_error(e))
            self.set_header("Retry-After", str(RETRY_SECONDS))
            return self._page(f"The course service cannot sign you in right now: try again in {RETRY_SECONDS} s.", 503)
        https = self.request.protocol == "https" or (bool(self.service.behind_proxy) and (
            self.request.headers.get("X-Forwarded-Proto", "").split(",")[-1].strip().lower() == "https"))
        base = self._base()
        self.set_signed_cookie(COOKIE, sid, expires_days=1, httponly=True, samesite="Strict", secure=https,
                               path=base + "/")
        nxt = self._field("next")
        self.redirect(nxt if nxt.startswith(base + "/") else f"{base}/me")


class NotFound(Base):
    async def prepare(self) -> None:   # an unknown route is 404 for anyone (no token needed to learn that)
        raise HTTPError(404, "no such route; the routes are under /api/v1 (see docs/course.md)")


class Service:
    """What one service process holds: the course database (`course`) and its rules (`rules`: the per-user rules,
    in the database too), who a token is, thread pools, and caches: the keys and public keys by digest, the class
    view's pages, the deadlines of course.toml. Nothing here is a rule: any number of processes serve one course.
    The one exception is a guard of the process's own memory: the request bodies arriving at it (at most one per
    user, MAX_ARRIVING bytes in all)."""

    KEY_FRESH = 1.0   # seconds a process uses an assignment's key before it asks the database for its digest again

    def __init__(self, course: Course, identify: Callable[[str], Awaitable[User | None]] | None = None,
                 limits: Limits | None = None, behind_proxy: bool | str = False, config: str | None = None,
                 rules: Rules | None = None) -> None:
        self.course = course
        self.rules = rules or Rules(course.engine)
        # the header a proxy in front sets with the client's address ("x-forwarded-for", "x-real-ip"; True: the
        # first), or "" (no proxy: the connection's address); see Base.client_address
        self.behind_proxy = PROXY_HEADERS[0] if behind_proxy is True else (behind_proxy or "")
        self.limits = limits or Limits()
        self.pool = concurrent.futures.ThreadPoolExecutor(POOL, thread_name_prefix="course-db")
        self.judging = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="course-stats")   # the class view
        self.hub_identify = identify   # JupyterHub mode: the Hub says who a token is (else the database does)
        self._public: dict[str, Any] = {}
        self._keys: dict[str, tuple[float, Any]] = {}   # assignment -> (when its digest was read, its key)
        self.held: set[str] = set()   # the leases this process's requests hold, renewed while they run (the loop's)
        self.config = config
        self._deadlines: tuple[Any, dict[str, Any]] = (None, {})
        self.stats_pages: dict[str, tuple[Any, str | None]] = {}   # assignment -> (what it was made from, the page)
        self.collusion_views: dict[str, tuple[Any, Any]] = {}   # assignment -> (what it was made from, the view)
        self.sending: set[str] = set()   # users with a request body arriving now (the event loop's thread only)
        self.arriving = 0   # bytes those bodies hold so far
        self.cookie_secret = self.rules.secret()   # the same in every process: a sign-in holds in all of them

    async def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)` in the database's thread pool."""
        return await asyncio.get_running_loop().run_in_executor(self.pool, fn, *args)

    def admit(self, kind: str, secret: str, user: User | None, where: str, alone: str | None) -> Admission:
        """The rules for one request (in the pool): who it is (`user`, when JupyterHub said; else its
        token or its browser session), then its rate (per user; a request that is no one's costs its address
        instead) and, for a route that runs `alone`, the user's lease. Raises what the database raises.
        Two statements, each atomic by itself, on one connection (db.single: on PostgreSQL with no transaction around
        them): a token withdrawn between them still admits this one request, as it would have a moment earlier."""
        with self.course.single.begin() as conn:
            if user is None and kind == "token":
                user = self.course.user_for_digest(token_digest(secret), conn)
            elif user is None and kind == "session":
                user = self._session_user(secret, conn)
            if user is None:
                return Admission(None, self.rules.take("addr:" + where, self.limits.bad_tokens / 60.0,
                                                       self.limits.bad_tokens))
            holder = self.rules.holder(alone) if alone else None
            wait, other = self.rules.admit("user:" + user.name, self.limits.rate, self.limits.burst, holder, conn)
        if wait > 0 or holder is None:
            return Admission(user, wait)
        if other is not None:
            return Admission(user, busy=other)
        return Admission(user, holder=holder)

    def _session_user(self, sid: str, conn: Any) -> User | None:
        """The user of a browser session: its own, unless the token it was opened with has been withdrawn."""
        found = self.rules.session(sid, conn)
        if found is None:
            return None
        name, role, digest = found
        if digest and self.course.user_for_digest(digest, conn) is None:
            return None
        return User(name, role)   # type: ignore[arg-type]

    def let_go(self, name: str, holder: str) -> None:
        """Release a request's lease (from the event loop: in the pool; a failure only leaves it to expire)."""
        self.held.discard(holder)

        def release() -> None:
            try:
                self.rules.release("user:" + name, holder)
            except DB_ERRORS as e:
                log.warning("a lease could not be released (it expires by itself): %s", _short_error(e))
        self.pool.submit(release)

    def renew(self) -> None:
        """Renew the leases of the requests this process still works on (every rules.LEASE_SECONDS / 4)."""
        held = list(self.held)
        if held:
            def renew() -> None:
                try:
                    self.rules.renew(held)
                except DB_ERRORS as e:
                    log.warning("leases could not be renewed: %s", _short_error(e))
            self.pool.submit(renew)

    def key(self, assignment: str, conn: sa.Connection | None = None) -> Any:
        """The assignment's full key, or None: from this process's cache for KEY_FRESH seconds after its digest was
        last read from the database (a re-release is seen by every process within that); read on `conn` when given
        (a request's connection: no second one from the pool while it holds one)."""
        now = time.monotonic()
        cached = self._keys.get(assignment)
        if cached is not None and now - cached[0] < self.KEY_FRESH:
            return cached[1]
        key = self.course.key(assignment, conn)
        self._keys[assignment] = (now, key)
        return key

    def deadlines(self) -> dict[str, Any]:
        """The course's deadlines (late.load of `config`), read again whenever the file changes; {} without one.
        A file that cannot be used keeps the last good one (and the log says why)."""
        if self.config is None:
            return {}
        from autograder.service import late

        try:
            st = os.stat(self.config)
            stamp = (st.st_mtime_ns, st.st_size, st.st_ino, st.st_ctime_ns)   # an edit that keeps the time still shows
        except OSError:
            return self._deadlines[1]
        if stamp != self._deadlines[0]:
            try:
                loaded = late.load(self.config)
            except late.ConfigError as e:
                log.error("%s; the service keeps the deadlines it read last", e)
                self._deadlines = (stamp, self._deadlines[1])
            else:
                self._deadlines = (stamp, loaded)
                log.info("%s: read the deadlines of %s", self.config, ", ".join(sorted(loaded)) or "no assignment")
                self._note_moves(loaded, stamp)
                unknown = sorted(a for a in loaded if self.course.key(a) is None)
                if unknown:
                    log.warning("%s names %s, not released on this service (yet): a typo in an id?", self.config,
                                ", ".join(unknown))
        return self._deadlines[1]

    def _note_moves(self, loaded: dict[str, Any], stamp: Any = None) -> None:
        """course.toml moved a due time earlier (the assignment's, or a student's extension): note it in the history
        of each hand-in it made late, or later (once, by whichever process sees it first; students read it with
        their receipts and feedback), and warn staff in the log (the class view says it too). A due time moved
        later needs no note: every receipt is read again under the deadline of now."""
        import hashlib

        from autograder.service import late

        # the file's edit names the change: the same move made again later is noted again, while the processes that
        # read this one edit note it once between them (db.handin_notes' unique (handin, change))
        edit = hashlib.sha256(repr(stamp).encode()).hexdigest()[:12]
        for aid, dl in loaded.items():
            try:
                before = self.course.swap_dues(aid, {"": dl.due, **dl.extensions})
                if not before:
                    continue
                notes = []
                for h in self.course.handins_of(aid):
                    old, new = before.get(h["student"], before.get("")), dl.due_for(h["student"])
                    if old is None or new >= old or h["when"] <= new:
                        continue
                    was = late.lateness(h["when"], dataclasses.replace(dl, due=old, extensions={}), h["student"])
                    now = late.lateness(h["when"], dl, h["student"])
                    notes.append({"handin": h["id"], "student": h["student"], "was": was.why, "now": now.why,
                                  "change": f"due {old.isoformat()} -> {new.isoformat()} ({edit})",
                                  "text": f"the due time moved earlier, from {old.isoformat()} to {new.isoformat()}: "
                                          f"this hand-in, {was.why} until then, became {now.why}"})
                added = self.course.add_handin_notes(notes)
            except Exception as e:   # a note is information: the receipts show the lateness of now all the same
                log.error("%s: the hand-ins a due time of %s moved earlier could not be noted now (%s: %s); the "
                          "receipts show the new lateness all the same", self.config, aid, type(e).__name__, e)
                continue
            if added:
                shown = "; ".join(f"{n['student']} (hand-in {n['handin']}: {n['was']} before, {n['now']} now)"
                                  for n in added[:40])
                log.warning("%s moved the due time of %s earlier: %d hand-in(s) it made late or later: %s%s",
                            self.config, aid, len(added), shown, f"; and {len(added) - 40} more" if len(added) > 40
                            else "")

    @property
    def deadlines_stamp(self) -> Any:
        """What course.toml was when deadlines() last read it (its time, size, inode and ctime)."""
        return self._deadlines[0]

    async def identify(self, token: str) -> User | None:
        """Who `token` is (JupyterHub's word in hub mode, else the database's), or None."""
        if self.hub_identify is not None:
            return await self.hub_identify(token)
        return await self.run(self.course.user_for_token, token)

    def public(self, key: Any) -> Any:
        """The public key of a full key (cached by digest)."""
        from autograder.keyfile import public_key

        if self._public.get(key.assignment, (None,))[0] != key.digest:
            self._public[key.assignment] = (key.digest, public_key(key))
        return self._public[key.assignment][1]

    def forget(self, assignment: str) -> None:
        """Drop what this process holds of an assignment's key (after this process took a new one)."""
        self._public.pop(assignment, None)
        self._keys.pop(assignment, None)


def _short_error(e: BaseException) -> str:
    """A database error in one line, for the log (its statement and parameters left out: they may hold a token's
    digest or a student's values)."""
    orig = getattr(e, "orig", None) or e
    return f"{type(orig).__name__}: {str(orig).strip().splitlines()[0][:300] if str(orig).strip() else ''}"


class Redact(logging.Filter):
    """Hides what follows "token" or "Bearer" in a log record (tornado logs a malformed request's header as it came),
    and any query string: a token is never written to the log."""

    _TOKEN = re.compile(r"(?i)\b(authorization\s*[:=]\s*(?:(?:token|bearer)\s+)?|(?:token|bearer)[\s:=]+)[^\s'\"]+")

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:
            return True
        hidden = self._TOKEN.sub(lambda m: f"{m.group(1)}[hidden]", text)
        if hidden != text:
            record.msg, record.args = hidden, None
        return True


_METHODS = ("GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS")


def _log_request(handler: tornado.web.RequestHandler) -> None:
    """The access log: method, path, status, time. Never the query, nor the path of a route that does not exist, nor
    a method that is not one: a token sent there by mistake stays out."""
    status = handler.get_status()
    method = handler.request.method if handler.request.method in _METHODS else "(another method)"
    path = "(no such route)" if isinstance(handler, NotFound) or status == 405 else \
        "/".join(part if len(part) < 32 else "[long]" for part in handler.request.path.split("/"))   # a token is 43
    service = getattr(handler, "service", None)
    where = client_address(handler.request, service.behind_proxy if service is not None else "")
    line = "%d %s %s (%s) %.1f ms" % (status, method, path, where,
                                       1000.0 * handler.request.request_time())
    (log.info if status < 400 else log.warning if status < 500 else log.error)(line)


PROXY_HEADERS = ("x-forwarded-for", "x-real-ip")   # what `serve --behind-proxy HEADER` may name


def client_address(request: Any, behind_proxy: str) -> str:
    """See Base.client_address. A value that is not a short address is not taken (the connection's is)."""
    said = ""
    if behind_proxy == "x-forwarded-for":
        values = request.headers.get_list("X-Forwarded-For")
        said = values[-1].split(",")[-1].strip() if values else ""
    elif behind_proxy == "x-real-ip":
        values = request.headers.get_list("X-Real-Ip")
        said = values[-1].strip() if values else ""
    if said and len(said) <= 64 and all(c in "0123456789abcdefABCDEF.:[]" for c in said):
        return said
    return request.remote_ip or "?"


def make_app(service: Service, prefix: str = "") -> tornado.web.Application:
    """The tornado Application of `service` (see the module docstring for its routes), also under `prefix` (behind
    JupyterHub's proxy a service is reached at /services/<name>/, and the proxy keeps that prefix)."""
    a = dict(service=service)
    name = r"([^/]{1,100})"
    routes = [("/me", Me), ("/predictions", Predictions), ("/check", Check), ("/login", Login),
              (f"/assignments/{name}/handins", HandIns), (f"/students/{name}/assignments/{name}/handins", StudentHandIns),
              (f"/students/{name}/assignments/{name}/feedback", StudentFeedback), (r"/handins/(\d{1,12})", HandIn),
              (f"/assignments/{name}/feedback", Feedback), (f"/assignments/{name}/gradebook", Gradebook),
              (f"/assignments/{name}/stats", Stats), (f"/assignments/{name}/collusion", CollusionView),
              (f"/students/{name}/assignments/{name}/commits", StudentCommits),
              (f"/students/{name}/assignments/{name}/reports", StudentReports),
              ("/assignments", Assignments), (f"/assignments/{name}/key", AssignmentKey),
              (f"/assignments/{name}/commits", AssignmentCommits), ("/users", Users)]
    from autograder.service import overrides   # its handlers build on Base, here

    routes += overrides.routes(name)
    bases = sorted({API, prefix.rstrip("/") + API} if prefix.strip("/") else {API})
    return tornado.web.Application([(base + path, handler, a) for base in bases for path, handler in routes],
                                   cookie_secret=service.cookie_secret, api_bases=tuple(bases), default_handler_class=NotFound, default_handler_args=a, log_function=_log_request,
        xsrf_cookies=False, compress_response=True)


async def serve(service: Service, sockets: list[Any], prefix: str = "") -> None:
    """Serve on `sockets` (listening already: tornado.netutil.bind_sockets) until cancelled, the routes also under
    `prefix`, renewing the leases of the requests under way meanwhile."""
    import tornado.httpserver
    import tornado.ioloop

    from autograder.service.rules import LEASE_SECONDS

    server = tornado.httpserver.HTTPServer(make_app(service, prefix), max_body_size=READ_AT_MOST,
                                           idle_connection_timeout=20, body_timeout=60)
    server.add_sockets(sockets)
    renewing = tornado.ioloop.PeriodicCallback(service.renew, LEASE_SECONDS / 4 * 1000)
    renewing.start()
    try:
        await asyncio.Event().wait()
    finally:
        renewing.stop()
        server.stop()
