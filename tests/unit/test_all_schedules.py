"""All schedules (SPEC §13) without a database: the bulk request's and the filters' checks, and
what the page's events may carry (app/ui/guard.py)."""

from __future__ import annotations

import pytest

from app.core.errors import InvalidInput
from app.schedules import overview
from app.schedules.model import TaskStatus
from app.ui import all_tasks
from app.ui.guard import check_event
from app.ui.state.all_schedules import AllSchedulesState


@pytest.mark.parametrize("value", [None, ""])
def test_no_status_filter_means_every_status(value: object) -> None:
    assert overview.parse_status(value) is None


@pytest.mark.parametrize("value", ["Active", "running", "active,paused", 3, ["active"]])
def test_a_status_filter_is_a_task_status(value: object) -> None:
    with pytest.raises(InvalidInput, match="^status: must be one of draft, active, paused"):
        overview.parse_status(value)


def test_every_task_status_is_a_filter_of_the_page() -> None:
    assert set(all_tasks.STATUSES) == {all_tasks.ALL, *(s.value for s in TaskStatus)}
    assert overview.parse_status("error") is TaskStatus.ERROR


@pytest.mark.parametrize("value", ["delete", "arm", "Pause", "", None, 1, ["pause"], {"pause": 1}])
def test_a_bulk_action_is_pause_or_resume(value: object) -> None:
    with pytest.raises(InvalidInput, match="^action: must be one of pause, resume"):
        overview.parse_action(value)


@pytest.mark.parametrize("value", [None, [], "1", {"1": 1}, [1, "2"], [True], [0], [-3], [1.0], [2**31],
                                   list(range(1, overview.MAX_BULK + 2))])
def test_bulk_ids_are_a_short_list_of_ids(value: object) -> None:
    with pytest.raises(InvalidInput, match="^ids: "):
        overview.parse_ids(value)


def test_a_repeated_id_is_acted_on_once_in_its_first_place() -> None:
    assert overview.parse_ids([3, 1, 3, 2, 1]) == [3, 1, 2]
    assert overview.parse_ids(list(range(1, overview.MAX_BULK + 1)))[-1] == overview.MAX_BULK


def _event(handler: str) -> tuple[str, object, type]:
    return f"{AllSchedulesState.get_full_name()}.{handler}", getattr(AllSchedulesState, handler).fn, AllSchedulesState


@pytest.mark.parametrize(("handler", "payload", "message"), [
    ("toggle_select", {"task_id": "3", "checked": True}, "task_id: must be a positive whole number"),
    ("toggle_select", {"task_id": 3, "checked": "true"}, "checked: must be true or false"),
    ("toggle_select", {"task_id": 3}, "arguments: missing checked"),
    ("select_all", {"checked": 1}, "checked: must be true or false"),
    ("set_status_filter", {"status": 5}, "status: must be a string"),
    ("set_project_filter", {"project": None}, "project: must be a string"),
    ("bulk", {"action": ["pause"]}, "action: must be a string"),
    ("bulk", {"action": "pause", "ids": [1]}, "arguments: unexpected ids"),
    ("refresh", {"x": 1}, "arguments: unexpected x"),
])
def test_the_guard_refuses_what_the_page_never_sends(handler: str, payload: object, message: str) -> None:
    name, fn, state = _event(handler)
    with pytest.raises(InvalidInput, match=message):
        check_event(name, payload, fn, state)


@pytest.mark.parametrize(("handler", "payload"), [
    ("toggle_select", {"task_id": 3, "checked": True}), ("select_all", {"checked": False}),
    ("set_status_filter", {"status": "paused"}), ("set_project_filter", {"project": "all"}),
    ("bulk", {"action": "pause"}), ("refresh", {}), ("enter", {}), ("set_browser_zone", {"zone": "Europe/Paris"}),
])
def test_the_guard_lets_the_pages_own_events_through(handler: str, payload: object) -> None:
    name, fn, state = _event(handler)
    check_event(name, payload, fn, state)
