"""The drawer's 7-day timeline: pure functions of (tasks, now, viewer zone).

One lane per active task with fires. A sparse task shows a dot per fire; a dense one (more than
``DOTS_PER_TASK`` fires in the window, where dots would merge into a solid bar) shows one band
per local day with the day's count, and a line under the lanes says its cadence
("standup: every 10 min · 144/day").

An occurrence a cron task's exclusions skip (SPEC §20) is no fire: it is drawn hollow and struck
through in the task's lane, labelled "standup · Thu 24 Dec, 09:00 CET · excluded (Christmas Eve)"
(a dense task: one hollow band per skipped day), and counted nowhere.

Every count is the fires that will happen: no more than the task's runs left (``max_runs`` minus
the runs so far), none after its end, and a dense task's days are counted, not listed, so an
every-minute task reads 1440 a day on each of the seven days.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence
from itertools import pairwise

from app.schedules import exclusions as excl
from app.schedules import timing
from app.schedules.model import ScheduledTask, TaskStatus
from app.schedules.plan import Plan, plan_of
from app.schedules.spec import ScheduleError
from app.ui.calendar_views import reason_words
from app.ui.schedule_views import MARKER_COLORS, short_time, task_zone, zone_of

LANE_PX = 12  # one lane per task with fires, so a busy task does not hide a quiet one
TIMELINE_DAYS = 7
DOTS_PER_TASK = 56  # ~8 a day: more and the 8 px dots of a 500 px lane merge; the task is aggregated
DAY = dt.timedelta(days=1)
TICK = dt.timedelta(microseconds=1)  # (t - TICK, u] is [t, u] for instants (they carry microseconds at most)
LABEL_ROOM = 0.93  # a day label ("Wed 9", ~7 % of a lane) starting later would run past the timeline


@dataclasses.dataclass
class Marker:
    """A dot (one fire) or a band (``count`` fires of one day) on the timeline: ``left`` and
    ``width`` are CSS percentages, ``top`` picks the task's lane."""

    left: str
    top: str
    label: str
    color: str
    width: str = ""  # "" for a dot
    count: str = ""  # a band's number of fires
    excluded: bool = False  # an occurrence the task's exclusions skip (SPEC §20): drawn hollow, struck through


@dataclasses.dataclass
class Tick:
    """A day boundary on the timeline."""

    left: str
    label: str


@dataclasses.dataclass(frozen=True)
class Skip:
    """A local day (the task's zone) whose occurrences the task's exclusions skip (SPEC §20)."""

    day: dt.date
    occurrences: list[dt.datetime]  # nominal instants, ascending
    reason: str  # "Christmas Day", or exclusions.EXCLUDED_DATE
    day_end: dt.datetime  # the day's last instant inside the view


@dataclasses.dataclass
class Timeline:
    markers: list[Marker]
    ticks: list[Tick]
    label: str  # "84 fires"
    height: str  # CSS height of the lanes
    dense: list[str] = dataclasses.field(default_factory=list)  # "standup: every 10 min · 144/day"


@dataclasses.dataclass(frozen=True)
class Fires:
    """The fires an active task will make: its stored next run ``first`` (at the occurrence
    ``first_nominal``), then its plan's — the schedule inside the task's active window, each
    occurrence moved by its jitter (app/schedules/plan.py) — none after ``end`` and at most
    ``left`` of them (None: no limit). Counts go by occurrence: a jitter is under a tenth of any
    gap, so it moves a fire across a day's edge at most."""

    first: dt.datetime
    end: dt.datetime
    left: int | None
    plan: Plan | None  # None: a stored schedule that no longer parses (its next run only)
    first_nominal: dt.datetime | None = None  # None: ``first`` itself
    horizon: dt.datetime | None = None  # the view's end (None: ``end``); a jittered fire may pass ``end``

    @property
    def _after_first(self) -> dt.datetime:
        return self.first_nominal or self.first

    def listed(self, limit: int) -> list[dt.datetime]:
        """The first ``limit`` fires (fewer when the runs left or the end come first)."""
        limit = limit if self.left is None else min(limit, self.left)
        if limit <= 0:
            return []
        fires = [self.first]
        if self.plan is not None and limit > 1:
            try:
                fires += [self.plan.fire_at(n) for n in self.plan.upcoming(self._after_first, limit - 1)]
            except ScheduleError:  # a cron that falls silent for 8 years: its fires so far
                pass
        return [fire for fire in fires if fire <= (self.horizon or self.end)][:limit]

    def count(self, after: dt.datetime, until: dt.datetime) -> int:
        """How many fires fall in ``(after, until]`` (and not after ``end``), runs left aside;
        counted, not listed (see timing.count_occurrences)."""
        until = min(until, self.end)
        if until < self.first or until <= after:
            return 0
        found = int(after < self.first)
        if self.plan is not None:
            found += self.plan.count(max(after, self._after_first), until)
        return found

    def bounded(self, count: int) -> int:
        """``count`` fires cut to the runs left."""
        return count if self.left is None else min(count, self.left)

    def nth(self, after: dt.datetime, n: int) -> dt.datetime | None:
        """The ``n``-th fire (1-based) after ``after``, runs left and end aside."""
        if after < self.first:
            if n == 1:
                return self.first
            after, n = self._after_first, n - 1
        if self.plan is None:
            return None
        nominal = self.plan.nth_after(after, n)
        return None if nominal is None else self.plan.fire_at(nominal)


def fires_of(task: ScheduledTask, now: dt.datetime, until: dt.datetime) -> Fires | None:
    """What ``task`` will fire in ``(now, until]``, or None when nothing: not active, no next
    run, no runs left, or its next run after ``until`` or at/after its end (``ends_at``)."""
    left = timing.runs_left(task.max_runs, task.run_count)
    if task.status != TaskStatus.ACTIVE.value or task.next_run_at is None or left == 0:
        return None
    if task.ends_at is not None and (task.next_occurrence_at or task.next_run_at) >= task.ends_at:
        return None  # the window [starts_at, ends_at) has no occurrence left
    first = max(task.next_run_at, now)
    if first > until:
        return None
    try:
        plan: Plan | None = plan_of(task)
    except ScheduleError:
        plan = None
    end = min(until, task.ends_at) if task.ends_at is not None else until
    # the plan bounds occurrences by the window (their nominal instants, as the scheduler does): a last
    # occurrence before ends_at whose jitter carries it past ends_at is still listed, up to the view's end
    return Fires(first, max(end, first), left, plan, task.next_occurrence_at, horizon=until)


def upcoming(task: ScheduledTask, now: dt.datetime, until: dt.datetime, limit: int) -> list[dt.datetime]:
    """An active task's next fires up to ``until`` (at most ``limit``): its stored next run, then
    the schedule's, no more than its runs left and none after its end."""
    fires = fires_of(task, now, until)
    return fires.listed(limit) if fires else []


def fire_count(task: ScheduledTask, now: dt.datetime, until: dt.datetime) -> int:
    """Exactly how many times ``task`` fires up to ``until`` (its runs left and its end included),
    without listing the fires."""
    fires = fires_of(task, now, until)
    if fires is None:
        return 0
    return fires.bounded(fires.count(now - TICK, fires.end))


def coming(task: ScheduledTask, now: dt.datetime, days: int = TIMELINE_DAYS) -> str:
    """A row's fires ahead: "3 fires left" when the task's last fires fall in the next ``days``
    days, "10,080 fires in 7 days" otherwise, "no runs left" for an active task that has used
    them all, "" when it fires nothing in the window."""
    left = timing.runs_left(task.max_runs, task.run_count)
    if task.status == TaskStatus.ACTIVE.value and left == 0:
        return "no runs left"
    found = fire_count(task, now, now + dt.timedelta(days=days))
    if not found:
        return ""
    if found == left:
        return f"{_fires(found)} left"
    return f"{_fires(found)} in {days} days"


def timeline(tasks: Iterable[ScheduledTask], now: dt.datetime, viewer_zone: str,
             days: int = TIMELINE_DAYS) -> Timeline:
    """Every active task's fires over the next ``days`` days (one lane per task, its skipped
    occurrences hollow in it), midnight ticks in the viewer's zone, a label counting the fires and
    the cadence of each dense task."""
    span = dt.timedelta(days=days)
    viewer = zone_of(viewer_zone)
    markers: list[Marker] = []
    dense: list[str] = []
    total, lanes = 0, 0
    for index, task in enumerate(tasks):
        fires = fires_of(task, now, now + span)
        count = fires.bounded(fires.count(now - TICK, fires.end)) if fires else 0
        skips = skipped(task, now, now + span)
        if not (fires and count) and not skips:
            continue
        color, top = MARKER_COLORS[index % len(MARKER_COLORS)], f"{lanes * LANE_PX}px"
        zone = task_zone(task, viewer_zone)
        if fires and count > DOTS_PER_TASK:  # counted per day; only the first few fires are listed, for the cadence
            markers += day_bands(task.name, fires, now, span, viewer, color, top)
            dense.append(f"{task.name}: {cadence(task, fires, fires.listed(3), now)}")
        elif fires:
            markers += [Marker(left=_percent(fire - now, span), top=top, color=color,
                               label=f"{task.name} · {_fire_time(fire, zone, bool(task.jitter_seconds))}")
                        for fire in fires.listed(count)]
        crowded = count + sum(len(skip.occurrences) for skip in skips) > DOTS_PER_TASK  # bands, not a heap of dots
        markers += skip_markers(task.name, skips, crowded, now, span, zone, color, top)
        total += count
        lanes += 1
    label = _fires(total) if total else "no fires"
    return Timeline(markers, day_ticks(now, viewer, days), label, f"{max(lanes, 1) * LANE_PX}px", dense)


def skipped(task: ScheduledTask, now: dt.datetime, until: dt.datetime) -> list[Skip]:
    """The occurrences a cron task's exclusions skip in ``(now, until]``, per local day of its zone
    (at most ``DOTS_PER_TASK`` a day): none for a task that fires no more, and none past its last
    run left (they would not have fired either)."""
    left = timing.runs_left(task.max_runs, task.run_count)
    found = excl.of_task(task)
    schedule = task.schedule_dict()
    if (task.status != TaskStatus.ACTIVE.value or task.next_run_at is None or left == 0 or not found
            or schedule.get("kind") != "cron"):
        return []
    zone = zone_of(schedule.get("timezone"))
    try:
        plan = plan_of(task)
        # the last run left clamps the view only when it falls inside it (counting is cheap; finding
        # the n-th of a million runs left is not)
        ends_inside = left is not None and plan.count(now - TICK, until) >= left
        last = plan.nth_after(now - TICK, left) if ends_inside and left is not None else None
        until = min(until, last) if last is not None else until
        days = plan.excluded_days(now, until, per_day=DOTS_PER_TASK, max_days=TIMELINE_DAYS + 1)
    except ScheduleError:
        return []
    return [Skip(day.day, list(day.listed), day.reason,
                 min(until, _midnight(day.day + dt.timedelta(days=1), zone) - TICK)) for day in days]


def skip_markers(name: str, skips: Sequence[Skip], dense: bool, now: dt.datetime, span: dt.timedelta,
                 zone: dt.tzinfo, color: str, top: str) -> list[Marker]:
    """Hollow markers for skipped occurrences: one per occurrence, or one band per skipped day of a
    dense task (where its fires are banded too)."""
    if dense:
        return [Marker(left=_percent(skip.occurrences[0] - now, span), top=top, color=color, excluded=True,
                       width=_percent(max(skip.day_end - skip.occurrences[0], DAY / 48), span),
                       label=f"{name} · {skip.day:%a} {skip.day.day} {skip.day:%b} · excluded "
                             f"({reason_words(skip.reason)})")
                for skip in skips]
    return [Marker(left=_percent(at - now, span), top=top, color=color, excluded=True,
                   label=f"{name} · {_fire_time(at, zone, False)} · excluded ({reason_words(skip.reason)})")
            for skip in skips for at in skip.occurrences]


def day_bands(name: str, fires: Fires, now: dt.datetime, span: dt.timedelta, zone: dt.tzinfo,
              color: str, top: str) -> list[Marker]:
    """One band per local day of ``zone`` (the viewer's, like the ticks) that has fires, with its
    count; a band ends at the task's end, or at its last fire when its runs left run out that day.
    Each day is counted, not listed."""
    midnights = [_midnight(day, zone) for day in _days_after(now, zone, span)]
    edges = [now, *(m for m in midnights if m < fires.end), fires.end]
    bands, total = [], 0
    for number, (start, end) in enumerate(pairwise(edges), 1):
        count = fires.count(start - TICK, end if number == len(edges) - 1 else end - TICK)
        stop = end
        if fires.left is not None and total + count >= fires.left:
            count = fires.left - total
            stop = (fires.nth(start - TICK, count) or end) if count else start
        if count:
            day = start.astimezone(zone)
            bands.append(Marker(left=_percent(start - now, span), width=_percent(stop - start, span), top=top,
                                color=color, count=_number(count),
                                label=f"{name} · {day:%a} {day.day} {day:%b} · {_fires(count)}"))
        total += count
        if total == fires.left:
            break
    return bands


def _fire_time(fire: dt.datetime, zone: dt.tzinfo, seconds: bool) -> str:
    """``Sat 28 Mar, 09:00 CET``; a jittered fire keeps its seconds (``09:00:17``)."""
    local = fire.astimezone(zone)
    clock = f"{short_time(fire, zone)}:{local:%S}" if seconds else short_time(fire, zone)
    return f"{clock} {local.tzname()}"


def _number(count: int) -> str:
    """``1440``, ``10,080``: thousands are set apart from five digits on."""
    return f"{count:,}" if count >= 10_000 else str(count)


def _fires(count: int) -> str:
    return f"{_number(count)} fire{'s' if count != 1 else ''}"


def cadence(task: ScheduledTask, fires: Fires, listed: Sequence[dt.datetime], now: dt.datetime) -> str:
    """"every 10 min · 144/day": the period when the fires are evenly spaced, the schedule's
    fires per day (averaged over the window up to the task's end), and "· 100 left" when its runs
    left end before the window does. ``listed``: its first fires."""
    schedule = task.schedule_dict()
    scheduled = fires.count(now - TICK, fires.end)
    window = max(fires.end - now, dt.timedelta(seconds=1))
    per_day = round(scheduled / (window / DAY))
    if schedule.get("kind") == "interval":
        period = int(schedule.get("every_seconds") or 0)
    else:
        gaps = {round((b - a).total_seconds()) for a, b in pairwise(listed)}
        period = gaps.pop() if len(gaps) == 1 else 0
        # even at first but not all week long (weekdays only, office hours): no period
        if period and scheduled != (fires.end - listed[0]) // dt.timedelta(seconds=period) + 1:
            period = 0
    every = f"every {period_text(period)} · " if period else ""
    left = f" · {_number(fires.left)} left" if fires.left is not None and fires.left < scheduled else ""
    return f"{every}{_number(per_day)}/day{left}"


def period_text(seconds: int) -> str:
    """``10 min``, ``2 h``, ``90 s``."""
    if seconds % 3600 == 0:
        return f"{seconds // 3600} h"
    if seconds % 60 == 0:
        return f"{seconds // 60} min"
    return f"{seconds} s"


def _days_after(now: dt.datetime, zone: dt.tzinfo, span: dt.timedelta) -> list[dt.date]:
    """The local dates whose midnight falls strictly inside ``(now, now + span)``."""
    local = now.astimezone(zone)
    days = [(local + dt.timedelta(days=offset)).date() for offset in range(1, span.days + 2)]
    return [day for day in days if now < _midnight(day, zone) < now + span]


def _midnight(day: dt.date, zone: dt.tzinfo) -> dt.datetime:
    return dt.datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(dt.UTC)


def day_ticks(now: dt.datetime, zone: dt.tzinfo, days: int = TIMELINE_DAYS) -> list[Tick]:
    """Local midnights after ``now`` within ``days`` days, labelled with the weekday (a midnight too
    close to the end of the window has no room for its label: its line only)."""
    span = dt.timedelta(days=days)
    ticks = []
    for day in _days_after(now, zone, span):
        offset = _midnight(day, zone) - now
        label = f"{day:%a} {day.day}" if offset / span <= LABEL_ROOM else ""
        ticks.append(Tick(left=_percent(offset, span), label=label))
    return ticks


def _percent(offset: dt.timedelta, span: dt.timedelta) -> str:
    return f"{max(0.0, min(100.0, offset / span * 100)):.3f}%"
