"""UTC offsets of an IANA zone as a piecewise-constant function of the instant.

zoneinfo answers "what is the offset at this instant" but does not list its transitions; the
cron engine needs them (a transition is where fixed-time and wildcard jobs part ways). We find
them per calendar year by sampling the offset once a day and bisecting each change down to the
second. That is exact as long as no two transitions fall within one day of each other: across
every zone in tzdata from 1900 to 2100 the closest pair is more than three days apart.

All instants here are integer seconds since the Unix epoch (UTC); offsets are integer seconds.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.schedules.cron.fields import CronError

DAY = 86400
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
EPOCH_ORDINAL = date(1970, 1, 1).toordinal()
MIN_SECOND = (date.min.toordinal() - EPOCH_ORDINAL + 2) * DAY
MAX_SECOND = (date.max.toordinal() - EPOCH_ORDINAL - 1) * DAY
_SAMPLE = DAY
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*")
# Names that resolve to the host's clock or to leap-second ("right/") data, never an IANA zone.
_REFUSED = {"localtime", "posixrules"}
_REFUSED_DIRS = {"posix", "right"}


@dataclass(frozen=True)
class Transition:
    """From UTC second ``at`` on, the offset is ``after`` (it was ``before`` until then)."""

    at: int
    before: int
    after: int


@dataclass(frozen=True)
class _Year:
    base: int  # offset at the first second of the year
    ats: tuple[int, ...]
    transitions: tuple[Transition, ...]


class ZoneTimeline:
    """Offsets and transitions of one zone; year tables are computed on first use and kept."""

    def __init__(self, zone: ZoneInfo) -> None:
        self.zone = zone
        self._years: dict[int, _Year] = {}

    @property
    def key(self) -> str:
        return str(self.zone.key)

    def offset_at(self, t: int) -> int:
        """UTC offset in seconds in force at UTC second ``t``."""
        year = self._year(_year_of(t))
        i = bisect_right(year.ats, t)
        return year.transitions[i - 1].after if i else year.base

    def next_transition(self, t: int, limit: int) -> Transition | None:
        """The first transition strictly after ``t`` and not after ``limit``, or None."""
        y = _year_of(t)
        while y <= 9999 and _year_start(y) <= limit:
            year = self._year(y)
            i = bisect_right(year.ats, t)
            if i < len(year.ats):
                found = year.transitions[i]
                return found if found.at <= limit else None
            y += 1
        return None

    def transitions_between(self, lo: int, hi: int) -> list[Transition]:
        """Transitions with ``lo < at <= hi``, in order."""
        out: list[Transition] = []
        for y in range(_year_of(lo), min(_year_of(hi), 9999) + 1):
            year = self._year(y)
            out.extend(year.transitions[bisect_right(year.ats, lo) : bisect_right(year.ats, hi)])
        return out

    def _year(self, y: int) -> _Year:
        found = self._years.get(y)
        if found is None:
            found = self._scan_year(y)
            self._years[y] = found
        return found

    def _scan_year(self, y: int) -> _Year:
        start, end = _year_start(y), _year_start(y + 1)
        samples = list(range(start, end, _SAMPLE)) + [end]
        offsets = [self._raw_offset(t) for t in samples]
        found = []
        for i in range(len(samples) - 1):
            if offsets[i] != offsets[i + 1]:
                found.append(self._bisect(samples[i], samples[i + 1], offsets[i]))
        return _Year(offsets[0], tuple(tr.at for tr in found), tuple(found))

    def _bisect(self, lo: int, hi: int, old: int) -> Transition:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if self._raw_offset(mid) == old:
                lo = mid
            else:
                hi = mid
        return Transition(hi, old, self._raw_offset(hi))

    def _raw_offset(self, t: int) -> int:
        t = min(max(t, MIN_SECOND), MAX_SECOND)
        offset = (EPOCH + timedelta(seconds=t)).astimezone(self.zone).utcoffset()
        return int(offset.total_seconds()) if offset is not None else 0


def _year_start(y: int) -> int:
    if y > 9999:
        return (date.max.toordinal() + 1 - EPOCH_ORDINAL) * DAY
    return (date(max(y, 1), 1, 1).toordinal() - EPOCH_ORDINAL) * DAY


def _year_of(t: int) -> int:
    ordinal = min(max(t // DAY + EPOCH_ORDINAL, 1), date.max.toordinal())
    return date.fromordinal(ordinal).year


def load_zone(name: str) -> ZoneTimeline:
    """The timeline of IANA zone ``name``; raises CronError naming the timezone if it is unknown."""
    if not isinstance(name, str):
        raise CronError("timezone", f"must be an IANA zone name string, not {type(name).__name__}")
    return _load_cached(name)


@lru_cache(maxsize=512)
def _load_cached(name: str) -> ZoneTimeline:
    refused = name in _REFUSED or name.split("/", 1)[0] in _REFUSED_DIRS
    if len(name) > 255 or refused or not _ZONE_NAME.fullmatch(name):
        raise CronError("timezone", f"{name!r} is not an IANA time zone name (e.g. Europe/Paris)")
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError("timezone", f"{name!r} is not a known IANA time zone (e.g. Europe/Paris)") from None
    return ZoneTimeline(zone)
