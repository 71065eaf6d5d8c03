""""Test the agent" on the project settings page (SPEC §18): a one-line turn through the project's
agent as saved now (app/projects/agent_test.py), followed until it ends; its reply or its error is
shown under the button."""

from __future__ import annotations

import asyncio
import time

import reflex as rx

from app.core.errors import ChatcronError
from app.core.models import RunStatus
from app.ui import project_settings
from app.ui.state.session import AuthState, connected, session_user

POLL_SECONDS = 0.5
WAIT_SECONDS = 180.0  # an agent's first start may install nothing but still take a while


class AgentTestState(AuthState):
    running: bool = False
    reply: str = ""
    error: str = ""
    _generation: int = 0

    def _forget(self) -> None:
        generation = self._generation
        self.reset()
        self._generation = generation + 1

    @rx.event
    def clear(self):
        self._forget()

    @rx.event(background=True)
    async def run(self):
        async with self:
            if self.running:
                return
            self._generation += 1
            generation, client = self._generation, self.router.session.client_token
            self.running, self.reply, self.error = True, "", ""
            path, token = self.router.url.path, self._session_token()
        try:
            outcome = await _follow(path, token, client)
        except Exception:  # the store away, the run gone: the button must not stay disabled
            outcome = ("", "The test could not be followed: the server could not read it. Try again.")
        async with self:
            if self._generation == generation:
                self.running = False
                self.reply, self.error = outcome



async def _follow(path: str, token: str, client: str) -> tuple[str, str]:
    """(reply, error) of the test turn, once it ended (or the wait ran out)."""
    user = await asyncio.to_thread(session_user, token)
    if user is None:
        return "", "Your session has ended: log in again."
    try:
        run_id = await asyncio.to_thread(project_settings.start_trial, user, project_settings.project_of(path))
    except ChatcronError as exc:  # a bad path, a member, a busy scratch chat
        return "", exc.message
    deadline = time.monotonic() + WAIT_SECONDS
    while time.monotonic() < deadline and await connected(client):
        await asyncio.sleep(POLL_SECONDS)
        trial = await asyncio.to_thread(project_settings.trial, run_id)
        if trial.done:
            if trial.status == RunStatus.SUCCEEDED.value:
                return trial.output.strip() or "(the agent answered with no text)", ""
            return "", trial.error or f"the turn ended {trial.status}"
    return "", "No answer yet: the turn goes on in the project's “Agent test” chat."
