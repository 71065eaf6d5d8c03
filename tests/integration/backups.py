"""Helpers of the backup and restore suites (test_backup_restore.py, test_backup_refusals.py): an empty
restore target beside the test's store, the archive's own database read without our restore code,
and every table of a store as rows."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import secrets
import subprocess
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from app.core.db import Database, normalize_url
from tests.conftest import pg_base_url
from tests.integration.managecli import Cli, cli_env
from tests.isolation import _as_admin, _with_database

Rows = dict[str, dict[tuple, dict[str, Any]]]  # table → primary key → row


@contextlib.contextmanager
def fresh_database(schema: str | None = None) -> Iterator[str]:
    """A new PostgreSQL database on the test server (dropped at the end); its URL, with a search_path
    naming ``schema`` (created) when given."""
    base = pg_base_url()
    assert base is not None
    name = "bk_" + secrets.token_hex(5)
    _as_admin(base, f'CREATE DATABASE "{name}"')
    url = normalize_url(_with_database(base.split("?", 1)[0], name))
    try:
        if schema:
            _as_admin(url, f'CREATE SCHEMA "{schema}"')
            url += f"?options=-csearch_path%3D{schema}"
        yield url
    finally:
        _as_admin(base, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def empty_target(source: Cli, folder: Path) -> Iterator[Cli]:
    """An empty store and data dir of the source's kind to restore into: a SQLite file in a new data
    dir, or a schema of a new PostgreSQL database (the source's schema is another of the test's)."""
    data_dir = folder / "restored-data"
    if source.url.startswith("sqlite"):
        yield Cli(cli_env(data_dir), data_dir, f"sqlite:///{(data_dir / 'chatcron.db').resolve()}")
        return
    with fresh_database("t_" + secrets.token_hex(4)) as url:
        yield Cli(cli_env(data_dir, CHATCRON_DATABASE_URL=url), data_dir, url)


def manifest_of(path: Path) -> dict[str, Any]:
    with tarfile.open(path, "r:gz") as tar:
        return json.loads(tar.extractfile("manifest.json").read())


@contextlib.contextmanager
def archived_database(path: Path, folder: Path) -> Iterator[Database]:
    """The archive's own database, read with the standard tools only: the SQLite member opened as a
    file, the PostgreSQL dump loaded whole by a plain ``pg_restore`` into a database of its own."""
    manifest = manifest_of(path)
    member = manifest["database_member"]
    with tarfile.open(path, "r:gz") as tar:
        data = tar.extractfile(member).read()
    assert hashlib.sha256(data).hexdigest() == manifest["members"][member]["sha256"]
    if manifest["database"] == "sqlite":
        (folder / "archived.sqlite3").write_bytes(data)
        db = Database(f"sqlite:///{folder / 'archived.sqlite3'}")
        try:
            yield db
        finally:
            db.dispose()
        return
    (folder / "archived.pgdump").write_bytes(data)
    with fresh_database() as url:
        plain = url.replace("postgresql+psycopg://", "postgresql://")
        subprocess.run(["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={plain}",
                        str(folder / "archived.pgdump")], check=True, capture_output=True)
        db = Database(f"{url}?options=-csearch_path%3D{manifest['pg_schema']}")
        try:
            yield db
        finally:
            db.dispose()


def table_rows(db: Database) -> Rows:
    """Every table of the store (its schema on PostgreSQL) as rows by primary key."""
    meta = sa.MetaData()
    meta.reflect(db.engine)
    out: Rows = {}
    with db.engine.connect() as conn:
        for table in meta.sorted_tables:
            key = [c.name for c in table.primary_key.columns] or [c.name for c in table.columns]
            out[table.name] = {tuple(row[k] for k in key): dict(row)
                               for row in conn.execute(sa.select(table)).mappings()}
    return out


def sha256_tree(root: Path) -> dict[str, str]:
    """Each regular file below ``root`` (links not followed) by its path relative to ``root``."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and not p.is_symlink()}


def repack(path: Path, out: Path, manifest_changes: dict[str, Any]) -> None:
    """``path`` again with its manifest changed (every member as it was)."""
    buffer = io.BytesIO()
    with tarfile.open(path, "r:gz") as src, tarfile.open(fileobj=buffer, mode="w:gz") as dst:
        for member in src:
            data = src.extractfile(member).read() if member.isreg() else None
            if member.name == "manifest.json":
                data = json.dumps({**json.loads(data), **manifest_changes}).encode()
                member.size = len(data)
            dst.addfile(member, io.BytesIO(data) if data is not None else None)
    out.write_bytes(buffer.getvalue())
