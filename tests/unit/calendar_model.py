"""A small model of the contract for issue 31 (SPEC §20), independent of ``app.schedules.cron``:
which local days an extended cron expression picks (calendar module), and which UTC instants a
year of it fires (SPEC §3's rules for skipped and repeated wall times, through zoneinfo).

It reads only what the tests generate: minute ``*/k`` or a list of numbers, hour a number or a
list, day-of-month items ``*``, ``*/k``, ``a``, ``a-b``, ``L``, ``L-n``, ``LW``, ``nW``,
day-of-week items ``*``, ``*/k``, ``d``, ``dL``, ``d#n`` (d a number 0-7 or a name), month a
list of numbers or names.
"""

from __future__ import annotations

import calendar
import datetime as dt
from zoneinfo import ZoneInfo

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]


def _weekday(token: str) -> int:
    """A cron weekday (0-7 or a name) as Python's weekday (Monday 0 … Sunday 6)."""
    d = DAYS.index(token.lower()) if token.lower() in DAYS else int(token)
    return (d + 6) % 7


def nearest_weekday(y: int, m: int, n: int) -> int | None:
    ndays = calendar.monthrange(y, m)[1]
    if n > ndays:
        return None
    wd = calendar.weekday(y, m, n)
    if wd == 5:
        return 3 if n == 1 else n - 1
    if wd == 6:
        return n - 2 if n == ndays else n + 1
    return n


def day_of(item: str, y: int, m: int) -> int | None:
    """The day of month an extended item (``L``, ``L-n``, ``LW``, ``nW``, ``dL``, ``d#n``) picks, or None."""
    ndays = calendar.monthrange(y, m)[1]
    if item == "L":
        return ndays
    if item.startswith("L-"):
        day = ndays - int(item[2:])
        return day if day >= 1 else None
    if item == "LW":
        return max(d for d in range(ndays - 2, ndays + 1) if calendar.weekday(y, m, d) < 5)
    if item.endswith("W"):
        return nearest_weekday(y, m, int(item[:-1]))
    weekday, nth = (item[:-1], "L") if item.endswith("L") else item.split("#")
    days = [d for d in range(1, ndays + 1) if calendar.weekday(y, m, d) == _weekday(weekday)]
    if nth == "L":
        return days[-1]
    return days[int(nth) - 1] if int(nth) <= len(days) else None


def _dom_item(item: str, day: dt.date) -> bool:
    if item == "*":
        return True
    if item.startswith("*/"):
        return (day.day - 1) % int(item[2:]) == 0
    if item[0] == "L" or item.endswith("W"):
        return day_of(item, day.year, day.month) == day.day
    a, _, b = item.partition("-")
    return int(a) <= day.day <= int(b or a)


def _dow_item(item: str, day: dt.date) -> bool:
    if item == "*":
        return True
    if item.startswith("*/"):  # 0-7 stepped: 7 itself is Sunday, already 0
        return (day.weekday() + 1) % 7 % int(item[2:]) == 0
    if item.endswith("L") or "#" in item:
        return day_of(item, day.year, day.month) == day.day
    return day.weekday() == _weekday(item)


def day_matches(dom: str, month: str, dow: str, day: dt.date) -> bool:
    """SPEC §3's day rule with the extensions: AND if either day field starts with '*', else OR."""
    months = {MONTHS.index(m.lower()) + 1 if m.lower() in MONTHS else int(m) for m in month.split(",")} \
        if month != "*" else set(range(1, 13))
    if day.month not in months:
        return False
    in_dom = any(_dom_item(i, day) for i in dom.split(","))
    in_dow = any(_dow_item(i, day) for i in dow.split(","))
    return in_dom and in_dow if dom.startswith("*") or dow.startswith("*") else in_dom or in_dow


def _values(field: str, high: int) -> list[int]:
    return list(range(0, high, int(field[2:]))) if field.startswith("*/") else [int(x) for x in field.split(",")]


def _instants(wall: dt.datetime, zone: ZoneInfo, fixed: bool) -> list[dt.datetime]:
    """SPEC §3: a wall time that exists fires (twice for a wildcard job in a repeated hour, once — the first
    pass — for a fixed-time one); one a jump skips fires at the jump if fixed-time, never if wildcard."""
    found = []
    for fold in (0, 1):
        t = wall.replace(tzinfo=zone, fold=fold).astimezone(dt.UTC)
        if t.astimezone(zone).replace(tzinfo=None) == wall and t not in found:
            found.append(t)
    if found:
        return sorted(found)[:1] if fixed else sorted(found)
    if not fixed:
        return []
    lo = wall.replace(tzinfo=zone, fold=1).astimezone(dt.UTC)  # the later offset: before the jump
    while lo.astimezone(zone).replace(tzinfo=None) < wall:
        lo += dt.timedelta(minutes=1)
    while (lo - dt.timedelta(seconds=1)).astimezone(zone).replace(tzinfo=None) >= wall:
        lo -= dt.timedelta(seconds=1)
    return [lo]


def expected_fires(expr: str, tz: str, start: dt.datetime, end: dt.datetime) -> list[str]:
    """UTC instants ("…Z") in ``(start, end]`` the model says ``expr`` fires in zone ``tz``."""
    minute, hour, dom, month, dow = expr.split()
    zone = ZoneInfo(tz)
    fixed = not (minute.startswith("*") or hour.startswith("*"))
    out: set[dt.datetime] = set()
    day = start.astimezone(zone).date() - dt.timedelta(days=1)
    while day <= end.astimezone(zone).date() + dt.timedelta(days=1):
        if day_matches(dom, month, dow, day):
            for h in _values(hour, 24):
                for m in _values(minute, 60):
                    wall = dt.datetime(day.year, day.month, day.day, h, m)
                    out.update(t for t in _instants(wall, zone, fixed) if start < t <= end)
        day += dt.timedelta(days=1)
    return [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in sorted(out)]
