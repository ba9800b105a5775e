"""db: the course service's tables (SQLAlchemy Core), its engines (SQLite by default, PostgreSQL by URL) and its
schema migrations (Alembic, in autograder/service/migrations). Nothing here knows HTTP or grading.

May import: stdlib, sqlalchemy, alembic.

Tables (schema revisions 0001 to 0005; a row of commits, predictions, reports, handins, graded or overrides is never
updated or deleted):
    users        name (pk), role ("student" | "staff"), created (UTC)
    tokens       digest (pk: sha256 hex of the token; the token itself is never stored), name -> users, created
    assignments  id (pk), key (the full key's JSON text), digest, uploaded (UTC); a release replaces the row
    commits      (assignment, student, exercise) unique, record (the commit record's JSON), committed (UTC)
    predictions  every prediction a kernel sent: assignment, student, exercise, values (JSON), received (UTC),
                 kind ("commit" | "same" | "revision" | "incomplete"), after_reveal (a report had shown answers)
    reports      every self-check report: assignment, student, exercise, report (JSON), made (UTC), revealed
    handins      every notebook handed in: assignment, student, received (UTC, the service's clock), size, digest
                 (sha256 hex), notebook (its bytes), follows (the id of the student's hand-in before it, or 0;
                 (assignment, student, follows) unique: revision 0003)
    graded       the graded report of a hand-in: handin -> handins, assignment, student, report (JSON), made (UTC)
    feedback     assignment (pk), released (UTC): when staff let students see their graded feedback
    deadlines_seen  assignment, student ("" for the assignment's own due time; else a student's extension) (pk), due
                 (UTC): the due times of course.toml the service saw last (revision 0004; replaced as course.toml
                 changes: how a due time moved earlier is told from a restart)
    handin_notes the history of a hand-in: handin -> handins, made (UTC), change ((handin, change) unique: a change
                 noted once, by whichever process saw it first), text (for its student and staff)
    overrides    staff's score for one check of one student (revision 0005; append-only: the last row of a student's
                 check stands, a row with score NULL clears it): assignment, student, check_id, score (points, or
                 NULL: cleared), before (the grader's score of the check then, NULL when none), why, who (the staff
                 user), made (UTC), check_digest (the check's definition then: a re-release that changes it makes the
                 override wait for staff to confirm), handin (the hand-in that counted then, or NULL)

The rules every process of a course keeps together (`rules`, a MetaData of its own, schema "rules", not migrated: made
when missing, and safe to drop while no service runs): nothing there is a record. On SQLite they live in a file of
their own beside the course's (`<db>.rules`, attached to every connection as the schema "rules" and written without
waiting for the disk: a lost rule costs nothing, and its writes never wait for the records' lock), on PostgreSQL in
the course's database (the schema "rules" is translated to the default one) as UNLOGGED tables (not written to the
write-ahead log; emptied by a crash):
    rule_buckets   key (pk: "user:<name>" or "addr:<ip>"); tokens, stamp (unix seconds), granted: a rate limit (a
                   token bucket); holder (the process and request, "" none), expires (unix seconds): one check or
                   hand-in at a time per user (a lease)
    rule_sessions  digest (pk: sha256 hex of a browser's session id), name, role, token (the token's digest, "" in
                   JupyterHub mode), expires (unix seconds)
    rule_settings  name (pk), value: the browsers' cookie secret
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.schema import CreateTable

metadata = sa.MetaData()

users = sa.Table("users", metadata,
                 sa.Column("name", sa.String(100), primary_key=True),
                 sa.Column("role", sa.String(10), nullable=False),
                 sa.Column("created", sa.DateTime(timezone=True), nullable=False))
tokens = sa.Table("tokens", metadata,
                  sa.Column("digest", sa.String(64), primary_key=True),
                  sa.Column("name", sa.String(100), sa.ForeignKey("users.name"), nullable=False, index=True),
                  sa.Column("created", sa.DateTime(timezone=True), nullable=False))
assignments = sa.Table("assignments", metadata,
                       sa.Column("id", sa.String(100), primary_key=True),
                       sa.Column("key", sa.Text, nullable=False),
                       sa.Column("digest", sa.String(16), nullable=False),
                       sa.Column("uploaded", sa.DateTime(timezone=True), nullable=False))
commits = sa.Table("commits", metadata,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("assignment", sa.String(100), nullable=False),
                   sa.Column("student", sa.String(100), nullable=False),
                   sa.Column("exercise", sa.String(100), nullable=False),
                   sa.Column("record", sa.Text, nullable=False),
                   sa.Column("committed", sa.DateTime(timezone=True), nullable=False),
                   sa.UniqueConstraint("assignment", "student", "exercise", name="one_commit_per_exercise"))
predictions = sa.Table("predictions", metadata,
                       sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                       sa.Column("assignment", sa.String(100), nullable=False),
                       sa.Column("student", sa.String(100), nullable=False, index=True),
                       sa.Column("exercise", sa.String(100), nullable=False),
                       sa.Column("values", sa.Text, nullable=False),
                       sa.Column("received", sa.DateTime(timezone=True), nullable=False),
                       sa.Column("kind", sa.String(12), nullable=False),
                       sa.Column("after_reveal", sa.Boolean, nullable=False))
reports = sa.Table("reports", metadata,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("assignment", sa.String(100), nullable=False),
                   sa.Column("student", sa.String(100), nullable=False, index=True),
                   sa.Column("exercise", sa.String(100), nullable=False),
                   sa.Column("report", sa.Text, nullable=False),
                   sa.Column("made", sa.DateTime(timezone=True), nullable=False),
                   sa.Column("revealed", sa.Boolean, nullable=False))

handins = sa.Table("handins", metadata,
                   sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                   sa.Column("assignment", sa.String(100), nullable=False),
                   sa.Column("student", sa.String(100), nullable=False, index=True),
                   sa.Column("received", sa.DateTime(timezone=True), nullable=False),
                   sa.Column("size", sa.Integer, nullable=False),
                   sa.Column("digest", sa.String(64), nullable=False),
                   sa.Column("notebook", sa.LargeBinary, nullable=False),
                   sa.Column("follows", sa.Integer, nullable=False, server_default="0"),
                   sa.Index("one_handin_after_another", "assignment", "student", "follows", unique=True))
graded = sa.Table("graded", metadata,
                  sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                  sa.Column("handin", sa.Integer, sa.ForeignKey("handins.id"), nullable=False, index=True),
                  sa.Column("assignment", sa.String(100), nullable=False),
                  sa.Column("student", sa.String(100), nullable=False),
                  sa.Column("report", sa.Text, nullable=False),
                  sa.Column("made", sa.DateTime(timezone=True), nullable=False))
feedback = sa.Table("feedback", metadata,
                    sa.Column("assignment", sa.String(100), primary_key=True),
                    sa.Column("released", sa.DateTime(timezone=True), nullable=False))
deadlines_seen = sa.Table("deadlines_seen", metadata,
                          sa.Column("assignment", sa.String(100), primary_key=True),
                          sa.Column("student", sa.String(100), primary_key=True),
                          sa.Column("due", sa.DateTime(timezone=True), nullable=False))
handin_notes = sa.Table("handin_notes", metadata,
                        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                        sa.Column("handin", sa.Integer, sa.ForeignKey("handins.id"), nullable=False, index=True),
                        sa.Column("made", sa.DateTime(timezone=True), nullable=False),
                        sa.Column("change", sa.String(120), nullable=False),
                        sa.Column("text", sa.Text, nullable=False),
                        sa.UniqueConstraint("handin", "change", name="one_note_per_change"))
overrides = sa.Table("overrides", metadata,
                     sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
                     sa.Column("assignment", sa.String(100), nullable=False),
                     sa.Column("student", sa.String(100), nullable=False),
                     sa.Column("check_id", sa.String(200), nullable=False),
                     sa.Column("score", sa.Float, nullable=True),
                     sa.Column("before", sa.Float, nullable=True),
                     sa.Column("why", sa.Text, nullable=False),
                     sa.Column("who", sa.String(100), nullable=False),
                     sa.Column("made", sa.DateTime(timezone=True), nullable=False),
                     sa.Column("check_digest", sa.String(64), nullable=False),
                     sa.Column("handin", sa.Integer, nullable=True),
                     sa.Index("overrides_of_assignment", "assignment", "student"))

rules = sa.MetaData(schema="rules")
buckets = sa.Table("rule_buckets", rules,
                   sa.Column("key", sa.String(200), primary_key=True),
                   sa.Column("tokens", sa.Float, nullable=False),
                   sa.Column("stamp", sa.Float, nullable=False),
                   sa.Column("granted", sa.Integer, nullable=False),
                   sa.Column("holder", sa.String(100), nullable=False),
                   sa.Column("expires", sa.Float, nullable=False), info={"unlogged": True})
sessions = sa.Table("rule_sessions", rules,
                    sa.Column("digest", sa.String(64), primary_key=True),
                    sa.Column("name", sa.String(100), nullable=False),
                    sa.Column("role", sa.String(10), nullable=False),
                    sa.Column("token", sa.String(64), nullable=False),
                    sa.Column("expires", sa.Float, nullable=False), info={"unlogged": True})
settings = sa.Table("rule_settings", rules,
                    sa.Column("name", sa.String(50), primary_key=True),
                    sa.Column("value", sa.Text, nullable=False), info={"unlogged": True})


@compiles(CreateTable, "postgresql")
def _unlogged(element: CreateTable, compiler: sa.sql.compiler.DDLCompiler, **kw: Any) -> str:
    """PostgreSQL: a table marked info["unlogged"] (the rules) is made UNLOGGED."""
    text = compiler.visit_create_table(element, **kw)
    if element.element.info.get("unlogged"):
        text = text.replace("CREATE TABLE", "CREATE UNLOGGED TABLE", 1)
    return text


DEFAULT_URL = "sqlite:///course.db"
MIGRATIONS = Path(__file__).with_name("migrations")
TIMEOUT = 5.0          # seconds any database call may wait: for a lock, a connection, a statement, the network


def now() -> dt.datetime:
    """The service's clock: the current time, UTC, to the microsecond."""
    return dt.datetime.now(dt.timezone.utc)


def engine(url: str = DEFAULT_URL, timeout: float = TIMEOUT, pool: int = 8) -> sa.Engine:
    """An engine for `url` (SQLAlchemy URL: sqlite:///path.db, postgresql+psycopg://user@host:port/db), with the
    course's rules beside its records (see `rules`: on SQLite its rules file attached to each connection). Every call
    is bounded by `timeout` seconds: waiting for SQLite's lock, for a connection from the pool, for PostgreSQL to
    connect, for a statement or a lock there, and for the network (TCP_USER_TIMEOUT); past it the call raises
    sqlalchemy.exc.OperationalError or TimeoutError (the service answers 503). SQLite writes the records through a
    write-ahead log with full fsync (so a commit it acknowledged survives a kill -9 of the service), and enforces
    foreign keys; a new SQLite file is made with mode 600. `pool`: connections kept (two for each of the service's
    four database threads: a hand-in's request holds one while it keeps the notebook in a transaction of its own on
    another; one beyond those is closed when given back, and PostgreSQL starts a process for each new one).
    Raises sqlalchemy.exc.ArgumentError for a bad URL."""
    if url.startswith("sqlite"):
        _private_file(url)
        path = sqlite_path(url)
        attach = f"{path}.rules" if path is not None else ":memory:"
        if path is not None:
            _private_file(f"sqlite:///{attach}")
        eng = sa.create_engine(url, connect_args={"timeout": timeout, "check_same_thread": False},
                               pool_size=pool, max_overflow=pool, pool_timeout=timeout)
        pragmas = ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", f"busy_timeout={int(timeout * 1000)}",
                   "rules.journal_mode=WAL", "rules.synchronous=OFF")

        @sa.event.listens_for(eng, "connect")
        def _pragmas(conn, _record) -> None:   # noqa: ANN001 (DBAPI connection)
            cur = conn.cursor()
            cur.execute("ATTACH DATABASE ? AS rules", (attach,))
            for pragma in pragmas:
                cur.execute(f"PRAGMA {pragma}")
            cur.close()

        # SQLite opens a file it cannot write read-only, silently, and such a connection stays so after the file can
        # be written again. A connection opened while the file was not writable is replaced at its first checkout
        # after it is (so no request fails for it); one that finds out by a write is treated as a lost connection,
        # and the pool replaces it and the others it holds.
        @sa.event.listens_for(eng, "connect")
        def _opened_writable(_conn, record) -> None:   # noqa: ANN001 (DBAPI connection, pool record)
            record.info["writable"] = path is None or os.access(path, os.W_OK)

        @sa.event.listens_for(eng, "checkout")
        def _writable_now(_conn, record, _proxy) -> None:   # noqa: ANN001 (DBAPI connection, pool record, proxy)
            if not record.info.get("writable", True) and os.access(path, os.W_OK):
                raise sa.exc.DisconnectionError("the SQLite file can be written again: open a writable connection")

        @sa.event.listens_for(eng, "handle_error")
        def _readonly(ctx: sa.engine.ExceptionContext) -> None:
            if "readonly database" in str(ctx.original_exception):
                ctx.is_disconnect = True
        return eng
    ms = int(timeout * 1000)
    options = f"-c statement_timeout={ms} -c lock_timeout={ms} -c idle_in_transaction_session_timeout={4 * ms}"
    # No ping before each checkout (a round trip per request): a connection PostgreSQL dropped (a restart) fails its
    # request once (a 503, which the kernel's client sends again) and the pool then replaces every connection it held.
    return sa.create_engine(url, pool_size=pool, max_overflow=pool, pool_timeout=timeout, pool_recycle=3600,
                            execution_options={"schema_translate_map": {"rules": None}},
                            connect_args={"connect_timeout": max(2, int(timeout)), "options": options,
                                          "tcp_user_timeout": ms, "keepalives": 1, "keepalives_idle": 5,
                                          "keepalives_interval": 2, "keepalives_count": 2})


def single(eng: sa.Engine) -> sa.Engine:
    """`eng` for work that is one statement: a read, or one write that is atomic by itself (an INSERT, an upsert, an
    UPDATE); used as `single(eng).begin()`. On PostgreSQL its connections (from `eng`'s pool) run each statement in
    a transaction of its own that ends with it (AUTOCOMMIT): no BEGIN and no COMMIT or ROLLBACK go to the server
    around it, two round trips fewer per call. On SQLite it is `eng` itself: its driver begins no transaction for a
    read, and a write commits (synchronous=FULL) as `begin()` ends; switching a SQLite connection to AUTOCOMMIT and
    back costs more than that (a PRAGMA at each return to the pool). Work of more than one statement that must hold
    together uses `eng.begin()`."""
    return eng.execution_options(isolation_level="AUTOCOMMIT") if eng.dialect.name == "postgresql" else eng


def make_rules(eng: sa.Engine) -> None:
    """Make the rules' tables where they are missing (safe while other processes do the same)."""
    try:
        rules.create_all(eng)
    except (sa.exc.ProgrammingError, sa.exc.IntegrityError, sa.exc.OperationalError):
        rules.create_all(eng)   # another process made them between the check and the create: it sees them now


def sqlite_path(url: str) -> Path | None:
    """The file of a SQLite URL (None: not SQLite, or in memory)."""
    if not url.startswith("sqlite"):
        return None
    database = sa.engine.make_url(url).database
    return Path(database) if database and database != ":memory:" else None


def _private_file(url: str) -> None:
    """Make a SQLite database file that does not exist yet readable by its owner only (it holds the full keys, that
    is every answer); SQLite gives its -wal and -shm files the same mode."""
    path = sqlite_path(url)
    if path is not None and not path.exists() and path.parent.is_dir():
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _config(url: str):   # noqa: ANN202 (alembic.config.Config)
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def migrate(url: str, revision: str = "head") -> None:
    """Bring the database at `url` to `revision` (default: the newest) with Alembic; a new database is created.
    Safe to run again."""
    from alembic import command

    command.upgrade(_config(url), revision)


def revision(url: str) -> str | None:
    """The database's schema revision (None: not made yet)."""
    from alembic.runtime.migration import MigrationContext

    with engine(url).connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()
