"""db: the course service's tables (SQLAlchemy Core), its engines (SQLite by default, PostgreSQL by URL) and its
schema migrations (Alembic, in autograder/service/migrations). Nothing here knows HTTP or grading.

May import: stdlib, sqlalchemy, alembic.

Tables (schema revisions 0001 and 0002; a row of commits, predictions, reports, handins or graded is never updated
or deleted):
    users        name (pk), role ("student" | "staff"), created (UTC)
    tokens       digest (pk: sha256 hex of the token; the token itself is never stored), name -> users, created
    assignments  id (pk), key (the full key's JSON text), digest, uploaded (UTC); a release replaces the row
    commits      (assignment, student, exercise) unique, record (the commit record's JSON), committed (UTC)
    predictions  every prediction a kernel sent: assignment, student, exercise, values (JSON), received (UTC),
                 kind ("commit" | "same" | "revision" | "incomplete"), after_reveal (a report had shown answers)
    reports      every self-check report: assignment, student, exercise, report (JSON), made (UTC), revealed
    handins      every notebook handed in: assignment, student, received (UTC, the service's clock), size, digest
                 (sha256 hex), notebook (its bytes)
    graded       the graded report of a hand-in: handin -> handins, assignment, student, report (JSON), made (UTC)
    feedback     assignment (pk), released (UTC): when staff let students see their graded feedback
"""
from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

import sqlalchemy as sa

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
                   sa.Column("notebook", sa.LargeBinary, nullable=False))
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

DEFAULT_URL = "sqlite:///course.db"
MIGRATIONS = Path(__file__).with_name("migrations")


def now() -> dt.datetime:
    """The service's clock: the current time, UTC, to the microsecond."""
    return dt.datetime.now(dt.timezone.utc)


def engine(url: str = DEFAULT_URL) -> sa.Engine:
    """An engine for `url` (SQLAlchemy URL: sqlite:///path.db, postgresql+psycopg://user@host:port/db). SQLite
    writes through a write-ahead log with full fsync, waits up to 30 s for a lock and enforces foreign keys, so a
    commit it acknowledged survives a kill -9 of the service; a new SQLite file is made with mode 600. Raises sqlalchemy.exc.ArgumentError for a bad URL."""
    if url.startswith("sqlite"):
        _private_file(url)
        eng = sa.create_engine(url, connect_args={"timeout": 30, "check_same_thread": False})

        @sa.event.listens_for(eng, "connect")
        def _pragmas(conn, _record) -> None:   # noqa: ANN001 (DBAPI connection)
            cur = conn.cursor()
            for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON", "busy_timeout=30000"):
                cur.execute(f"PRAGMA {pragma}")
            cur.close()
        return eng
    return sa.create_engine(url, pool_pre_ping=True)


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
