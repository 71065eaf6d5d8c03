"""What backup and restore refuse, and what they leave then (SPEC §21), on SQLite and PostgreSQL, as real
``python -m app.manage`` processes: a truncated archive, a flipped byte, a missing member, a newer
schema, a target that is not empty → exit 2 with one sentence and the target untouched; a backup
that fails → the file at PATH as it was and nothing left beside it; an older schema → migrated."""

from __future__ import annotations

import datetime as dt
import io
import stat
import tarfile
from pathlib import Path

import pytest
import sqlalchemy as sa

from app.core.db import Database
from app.core.migrate import known_revisions, upgrade
from tests.integration.backups import empty_target, fresh_database, manifest_of, repack
from tests.integration.managecli import Cli, Result, cli_env, ok

pytestmark = pytest.mark.slow  # one admin CLI process per command: left out of `make check`

OLDER = "0014_budgets"


def refused(result: Result, *words: str) -> None:
    """Exit 2 with one plain sentence on stderr that mentions ``words``."""
    assert result.code == 2, result
    assert result.out == "", result
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.err, result
    for word in words:
        assert word in lines[0], result


def _tables(url: str) -> list[str]:
    db = Database(url)
    try:
        return sorted(sa.inspect(db.engine).get_table_names())
    finally:
        db.dispose()


def _untouched(target: Cli) -> None:
    """No table in the target's database, nothing in its data dir but what any command's start-up
    makes (the data dir, an empty SQLite file), no restore folder left behind."""
    assert _tables(target.url) == []
    if target.data_dir.exists():
        left = sorted(str(p.relative_to(target.data_dir)) for p in target.data_dir.rglob("*") if not p.is_dir()
                      and p.name != "chatcron.db")
        assert left == []
        assert not [p for p in target.data_dir.iterdir() if p.name.startswith(".restore-")]
        for root in ("workspaces", "agent-homes"):
            assert not (target.data_dir / root).exists() or list((target.data_dir / root).iterdir()) == []


def _backup(cli: Cli, to: Path) -> Path:
    ok(cli.run("migrate"))
    ok(cli.run("seed-demo"))
    (cli.data_dir / "workspaces" / "1" / "notes.md").write_text("what the agent wrote\n")
    return Path(ok(cli.run("backup", "--to", str(to))))


def _variants(path: Path, folder: Path) -> list[tuple[Path, tuple[str, ...]]]:
    raw = path.read_bytes()
    out = []
    (folder / "truncated.tar.gz").write_bytes(raw[: len(raw) // 2])
    out.append((folder / "truncated.tar.gz", ("damaged or truncated", "nothing was restored")))
    flipped = bytearray(raw)
    flipped[len(raw) // 3] ^= 0x5A
    (folder / "flipped.tar.gz").write_bytes(bytes(flipped))
    out.append((folder / "flipped.tar.gz", ("nothing was restored",)))
    buffer = io.BytesIO()
    with tarfile.open(path, "r:gz") as src, tarfile.open(fileobj=buffer, mode="w:gz") as dst:
        for member in src:
            if member.name != "workspaces/1/notes.md":
                dst.addfile(member, src.extractfile(member) if member.isreg() else None)
    (folder / "missing.tar.gz").write_bytes(buffer.getvalue())
    out.append((folder / "missing.tar.gz", ("workspaces/1/notes.md is missing", "nothing was restored")))
    repack(path, folder / "newer.tar.gz", {"schema_revision": "9999_from_the_future"})
    out.append((folder / "newer.tar.gz", ("9999_from_the_future", "upgrade chatcron first")))
    repack(path, folder / "newer-format.tar.gz", {"format": 2})
    out.append((folder / "newer-format.tar.gz", ("format 2", "upgrade chatcron first")))
    (folder / "not-a-backup.tar.gz").write_bytes(b"hello")
    out.append((folder / "not-a-backup.tar.gz", ("damaged or truncated",)))
    out.append((folder / "absent.tar.gz", ("no such file",)))
    return out


def test_bad_archives_and_non_empty_targets_are_refused_and_change_nothing(cli: Cli, data_root: Path,
                                                                            tmp_path: Path) -> None:
    path = _backup(cli, tmp_path / "good.tar.gz")
    variants = _variants(path, tmp_path)
    with empty_target(cli, data_root) as target:
        results = target.run_all(*[("restore", "--from", str(bad)) for bad, _ in variants])
        for result, (_, words) in zip(results, variants, strict=True):
            refused(result, *words)
        _untouched(target)
        # the store backed up is not empty: its database and its workspaces are named
        refused(cli.run("restore", "--from", str(path)), "not empty", "tables", "workspaces", "nothing was written")
        (target.data_dir / "workspaces" / "9").mkdir(parents=True)
        refused(target.run("restore", "--from", str(path)), "not empty", "workspaces holds 9")
        (target.data_dir / "workspaces" / "9").rmdir()
        _untouched(target)
        assert "restored the backup" in ok(target.run("restore", "--from", str(path)))  # the good one, after all that
        assert (target.data_dir / "workspaces" / "1" / "notes.md").read_text() == "what the agent wrote\n"


@pytest.mark.parametrize("db_url", ["postgres"], indirect=True)  # a PostgreSQL rule: no SQLite variant
def test_postgresql_refuses_a_borrowed_schema_name_and_a_sqlite_backup(cli: Cli, data_root: Path,
                                                                     tmp_path: Path) -> None:
    path = _backup(cli, tmp_path / "good.tar.gz")
    schema = manifest_of(path)["pg_schema"]
    base = cli.url.split("?", 1)[0]
    with fresh_database() as other:  # a database with schema "public" only: the store's schema has another name
        target = Cli(cli_env(data_root / "same-db", CHATCRON_DATABASE_URL=f"{base}?options=-csearch_path%3Dpublic"),
                     data_root / "same-db", f"{base}?options=-csearch_path%3Dpublic")
        refused(target.run("restore", "--from", str(path)), f"schema {schema} is another schema of this database")
        elsewhere = Cli(cli_env(data_root / "other-db", CHATCRON_DATABASE_URL=other), data_root / "other-db", other)
        lite = Cli(cli_env(data_root / "lite"), data_root / "lite", "sqlite:///unused")
        refused(elsewhere.run("restore", "--from", str(_backup(lite, tmp_path / "lite.tar.gz"))),
                "holds a sqlite database and the target is postgresql")
        assert "restored the backup" in ok(elsewhere.run("restore", "--from", str(path)))  # into its public schema
        assert "users" in _tables(other)


def test_a_failed_backup_leaves_path_as_it_was(cli: Cli, tmp_path: Path) -> None:
    folder = tmp_path / "backups"
    folder.mkdir()
    old = folder / "nightly.tar.gz"
    old.write_bytes(b"yesterday's backup")
    refused(cli.run("backup", "--to", str(old)), "no schema yet", "migrate")  # fails after its work began
    ok(cli.run("migrate"))
    if not cli.url.startswith("sqlite"):
        fake = tmp_path / "pg_dump"
        fake.write_text('#!/bin/sh\nfor a; do case "$a" in --file=*) echo partial > "${a#--file=}";; esac; done\n'
                        'echo "pg_dump: error: connection lost" >&2\nexit 1\n')
        fake.chmod(0o755)
        refused(cli.run("backup", "--to", str(old), "--pg-dump", str(fake)), "pg_dump failed", "connection lost")
        refused(cli.run("backup", "--to", str(old), "--pg-dump", str(tmp_path / "nope")), "--pg-dump", "no such")
    refused(cli.run("backup", "--to", str(tmp_path / "absent" / "b.tar.gz")), "does not exist")
    (cli.data_dir / "workspaces").mkdir(parents=True, exist_ok=True)
    refused(cli.run("backup", "--to", str(cli.data_dir / "workspaces" / "b.tar.gz")), "inside the data dir")
    assert old.read_bytes() == b"yesterday's backup"
    assert sorted(p.name for p in folder.iterdir()) == ["nightly.tar.gz"]  # no partial file beside it
    made = Path(ok(cli.run("backup", "--to", str(folder))))  # a folder: a dated name in it
    assert made.parent == folder and made.name.startswith("chatcron-") and made.name.endswith("Z.tar.gz")
    assert stat.S_IMODE(made.stat().st_mode) == 0o600
    assert old.read_bytes() == b"yesterday's backup"


def test_an_older_schema_is_migrated_after_restore(cli: Cli, data_root: Path, tmp_path: Path) -> None:
    store = Database(cli.url)
    try:
        upgrade(store, OLDER)
        now = dt.datetime(2026, 1, 5, 9, 0)
        with store.engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO users (id, email, password_hash, is_admin, created_at) "
                                 "VALUES (1, 'a@example.com', 'x', false, :now)"), {"now": now})
            conn.execute(sa.text("INSERT INTO projects (id, name, owner_id, provider_settings, created_at) "
                                 "VALUES (1, 'P', 1, '{}', :now)"), {"now": now})
            conn.execute(sa.text("INSERT INTO memberships (user_id, project_id, created_at) VALUES (1, 1, :now)"),
                         {"now": now})
    finally:
        store.dispose()
    path = Path(ok(cli.run("backup", "--to", str(tmp_path / "old.tar.gz"))))
    assert manifest_of(path)["schema_revision"] == OLDER
    with empty_target(cli, data_root) as target:
        said = ok(target.run("restore", "--from", str(path)))
        assert f"migrated from {OLDER} to {known_revisions()[0]}" in said
        restored = Database(target.url)
        try:
            with restored.engine.connect() as conn:
                assert conn.exec_driver_sql("SELECT version_num FROM alembic_version").scalar() == known_revisions()[0]
                assert conn.exec_driver_sql("SELECT role FROM memberships").scalar() == "owner"  # 0015's backfill
        finally:
            restored.dispose()
