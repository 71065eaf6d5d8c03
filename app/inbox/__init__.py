"""The inbox (SPEC §13): a user's approvals, drafts, tasks in error and attention feed, in one place.

It reads the attention tables of ``app/core/attention`` and the schedule tables of
``app/schedules``, so it sits above both; the API and the UI call it.
"""
