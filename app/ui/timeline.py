"""The drawer's 7-day timeline: pure functions of (tasks, now, viewer zone).

One lane per active task with fires. A sparse task shows a dot per fire; a dense one (more than
``DOTS_PER_TASK`` fires in the window, where dots would merge into a solid bar) shows one band
per local day with the day's count, and a line under the lanes says its cadence
("standup: every 10 min · 144/day").
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Iterable, Sequence

from app.schedules import timing
from app.schedules.model import ScheduledTask, TaskStatus
from app.schedules.spec import ScheduleError
from app.ui.schedule_views import MARKER_COLORS, short_time, task_zone, zone_of

LANE_PX = 12  # one lane per task with fires, so a busy task does not hide a quiet one
TIMELINE_DAYS = 7
DOTS_PER_TASK = 56  # ~8 a day: more and the 8 px dots of a 500 px lane merge; the task is aggregated
COUNT_LIMIT = 2016  # fires counted per task (every 5 min for a week); more reads "2016+"
DAY = dt.timedelta(days=1)
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


@dataclasses.dataclass
class Tick:
    """A day boundary on the timeline."""

    left: str
    label: str


@dataclasses.dataclass
class Timeline:
    markers: list[Marker]
    ticks: list[Tick]
    label: str  # "84 fires"
    height: str  # CSS height of the lanes
    dense: list[str] = dataclasses.field(default_factory=list)  # "standup: every 10 min · 144/day"


def upcoming(task: ScheduledTask, now: dt.datetime, until: dt.datetime, limit: int) -> list[dt.datetime]:
    """An active task's fires in ``(now, until]``: its stored next run, then the schedule's."""
    if task.status != TaskStatus.ACTIVE.value or task.next_run_at is None:
        return []
    first = max(task.next_run_at, now)
    fires = [first]
    try:
        schedule = task.parsed_schedule()
        fires += timing.next_occurrences(schedule, first, limit - 1, armed_at=task.armed_at)
    except ScheduleError:
        pass
    return [fire for fire in fires if fire <= until][:limit]


def timeline(tasks: Iterable[ScheduledTask], now: dt.datetime, viewer_zone: str,
             days: int = TIMELINE_DAYS) -> Timeline:
    """Every active task's fires over the next ``days`` days (one lane per task), midnight ticks
    in the viewer's zone, a label counting the fires and the cadence of each dense task."""
    span = dt.timedelta(days=days)
    viewer = zone_of(viewer_zone)
    markers: list[Marker] = []
    dense: list[str] = []
    total, capped, lanes = 0, False, 0
    for index, task in enumerate(tasks):
        fires = upcoming(task, now, now + span, COUNT_LIMIT)
        if not fires:
            continue
        color, top = MARKER_COLORS[index % len(MARKER_COLORS)], f"{lanes * LANE_PX}px"
        total, capped = total + len(fires), capped or len(fires) == COUNT_LIMIT
        if len(fires) > DOTS_PER_TASK:
            markers += day_bands(task.name, fires, now, span, viewer, color, top)
            dense.append(f"{task.name}: {cadence(task, fires, now, span)}")
        else:
            zone = task_zone(task, viewer_zone)
            markers += [Marker(left=_percent(fire - now, span), top=top, color=color,
                               label=f"{task.name} · {short_time(fire, zone)} {fire.astimezone(zone).tzname()}")
                        for fire in fires]
        lanes += 1
    label = "no fires" if not total else f"{total}{'+' if capped else ''} fire{'s' if total != 1 else ''}"
    return Timeline(markers, day_ticks(now, viewer, days), label, f"{max(lanes, 1) * LANE_PX}px", dense)


def day_bands(name: str, fires: Sequence[dt.datetime], now: dt.datetime, span: dt.timedelta, zone: dt.tzinfo,
              color: str, top: str) -> list[Marker]:
    """One band per local day of ``zone`` (the viewer's, like the ticks) that has fires, with its count."""
    end_of_window = now + span + dt.timedelta(microseconds=1)  # a fire exactly at the end still counts
    edges = [now, *(_midnight(day, zone) for day in _days_after(now, zone, span)), end_of_window]
    bands, index = [], 0
    for start, end in zip(edges, edges[1:], strict=False):
        count = 0
        while index < len(fires) and fires[index] < end:
            count, index = count + 1, index + 1
        if count:
            day = start.astimezone(zone)
            bands.append(Marker(left=_percent(start - now, span), width=_percent(end - start, span), top=top,
                                color=color, count=str(count),
                                label=f"{name} · {day:%a} {day.day} {day:%b} · {_fires(count)}"))
    return bands


def _fires(count: int) -> str:
    return f"{count} fire{'s' if count != 1 else ''}"


def cadence(task: ScheduledTask, fires: Sequence[dt.datetime], now: dt.datetime, span: dt.timedelta) -> str:
    """"every 10 min · 144/day": the period when the fires are evenly spaced, and the fires per
    day (the window's average; the next 24 hours' count when the window's count was capped)."""
    schedule = task.schedule_dict()
    if len(fires) < COUNT_LIMIT:
        per_day = round(len(fires) / (span / DAY))
    else:
        per_day = sum(1 for fire in fires if fire <= now + DAY)
    if schedule.get("kind") == "interval":
        period = int(schedule.get("every_seconds") or 0)
    else:
        gaps = {round((b - a).total_seconds()) for a, b in zip(fires, fires[1:], strict=False)}
        period = gaps.pop() if len(gaps) == 1 else 0
    every = f"every {period_text(period)} · " if period else ""
    return f"{every}{per_day}{'+' if per_day == COUNT_LIMIT else ''}/day"


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
