"""The project settings page (SPEC §18): the agent, network and budget form, saved as one partial
change through :func:`app.projects.settings.change` — only the fields that changed are sent.

Secrets are write-only here too: the page's state holds a secret's name and hint, never its value.
What the user types into a secret's input goes to backend-only fields (``_typed``), is sent once on
Save, and is then cleared, in the state and in the page's inputs.

While the page is open, :meth:`SettingsState.watch` re-reads the user's access when the worker's
access mark moves (app/core/access.py): a lost project empties the page, a changed role turns it
editable or read-only.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import reflex as rx

from app.core.errors import ChatcronError, InvalidInput, NotFound
from app.ui import checks, project_settings, settings_form
from app.ui.settings_form import FIELDS, Form, Secrets
from app.ui.settings_rows import (
    Choice,
    EnvRow,
    PresetRow,
    RefusalRow,
    SecretRow,
    SpendRow,
    budget_line,
    preset_choices,
    preset_rows,
    refusal_rows,
    secret_rows,
    spend_rows,
    spend_words,
)
from app.ui.state.members import MembersState
from app.ui.state.session import AuthState, access_check, connected, session_user

LISTS = ("env", "allow_hosts")  # the form's fields that are lists of rows, not one input each
MAX_VALUE = 8192  # characters of one setting (app/projects/patch.py)
WATCH_SECONDS = 0.5  # how often an open page asks whether the access mark moved (a shared, cached read)
CHOICES = {"provider": settings_form.PROVIDERS, "tool_policy": settings_form.POLICIES}
NEW_SECRET = "new · saved with Save"
# Empties the page's write-only inputs (uncontrolled: their typed values never travel back to the page).
CLEAR_SECRETS_JS = "document.querySelectorAll('[data-secret-input]').forEach((el) => { el.value = ''; });"


def _project_at(path: str) -> int:
    """The project whose settings page ``path`` is (0 for any other page)."""
    try:
        return project_settings.project_of(path)
    except InvalidInput:
        return 0


class SettingsState(AuthState):
    project_id: int = 0
    project_name: str = ""
    role: str = ""  # owner | member | admin (a server admin who is no member)
    can_edit: bool = False
    loaded: bool = False
    missing: bool = False  # no such project, or the user cannot see it (any more)
    provider: str = ""  # "" for the server's default
    default_provider: str = ""
    preset: str = ""
    model: str = ""
    command: str = ""
    base_url: str = ""
    tool_policy: str = "allow"
    history_budget_chars: str = ""
    env: list[EnvRow] = []
    new_env_name: str = ""
    new_env_value: str = ""
    secrets: list[SecretRow] = []
    new_secret_name: str = ""
    api_key_hint: str = ""  # "set · ends in …4f2a"; "" when no API key is set
    api_key_typed: bool = False
    api_key_removed: bool = False
    presets: list[PresetRow] = []
    preset_options: list[Choice] = []
    network_mode: str = ""
    allow_hosts: list[str] = []
    new_host: str = ""
    refused: list[RefusalRow] = []
    daily_tokens: str = ""
    daily_cost_usd: str = ""
    spent_today: str = ""
    spent_month: str = ""
    budget_note: str = ""
    task_spend: list[SpendRow] = []
    errors: dict[str, str] = {}  # input → its error, shown beside it ("" → the form's own line)
    notice: str = ""
    _original: dict = {}  # the form as loaded (settings_form.Form's fields)
    _typed: dict = {}  # secret name → the value typed for it: write-only, never sent to the page
    _new_secret: str = ""
    _api_key: str = ""
    _generation: int = 0

    def _forget(self) -> None:
        generation = self._generation
        self.reset()
        self._generation = generation + 1  # a watcher of the old page stops at its next round

    def _take(self, view: dict[str, Any]) -> None:
        """Show a settings object of the service; the typed secrets are dropped."""
        form = settings_form.form_of(view)
        agent, network, budget = view["agent"], view["network"], view["budget"]
        self.project_name, self.role, self.can_edit = view["project"]["name"], view["role"], bool(view["can_edit"])
        for field in dataclasses.fields(Form):
            if field.name not in LISTS:
                setattr(self, field.name, getattr(form, field.name))
        self.env, self.allow_hosts = [EnvRow(k, v) for k, v in form.env], list(form.allow_hosts)
        self.default_provider = agent.get("default_provider") or ""
        self.secrets, self.presets = secret_rows(agent), preset_rows(agent.get("presets") or [])
        self.preset_options = preset_choices(self.presets, form.preset)
        key = agent.get("api_key") or {}
        self.api_key_hint = (f"set · ends in {key['hint']}" if key.get("hint") not in (None, "…") else "set") \
            if key.get("set") else ""
        self.api_key_typed = self.api_key_removed = False
        self.network_mode, self.refused = network["mode"], refusal_rows(network.get("refused") or [])
        self.spent_today, self.spent_month = spend_words(budget["today"]), spend_words(budget["month"])
        self.budget_note, self.task_spend = budget_line(budget), spend_rows(budget.get("tasks") or [])
        self._original = dataclasses.asdict(form)
        self._typed, self._new_secret, self._api_key = {}, "", ""
        self.loaded, self.missing = True, False

    def _form(self) -> Form:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(Form) if f.name not in LISTS}
        return Form(**values, env=tuple((row.name, row.value) for row in self.env),
                    allow_hosts=tuple(self.allow_hosts))

    def _secrets(self) -> Secrets:
        return Secrets(typed={k: v for k, v in self._typed.items() if isinstance(v, str)},
                       removed=frozenset(row.name for row in self.secrets if row.removed and row.hint != NEW_SECRET),
                       api_key=self._api_key, api_key_removed=self.api_key_removed)

    def _editable(self) -> None:
        if not self.can_edit:
            raise InvalidInput("settings", "only an owner of this project changes its settings")

    @rx.event
    async def load(self):
        self._forget()
        try:
            self.project_id = project_settings.project_of(self.router.url.path)
            self._take(await asyncio.to_thread(project_settings.read, await self._user(), self.project_id))
        except (InvalidInput, NotFound):
            self._forget()
            self.missing, self.loaded = True, True
            return None
        return SettingsState.watch

    @rx.event
    def set_field(self, field: str, value: str):
        """One typed input of the form (its error, if any, goes until the next Save)."""
        checks.choice(field, "field", FIELDS)
        checks.text(value, field, MAX_VALUE)
        if field in CHOICES:
            checks.choice(value, field, CHOICES[field])
        self._editable()
        setattr(self, field, value)
        if field in self.errors:
            self.errors = {k: v for k, v in self.errors.items() if k != field}

    def _problem(self, slot: str, message: str) -> bool:
        self.errors = {k: v for k, v in self.errors.items() if k != slot} | ({slot: message} if message else {})
        return bool(message)

    @rx.event
    def set_env(self, name: str, value: str):
        checks.text(value, "value", MAX_VALUE)
        self._editable()
        self.env = [EnvRow(row.name, value) if row.name == name else row for row in self.env]

    @rx.event
    def remove_env(self, name: str):
        self._editable()
        self.env = [row for row in self.env if row.name != name]

    @rx.event
    def add_env(self):
        self._editable()
        name = self.new_env_name.strip()
        if self._problem("env", settings_form.new_name_problem(name, False, {row.name for row in self.env})):
            return
        self.env = [*self.env, EnvRow(name, self.new_env_value)]
        self.new_env_name = self.new_env_value = ""

    @rx.event
    def type_secret(self, name: str, value: str):
        """A new value typed for a stored secret: kept server-side only, sent on Save."""
        checks.text(value, "value", MAX_VALUE)
        self._editable()
        if not any(row.name == name for row in self.secrets):
            raise InvalidInput("name", "is not one of this project's secrets")
        self._typed = {**self._typed, name: value}
        self.secrets = [dataclasses.replace(row, typed=bool(value.strip())) if row.name == name and
                        row.typed != bool(value.strip()) else row for row in self.secrets]

    @rx.event
    def type_new_secret(self, value: str):
        checks.text(value, "value", MAX_VALUE)
        self._editable()
        self._new_secret = value

    @rx.event
    def add_secret(self):
        self._editable()
        name = self.new_secret_name.strip()
        problem = settings_form.new_name_problem(name, True, {row.name for row in self.secrets})
        if not problem and not self._new_secret.strip():
            problem = f"Type {name}'s value first."
        if self._problem("secrets", problem):
            return None
        self._typed = {**self._typed, name: self._new_secret}
        self.secrets = [*self.secrets, SecretRow(name, NEW_SECRET, typed=True)]
        self.new_secret_name, self._new_secret = "", ""
        return rx.call_script("document.querySelectorAll('[data-new-secret]').forEach((el) => { el.value = ''; });")

    @rx.event
    def toggle_secret(self, name: str):
        """Mark a stored secret for removal on Save (or take that back); an unsaved one goes at once."""
        self._editable()
        if any(row.name == name and row.hint == NEW_SECRET for row in self.secrets):
            self.secrets = [row for row in self.secrets if row.name != name]
            self._typed = {k: v for k, v in self._typed.items() if k != name}
            return
        self.secrets = [dataclasses.replace(row, removed=not row.removed) if row.name == name else row
                        for row in self.secrets]

    @rx.event
    def type_api_key(self, value: str):
        checks.text(value, "value", MAX_VALUE)
        self._editable()
        self._api_key = value
        self._update(api_key_typed=bool(value.strip()))

    @rx.event
    def toggle_api_key(self):
        self._editable()
        self.api_key_removed = not self.api_key_removed

    def _allow(self, host: str) -> None:
        if not self._problem("allow_hosts", settings_form.host_problem(host, tuple(self.allow_hosts))):
            self.allow_hosts = [*self.allow_hosts, host]

    @rx.event
    def add_host(self):
        self._editable()
        self._allow(self.new_host.strip())
        if "allow_hosts" not in self.errors:
            self.new_host = ""

    @rx.event
    def allow_refused(self, entry: str):
        """A refused host:port of the last 7 days, added to the allowed hosts (saved with Save)."""
        self._editable()
        checks.choice(entry, "entry", [row.entry for row in self.refused])
        self._allow(entry)

    @rx.event
    def remove_host(self, host: str):
        self._editable()
        self.allow_hosts = [h for h in self.allow_hosts if h != host]

    @rx.event
    async def save(self):
        """Send what changed; an error goes beside its input and nothing is saved."""
        self._editable()
        body = settings_form.patch_of(Form(**{**self._original, "env": tuple(map(tuple, self._original["env"])),
                                              "allow_hosts": tuple(self._original["allow_hosts"])}),
                                      self._form(), self._secrets())
        if not body:
            self.errors, self.notice = {}, "Nothing changed."
            return None
        try:
            view = await asyncio.to_thread(project_settings.change, await self._user(), self.project_id, body)
        except ChatcronError as exc:  # a bad value, an address only an admin may open, the role gone meanwhile
            slot, message = settings_form.placed(exc)
            self.errors, self.notice = {slot: message}, ""
            return None
        self._take(view)
        self.errors, self.notice = {}, f"Saved: {settings_form.changed_words(body)}."
        return [rx.call_script(CLEAR_SECRETS_JS), MembersState.refresh]

    @rx.event(background=True)
    async def watch(self):
        """While the page is open: a lost project empties it, a changed role turns it editable or
        read-only (and the members' controls with it)."""
        async with self:
            self._generation += 1  # at most one watcher per tab
            generation, project_id = self._generation, self.project_id
            token, client = self._session_token(), self.router.session.client_token
        access = access_check()
        while project_id and await connected(client):
            await asyncio.sleep(WATCH_SECONDS)
            if not await access.due():
                continue
            try:
                user = await asyncio.to_thread(session_user, token)
            except Exception:  # the store may be briefly away: the next move or recheck asks again
                continue
            if user is None:
                return  # the sidebar's watcher sends the tab to the login page
            try:
                view = await asyncio.to_thread(project_settings.read, user, project_id)
            except NotFound:
                view = None
            except Exception:  # the store may be briefly away: the next move or recheck asks again
                continue
            async with self:
                if self._generation != generation or _project_at(self.router.url.path) != project_id:
                    return  # a newer watcher, or the tab went to another page
                if view is None:
                    self._forget()
                    self.missing, self.loaded = True, True
                    yield MembersState.forget_project
                    return
                self._update(role=view["role"], can_edit=bool(view["can_edit"]), project_name=view["project"]["name"])
            yield MembersState.refresh  # members come and go, roles change: the list and its controls follow
