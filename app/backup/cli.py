"""``python -m app.manage backup`` and ``restore``: their arguments and their ends (SPEC §21).

Exit 0 with the archive's path (backup) or what was restored (restore) on stdout; exit 2 with one
sentence on stderr when the command cannot be done as asked (BackupError: nothing was written at
the target); exit 1 when the disk or the database failed on the way (``app.manage`` reports those).
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
from pathlib import Path

from app.backup import backup, restore
from app.backup.errors import BackupError
from app.core.context import Core

COMMANDS = frozenset({"backup", "restore"})


def add_parsers(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("backup", help="write one .tar.gz of the database, workspaces and agent homes (docs/BACKUP.md)",
                       description="A consistent snapshot of the database taken while the processes run, the "
                                   "data dir's workspaces and agent homes (caches left out) and manifest.json "
                                   "with a sha256 for every member. Prints the archive's path.")
    p.add_argument("--to", required=True, metavar="PATH",
                   help="the archive to write (replaced only once complete); a folder: a dated name in it")
    p.add_argument("--pg-dump", metavar="PATH", help="the pg_dump to run (PostgreSQL; default: the one on PATH)")
    p = sub.add_parser("restore", help="restore a backup into an empty database and data dir (docs/BACKUP.md)",
                       description="Checks every checksum first; migrates an older schema; records the fires "
                                   "running at the snapshot abandoned. The database and data dir must be empty.")
    p.add_argument("--from", dest="source", required=True, type=Path, metavar="PATH", help="the archive")
    p.add_argument("--pg-restore", metavar="PATH",
                   help="the pg_restore to run (PostgreSQL; default: the one on PATH)")


def execute(args: argparse.Namespace, core: Core) -> int:
    try:
        if args.command == "backup":
            taken = backup.take(core.settings, core.db, core.clock, args.to, args.pg_dump)
            for item in taken.manifest.skipped:
                print(f"warning: not in the backup: {item}", file=sys.stderr)
            print(taken.path)
        else:
            print(restore.restore(core.settings, core.db, core.clock, args.source, args.pg_restore).sentence())
    except BackupError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except sqlite3.Error as exc:  # the SQLite store could not be read (locked past the timeout, no access)
        print(f"error: {args.command} failed: the SQLite database could not be read ({exc}); nothing was written",
              file=sys.stderr)
        return 1
    except OSError as exc:  # the disk failed (full, read-only, I/O error): a backup leaves nothing at PATH
        print(f"error: {args.command} failed: {exc}", file=sys.stderr)
        return 1
    return 0
