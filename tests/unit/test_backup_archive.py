"""The backup archive on disk (app/backup/archive.py, files.py), without a database: a data dir walked
with its caches left out, written, checked and extracted; damaged and hostile archives refused
before anything is written."""

from __future__ import annotations

import datetime as dt
import gzip
import hashlib
import io
import os
import stat
import tarfile
from pathlib import Path

import pytest

from app.backup import archive
from app.backup.errors import BackupError
from app.backup.files import Walk
from app.backup.manifest import Kind, Manifest, Store, verify

WHEN = dt.datetime(2026, 12, 4, 2, 0, 0, tzinfo=dt.UTC)


def _tree(data: Path) -> None:
    (data / "workspaces" / "1" / "src").mkdir(parents=True)
    (data / "workspaces" / "1" / "src" / "main.py").write_text("print('hi')\n")
    (data / "workspaces" / "1" / "big.bin").write_bytes(os.urandom(300_000))  # past the in-memory spool (below)
    (data / "workspaces" / "1" / "empty").mkdir()
    (data / "workspaces" / "1" / "node_modules" / "left").mkdir(parents=True)
    (data / "workspaces" / "1" / "node_modules" / "left" / "index.js").write_text("x")
    (data / "workspaces" / "1" / "run.sh").write_text("#!/bin/sh\n")
    (data / "workspaces" / "1" / "run.sh").chmod(0o750)
    os.symlink("src/main.py", data / "workspaces" / "1" / "link")
    os.symlink("/etc/passwd", data / "workspaces" / "1" / "outside")
    os.mkfifo(data / "workspaces" / "1" / "pipe")
    (data / "agent-homes" / "1" / ".claude").mkdir(parents=True)
    (data / "agent-homes" / "1" / ".claude" / "session.json").write_text("{}")
    (data / "agent-homes" / "1" / ".npm" / "_cacache").mkdir(parents=True)
    (data / "agents" / "claude").mkdir(parents=True)  # installed agent CLIs: not a root
    (data / "agent-tokens" / "3").mkdir(parents=True)


def _write(data: Path, out: Path, database: bytes = b"SQLite format 3\x00 fake") -> Manifest:
    (out.parent / "db").write_bytes(database)
    writer = archive.Writer(out, out.parent)
    writer.add_file("database/chatcron.sqlite3", out.parent / "db", stable=True)
    walk = Walk(data)
    for found in walk:
        {Kind.DIR: writer.add_dir, Kind.SYMLINK: writer.add_symlink, Kind.FILE: writer.add_file}[found.kind](
            found.name, found.path)
    manifest = Manifest(chatcron_version="0.1.0", schema_revision="0015_project_roles", created_at=WHEN,
                        database=Store.SQLITE, members=dict(writer.members), skipped=tuple(walk.skipped))
    writer.add_manifest(manifest, WHEN.timestamp())
    writer.close()
    return manifest


@pytest.fixture
def made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Manifest]:
    monkeypatch.setattr(archive, "SPOOL_MEMORY", 64 << 10)  # a big file goes through the spool's file on disk
    data, spool = tmp_path / "data", tmp_path / "spool"
    spool.mkdir()
    _tree(data)
    manifest = _write(data, spool / "backup.tar.gz")
    return data, spool / "backup.tar.gz", manifest


def test_the_walk_takes_workspaces_and_agent_homes_without_caches(made: tuple[Path, Path, Manifest]) -> None:
    _, _, manifest = made
    names = set(manifest.members)
    assert {"workspaces/1/src/main.py", "workspaces/1/big.bin", "workspaces/1/empty", "workspaces/1/link",
            "workspaces/1/outside", "agent-homes/1/.claude/session.json", "database/chatcron.sqlite3"} <= names
    assert not [n for n in names if "node_modules" in n or ".npm" in n or n.startswith(("agents", "agent-tokens"))]
    assert manifest.members["workspaces/1/link"].kind == Kind.SYMLINK
    assert manifest.skipped == ("workspaces/1/pipe (not a regular file, folder or link)",)


def test_an_archive_reads_back_whole_and_extracts_as_it_was(made: tuple[Path, Path, Manifest],
                                                            tmp_path: Path) -> None:
    data, path, written = made
    manifest, seen = archive.scan(path)
    assert manifest == written
    verify(manifest, seen)
    into = tmp_path / "restored"
    archive.extract(path, manifest, lambda name: into / name)
    for name, entry in manifest.members.items():
        target = into / name
        if entry.kind == Kind.FILE and name.startswith("workspaces"):
            assert hashlib.sha256(target.read_bytes()).hexdigest() == entry.sha256
            assert target.read_bytes() == (data / name).read_bytes()
    assert os.readlink(into / "workspaces/1/outside") == "/etc/passwd"  # kept as a link, never followed
    assert (into / "workspaces/1/empty").is_dir()
    assert stat.S_IMODE((into / "workspaces/1/run.sh").stat().st_mode) == 0o750
    assert (into / "database/chatcron.sqlite3").read_bytes().startswith(b"SQLite format 3")
    assert not (into / "workspaces/1/node_modules").exists()


def _refused(path: Path, *words: str) -> None:
    with pytest.raises(BackupError) as caught:
        manifest, seen = archive.scan(path)
        verify(manifest, seen)
    for word in words:
        assert word in str(caught.value)


def test_a_truncated_archive_is_refused(made: tuple[Path, Path, Manifest]) -> None:
    _, path, _ = made
    raw = path.read_bytes()
    for keep in (len(raw) // 2, len(raw) - 3, 100):
        path.write_bytes(raw[:keep])
        _refused(path, "damaged or truncated")


@pytest.mark.parametrize("where", [0.1, 0.5, 0.9, -5], ids=["early", "middle", "late", "gzip-trailer"])
def test_a_flipped_byte_is_refused(made: tuple[Path, Path, Manifest], where: float) -> None:
    _, path, _ = made
    raw = bytearray(path.read_bytes())
    at = int(len(raw) * where) if where > 0 else len(raw) + int(where)
    raw[at] ^= 0x40
    path.write_bytes(bytes(raw))
    with pytest.raises(BackupError, match="damaged or truncated|does not match|manifest"):
        manifest, seen = archive.scan(path)
        verify(manifest, seen)


def _repack(path: Path, drop: str | None = None, add: tarfile.TarInfo | None = None, data: bytes = b"") -> None:
    """The same archive without one member, or with one more (the manifest kept as it was)."""
    out = io.BytesIO()
    with tarfile.open(path, "r:gz") as src, tarfile.open(fileobj=out, mode="w:gz") as dst:
        for member in src:
            if member.name == "manifest.json" and add is not None:
                dst.addfile(add, io.BytesIO(data))
            if member.name != drop:
                dst.addfile(member, src.extractfile(member) if member.isreg() else None)
    path.write_bytes(out.getvalue())


def test_a_missing_member_is_refused(made: tuple[Path, Path, Manifest]) -> None:
    _, path, _ = made
    _repack(path, drop="workspaces/1/src/main.py")
    _refused(path, "workspaces/1/src/main.py is missing")


def test_a_member_not_in_the_manifest_is_refused(made: tuple[Path, Path, Manifest]) -> None:
    _, path, _ = made
    extra = tarfile.TarInfo("workspaces/1/planted.sh")
    extra.size = 3
    _repack(path, add=extra, data=b"rm\n")
    _refused(path, "workspaces/1/planted.sh is not in the manifest")


@pytest.mark.parametrize("name", ["../escape.txt", "/etc/cron.d/x", "agents/claude/bin/claude", "workspaces/../../x"])
def test_a_member_outside_the_data_dirs_folders_is_refused(made: tuple[Path, Path, Manifest], name: str) -> None:
    _, path, _ = made
    hostile = tarfile.TarInfo(name)
    hostile.size = 1
    _repack(path, add=hostile, data=b"x")
    _refused(path, repr(name))


def test_an_archive_without_a_manifest_is_not_a_backup(made: tuple[Path, Path, Manifest]) -> None:
    _, path, _ = made
    _repack(path, drop="manifest.json")
    _refused(path, "no manifest.json")
    path.write_bytes(gzip.compress(b"just some text"))
    _refused(path, "damaged or truncated")


def test_the_postgresql_tools_are_found_on_path_in_debians_folders_or_named(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from app.backup import postgres

    on_path, elsewhere = tmp_path / "bin", tmp_path / "pg16" / "bin"
    for folder, tools in ((on_path, ["pg_dump"]), (elsewhere, ["pg_dump", "pg_restore"])):
        folder.mkdir(parents=True)
        for tool in tools:
            (folder / tool).write_text("#!/bin/sh\n")
            (folder / tool).chmod(0o755)
    monkeypatch.setattr(postgres, "_DEBIAN", str(tmp_path / "none" / "{tool}"))
    monkeypatch.setenv("PATH", str(on_path))
    assert postgres.find_tool("pg_dump", None, "--pg-dump") == str(on_path / "pg_dump")
    with pytest.raises(BackupError, match="pg_restore was not found on PATH.*--pg-restore PATH"):
        postgres.find_tool("pg_restore", None, "--pg-restore")
    assert postgres.find_tool("pg_restore", str(elsewhere / "pg_restore"), "--pg-restore") == \
        str(elsewhere / "pg_restore")
    with pytest.raises(BackupError, match="--pg-dump .*nope: no such executable"):
        postgres.find_tool("pg_dump", str(tmp_path / "nope"), "--pg-dump")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(postgres, "_DEBIAN", str(tmp_path / "pg*" / "bin" / "{tool}"))
    assert postgres.find_tool("pg_restore", None, "--pg-restore") == str(elsewhere / "pg_restore")


def test_a_folder_swapped_for_a_link_during_the_backup_is_never_followed(tmp_path: Path) -> None:
    data, outside = tmp_path / "data", tmp_path / "outside"
    (data / "workspaces" / "1" / "sub").mkdir(parents=True)
    (data / "workspaces" / "1" / "sub" / "notes.md").write_text("mine")
    outside.mkdir()
    (outside / "notes.md").write_text("the host's secret")
    (outside / "deeper").mkdir()
    walking = Walk(data)
    walk = iter(walking)
    seen = [next(walk) for _ in range(3)]  # workspaces, workspaces/1, workspaces/1/sub: about to go below
    assert [f.name for f in seen] == ["workspaces", "workspaces/1", "workspaces/1/sub"]
    sub = data / "workspaces" / "1" / "sub"
    (sub / "notes.md").unlink()
    sub.rmdir()
    sub.symlink_to(outside)  # an agent swaps the folder for a link to the host's files
    rest = list(walk)
    assert all(not f.name.startswith("workspaces/1/sub/") for f in rest), rest
    assert [s for s in walking.skipped if s.startswith("workspaces/1/sub/ (cannot be listed")], walking.skipped
    out = tmp_path / "out.tar.gz"
    writer = archive.Writer(out, tmp_path)
    assert writer.add_file("workspaces/1/sub/notes.md", sub / "notes.md", base=data) is False
    assert writer.add_dir("workspaces/1/sub/deeper", sub / "deeper", base=data) is False
    writer.close()
    assert "workspaces/1/sub/notes.md" not in writer.members


def test_a_target_with_a_slash_is_a_folder_that_must_exist(tmp_path: Path) -> None:
    from app.backup.backup import target_path

    when = dt.datetime(2026, 12, 4, 2, 0, tzinfo=dt.UTC)
    assert target_path(f"{tmp_path}/", when) == tmp_path / "chatcron-20261204T020000Z.tar.gz"
    assert target_path(tmp_path, when) == tmp_path / "chatcron-20261204T020000Z.tar.gz"
    assert target_path(f"{tmp_path}/one.tar.gz", when) == tmp_path / "one.tar.gz"
    with pytest.raises(BackupError, match="does not exist"):
        target_path(f"{tmp_path}/missing/", when)
