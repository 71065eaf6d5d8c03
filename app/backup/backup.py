"""``backup --to PATH``: one ``.tar.gz`` of the store, taken while the web and scheduler processes run.

The database first (one consistent snapshot), then the data dir's workspaces and agent homes as
they are a moment later (files agents change meanwhile are taken as they are when read: each one
whole, in one version), then the manifest. Everything is written into a hidden folder beside PATH
and the finished archive renamed to PATH (after an fsync), so PATH is either the old file, if any,
or a complete new archive — never part of one.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import shutil
import tempfile
from pathlib import Path

import app
from app.backup import postgres, sqlite
from app.backup.archive import Writer
from app.backup.errors import BackupError
from app.backup.files import Walk, sync_folder
from app.backup.manifest import DATABASE_MEMBER, ROOTS, Kind, Manifest, Snapshot, Store
from app.core.clock import Clock
from app.core.config import Settings
from app.core.db import Database


@dataclasses.dataclass(frozen=True)
class Taken:
    path: Path  # the archive written
    manifest: Manifest


def target_path(to: Path | str, now: dt.datetime) -> Path:
    """Where the archive goes: ``to`` itself, or a dated name in it when ``to`` is a folder or ends
    with a slash (a nightly job then needs no date arithmetic: ``chatcron-20260101T020000Z.tar.gz``);
    a folder named with a slash must exist (BackupError)."""
    folder = str(to).endswith(os.sep)
    to = Path(to)
    if folder and not to.is_dir():
        raise BackupError(f"the folder {to} does not exist: create it first (nothing was written)")
    if folder or to.is_dir():
        return to / f"chatcron-{now.astimezone(dt.UTC):%Y%m%dT%H%M%SZ}.tar.gz"
    return to


def take(settings: Settings, db: Database, clock: Clock, to: Path | str, pg_dump: str | None = None) -> Taken:
    """Write the backup at ``to`` (see :func:`target_path`); returns where and what. Raises BackupError
    (nothing written at the target) for a target that cannot be written, a store with no schema,
    a missing ``pg_dump``; OSError for a failing disk."""
    target = _checked_target(settings, target_path(to, clock.now()))
    tool = None if db.sqlite else postgres.find_tool("pg_dump", pg_dump, "--pg-dump")
    work = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial", dir=target.parent))
    try:
        os.chmod(work, 0o700)
        partial = work / "archive.tar.gz"
        created = clock.now()
        snap = sqlite.snapshot(db.url, work / "database") if tool is None else \
            postgres.snapshot(db, work / "database", tool)
        manifest = _write(settings, partial, work, snap, Store.SQLITE if tool is None else Store.POSTGRESQL, created)
        os.chmod(partial, 0o600)  # it holds every secret of the store: the server's uid alone reads it
        _sync(partial)
        os.replace(partial, target)
        sync_folder(target.parent)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Taken(target.resolve(), manifest)


def _checked_target(settings: Settings, target: Path) -> Path:
    if target.is_dir():
        raise BackupError(f"--to {target} is a folder that holds a folder of that name; name a file")
    if not target.parent.is_dir():
        raise BackupError(f"--to {target}: the folder {target.parent} does not exist")
    folder = target.parent.resolve()
    for root in ROOTS:
        inside = (settings.data_dir / root).resolve()
        if folder == inside or folder.is_relative_to(inside):
            raise BackupError(f"--to {target} is inside the data dir's {root}/, which the backup itself holds; "
                              "write it elsewhere")
    return target


def _write(settings: Settings, partial: Path, work: Path, snap: Snapshot, store: Store,
           created: dt.datetime) -> Manifest:
    writer = Writer(partial, work)
    try:
        writer.add_file(DATABASE_MEMBER[store], work / "database", stable=True)
        walk = Walk(settings.data_dir)
        for found in walk:
            try:
                if found.kind == Kind.DIR:
                    writer.add_dir(found.name, found.path, base=settings.data_dir)
                elif found.kind == Kind.SYMLINK:
                    writer.add_symlink(found.name, found.path, base=settings.data_dir)
                else:
                    writer.add_file(found.name, found.path, base=settings.data_dir)
            except PermissionError as exc:
                walk.skipped.append(f"{found.name} (cannot be read: {exc.strerror})")
        manifest = Manifest(chatcron_version=app.__version__, schema_revision=snap.revision, created_at=created,
                            database=store, members=dict(writer.members), pg_schema=snap.schema, rows=snap.rows,
                            skipped=tuple(walk.skipped))
        writer.add_manifest(manifest, created.timestamp())
    finally:
        writer.close()
    return manifest


def _sync(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())
