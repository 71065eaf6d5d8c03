"""Notifications (SPEC §13): the outbox that turns attention events into webhook posts and emails.

- ``policy``: pure rules — which channel wants which event, the webhook body and its signature,
  the email text, and the delivery state machine (back-off, give up).
- ``outbox``: the database side — fan-out of attention events into ``deliveries`` (one
  compare-and-set per event), leases on due deliveries, recording an attempt.
- ``senders``: one attempt over HTTP (webhook) or SMTP (email), with timeouts.
- ``destinations``: where a webhook may connect — never the server's own network (SPEC §19).
- ``deliverer``: the background thread each process runs (web and scheduler alike); the
  database decides who delivers what, so any number of them may run.
- ``channels``: the user-facing rules of channels (create, list, delete, test, delivery log).
"""
