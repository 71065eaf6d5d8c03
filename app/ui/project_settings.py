"""The project settings page's door to :mod:`app.projects` (SPEC §18): read and change the settings,
the members and the audit record, test the agent — each one service call, shaped for the page.

Everything here is blocking: the page's states call it through ``asyncio.to_thread``. Who may do
what is the services' to decide (NotFound for a project the user cannot see, Forbidden for a
member who tries an owner's change).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from app.core import runs
from app.core.context import get_core
from app.core.models import RunStatus, User
from app.core.wake import DatabaseWaker
from app.projects import agent_test, audit, members, roles, settings
from app.ui import checks
from app.ui.settings_rows import AuditRow, MemberRow, audit_rows, member_rows


def project_of(path: str) -> int:
    """The project id of a settings page's path (``/projects/<pid>/settings``); InvalidInput otherwise."""
    parts = path.rstrip("/").split("/")
    return checks.id_text(parts[-2] if len(parts) >= 3 and parts[-3] == "projects" else "", "project")


def read(user: User, project_id: int) -> dict[str, Any]:
    core = get_core()
    return settings.view(core.db, core.clock, core.settings, user, project_id)


def change(user: User, project_id: int, body: dict[str, Any]) -> dict[str, Any]:
    """The new settings object; InvalidInput naming the field (nothing changed), Forbidden for a member."""
    core = get_core()
    return settings.change(core.db, core.clock, core.settings, DatabaseWaker(core.db), user, project_id, body)


def people(user: User, project_id: int) -> list[MemberRow]:
    return member_rows(members.list_members(get_core().db, user, project_id), user.id)


def history(user: User, project_id: int) -> list[AuditRow]:
    """The audit records, newest first (owners and admins; [] for a member, who may not read them)."""
    core = get_core()
    return audit_rows(audit.read(core.db, core.clock, user, project_id))


def invite(user: User, project_id: int, email: str, role: str) -> str:
    core = get_core()
    added = members.invite(core.db, core.clock, user, project_id, email, role)
    return f"{added.email} is now {'an owner' if added.role == 'owner' else 'a member'} of this project."


def set_role(user: User, project_id: int, user_id: int, role: str) -> str:
    core = get_core()
    changed = members.set_role(core.db, core.clock, user, project_id, user_id, role)
    return f"{changed.email} is now {'an owner' if changed.role == 'owner' else 'a member'}."


def remove(user: User, project_id: int, user_id: int) -> str:
    core = get_core()
    gone = members.remove(core.db, core.clock, user, project_id, user_id)
    return f"{gone.email} is no longer a member of this project."


@dataclasses.dataclass(frozen=True)
class Trial:
    """Where the agent test stands: ``status`` of its run, its reply so far, its error."""

    status: str
    output: str
    error: str

    @property
    def done(self) -> bool:
        return self.status != RunStatus.RUNNING.value


def start_trial(user: User, project_id: int) -> int:
    """Start the test turn (owners); returns its run id."""
    return agent_test.test_agent(get_core(), user, project_id).run_id


def trial(run_id: int) -> Trial:
    run = runs.get_run(get_core().db, run_id)
    return Trial(run.status, run.output or "", run.error or "")


def role_of(user: User, project_id: int) -> str:
    """``owner`` | ``member`` | ``admin`` (a server admin who is no member); NotFound when the user
    cannot see the project."""
    with get_core().db.read() as s:
        return roles.shown_role(s, user, project_id)
