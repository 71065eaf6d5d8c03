"""Brute-force reference for the cron engine: classic Vixie/ISC cron's main loop, minute by minute.

Deliberately independent of ``scheduler``: its own small parser (entry.c's flags included) and
a transcription of ``cron.c``'s loop (ISC cron 4.1, as in OpenBSD and Debian):

* the daemon wakes once per real minute and reads the wall clock in minutes (``timeRunning``);
* ``virtualTime`` is where it believes it is; ``timeDiff = timeRunning - virtualTime``;
* ``timeDiff == 1``: run every job matching ``timeRunning``;
* ``0 < timeDiff <= 5`` (*small*, woke up late): run every job for each minute caught up;
* ``5 < timeDiff <= 180`` (*medium*, e.g. DST starts): wildcard jobs for ``timeRunning`` only,
  fixed-time jobs for every minute from ``virtualTime + 1`` to ``timeRunning``;
* ``-180 <= timeDiff <= 0`` (*negative*, e.g. DST ends): wildcard jobs for ``timeRunning``;
  ``virtualTime`` stays put until the clock catches up, so fixed-time jobs do not repeat;
* otherwise (*large*): jump ``virtualTime`` and run everything for ``timeRunning``.

A job is wildcard when its minute or hour field starts with ``*`` (MIN_STAR / HR_STAR).
Classic cron flushes its run queue between caught-up minutes, so a job matching two skipped
minutes runs twice, ten seconds apart; ``Run.queued`` keeps that count, while ``fires()`` gives
the distinct wake instants — the SPEC's "one fire for that instant".
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
DAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"]
# entry.c's macros: the bit sets and the *_STAR flags each one sets.
MACROS = {
    "@yearly": ("0 0 1 1 *", {"dow"}),
    "@annually": ("0 0 1 1 *", {"dow"}),
    "@monthly": ("0 0 1 * *", {"dow"}),
    "@weekly": ("0 0 * * 0", {"dom"}),
    "@daily": ("0 0 * * *", set()),
    "@midnight": ("0 0 * * *", set()),
    "@hourly": ("0 * * * *", {"hour"}),
}
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
NAIVE_EPOCH = datetime(1970, 1, 1)


@dataclass(frozen=True)
class Entry:
    """A crontab line's time part as classic cron stores it: bit sets plus star flags."""

    minute: frozenset[int]
    hour: frozenset[int]
    dom: frozenset[int]
    month: frozenset[int]
    dow: frozenset[int]
    stars: frozenset[str]  # of "minute", "hour", "dom", "dow"

    @property
    def wildcard(self) -> bool:
        return "minute" in self.stars or "hour" in self.stars

    def matches(self, wall: datetime) -> bool:
        """find_jobs()'s test for one wall-clock minute."""
        return wall.minute in self.minute and wall.hour in self.hour and self.day_matches(wall)

    def day_matches(self, wall: datetime) -> bool:
        """The month and day-of-month/day-of-week part of find_jobs()'s test."""
        if wall.month not in self.month:
            return False
        dow = (wall.weekday() + 1) % 7
        if "dom" in self.stars or "dow" in self.stars:
            return wall.day in self.dom and dow in self.dow
        return wall.day in self.dom or dow in self.dow


def parse(expr: str) -> Entry:
    """A small, separate parser for valid expressions (the reference trusts its input)."""
    expr = expr.strip()
    macro = expr.startswith("@")
    forced: set[str] = set()
    if macro:
        expr, forced = MACROS[expr.lower()]
    parts = expr.split()
    names = ["minute", "hour", "dom", "month", "dow"]
    bounds = [(0, 59, None), (0, 23, None), (1, 31, None), (1, 12, MONTHS), (0, 7, DAYS)]
    sets = [_expand(part, *b) for part, b in zip(parts, bounds, strict=True)]
    if 7 in sets[4]:
        sets[4] = (sets[4] - {7}) | {0}
    if macro:
        stars = frozenset(forced)
    else:
        stars = frozenset(n for n, part in zip(names, parts, strict=True) if part.startswith("*") and n != "month")
    return Entry(*(frozenset(s) for s in sets), stars=stars)


def _expand(text: str, low: int, high: int, names: list[str] | None) -> set[int]:
    def number(token: str) -> int:
        if token.isdigit():
            return int(token)
        assert names is not None
        return names.index(token.lower()) + (1 if names is MONTHS else 0)

    out: set[int] = set()
    for item in text.split(","):
        base, _, step = item.partition("/")
        if base == "*":
            first, last = low, high
        elif "-" in base:
            a, b = base.split("-")
            first, last = number(a), number(b)
        else:
            first = last = number(base)
        out.update(range(first, last + 1, int(step) if step else 1))
    return out


@dataclass(frozen=True)
class Run:
    """One wake-up at which classic cron started the job ``queued`` times (UTC second)."""

    at: int
    queued: int


def simulate(entry: Entry, offset: Callable[[int], int], start: int, end: int) -> list[Run]:
    """Runs of ``entry`` by a daemon started at UTC second ``start`` and watched until ``end``.

    ``offset(t)`` is the zone's UTC offset in seconds at UTC second ``t`` (whole minutes).
    """
    return simulate_many([entry], offset, start, end)[0]


def simulate_many(entries: list[Entry], offset: Callable[[int], int], start: int, end: int) -> list[list[Run]]:
    """simulate() for several entries in one pass of the clock."""
    runs: list[list[Run]] = [[] for _ in entries]

    def clock(t: int) -> int:
        return (t + offset(t)) // 60

    def find_jobs(vtime: int, wild: bool, fixed: bool, queue: list[int]) -> None:
        wall = NAIVE_EPOCH + timedelta(minutes=vtime)
        for i, entry in enumerate(entries):
            if (wild if entry.wildcard else fixed) and entry.matches(wall):
                queue[i] += 1

    virtual = running = clock(start)
    for t in range(start - start % 60 + 60, end + 1, 60):
        now = clock(t)
        if now == running:
            continue
        running = now
        queue = [0] * len(entries)
        diff = running - virtual
        if diff == 1:
            virtual = running
            find_jobs(virtual, True, True, queue)
        elif diff > 180 or diff < -180:  # large
            virtual = running
            find_jobs(running, True, True, queue)
        elif diff > 5:  # medium
            find_jobs(running, True, False, queue)
            for v in range(virtual + 1, running + 1):
                find_jobs(v, False, True, queue)
            virtual = running
        elif diff > 0:  # small
            for v in range(virtual + 1, running + 1):
                find_jobs(v, True, True, queue)
            virtual = running
        else:  # negative
            find_jobs(running, True, False, queue)
        for i, n in enumerate(queue):
            if n:
                runs[i].append(Run(t, n))
    return runs


def fires(runs: Iterable[Run]) -> list[int]:
    """Distinct instants (UTC seconds) at which the job ran."""
    return sorted({run.at for run in runs})


def utc_seconds(dt: datetime) -> int:
    delta = dt - EPOCH
    return delta.days * 86400 + delta.seconds


def scan_utc(entry: Entry, after: int, count: int, limit_days: int = 2922) -> list[int]:
    """The first ``count`` matching minutes (UTC seconds) strictly after ``after``, wall clock = UTC.

    A plain scan — skipping non-matching days and hours — for checking the engine where no
    clock ever changes. Stops ``limit_days`` after the last minute found.
    """
    out: list[int] = []
    t = (after // 60 + 1) * 60
    stop = t + limit_days * 86400
    while len(out) < count and t <= stop:
        wall = NAIVE_EPOCH + timedelta(seconds=t)
        if not entry.day_matches(wall):
            t = (t // 86400 + 1) * 86400
        elif wall.hour not in entry.hour:
            t = (t // 3600 + 1) * 3600
        else:
            if wall.minute in entry.minute:
                out.append(t)
                stop = t + limit_days * 86400
            t += 60
    return out
