"""Schedule parsing, next occurrence per kind, the minimum-interval rule and the preview."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.schedules import timing
from app.schedules.preview import preview
from app.schedules.spec import (
    CronSchedule,
    IntervalSchedule,
    OnceSchedule,
    ScheduleError,
    ScheduleKind,
    describe_schedule,
    parse_schedule,
    schedule_to_dict,
)

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ({"kind": "once", "at": "2030-01-31T09:00:00Z"}, OnceSchedule(_utc("2030-01-31T09:00:00Z"))),
        ({"kind": "once", "at": "2030-01-31t10:00:00+01:00"}, OnceSchedule(_utc("2030-01-31T09:00:00Z"))),
        ({"kind": "once", "at": "2030-01-31 09:00:00.5z"}, OnceSchedule(_utc("2030-01-31T09:00:00.500000Z"))),
        ({"kind": "once", "at": "2030-01-31T09:00:00.123456789Z"}, OnceSchedule(_utc("2030-01-31T09:00:00.123456Z"))),
        ({"kind": "once", "at": 1_900_000_000_000}, OnceSchedule(_utc("2030-03-17T17:46:40Z"))),
        (
            {"kind": "cron", "cron": " 0 9 * * 1-5 ", "timezone": "Europe/Paris"},
            CronSchedule("0 9 * * 1-5", "Europe/Paris"),
        ),
        ({"kind": "cron", "cron": "@daily", "timezone": "UTC"}, CronSchedule("@daily", "UTC")),
        ({"kind": "interval", "every_seconds": 90}, IntervalSchedule(90)),
    ],
    ids=[
        "once-z",
        "once-offset",
        "once-lowercase-fraction",
        "once-nanoseconds",
        "once-unix-ms",
        "cron",
        "cron-macro",
        "interval",
    ],
)
def test_valid_schedules_parse_into_records(raw: dict, expected: object) -> None:
    parsed = parse_schedule(raw)
    assert parsed == expected
    assert parse_schedule(schedule_to_dict(parsed)) == parsed


@pytest.mark.parametrize(
    ("raw", "field", "message"),
    [
        ([], "schedule", "must be an object"),
        ({}, "schedule.kind", "must be once, cron or interval, not None"),
        ({"kind": "weekly"}, "schedule.kind", "not 'weekly'"),
        ({"kind": ["once"]}, "schedule.kind", "must be once, cron or interval"),
        ({"kind": "once"}, "schedule.at", "is required for a once schedule"),
        ({"kind": "once", "at": "2030-01-31T09:00:00Z", "timezone": "UTC"}, "schedule.timezone", "is not a field"),
        ({"kind": "once", "at": "2030-01-31T09:00:00"}, "schedule.at", "has no UTC offset"),
        ({"kind": "once", "at": "2030-01-31"}, "schedule.at", "is not an RFC 3339 instant"),
        ({"kind": "once", "at": "tomorrow"}, "schedule.at", "is not an RFC 3339 instant"),
        ({"kind": "once", "at": "2030-02-30T09:00:00Z"}, "schedule.at", "is not a valid date and time"),
        ({"kind": "once", "at": "2030-01-31T09:00:00+25:00"}, "schedule.at", "is not a valid date and time"),
        ({"kind": "once", "at": 1.5e12}, "schedule.at", "must be an RFC 3339 instant"),
        ({"kind": "once", "at": True}, "schedule.at", "must be an RFC 3339 instant"),
        ({"kind": "once", "at": -1}, "schedule.at", "outside Unix milliseconds"),
        ({"kind": "cron", "timezone": "UTC"}, "schedule.cron", "is required"),
        ({"kind": "cron", "cron": "0 9 * * *"}, "schedule.timezone", "is required"),
        ({"kind": "cron", "cron": 9, "timezone": "UTC"}, "schedule.cron", "must be a string"),
        ({"kind": "cron", "cron": "61 * * * *", "timezone": "UTC"}, "schedule.cron", "minute: 61 is out of range"),
        ({"kind": "cron", "cron": "0 0 31 2 *", "timezone": "UTC"}, "schedule.cron", "never occurs in month"),
        ({"kind": "cron", "cron": "0 9 * * *", "timezone": "Nowhere/City"}, "schedule.timezone", "not a known"),
        ({"kind": "cron", "cron": "0 9 * * *", "timezone": None}, "schedule.timezone", "must be an IANA"),
        ({"kind": "interval", "every_seconds": 0}, "schedule.every_seconds", "must be at least 1 second"),
        ({"kind": "interval", "every_seconds": -5}, "schedule.every_seconds", "must be at least 1 second"),
        ({"kind": "interval", "every_seconds": 10**12}, "schedule.every_seconds", "must be at most 8 years"),
        ({"kind": "interval", "every_seconds": 1.5}, "schedule.every_seconds", "whole number"),
        ({"kind": "interval", "every_seconds": "60"}, "schedule.every_seconds", "whole number"),
        ({"kind": "interval", "every_seconds": True}, "schedule.every_seconds", "whole number"),
    ],
    ids=lambda v: "" if isinstance(v, dict | list) else v,
)
def test_invalid_schedules_name_the_field(raw: object, field: str, message: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(raw)
    assert caught.value.field == field
    assert str(caught.value).startswith(f"{field}: ")
    assert message in str(caught.value)


def test_schedule_kinds_compare_as_strings() -> None:
    assert parse_schedule({"kind": "interval", "every_seconds": 60}).kind == "interval"
    assert ScheduleKind.CRON == "cron"


@pytest.mark.parametrize(
    ("schedule", "text"),
    [
        ({"kind": "once", "at": "2030-01-31T10:00:00+01:00"}, "Once, at 2030-01-31 09:00:00 UTC"),
        (
            {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"},
            "At 09:00, Monday through Friday (Europe/Paris time)",
        ),
        ({"kind": "interval", "every_seconds": 60}, "Every minute"),
        ({"kind": "interval", "every_seconds": 90}, "Every 1 minute 30 seconds"),
        ({"kind": "interval", "every_seconds": 7200}, "Every 2 hours"),
        ({"kind": "interval", "every_seconds": 86400 + 5}, "Every 1 day 5 seconds"),
    ],
    ids=["once", "cron", "one-minute", "ninety-seconds", "two-hours", "day-and-seconds"],
)
def test_describe_schedule(schedule: dict, text: str) -> None:
    assert describe_schedule(schedule) == text
    assert describe_schedule(parse_schedule(schedule)) == text


# --- next occurrence -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("after", "expected"),
    [("2025-03-01T11:59:59Z", "2025-03-01T12:00:00Z"), ("2025-03-01T12:00:00Z", None), ("2025-03-02T00:00:00Z", None)],
    ids=["before", "at", "later"],
)
def test_once_occurs_only_strictly_after(after: str, expected: str | None) -> None:
    got = timing.next_occurrence(OnceSchedule(NOW), _utc(after))
    assert got == (None if expected is None else _utc(expected))


@pytest.mark.parametrize(
    ("after", "armed_at", "expected"),
    [
        ("2025-03-01T12:00:00Z", None, "2025-03-01T12:01:30Z"),
        ("2025-03-01T12:00:00Z", "2025-03-01T12:00:00Z", "2025-03-01T12:01:30Z"),
        ("2025-03-01T12:01:29Z", "2025-03-01T12:00:00Z", "2025-03-01T12:01:30Z"),
        ("2025-03-01T12:01:30Z", "2025-03-01T12:00:00Z", "2025-03-01T12:03:00Z"),
        ("2025-03-01T12:01:31.5Z", "2025-03-01T12:00:00Z", "2025-03-01T12:03:00Z"),
        ("2025-03-01T15:00:10Z", "2025-03-01T12:00:00Z", "2025-03-01T15:01:30Z"),
        ("2025-03-01T11:00:00Z", "2025-03-01T12:00:00Z", "2025-03-01T12:01:30Z"),
    ],
    ids=[
        "unarmed",
        "at-arming",
        "just-before-first",
        "on-a-grid-point",
        "between-points",
        "after-downtime",
        "before-arming",
    ],
)
def test_interval_fires_on_the_grid_from_arming(after: str, armed_at: str | None, expected: str) -> None:
    armed = None if armed_at is None else _utc(armed_at)
    got = timing.next_occurrence(IntervalSchedule(90), _utc(after), armed_at=armed)
    assert got == _utc(expected) and got.tzinfo is UTC


def test_cron_next_occurrence_is_the_first_fire_time() -> None:
    schedule = CronSchedule("30 2 * * *", "America/New_York")
    assert timing.next_occurrence(schedule, _utc("2024-03-10T05:00:00Z")) == _utc("2024-03-10T07:00:00Z")


def test_a_never_firing_cron_is_a_schedule_error_on_the_cron_field() -> None:
    schedule = CronSchedule("0 0 */31 2 mon", "UTC")
    with pytest.raises(ScheduleError) as caught:
        timing.next_occurrence(schedule, _utc("2027-02-02T00:00:00Z"))
    assert caught.value.field == "schedule.cron"
    assert "never fires within 8 years" in str(caught.value)


def test_next_occurrence_needs_aware_instants() -> None:
    with pytest.raises(TypeError):
        timing.next_occurrence(IntervalSchedule(60), datetime(2025, 1, 1))
    with pytest.raises(TypeError):
        timing.next_occurrence(IntervalSchedule(60), NOW, armed_at=datetime(2025, 1, 1))


# --- minimum interval ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "floor"),
    [
        (IntervalSchedule(60), 60),
        (IntervalSchedule(1), 0),
        (OnceSchedule(NOW), 3600),
        (CronSchedule("* * * * *", "America/New_York"), 60),
        (CronSchedule("*/5 * * * *", "Australia/Lord_Howe"), 300),
        (CronSchedule("0,59 1,3 * * *", "America/New_York"), 60),
    ],
    ids=["interval-at-floor", "floor-disabled", "once", "every-minute", "every-5-min-lord-howe", "dst-60s"],
)
def test_schedules_at_or_above_the_floor_pass(schedule: object, floor: int) -> None:
    timing.validate_min_interval(schedule, floor)  # type: ignore[arg-type]
    timing.validate_min_interval(schedule, floor, now=NOW)  # type: ignore[arg-type]


def test_an_interval_below_the_floor_is_refused_on_every_seconds() -> None:
    with pytest.raises(ScheduleError) as caught:
        timing.validate_min_interval(IntervalSchedule(59), 60)
    assert caught.value.field == "schedule.every_seconds"
    assert str(caught.value) == "schedule.every_seconds: must be at least 1 minute (59 seconds is too short)"


def test_a_cron_below_the_floor_is_refused_on_schedule() -> None:
    with pytest.raises(ScheduleError) as caught:
        timing.validate_min_interval(CronSchedule("*/5 * * * *", "UTC"), 600)
    assert caught.value.field == "schedule"
    assert str(caught.value) == "schedule: '*/5 * * * *' can fire 300 s apart, below the minimum interval of 600 s"


def test_a_cron_compressed_by_daylight_saving_says_where() -> None:
    with pytest.raises(ScheduleError) as caught:
        timing.validate_min_interval(CronSchedule("0,59 1,3 * * *", "America/New_York"), 120, now=NOW)
    assert str(caught.value) == (
        "schedule: '0,59 1,3 * * *' can fire 60 s apart (at 2025-03-09T07:00:00Z, a clock change in "
        "America/New_York), below the minimum interval of 120 s"
    )


# --- preview -----------------------------------------------------------------------------------------


def test_preview_of_a_cron_lists_utc_and_local_instants() -> None:
    got = preview({"kind": "cron", "cron": "30 2 * * *", "timezone": "America/New_York"}, _utc("2025-03-08T12:00:00Z"))
    assert got["description"] == "At 02:30 (America/New_York time)"
    assert got["timezone"] == "America/New_York"
    assert got["fires"][:3] == [
        {"utc": "2025-03-09T07:00:00Z", "local": "2025-03-09T03:00:00-04:00"},  # the jump
        {"utc": "2025-03-10T06:30:00Z", "local": "2025-03-10T02:30:00-04:00"},
        {"utc": "2025-03-11T06:30:00Z", "local": "2025-03-11T02:30:00-04:00"},
    ]
    assert len(got["fires"]) == 5


def test_preview_of_an_interval_assumes_arming_now() -> None:
    got = preview({"kind": "interval", "every_seconds": 3600}, NOW, count=2)
    assert got["fires"] == [
        {"utc": "2025-03-01T13:00:00Z", "local": "2025-03-01T13:00:00+00:00"},
        {"utc": "2025-03-01T14:00:00Z", "local": "2025-03-01T14:00:00+00:00"},
    ]
    assert got["description"] == "Every hour"


def test_preview_of_a_once_shows_it_in_the_display_zone() -> None:
    got = preview({"kind": "once", "at": "2025-03-02T09:00:00Z"}, NOW, display_timezone="Asia/Kolkata")
    assert got["fires"] == [{"utc": "2025-03-02T09:00:00Z", "local": "2025-03-02T14:30:00+05:30"}]


@pytest.mark.parametrize(
    ("schedule", "field"),
    [
        ({"kind": "once", "at": "2025-03-01T12:00:00Z"}, "schedule.at"),
        ({"kind": "cron", "cron": "0 9 * *", "timezone": "UTC"}, "schedule.cron"),
        ({"kind": "cron", "cron": "0 9 * * *", "timezone": "Moon/Base"}, "schedule.timezone"),
        ({"kind": "cron", "cron": "0 0 */31 2 mon", "timezone": "UTC"}, "schedule.cron"),
        ({"kind": "interval", "every_seconds": 0}, "schedule.every_seconds"),
        ({"kind": "daily"}, "schedule.kind"),
    ],
    ids=[
        "once-not-in-future",
        "cron-four-fields",
        "unknown-zone",
        "never-within-8-years",
        "zero-interval",
        "unknown-kind",
    ],
)
def test_preview_of_an_invalid_schedule_names_the_field(schedule: dict, field: str) -> None:
    now = NOW if schedule.get("cron") != "0 0 */31 2 mon" else _utc("2027-02-02T00:00:00Z")
    with pytest.raises(ScheduleError) as caught:
        preview(schedule, now)
    assert caught.value.field == field


def test_preview_lists_the_next_five_fires() -> None:
    schedule = {"kind": "cron", "cron": "@hourly", "timezone": "UTC"}
    assert [f["utc"] for f in preview(schedule, NOW)["fires"]] == [
        (NOW + timedelta(hours=h)).isoformat().replace("+00:00", "Z") for h in range(1, 6)
    ]
