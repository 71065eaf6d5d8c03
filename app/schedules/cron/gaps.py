"""Exact minimum distance between consecutive fires of a cron expression in its zone.

No sampling of occurrences. Away from clock changes the fires are the matching wall minutes,
so their spacing follows from the field sets alone: each matching day contributes the gaps
between its consecutive times of day, and each pair of consecutive matching days the gap from
the last time of one to the first time of the next. Near each transition of the zone (found by
analysing the zone, see cron_zone) the regular pairs that straddle the change are taken out of
that tally and replaced by the instants the engine really produces there — the minutes skipped
or repeated, the coalesced fire at the jump, the second pass of a wildcard job.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from dataclasses import dataclass
from datetime import date
from itertools import pairwise

from app.schedules.cron.evaluate import days_in_month
from app.schedules.cron.fields import CronSpec
from app.schedules.cron.zone import DAY, EPOCH_ORDINAL, Transition, ZoneTimeline

_NEVER = 2**62


@dataclass(frozen=True)
class Gap:
    """The smallest gap in seconds; ``at`` is the UTC second of the later fire when a clock change causes it."""

    seconds: int
    at: int | None


@dataclass
class _Group:
    """Transitions close enough that the wall minutes they disturb overlap, and those minutes' span."""

    first: int
    last: int
    transitions: list[Transition]


def min_gap(spec: CronSpec, timeline: ZoneTimeline, first_day: int, last_day: int) -> Gap | None:
    """Minimum spacing of consecutive fires whose wall dates lie in ``[first_day, last_day]`` (ordinals).

    None when fewer than two fires fall in the window.
    """
    days = matching_days(spec, first_day, last_day)
    times = times_of_day(spec)
    if len(days) * len(times) < 2:
        return None
    counts = _regular_gaps(days, times)
    special: list[Gap] = []
    for group in _groups(timeline, days, times):
        walls = _walls_between(days, times, group.first, group.last)
        for a, b in pairwise(walls):
            counts[b - a] -= 1
        for (i1, w1), (i2, w2) in pairwise(_realize(spec, walls, group.transitions)):
            if i2 - i1 == w2 - w1:
                counts[i2 - i1] += 1
            else:
                special.append(Gap(i2 - i1, i2))
    regular = min((gap for gap, n in counts.items() if n > 0), default=_NEVER)
    best = min(special, key=lambda g: g.seconds, default=None)
    if best is not None and best.seconds < regular:
        return best
    return Gap(regular, None) if regular != _NEVER else best


def matching_days(spec: CronSpec, first: int, last: int) -> list[int]:
    """Ordinals of the matching days in ``[first, last]``, ascending, month table by month table."""
    out: list[int] = []
    d = date.fromordinal(first)
    year, month, start = d.year, d.month, first - d.day + 1
    while start <= last:
        ndays = days_in_month(year, month)
        for day in spec.matching_days(month, ndays, start % 7):
            ordinal = start + day - 1
            if first <= ordinal <= last:
                out.append(ordinal)
        start += ndays
        month += 1
        if month == 13:
            year, month = year + 1, 1
    return out


def times_of_day(spec: CronSpec) -> list[int]:
    """Matching times of day in seconds, ascending."""
    return [h * 3600 + m * 60 for h in spec.hour.values for m in spec.minute.values]


def _regular_gaps(days: list[int], times: list[int]) -> Counter[int]:
    counts: Counter[int] = Counter()
    for a, b in pairwise(times):
        counts[b - a] += len(days)
    for step, n in Counter(b - a for a, b in pairwise(days)).items():
        counts[step * DAY + times[0] - times[-1]] += n
    return counts


def _groups(timeline: ZoneTimeline, days: list[int], times: list[int]) -> list[_Group]:
    """Per transition: the matching wall minutes from the last one before it to the first after it."""
    low = _wall(days[0], times[0])
    high = _wall(days[-1], times[-1])
    groups: list[_Group] = []
    for tr in timeline.transitions_between(low - 2 * DAY, high + 2 * DAY):
        lo_wall = tr.at + min(tr.before, tr.after)
        hi_wall = tr.at + max(tr.before, tr.after)
        if hi_wall < low or lo_wall > high:
            continue
        first = _last_wall_before(days, times, lo_wall)
        last = _first_wall_after(days, times, hi_wall)
        first = low if first is None else first
        last = high if last is None else last
        if groups and first <= groups[-1].last:
            groups[-1].last = max(groups[-1].last, last)
            groups[-1].transitions.append(tr)
        else:
            groups.append(_Group(first, last, [tr]))
    return groups


def _realize(spec: CronSpec, walls: list[int], transitions: list[Transition]) -> list[tuple[int, int]]:
    """(instant, wall) of the fires of ``walls`` across ``transitions`` — the engine's rules, inlined.

    Wildcard: a wall fires in every offset segment whose wall range contains it. Fixed-time:
    once, at the first instant the clock reaches it or passes it (the jump for a skipped minute).
    """
    fixed = spec.fixed_time
    bounds = [-_NEVER] + [tr.at for tr in transitions] + [_NEVER]
    offsets = [transitions[0].before] + [tr.after for tr in transitions]
    out: list[tuple[int, int]] = []
    high_water = -_NEVER
    for start, end, offset in zip(bounds[:-1], bounds[1:], offsets, strict=True):
        for wall in walls:
            if fixed:
                if wall < high_water:
                    continue
                instant = max(wall - offset, start)
            else:
                instant = wall - offset
                if instant < start:
                    continue
            if instant >= end:
                break
            if not out or out[-1][0] != instant:
                out.append((instant, wall))
        if fixed:
            high_water = end + offset
    return out


def _walls_between(days: list[int], times: list[int], first: int, last: int) -> list[int]:
    out = []
    k = bisect_left(days, first // DAY + EPOCH_ORDINAL)
    while k < len(days) and _wall(days[k], times[0]) <= last:
        base = (days[k] - EPOCH_ORDINAL) * DAY
        out.extend(base + t for t in times if first <= base + t <= last)
        k += 1
    return out


def _last_wall_before(days: list[int], times: list[int], wall: int) -> int | None:
    ordinal, second = divmod(wall, DAY)
    ordinal += EPOCH_ORDINAL
    k = bisect_right(days, ordinal) - 1
    if k >= 0 and days[k] == ordinal:
        j = bisect_left(times, second) - 1
        if j >= 0:
            return _wall(days[k], times[j])
        k -= 1
    return _wall(days[k], times[-1]) if k >= 0 else None


def _first_wall_after(days: list[int], times: list[int], wall: int) -> int | None:
    ordinal, second = divmod(wall, DAY)
    ordinal += EPOCH_ORDINAL
    k = bisect_left(days, ordinal)
    if k < len(days) and days[k] == ordinal:
        j = bisect_right(times, second)
        if j < len(times):
            return _wall(days[k], times[j])
        k += 1
    return _wall(days[k], times[0]) if k < len(days) else None


def _wall(ordinal: int, time: int) -> int:
    return (ordinal - EPOCH_ORDINAL) * DAY + time
