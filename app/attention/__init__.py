"""The attention room (SPEC §13): what asks for a person — approvals, the inbox, notifications.

- ``approvals``: the approval rows' life (created by a turn, answered by a user, expired);
  ``waiting``: a turn's side of them; ``hints``: the wake hints that make an answer prompt.
- ``inbox``: a user's approvals, drafts, tasks in error and attention feed, in one place.
- ``reads``: the two forward-only read marks and the chats a user can see.
- ``notify``: the outbox that turns attention events into webhook posts and emails.
- ``desk``: the core's ``ApprovalDesk`` port (wired in by ``app.wiring``).

The tables and the record of what happened (``attention_events``) belong to the store
(``app/core``), which every room writes in; this room imports ``app.core`` and, for the inbox's
drafts and tasks in error, ``app.schedules`` (docs/ARCHITECTURE.md "Rooms").
"""
