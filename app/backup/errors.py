"""The one exception of backup and restore."""

from __future__ import annotations


class BackupError(Exception):
    """The backup or restore cannot be done as asked, and nothing was written at the target.

    The message is one sentence for an admin (what is wrong and what to do); the command line ends
    with exit 2 (a usage, configuration or input error: a bad archive, a target that is not empty,
    a missing ``pg_dump``)."""
