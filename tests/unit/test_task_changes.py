"""The typed record of what a decision writes to its task (scheduler/changes.py)."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest

from app.schedules.model import RunOutcome, TaskStatus
from scheduler.changes import POINTERS, TaskChanges, changes

AT = dt.datetime(2026, 3, 1, 9, tzinfo=dt.UTC)


def test_only_set_fields_are_written_and_none_is_a_value() -> None:
    c = changes({"next_run_at": None, "status": TaskStatus.ERROR})
    assert dict(c) == {"status": TaskStatus.ERROR, "next_run_at": None}
    assert "retry_at" not in c and len(c) == 2
    # a new next_run_at without its nominal instant is its own nominal: next_occurrence_at is cleared
    assert c.columns() == {"status": "error", "next_run_at": None, "next_occurrence_at": None}
    kept = changes({"next_run_at": AT, "next_occurrence_at": AT - dt.timedelta(seconds=5)})
    assert kept.columns() == {"next_run_at": AT, "next_occurrence_at": AT - dt.timedelta(seconds=5)}
    with pytest.raises(KeyError):
        c["retry_at"]


def test_an_unknown_column_is_refused_when_the_record_is_built() -> None:
    with pytest.raises(TypeError):
        changes({"nxt_run_at": AT})


def test_the_record_never_changes_copies_do() -> None:
    c = changes(last_run_status=RunOutcome.RUNNING, next_run_at=AT, retry_at=None, run_count=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.run_count = 3  # type: ignore[misc]
    assert c.but(active_run_id=7)["active_run_id"] == 7 and "active_run_id" not in c
    assert dict(c.only(POINTERS)) == {"next_run_at": AT, "retry_at": None}


def test_it_compares_with_a_plain_mapping() -> None:
    assert changes(next_run_at=AT) == {"next_run_at": AT}
    assert changes(next_run_at=AT) != {"next_run_at": None}
    assert TaskChanges() == {}
