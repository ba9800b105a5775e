"""The late policy (autograder/service/late.py), worked out by hand: course.toml read with its time zones, which
hand-in counts, how late it is and what it costs, and the errors a bad course.toml gets (each naming the file, the
assignment and the fix)."""
from __future__ import annotations

import datetime as dt

import pytest

from autograder.service import late

UTC = dt.timezone.utc


def _load(tmp_path, text: str) -> dict:
    path = tmp_path / "course.toml"
    path.write_text(text)
    return late.load(path)


def test_a_local_due_time_takes_its_time_zone_and_an_extension_is_that_students_own(tmp_path):
    d = _load(tmp_path, '[assignments."01-x"]\ndue = 2026-12-10T23:59:00\ntimezone = "Europe/Berlin"\n'
                        'late = "per-day"\npenalty_per_day = 0.1\n'
                        '[assignments."01-x".extensions]\namy = 2026-12-12T23:59:00\n')["01-x"]
    assert d.due == dt.datetime(2026, 12, 10, 22, 59, tzinfo=UTC)   # Berlin is UTC+1 in December
    assert d.due_for("amy") == dt.datetime(2026, 12, 12, 22, 59, tzinfo=UTC) and d.due_for("ben") == d.due
    summer = _load(tmp_path, '[assignments.a]\ndue = 2026-07-01T12:00:00\ntimezone = "Europe/Berlin"\n')["a"]
    assert summer.due == dt.datetime(2026, 7, 1, 10, 0, tzinfo=UTC)   # and UTC+2 in summer
    offset = _load(tmp_path, '[assignments.a]\ndue = 2026-12-10T23:59:00-05:00\n')["a"]
    assert offset.due == dt.datetime(2026, 12, 11, 4, 59, tzinfo=UTC)


def test_per_day_counts_started_days_and_the_cut_off_scores_zero():
    due = dt.datetime(2026, 12, 10, 12, 0, tzinfo=UTC)
    d = late.Deadline(due, "per-day", 0.1, 3.0)
    assert late.lateness(due, d, "amy") == late.ON_TIME
    one = late.lateness(due + dt.timedelta(minutes=1), d, "amy")
    assert (one.late_by, one.penalty, one.why) == (60.0, 0.1, "1 min late: 1 started day(s) at 10% each, 10% off")
    two = late.lateness(due + dt.timedelta(days=1, seconds=1), d, "amy")
    assert (two.penalty, two.why) == (0.2, "1 d 0 h late: 2 started day(s) at 10% each, 20% off")
    assert late.lateness(due + dt.timedelta(seconds=0.49), d, "amy").why.startswith("0.5 s late: ")
    past = late.lateness(due + dt.timedelta(days=3, hours=1), d, "amy")
    assert past.penalty == 1.0 and "past the cut-off of 3 day(s)" in past.why
    assert late.final_score(26.0, two) == 20.8 and late.final_score(None, two) is None   # not graded stays None
    zero = late.lateness(due + dt.timedelta(hours=2), late.Deadline(due, "zero"), "amy")
    assert zero.penalty == 1.0 and zero.why == "2 h 0 min late: a late hand-in scores 0"
    none = late.lateness(due + dt.timedelta(days=9), late.Deadline(due), "amy")
    assert none.penalty == 0.0 and none.late_by == 9 * 86400.0 and "takes nothing off" in none.why
    assert late.lateness(due, None, "amy").why == "no deadline"


def test_the_last_hand_in_before_the_deadline_counts_else_the_first_late_one_or_by_choice_the_last():
    due = dt.datetime(2026, 12, 10, 12, 0, tzinfo=UTC)
    h = [(1, due - dt.timedelta(hours=2)), (2, due - dt.timedelta(hours=1)), (3, due + dt.timedelta(hours=1)),
         (4, due + dt.timedelta(hours=2))]
    assert late.counted(h, late.Deadline(due), "amy") == 2
    assert late.counted(h[2:], late.Deadline(due), "amy") == 3
    assert late.counted(h, late.Deadline(due, counts="last"), "amy") == 4
    extended = late.Deadline(due, extensions={"amy": due + dt.timedelta(days=1)})
    assert late.counted(h, extended, "amy") == 4 and late.counted(h, extended, "ben") == 2
    assert late.counted(h, None, "amy") == 4 and late.counted([], late.Deadline(due), "amy") is None


@pytest.mark.parametrize("text, says", [
    ('[assignments.a]\nlate = "zero"\n', 'a"]: needs due = <date-time>'),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00\n', "has no time zone: add its offset"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00\ntimezone = "Mars/Olympus"\n', "unknown time zone 'Mars/Olympus'"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\nlate = "half"\n', 'late must be "none", "per-day" or "zero"'),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\nlate = "per-day"\n', 'needs penalty_per_day (e.g. 0.1)'),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\npenalty_per_day = 10\n', "a share of the score, from 0 to 1"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\ndeu = 1\n', "unknown key(s) deu"),
    ('[assignments.a]\ndue = "next friday"\n', "'next friday' is not a date-time"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\ncounts = "best"\n', 'counts must be "last-on-time" or "last"'),
    ('due = 2026-12-10T23:59:00Z\n', 'holds only [assignments."<id>"] tables'),
    ("[assignments.a\n", "not TOML"),
    # an attack trial (issue 46): these passed, then broke every route (OverflowError) or lost due-move notes
    ('[assignments.a]\ndue = 9999-12-31T23:59:00-05:00\n', "is too far in the future to be a due time"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\nlate = "per-day"\ncutoff_days = inf\n', "from 0 to 3650"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\nlate = "per-day"\ncutoff_days = nan\n', "from 0 to 3650"),
    ('[assignments.a]\ndue = 2026-12-10T23:59:00Z\nlate = "per-day"\npenalty_per_day = nan\n', "from 0 to 1"),
])
def test_a_course_toml_that_cannot_be_used_names_the_file_and_the_fix(tmp_path, text, says):
    with pytest.raises(late.ConfigError) as e:
        _load(tmp_path, text)
    assert str(tmp_path / "course.toml") in str(e.value) and says in str(e.value)


def test_days_late_are_calendar_days_in_the_courses_time_zone_across_a_clock_change(tmp_path):
    """Submitty #3316: due Saturday 2026-10-31 23:59 in New York (EDT, UTC-4); the clocks fall back on Sunday 1
    November, so a hand-in at 23:58 that Sunday (EST, UTC-5) is 24 h 59 min after the due time but within the first
    day late: 1 started day, not 2. In spring a day is 23 hours: 23:58 the day after the change is still day 1."""
    d = _load(tmp_path, '[assignments.a]\ndue = 2026-10-31T23:59:00\ntimezone = "America/New_York"\n'
                        'late = "per-day"\npenalty_per_day = 0.1\ncutoff_days = 1\n')["a"]
    sunday = dt.datetime(2026, 11, 2, 4, 58, tzinfo=UTC)   # 23:58 EST on 1 November
    got = late.lateness(sunday, d, "amy")
    assert (got.late_by, got.penalty, got.why) == (89940.0, 0.1, "1 d 0 h 59 min late: 1 started day(s) at 10% each, 10% off")
    monday = late.lateness(dt.datetime(2026, 11, 2, 5, 0, tzinfo=UTC), d, "amy")   # 00:00 EST on 2 November
    assert monday.penalty == 1.0 and "past the cut-off of 1 day(s)" in monday.why
    spring = _load(tmp_path, '[assignments.a]\ndue = 2027-03-13T23:59:00\ntimezone = "America/New_York"\n'
                             'late = "per-day"\npenalty_per_day = 0.1\n')["a"]
    assert late.started_days(dt.datetime(2027, 3, 15, 3, 58, tzinfo=UTC), spring.due, spring.zone) == 1   # 23:58 EDT
    assert late.started_days(dt.datetime(2027, 3, 15, 4, 0, tzinfo=UTC), spring.due, spring.zone) == 2
    utc = late.Deadline(dt.datetime(2026, 11, 1, 3, 59, tzinfo=UTC), "per-day", 0.1)   # no time zone: 24-hour days
    assert late.lateness(sunday, utc, "amy").penalty == 0.2
