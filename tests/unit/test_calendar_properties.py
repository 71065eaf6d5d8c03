"""SPEC §20 (issue 31) as properties: what the preview promises is what the scheduler fires.

For random extended cron expressions (``L``, ``L-n``, ``LW``, ``nW`` in day-of-month; ``dL``,
``d#n`` in day-of-week; mixed with classic items and month lists) in zones with 1-hour and
30-minute clock changes, a year of ``app.schedules.preview.preview`` (50 at a time, each call
from the last fire) must equal the occurrences the scheduler's pure decisions
(``scheduler/decisions.py``) dispatch on a fake clock that jumps from one wake-up to the next, and
what a model of the contract built on the calendar module and zoneinfo says (calendar_model.py).
Excluded days (contract B) are missing from both and listed in the preview's ``excluded``.
Finally ``L``, ``dL`` and ``d#n`` are cross-checked against croniter in UTC.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from app.schedules.cron.evaluate import next_fire_times
from app.schedules.model import ScheduledTask
from app.schedules.plan import plan_of
from app.schedules.preview import preview
from app.schedules.spec import ScheduleError
from scheduler.decisions import Action, Facts, Limits, TaskView, decide_claim, decide_finish
from scheduler.snapshots import task_view
from tests.unit.calendar_model import expected_fires

try:
    import croniter
except ImportError:  # pinned in requirements.txt; without it only the cross-check is skipped
    croniter = None

UTC = dt.UTC
ZONES = ["Australia/Lord_Howe", "Europe/Berlin", "America/New_York", "UTC"]
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat", "sun"]
FREE = Facts(chat_busy=False, in_flight=0)
LIMITS = Limits()  # the 60 s floor included: it must never hold back a regular occurrence
YEAR = dt.timedelta(days=366)
PROPERTY = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


# -- generated expressions ------------------------------------------------------------------------


def _weekday(draw: st.DrawFn) -> str:
    d = draw(st.integers(0, 7))
    return DAYS[d] if draw(st.booleans()) else str(d)


@st.composite
def _dom_item(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["nW", "L-n", "LW", "classic", "nW", "L"]))
    if kind == "L-n":
        return f"L-{draw(st.integers(0, 30))}"
    if kind == "nW":
        return f"{draw(st.sampled_from([1, 2, 15, 28, 29, 30, 31, *range(1, 32)]))}W"
    if kind == "classic":
        a = draw(st.integers(1, 31))
        return str(a) if draw(st.booleans()) else f"{a}-{min(31, a + draw(st.integers(1, 3)))}"
    return kind


@st.composite
def _dow_item(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["d#n", "dL", "classic", "d#n"]))
    if kind == "dL":
        return f"{_weekday(draw)}L"
    if kind == "d#n":
        return f"{_weekday(draw)}#{draw(st.integers(1, 5))}"
    return _weekday(draw)


# Sundays on which a zone changes its clock: second/first Sunday of March/November (New York), last
# Sunday of March/October (Berlin), first Sunday of April/October (Lord Howe).
CHANGE_DAYS = ["0#2", "sun#1", "0L", "7L", "sunL", "7#1", "0#1", "7#2"]


@st.composite
def expressions(draw: st.DrawFn) -> str:
    shape = draw(st.sampled_from(["both", "dom", "dow", "dom-and-star", "star-and-dow", "change-day", "change-day"]))
    # on a clock-change day, half the jobs are wildcard ones; elsewhere two in five
    wildcard = draw(st.integers(0, 3 if shape == "change-day" else 4))
    if wildcard == 0:  # a wildcard job: every 15/20/30 minutes of an hour near the changes
        minute, hour = f"*/{draw(st.sampled_from([15, 20, 30]))}", str(draw(st.sampled_from([2, 1, 0, 3, 9, 23])))
    elif wildcard == 1:  # a wildcard job by its hour field: a minute of every 2nd-8th hour
        minute, hour = str(draw(st.sampled_from([0, 30, 15, 59]))), f"*/{draw(st.sampled_from([2, 3, 6, 8]))}"
    else:  # a fixed-time job, hours often inside a skipped or repeated interval
        hours = draw(st.lists(st.sampled_from([2, 1, 0, 3, 9, 12, 23]), min_size=1, max_size=2, unique=True))
        minute = ",".join(str(m) for m in sorted(draw(st.lists(st.sampled_from([30, 0, 15, 45, 59]), min_size=1,
                                                                 max_size=2, unique=True))))
        hour = ",".join(str(h) for h in sorted(hours))
    dom = ",".join(draw(st.lists(_dom_item(), min_size=1, max_size=2)))
    dow = ",".join(draw(st.lists(_dow_item(), min_size=1, max_size=2)))
    if shape == "dom":
        dow = "*"
    elif shape == "dow":
        dom = "*"
    elif shape == "dom-and-star":
        dow = f"*/{draw(st.integers(2, 3))}"
    elif shape == "star-and-dow":
        dom = f"*/{draw(st.integers(2, 3))}"
    elif shape == "change-day":  # the transition Sundays, alone or OR-ed with a day-of-month item
        dow = draw(st.sampled_from(CHANGE_DAYS))
        dom = draw(st.sampled_from(["*", "*", dom]))
    month = "*"
    if draw(st.booleans()):
        picked = sorted(draw(st.lists(st.sampled_from([3, 10, 11, 4, 2, 1, 5, 6, 7, 8, 9, 12]), min_size=1,
                                      max_size=4, unique=True)))
        month = ",".join(MONTHS[m - 1] if draw(st.booleans()) else str(m) for m in picked)
    return f"{minute} {hour} {dom} {month} {dow}"


starts = st.datetimes(min_value=dt.datetime(2026, 1, 1), max_value=dt.datetime(2031, 1, 1)).map(
    lambda d: d.replace(tzinfo=UTC))


# -- the two sides -----------------------------------------------------------------------------------


def _previewed(schedule: dict, start: dt.datetime, end: dt.datetime, **exclusions: object) -> tuple[list, list]:
    """(fires, excluded) of the preview up to ``end``, asked 50 at a time from the last fire."""
    fires: list[str] = []
    excluded: list[dict] = []
    now = start
    while True:
        got = preview(schedule, now, count=50, **exclusions)
        listed = [f["utc"] for f in got["fires"]]
        fires += [f for f in listed if _utc(f) <= end]
        excluded += [x for x in got["excluded"] if _utc(x["utc"]) <= end]
        if len(listed) < 50 or _utc(listed[-1]) > end:
            return fires, excluded
        now = _utc(listed[-1])


def _applied(view: TaskView, changes: object, **extra: object) -> TaskView:
    names = {f.name for f in dataclasses.fields(TaskView)}
    return dataclasses.replace(view, **{k: v for k, v in {**dict(changes), **extra}.items()  # type: ignore[call-overload]
                                        if k in names})


def _fired(schedule: dict, start: dt.datetime, end: dt.datetime, exclude_dates: list[str] | None = None,
           holidays: dict | None = None) -> list[str]:
    """Occurrences the scheduler dispatches up to ``end``: a task row armed at ``start``, its plan as the
    scheduler builds it (``plan_of``), and a fake clock set to each next wake-up (a deadline or a retry)."""
    row = ScheduledTask(id=31, schedule=json.dumps(schedule), status="active", armed_at=start,
                        exclude_dates=json.dumps(exclude_dates or []),
                        holidays=json.dumps(holidays) if holidays else None)
    plan = plan_of(row)
    first = plan.next_fire(start)  # what creating the task writes (app/schedules/service.py)
    view = task_view(row)
    if first is None:
        return []
    fire, nominal = first
    view = dataclasses.replace(view, next_run_at=fire, next_occurrence_at=nominal if nominal != fire else None)
    fired: list[str] = []
    now = start
    for _ in range(100_000):
        wakes = [t for t in (view.next_run_at, view.retry_at if view.pending_run else None) if t is not None]
        if view.pending_run and view.retry_at is None:
            wakes.append(now)  # a follow-up ready at once: the finished run wakes the loop
        if not wakes or min(wakes) > end:
            return fired
        now = min(wakes)
        claim = decide_claim(view, now, FREE, LIMITS, plan)
        if claim.action == Action.DISPATCH:
            assert claim.due is not None
            fired.append(claim.due.occurrence_at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
            view = _applied(view, claim.changes, active_run_id=1, last_fire_started_at=now)
            view = _applied(view, decide_finish(view, claim.due.trigger, True, "done", None, now, LIMITS).changes)
        elif claim.action == Action.DEFER:
            view = _applied(view, claim.changes)
        else:
            raise AssertionError(f"unexpected {claim.action} at {now.isoformat()}: {claim}")
    raise AssertionError("the fake clock never reached the end of the year")


def _both(expr: str, zone: str, start: dt.datetime) -> tuple[list[str], list[str]]:
    schedule = {"kind": "cron", "cron": expr, "timezone": zone}
    try:
        shown, _ = _previewed(schedule, start, start + YEAR)
    except ScheduleError as exc:  # a combination with no day within 8 years (e.g. 30W in February)
        assert "never" in str(exc), exc
        assume(False)
    return shown, _fired(schedule, start, start + YEAR)


@pytest.mark.parametrize("zone", ZONES)
@PROPERTY
@given(expr=expressions(), start=starts)
def test_a_year_of_preview_equals_what_the_scheduler_fires(zone: str, expr: str, start: dt.datetime) -> None:
    shown, fired = _both(expr, zone, start)
    assert shown == fired, (expr, zone, start, sorted(set(shown) ^ set(fired))[:6])
    modelled = expected_fires(expr, zone, start, start + YEAR)  # the contract's days, SPEC §3's times
    assert shown == modelled, (expr, zone, start, sorted(set(shown) ^ set(modelled))[:6])
    assert len(shown) == len(set(shown))


# -- exclusions (contract B) ---------------------------------------------------------------------------


def _local_dates(fires: list[str], zone: str) -> list[str]:
    return [_utc(f).astimezone(ZoneInfo(zone)).date().isoformat() for f in fires]


@pytest.mark.parametrize("zone", ZONES)
@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(expr=expressions(), start=starts, data=st.data())
def test_excluded_dates_are_missing_from_both_and_listed_as_excluded(zone: str, expr: str, start: dt.datetime,
                                                                      data: st.DataObject) -> None:
    schedule = {"kind": "cron", "cron": expr, "timezone": zone}
    end = start + YEAR
    try:
        plain, _ = _previewed(schedule, start, end)
    except ScheduleError:
        assume(False)
    days = sorted(set(_local_dates(plain, zone)))
    assume(len(days) >= 2)
    dropped = sorted(data.draw(st.lists(st.sampled_from(days), min_size=1, max_size=min(4, len(days) - 1),
                                        unique=True)))
    shown, excluded = _previewed(schedule, start, end, exclude_dates=dropped)
    kept = [f for f, day in zip(plain, _local_dates(plain, zone), strict=True) if day not in dropped]
    assert shown == kept
    assert _fired(schedule, start, end, exclude_dates=dropped) == kept
    expected = [f for f, day in zip(plain, _local_dates(plain, zone), strict=True) if day in dropped]
    # each call lists the exclusions up to its last fire, and the last call's last fire is past the end:
    # of each excluded day its first three, each with how many the day skips (past the end: at least)
    by_day: dict[str, list[str]] = {}
    for utc, day in zip(expected, _local_dates(expected, zone), strict=True):
        by_day.setdefault(day, []).append(utc)
    assert [x["utc"] for x in excluded] == [utc for day in by_day.values() for utc in day[:3]]
    for x, day in zip(excluded, _local_dates([x["utc"] for x in excluded], zone), strict=True):
        assert x["day_count"] == len(by_day[day]) or (day == max(by_day) and x["day_count"] > len(by_day[day]))
    assert {x["reason"] for x in excluded} <= {"excluded date"}
    assert _local_dates([x["utc"] for x in excluded], zone) == [x["local"][:10] for x in excluded]


def test_holidays_and_dates_are_skipped_by_the_preview_and_the_scheduler() -> None:
    schedule = {"kind": "cron", "cron": "0 9 L * *", "timezone": "America/New_York"}
    start, end = _utc("2027-01-01T05:00:00Z"), _utc("2027-12-31T23:59:00Z")
    holidays, dates = {"country": "US", "subdivision": None}, ["2027-03-31"]
    shown, excluded = _previewed(schedule, start, end, exclude_dates=dates, holidays=holidays)
    # 31 May 2027 is Memorial Day, 31 Dec 2027 New Year's Day (observed); 31 Mar 2027 is excluded by date
    expected = [f"2027-{d}T{'14' if m in (1, 2, 11, 12) else '13'}:00:00Z" for d, m in
                [("01-31", 1), ("02-28", 2), ("04-30", 4), ("06-30", 6), ("07-31", 7), ("08-31", 8), ("09-30", 9),
                 ("10-31", 10), ("11-30", 11)]]
    assert shown == expected
    assert _fired(schedule, start, end, exclude_dates=dates, holidays=holidays) == expected
    assert [(x["local"], x["reason"]) for x in excluded] == [
        ("2027-03-31T09:00:00-04:00", "excluded date"),
        ("2027-05-31T09:00:00-04:00", "Memorial Day"),
        ("2027-12-31T09:00:00-05:00", "New Year's Day (observed)"),
    ]
    third_mondays = {"kind": "cron", "cron": "0 9 * * 1#3", "timezone": "America/New_York"}
    got = preview(third_mondays, start, count=3, holidays=holidays)
    assert [f["local"][:10] for f in got["fires"]] == ["2027-03-15", "2027-04-19", "2027-05-17"]
    assert [(x["local"][:10], x["reason"]) for x in got["excluded"]] == [
        ("2027-01-18", "Martin Luther King Jr. Day"), ("2027-02-15", "Washington's Birthday")]


# -- croniter, where its semantics are ours ---------------------------------------------------------


@st.composite
def _croniter_pairs(draw: st.DrawFn) -> tuple[str, str, bool]:
    """(our expression, croniter's spelling, croniter's day_or) for L in day-of-month or dL / d#n lists in
    day-of-week, the other day field starting with '*' (classic AND; croniter with day_or=False)."""
    minute, hour = draw(st.integers(0, 59)), draw(st.integers(0, 23))
    month = "*" if draw(st.booleans()) else ",".join(
        str(m) for m in sorted(draw(st.lists(st.integers(1, 12), min_size=1, max_size=3, unique=True))))
    if draw(st.booleans()):
        other = draw(st.sampled_from(["*", "*/2", "*/3"]))
        return f"{minute} {hour} L {month} {other}", f"{minute} {hour} L {month} {other}", False
    items = draw(st.lists(st.tuples(st.integers(0, 7), st.sampled_from([0, 1, 2, 3, 4, 5])), min_size=1, max_size=2))
    ours = ",".join(f"{d}L" if n == 0 else f"{d}#{n}" for d, n in items)
    theirs = ",".join(f"L{d % 7}" if n == 0 else f"{d % 7}#{n}" for d, n in items)
    other = draw(st.sampled_from(["*", "*/2", "*/5"]))
    return f"{minute} {hour} {other} {month} {ours}", f"{minute} {hour} {other} {month} {theirs}", False


@pytest.mark.skipif(croniter is None, reason="croniter is not installed")
@settings(max_examples=120, deadline=None, derandomize=True)
@given(pair=_croniter_pairs(), start=starts)
def test_l_dl_and_nth_weekday_agree_with_croniter_in_utc(pair: tuple[str, str, bool], start: dt.datetime) -> None:
    ours, theirs, day_or = pair
    try:
        got = next_fire_times(ours, "UTC", start, 8)
    except ValueError:
        assume(False)
    it = croniter.croniter(theirs, start, day_or=day_or)
    expected = [it.get_next(dt.datetime) for _ in range(len(got))]
    assert [g.isoformat() for g in got] == [e.astimezone(UTC).isoformat() for e in expected], (ours, theirs)
