"""The shape of the Reflex state tree: one small auth base, the page states its direct children.

With the Redis state manager an event loads the handler's state and its ancestors; a chain would
make every keystroke in the schedule dialog load the transcript and the drawer's rows.
"""

from __future__ import annotations

from app.ui.state.all_schedules import AllSchedulesState
from app.ui.state.attention import AttentionState
from app.ui.state.chat import ChatState
from app.ui.state.inbox_page import InboxState
from app.ui.state.login import LoginState
from app.ui.state.nav import NavState
from app.ui.state.schedule_form import ScheduleFormState
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState

PAGE_STATES = {AllSchedulesState, AttentionState, ChatState, InboxState, LoginState, NavState, ScheduleFormState,
               ScheduleState}


def test_page_states_are_siblings_under_the_auth_state() -> None:
    assert AuthState.get_substates() == PAGE_STATES
    for state in PAGE_STATES:
        assert state.get_parent_state() is AuthState
        assert state.get_substates() == set()


def test_the_auth_state_holds_only_who_is_logged_in() -> None:
    assert set(AuthState.base_vars) == {"user_email"}
