"""What a websocket event may carry (app/ui/checks.py, app/ui/guard.py), without a browser."""

from __future__ import annotations

import pytest
from reflex.state import State, UpdateVarsInternalState

from app.core.errors import InvalidInput
from app.ui import checks
from app.ui.guard import check_event
from app.ui.state.chat import ChatState
from app.ui.state.nav import NavState
from app.ui.state.schedules import ScheduleState


@pytest.mark.parametrize("value", [0, -1, 2**63, 10**30, True, False, 1.0, "7", None, [1], {"id": 1}])
def test_an_id_is_a_whole_number_in_column_range(value: object) -> None:
    with pytest.raises(InvalidInput, match="task_id: must be a positive whole number"):
        checks.positive_id(value, "task_id")


def test_ids_at_both_ends_of_the_range_pass() -> None:
    assert checks.positive_id(1, "id") == 1
    assert checks.positive_id(2**63 - 1, "id") == 2**63 - 1


@pytest.mark.parametrize("raw", ["", "abc", "-1", "1e3", "0", "99999999999999999999", "١٢", " 7", "7/"])
def test_an_id_in_a_url_is_plain_ascii_digits_in_range(raw: str) -> None:
    with pytest.raises(InvalidInput):
        checks.id_text(raw, "chat")


def test_an_id_in_a_url_reads_as_its_number() -> None:
    assert checks.id_text("0042", "chat") == 42


@pytest.mark.parametrize("value", ["false", "true", 0, 1, None, []])
def test_a_bool_is_true_or_false_itself(value: object) -> None:
    with pytest.raises(InvalidInput, match="enabled: must be true or false"):
        checks.real_bool(value, "enabled")


@pytest.mark.parametrize(("value", "message"), [
    (None, "must be a string"), (3, "must be a string"), ("x" * 11, "at most 10 characters"),
    ("a\x00b", "NUL"), ("a\ud800b", "unpaired surrogate"),
])
def test_text_is_a_storable_string_within_its_cap(value: object, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        checks.text(value, "name", 10)


def test_a_form_is_text_fields_plain_or_wrapped_by_reflex() -> None:
    assert checks.form({"text": "hi"}, "form", 10) == {"text": "hi"}
    assert checks.form({checks.FORM_ENTRIES_KEY: [["text", "hi"]]}, "form", 10) == {"text": "hi"}
    for bad in ["hi", ["text", "hi"], {"text": None}, {"text": {"nested": 1}}, {str(i): "" for i in range(17)},
                {checks.FORM_ENTRIES_KEY: [[["x"], "y"]]}, {checks.FORM_ENTRIES_KEY: "text"}]:
        with pytest.raises(InvalidInput):
            checks.form(bad, "form", 10)


def test_zones_are_the_servers_iana_names() -> None:
    assert checks.zone("Europe/Paris", "zone") == "Europe/Paris"
    with pytest.raises(InvalidInput, match="zone: must be an IANA"):
        checks.zone("Mars/Olympus", "zone")


def _event(state: type, handler: str) -> tuple[str, object, type]:
    registered = getattr(state, handler)
    return f"{state.get_full_name()}.{handler}", registered.fn, state


@pytest.mark.parametrize(("target", "payload", "message"), [
    ((NavState, "new_chat"), {}, "arguments: missing project_id"),
    ((NavState, "new_chat"), {"project_id": 1, "x": 1}, "arguments: unexpected x"),
    ((NavState, "new_chat"), [], "arguments: must be an object"),
    ((NavState, "new_chat"), {"project_id": "1"}, "project_id: must be a positive"),
    ((ChatState, "toggle_schedules_skill"), {"enabled": "false"}, "enabled: must be true or false"),
    ((ChatState, "send"), {"form": {"text": None}}, "form.text: must be a string"),
    ((ChatState, "setvar"), {"var_name": "chat_id", "value": 1}, "event: is not one the page sends"),
    ((State, "setvar"), {"var_name": "x", "value": 1}, "event: is not one the page sends"),
    ((UpdateVarsInternalState, "update_vars_internal"), {"vars": {"a.b": "c"}}, "vars: must be empty"),
])
def test_the_guard_refuses_what_the_page_never_sends(target: tuple[type, str], payload: object,
                                                     message: str) -> None:
    name, fn, state = _event(*target)
    with pytest.raises(InvalidInput, match=message):
        check_event(name, payload, fn, state)


@pytest.mark.parametrize(("target", "payload"), [
    ((NavState, "new_chat"), {"project_id": 3}),
    ((ChatState, "send"), {"form": {checks.FORM_ENTRIES_KEY: [["text", "hello"]]}}),
    ((ScheduleState, "act"), {"action": "pause", "task_id": 9}),
    ((State, "hydrate_and_load"), {"vars": {}, "hashes": ["abc"]}),
    ((UpdateVarsInternalState, "update_vars_internal"), {"vars": {}}),
])
def test_the_guard_lets_the_pages_own_events_through(target: tuple[type, str], payload: object) -> None:
    name, fn, state = _event(*target)
    check_event(name, payload, fn, state)
