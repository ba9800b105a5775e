"""late: a course's deadlines and late policy (its course.toml), and the one place they are applied: which hand-in
counts, how late it is and what it costs. Pure: times in, numbers out; no database, no HTTP.

May import: stdlib, autograder.render.terminal (a duration in words).

course.toml (read with tomllib; every assignment is optional, one without a table has no deadline):

    [assignments."01-backward-vs-grad"]
    due = 2026-12-10T23:59:00+01:00     # a TOML date-time with its offset, or a local one with `timezone`
    timezone = "Europe/Berlin"          # (only for a local date-time; IANA name)
    late = "per-day"                    # "none" (late counts in full), "per-day" or "zero" (a late hand-in scores 0)
    penalty_per_day = 0.1               # per-day: the share of the score lost per started day late (days are
                                        # calendar days in `timezone`, so 23 or 25 hours across a clock change)
    cutoff_days = 3                     # per-day: after this many days late a hand-in scores 0 (default: never)
    counts = "last-on-time"             # "last-on-time" (default: the last hand-in before the deadline, else the
                                        # first late one) or "last" (the last hand-in, late or not)

    [assignments."01-backward-vs-grad".extensions]
    amy = 2026-12-12T23:59:00+01:00     # amy's own due time (same forms as `due`)
"""
from __future__ import annotations

import datetime as dt
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from autograder.render.terminal import duration

LatePolicy = Literal["none", "per-day", "zero"]
CountRule = Literal["last-on-time", "last"]
DAY = 86400.0


class ConfigError(ValueError):
    """A course.toml that cannot be used; the message names the file, the assignment and the fix."""


@dataclass(frozen=True)
class Deadline:
    """One assignment's due time (aware, UTC), policy, and per-student extensions (student -> due time, UTC)."""

    due: dt.datetime
    late: LatePolicy = "none"
    penalty_per_day: float = 0.0
    cutoff_days: float | None = None
    counts: CountRule = "last-on-time"
    extensions: dict[str, dt.datetime] = field(default_factory=dict)
    zone: dt.tzinfo | None = None   # the course's time zone (`timezone`): days late are its calendar days; None: UTC's

    def due_for(self, student: str) -> dt.datetime:
        return self.extensions.get(student, self.due)


@dataclass(frozen=True)
class Lateness:
    """A hand-in against its deadline: seconds late (0 on time), the share of its score it loses (0..1), and why."""

    late_by: float
    penalty: float
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {"late_by": self.late_by, "penalty": self.penalty, "why": self.why}


ON_TIME = Lateness(0.0, 0.0, "on time")


def lateness(received: dt.datetime, deadline: Deadline | None, student: str) -> Lateness:
    """How late a hand-in received at `received` (aware) is for `student`, and what it costs under `deadline`
    (None: no deadline, never late)."""
    if deadline is None:
        return Lateness(0.0, 0.0, "no deadline")
    due = deadline.due_for(student)
    late_by = (received - due).total_seconds()
    if late_by <= 0:
        return ON_TIME
    days = started_days(received, due, deadline.zone)
    if deadline.late == "zero":
        return Lateness(late_by, 1.0, f"{duration(late_by)} late: a late hand-in scores 0")
    if deadline.late == "per-day":
        if deadline.cutoff_days is not None and received > _days_after(due, deadline.cutoff_days, deadline.zone):
            return Lateness(late_by, 1.0, f"{duration(late_by)} late, past the cut-off of {deadline.cutoff_days:g} "
                                          f"day(s): it scores 0")
        share = min(1.0, days * deadline.penalty_per_day)
        return Lateness(late_by, share, f"{duration(late_by)} late: {days} started day(s) at "
                                        f"{deadline.penalty_per_day:.0%} each, {share:.0%} off")
    return Lateness(late_by, 0.0, f"{duration(late_by)} late (the course takes nothing off)")


def _days_after(due: dt.datetime, days: float, zone: dt.tzinfo | None) -> dt.datetime:
    """`days` calendar days after `due` in `zone`: the same wall-clock time (so a day across a daylight-saving change
    is 23 or 25 hours), as an aware UTC time."""
    local = due.astimezone(zone or dt.timezone.utc)
    return (local + dt.timedelta(days=days)).astimezone(dt.timezone.utc)   # aware + timedelta: wall-clock arithmetic


def started_days(received: dt.datetime, due: dt.datetime, zone: dt.tzinfo | None = None) -> int:
    """How many days late `received` is after `due` (both aware), counting each started day: day k ends k calendar
    days after the due time in `zone` (a New York deadline at 23:59 is 1 day late until 23:59 the next day, also on
    the day the clocks fall back). 0 when on time. Source: Submitty #3316 (a 25-hour day counted as 2)."""
    if received <= due:
        return 0
    k = max(1, math.floor((received - due).total_seconds() / DAY) - 1)
    while _days_after(due, k, zone) < received:
        k += 1
    return k


def counted(hand_ins: list[tuple[int, dt.datetime]], deadline: Deadline | None, student: str) -> int | None:
    """Which of a student's hand-ins (id, received) counts: with "last-on-time", the last before their due time,
    else the first after it; with "last" (or no deadline), the last. None when there is none."""
    if not hand_ins:
        return None
    ordered = sorted(hand_ins, key=lambda h: (h[1], h[0]))
    if deadline is None or deadline.counts == "last":
        return ordered[-1][0]
    due = deadline.due_for(student)
    on_time = [h for h in ordered if h[1] <= due]
    return on_time[-1][0] if on_time else ordered[0][0]


def final_score(score: float | None, late: Lateness) -> float | None:
    """The score after the late penalty (None stays None: not graded is never 0)."""
    return None if score is None else round(score * (1.0 - late.penalty), 6)


def _when(value: Any, timezone: str | None, where: str) -> dt.datetime:
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value)
        except ValueError:
            raise ConfigError(f"{where}: {value!r} is not a date-time (write 2026-12-10T23:59:00+01:00)") from None
    if not isinstance(value, dt.datetime):
        raise ConfigError(f"{where}: a due time is a date-time such as 2026-12-10T23:59:00+01:00")
    if value.tzinfo is None:
        if not timezone:
            raise ConfigError(f"{where}: {value} has no time zone: add its offset (+01:00) or timezone = \"Europe/...\"")
        try:
            value = value.replace(tzinfo=ZoneInfo(timezone))
        except (ZoneInfoNotFoundError, ValueError):
            raise ConfigError(f"{where}: unknown time zone {timezone!r} (an IANA name such as Europe/Berlin)") from None
    try:
        utc = value.astimezone(dt.timezone.utc)
        utc + dt.timedelta(days=MAX_CUTOFF_DAYS + 2)   # its late days can be counted too
    except (OverflowError, ValueError):
        raise ConfigError(f"{where}: {value} is too far in the future to be a due time") from None
    return utc


MAX_CUTOFF_DAYS = 3650   # cutoff_days at most (ten years: any course's, and days late stay countable)
KEYS = {"due", "timezone", "late", "penalty_per_day", "cutoff_days", "counts", "extensions"}


def load(path: str | Path) -> dict[str, Deadline]:
    """The deadlines of course.toml at `path` (assignment id -> Deadline). Raises ConfigError naming the problem."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot be read ({e})") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: not TOML ({e})") from None
    out = {}
    tables = data.get("assignments", {})
    if not isinstance(tables, dict) or set(data) - {"assignments"}:
        raise ConfigError(f"{path}: holds only [assignments.\"<id>\"] tables")
    for aid, t in tables.items():
        where = f"{path} [assignments.\"{aid}\"]"
        if not isinstance(t, dict) or "due" not in t:
            raise ConfigError(f"{where}: needs due = <date-time>")
        unknown = set(t) - KEYS
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))} (known: {', '.join(sorted(KEYS))})")
        late, counts = t.get("late", "none"), t.get("counts", "last-on-time")
        if late not in ("none", "per-day", "zero"):
            raise ConfigError(f"{where}: late must be \"none\", \"per-day\" or \"zero\", not {late!r}")
        if counts not in ("last-on-time", "last"):
            raise ConfigError(f"{where}: counts must be \"last-on-time\" or \"last\", not {counts!r}")
        per_day, cutoff = t.get("penalty_per_day", 0.0), t.get("cutoff_days")
        if isinstance(per_day, bool) or not isinstance(per_day, (int, float)) or not 0 <= per_day <= 1:
            raise ConfigError(f"{where}: penalty_per_day is a share of the score, from 0 to 1")
        if late == "per-day" and per_day == 0 and cutoff is None:
            raise ConfigError(f"{where}: late = \"per-day\" needs penalty_per_day (e.g. 0.1) or cutoff_days")
        if cutoff is not None and (isinstance(cutoff, bool) or not isinstance(cutoff, (int, float))
                                   or not 0 <= cutoff <= MAX_CUTOFF_DAYS):   # nan and inf are not days
            raise ConfigError(f"{where}: cutoff_days is a number of days, from 0 to {MAX_CUTOFF_DAYS}")
        zone = t.get("timezone")
        ext = t.get("extensions", {})
        if not isinstance(ext, dict):
            raise ConfigError(f"{where}: extensions is a table of student = <date-time>")
        out[str(aid)] = Deadline(_when(t["due"], zone, f"{where} due"), late, float(per_day),
                                 None if cutoff is None else float(cutoff), counts,
                                 {str(s): _when(v, zone, f"{where} extensions.{s}") for s, v in ext.items()},
                                 ZoneInfo(zone) if zone else None)
    return out
