"""The shape of the Reflex state tree: one small auth base, the page states its direct children.

With the Redis state manager an event loads the handler's state and its ancestors; a chain would
make every keystroke in the schedule dialog load the transcript and the drawer's rows.
"""

from __future__ import annotations

import importlib
import pkgutil

import app.ui.state
from app.ui.state.admin import AdminState
from app.ui.state.agent_test import AgentTestState
from app.ui.state.all_schedules import AllSchedulesState
from app.ui.state.attention import AttentionState
from app.ui.state.chat import ChatState
from app.ui.state.inbox_page import InboxState
from app.ui.state.login import LoginState
from app.ui.state.members import MembersState
from app.ui.state.nav import NavState
from app.ui.state.notifications import NotificationsState
from app.ui.state.pause_form import PauseFormState
from app.ui.state.project_settings import SettingsState
from app.ui.state.schedule_form import ScheduleFormState
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState
from app.ui.state.transfer import TransferState

PAGE_STATES = {AdminState, AgentTestState, AllSchedulesState, AttentionState, ChatState, InboxState, LoginState,
               MembersState, NavState, NotificationsState, PauseFormState, ScheduleFormState, ScheduleState,
               SettingsState, TransferState}

# Every state module loaded, as the running app loads them: the substates seen here do not depend
# on which other tests ran first in this session (a page state missing above fails at once).
for _module in pkgutil.iter_modules(app.ui.state.__path__):
    importlib.import_module(f"app.ui.state.{_module.name}")


def test_page_states_are_siblings_under_the_auth_state() -> None:
    assert AuthState.get_substates() == PAGE_STATES
    for state in PAGE_STATES:
        assert state.get_parent_state() is AuthState
        assert state.get_substates() == set()


def test_the_auth_state_holds_only_who_is_logged_in() -> None:
    assert set(AuthState.base_vars) == {"user_email"}
