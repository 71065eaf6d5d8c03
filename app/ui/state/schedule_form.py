"""The new/edit schedule dialog: fields, live preview and validation, save through the service."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import reflex as rx

from app.core.context import get_core
from app.core.errors import ChatcronError, InvalidInput
from app.ui import calendar_form, checks, form_check, phrase_form, schedule_form, tasks
from app.ui.schedule_form import ADVANCED, INPUTS, FormFields
from app.ui.state.schedules import ScheduleState
from app.ui.state.session import AuthState

# Fields whose errors wait until the user has typed in them (a fresh form is not an error).
QUIET_UNTIL_TOUCHED = {"name", "prompt"}
HIGHLIGHT_MS = 2400
FOCUS_KEEP_JS = ("(() => { const until = Date.now() + 3000; const look = () => {"
                 " const el = document.querySelector('[data-testid=\"schedule-discard-keep\"]');"
                 " if (el) el.focus(); if (document.activeElement !== el && Date.now() < until)"
                 " requestAnimationFrame(look); }; look(); })()")


def show_card_js(task_id: int) -> str:
    """Scroll a drawer card into view and outline it for HIGHLIGHT_MS (``data-highlight`` meanwhile).

    The row may render after this runs, and a refresh may render it anew, so the current element
    is looked up every 50 ms: found late, or replaced, it is scrolled to and outlined again."""
    selector = json.dumps(f'[data-testid="schedule-row"][data-schedule-id="{int(task_id)}"]')
    return (f"(() => {{ const sel = {selector}; const start = Date.now(); let seen = 0, last = null;"
            " const tick = () => { const el = document.querySelector(sel); const now = Date.now();"
            " if (el && !seen) seen = now;"
            f" if (el && now - seen < {HIGHLIGHT_MS}) {{"
            "  if (el !== last) { el.scrollIntoView({behavior: 'smooth', block: 'nearest'}); last = el; }"
            "  el.setAttribute('data-highlight', 'true');"
            "  el.style.boxShadow = '0 0 0 3px var(--accent-9)'; el.style.transition = 'box-shadow .6s ease-out'; }"
            " else if (el) { el.removeAttribute('data-highlight'); el.style.boxShadow = ''; return; }"
            " if (seen || now - start < 5000) setTimeout(tick, 50); };"
            " tick(); })()")


class ScheduleFormState(AuthState):
    """Its own sibling state: a keystroke loads the dialog's fields, not the drawer or the transcript."""

    form_open: bool = False
    editing_id: int = 0
    name: str = ""
    prompt: str = ""
    kind: str = "interval"
    cron: str = "0 9 * * 1-5"
    timezone: str = "UTC"
    at: str = ""
    every: str = "1"
    every_unit: str = "hours"
    overlap: str = "queue_one"
    session: str = "resume"
    max_runs: str = ""
    notify: str = "failures"
    catchup: str = "1"
    catchup_unit: str = "hours"
    catchup_mode: str = "window"  # "late": fire however late (no catch-up window)
    jitter: str = "0"
    starts: str = ""
    ends: str = ""
    cap_tokens: str = ""  # max tokens per fire ("" for no cap, SPEC §15)
    cap_cost: str = ""  # max cost per fire in US dollars
    notify_on: str = "always"  # which fires tell people (SPEC §19)
    queue_cap: str = "3"  # how many fires may wait, for overlap "queue_all"
    pace_min: str = ""  # the bounds the agent may pace the task within ("30m"; both "": it may not)
    pace_max: str = ""
    exclude_dates: str = ""  # SPEC §20 (cron only): "2026-12-24, 2026-12-31"
    holidays_country: str = ""  # "US": skip its public holidays
    holidays_subdivision: str = ""  # "CA"
    subdivision_options: list[str] = []  # the regions of the typed country, for the input's list
    phrase: str = ""  # the "Describe it" field
    phrase_error: str = ""  # why the phrase was not understood (the form is unchanged)
    readback: str = ""  # the applied phrase's canonical form ("0 9 * * 1#1"); "" once the form says otherwise
    readback_phrase: str = ""  # the phrase it was read from
    advanced: bool = False  # the "Advanced options" disclosure is open
    window: str = ""  # the preview's line on the active window ("Ends Tue 31 Mar, 18:00 CEST: …")
    jitter_hint: str = ""  # the jitter's bound for this schedule
    description: str = ""
    fires: list[dict[str, str]] = []
    error: str = ""
    error_input: str = ""  # which input to outline in red
    valid: bool = False
    saving: bool = False
    blocked: str = ""  # why Save is disabled, beside the button
    confirm_discard: bool = False  # "Discard changes?" is asked
    _touched: list[str] = []
    _opened_with: dict = {}  # the fields as the dialog opened, to tell whether closing loses anything
    _original: dict = {}
    _readback_of: dict = {}  # the schedule fields as the phrase filled them (phrase_form.schedule_part)
    _chat_id: int = 0  # the drawer's chat and viewer zone, copied when the dialog opens
    _zone: str = "UTC"

    async def _from_drawer(self) -> ScheduleState:
        drawer = await self.get_state(ScheduleState)
        self._chat_id, self._zone = drawer.chat_id, drawer.browser_zone
        return drawer

    def _fields(self) -> FormFields:
        return FormFields(**{f.name: getattr(self, f.name) for f in dataclasses.fields(FormFields)})

    def _load(self, fields: FormFields) -> None:
        for f in dataclasses.fields(FormFields):
            setattr(self, f.name, getattr(fields, f.name))

    @rx.event
    async def open_new(self):
        await self._from_drawer()
        now = tasks.task_service().clock.now()
        zone = self._zone
        self._load(FormFields(timezone=zone, at=schedule_form.default_at(now, zone)))
        self.editing_id, self._original, self._touched, self.advanced = 0, {}, [], False
        await self._opened()

    @rx.event
    async def open_edit(self, task_id: int):
        drawer = await self._from_drawer()
        try:
            user = await self._user()
            task = await asyncio.to_thread(tasks.load_task, user, task_id)
        except ChatcronError as exc:
            drawer.notice = exc.message
            return
        self._load(schedule_form.fields_of(task, self._zone))
        self.editing_id, self._original, self._touched = task.id, schedule_form.original_of(task), []
        self.advanced = schedule_form.timing_set(self._fields())
        await self._opened()

    async def _opened(self) -> None:
        self.form_open, self.saving, self.confirm_discard = True, False, False
        self.phrase, self.phrase_error, self.readback, self.readback_phrase = "", "", "", ""
        self._opened_with = dataclasses.asdict(self._fields())
        await self._check()

    @rx.event
    def set_form_open(self, is_open: bool):
        """Escape, a click outside, Cancel or the close button: an untouched dialog closes at once,
        one with changes asks first."""
        if is_open or not self.form_open:
            return None
        if schedule_form.changed(self._fields(), self._opened_with) and not self.saving:
            self.confirm_discard = True
            return rx.call_script(FOCUS_KEEP_JS)  # Radix leaves focus in the dialog underneath
        self.form_open = False
        return None

    @rx.event
    def toggle_advanced(self):
        self.advanced = not self.advanced

    @rx.event
    def keep_editing(self):
        self.confirm_discard = False

    @rx.event
    def discard(self):
        self.confirm_discard, self.form_open = False, False

    @rx.event
    def set_confirm_discard_open(self, is_open: bool):
        """The question's own Escape / outside click means "keep editing"."""
        if not is_open:
            self.confirm_discard = False

    @rx.event
    async def set_field(self, field: str, value: str):
        """Every keystroke lands here (debounced by the input) and re-runs the preview."""
        await self._set(field, value)

    async def _set(self, field: object, value: object) -> None:
        field, value = schedule_form.typed(field, value, get_core().settings.prompt_max_bytes)
        setattr(self, field, value)
        if field == "timezone":
            self.phrase_error = ""  # a zone refused with the phrase may be mended now
        if field not in self._touched:
            self._touched = [*self._touched, field]
        await self._check()

    @rx.event
    def set_phrase(self, value: str):
        self.phrase = checks.text(value, "phrase", phrase_form.MAX_PHRASE_CHARS)
        self.phrase_error = ""  # said of the phrase as it was; a new one has not been read yet

    @rx.var
    def phrase_zone(self) -> str:
        """The zone a phrase is read in: the dialog's, or the viewer's while that field is empty."""
        return self.timezone.strip() or self._zone

    @rx.event
    async def apply_phrase(self, form: dict):
        """"Describe it": the phrase fills the form and is read back, or its error is said under it."""
        self.phrase = checks.text(form.get("phrase", self.phrase), "phrase", phrase_form.MAX_PHRASE_CHARS)
        reading = await asyncio.to_thread(phrase_form.read, self.phrase, self._fields(), self._zone)
        self.phrase_error = reading.error
        if reading.fields is None:
            return
        self._load(reading.fields)
        self.readback, self.readback_phrase = reading.canonical, self.phrase.strip()
        self._readback_of = phrase_form.schedule_part(reading.fields)
        self._touched = sorted({*self._touched, *phrase_form.SCHEDULE_FIELDS})
        await self._check()

    @rx.event
    async def set_late(self, late: bool):
        """The "fire however late" box: no catch-up window (null) when ticked."""
        await self._set("catchup_mode", "late" if late is True else "window")

    async def _check(self) -> None:
        check = await asyncio.to_thread(form_check.check_form, self._fields(), self._original or None, self._zone)
        self.description, self.fires = check.description, check.fires
        self.window, self.jitter_hint = check.window, check.jitter_hint
        self.valid = not check.error
        quiet = check.error_field in QUIET_UNTIL_TOUCHED and check.error_field not in self._touched
        self.error = "" if quiet else check.error
        self.error_input = "" if quiet else INPUTS.get(check.error_field, "")
        if self.error_input in ADVANCED:  # an error in the advanced options is shown where it is
            self.advanced = True
        self.blocked = schedule_form.blocked_reason(check.error_field, self._fields())
        if self.readback and phrase_form.schedule_part(self._fields()) != self._readback_of:
            self.readback = ""  # edited since: the form no longer says what the phrase said
        options = calendar_form.subdivisions(self.holidays_country)
        if options != self.subdivision_options:
            self.subdivision_options = options

    @rx.event
    async def save(self):
        await self._check()
        if not self.valid:
            self._touched = sorted(QUIET_UNTIL_TOUCHED)
            await self._check()
            return
        self.saving = True
        yield
        try:
            user = await self._user()
            task = await asyncio.to_thread(tasks.save_form, user, self._chat_id, self.editing_id, self._fields(),
                                           self._original or None)
        except InvalidInput as exc:
            self.error, self.error_input, self.valid = schedule_form.explain(exc), INPUTS.get(exc.field, ""), False
            self.advanced = self.advanced or self.error_input in ADVANCED
            self.blocked = schedule_form.blocked_reason(exc.field, self._fields())
            self.saving = False
            return
        except ChatcronError as exc:
            self.error, self.saving = exc.message, False
            return
        created = not self.editing_id
        self.form_open, self.saving, self.confirm_discard = False, False, False
        drawer = await self.get_state(ScheduleState)
        drawer.notice = ""
        await drawer.refresh_quietly()
        verb = "Created" if created else "Saved"
        yield [rx.toast.success(f"{verb} “{task.name}”", position="bottom-right", duration=4000),
               rx.call_script(show_card_js(task.id))]
