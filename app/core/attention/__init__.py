"""Attention (SPEC §13): approvals, the inbox feed and the notification outbox.

- ``models``: the tables (approvals, attention_events, notification_channels, deliveries,
  inbox_reads, chat_reads).
- ``events``: recording an attention event inside the transaction of what caused it; the one
  feed the inbox reads and the outbox fans out to channels.
- ``approvals``: the approval rows' life (created by a turn, answered by a user, expired).
"""
