"""The notification settings page: the user's channels, their delivery logs, add / delete / test."""

from __future__ import annotations

import asyncio
import dataclasses
import time

import reflex as rx

from app.attention.notify import channels
from app.core.context import get_core
from app.core.errors import ChatcronError
from app.core.models import User
from app.ui.state.session import AuthState

LOG_ROWS = 10  # deliveries shown per channel
TEST_WAIT_SECONDS = 6.0  # how long "Send test" follows its delivery before leaving it to "Refresh"
# The page's event presets: every kind, or the ones that mean something went wrong / someone must act.
PRESETS = {"all": [], "failures": ["fire.failed", "task.error", "agent.start_failed"],
           "action": ["draft.created", "approval.requested"]}
PRESET_LABELS = {"all": "Every event", "failures": "Failures and task errors", "action": "Drafts and approvals"}


@dataclasses.dataclass
class DeliveryRow:
    id: int
    kind: str
    state: str
    attempts: int
    status: str  # last HTTP status / SMTP code, "" when none
    error: str
    created_at: str
    delivered_at: str


@dataclasses.dataclass
class ChannelRow:
    id: int
    kind: str
    target: str
    events: str  # "every event" or the kinds, comma separated
    deliveries: list[DeliveryRow]


def load_rows(user: User) -> list[ChannelRow]:
    core = get_core()
    rows = []
    for channel in channels.list_channels(core.db, user):
        log = [channels.delivery_view(d) for d in channels.deliveries(core.db, user, channel.id, LOG_ROWS)]
        events = channels.events_of(channel)
        rows.append(ChannelRow(
            id=channel.id, kind=channel.kind, target=channel.target,
            events=", ".join(events) if events else "every event",
            deliveries=[DeliveryRow(id=d["id"], kind=d["kind"], state=d["state"], attempts=d["attempts"],
                                    status="" if d["last_status"] is None else str(d["last_status"]),
                                    error=d["last_error"] or "", created_at=d["created_at"] or "",
                                    delivered_at=d["delivered_at"] or "") for d in log]))
    return rows


def _pending(rows: list[ChannelRow], delivery_id: int) -> bool:
    return any(d.id == delivery_id and d.state == "pending" for r in rows for d in r.deliveries)


class NotificationsState(AuthState):
    rows: list[ChannelRow] = []
    email_enabled: bool = False
    error: str = ""
    new_secret: str = ""  # a just-created webhook's secret: shown this once
    new_secret_url: str = ""

    async def _reload(self) -> None:
        self.rows = await asyncio.to_thread(load_rows, await self._user())

    @rx.event
    async def load(self):
        self.email_enabled = bool(get_core().settings.smtp_url)
        self.error, self.new_secret, self.new_secret_url = "", "", ""
        await self._reload()

    @rx.event
    async def refresh(self):
        await self._reload()

    async def _create(self, body: dict) -> channels.NotificationChannel | None:
        core = get_core()
        try:
            channel = await asyncio.to_thread(channels.create, core.db, core.clock, core.settings,
                                              await self._user(), body)
        except ChatcronError as exc:
            self.error = exc.message
            return None
        self.error = ""
        await self._reload()
        return channel

    @rx.event
    async def add_webhook(self, form: dict):
        events = PRESETS.get(str(form.get("events", "all")), [])
        channel = await self._create({"kind": "webhook", "url": form.get("url", ""), "events": events})
        if channel is not None:
            self.new_secret, self.new_secret_url = channel.secret or "", channel.target

    @rx.event
    async def add_email(self, form: dict):
        events = PRESETS.get(str(form.get("events", "all")), [])
        if await self._create({"kind": "email", "address": form.get("address", ""), "events": events}):
            self.new_secret, self.new_secret_url = "", ""

    @rx.event
    def hide_secret(self):
        self.new_secret, self.new_secret_url = "", ""

    @rx.event
    async def delete_channel(self, channel_id: int):
        core = get_core()
        await asyncio.to_thread(channels.delete, core.db, core.clock, await self._user(), channel_id)
        await self._reload()

    @rx.event
    async def send_test(self, channel_id: int):
        """Queue a test delivery and follow it for a few seconds, so its outcome shows without a click."""
        core = get_core()
        user = await self._user()
        delivery_id = await asyncio.to_thread(channels.send_test, core.db, core.clock, user, channel_id)
        await self._reload()
        yield
        deadline = time.monotonic() + TEST_WAIT_SECONDS
        while _pending(self.rows, delivery_id) and time.monotonic() < deadline:
            await asyncio.sleep(0.3)
            await self._reload()
            yield
