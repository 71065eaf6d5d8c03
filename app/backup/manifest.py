"""``manifest.json``: what a backup holds, and the checks a restore makes before it writes anything.

Pure: built from what the archive writer saw, parsed and compared with what the restore reads.
Every member of the archive has an entry — its type, size and sha256 (of a file's bytes, of a
link's target, of nothing for a folder) — and nothing is in the archive that the manifest does not
list. The manifest itself is the archive's last member; gzip's CRC covers it.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import hashlib
import json
import re
from collections.abc import Mapping

from app.backup.errors import BackupError

FORMAT = 1  # the layout of archive and manifest; a restore refuses a format it does not know
MANIFEST = "manifest.json"
ROOTS = ("workspaces", "agent-homes")  # the data dir's folders a backup holds (SPEC §21)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_SHA256 = re.compile(r"[0-9a-f]{64}")
SHOWN = 3  # differences named in the refusal; the rest are counted


class Store(enum.StrEnum):
    """Which database the archive's snapshot is of."""

    SQLITE = "sqlite"  # a copy of the file made by SQLite's online backup API
    POSTGRESQL = "postgresql"  # pg_dump --format=custom of the store's schema


DATABASE_MEMBER = {Store.SQLITE: "database/chatcron.sqlite3", Store.POSTGRESQL: "database/chatcron.pgdump"}


class Kind(enum.StrEnum):
    """What a member is."""

    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"  # restored as a link, never followed


@dataclasses.dataclass(frozen=True)
class Entry:
    """One member as the manifest lists it (and as the restore saw it)."""

    kind: Kind
    size: int
    sha256: str

    def to_json(self) -> dict[str, object]:
        return {"type": self.kind.value, "size": self.size, "sha256": self.sha256}


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """What a database snapshot is at: its schema revision and the rows of each table."""

    revision: str
    rows: dict[str, int]
    schema: str | None = None  # PostgreSQL: the schema it was taken of


@dataclasses.dataclass(frozen=True)
class Manifest:
    chatcron_version: str
    schema_revision: str  # the Alembic revision of the snapshot's schema
    created_at: dt.datetime  # aware UTC: when the database snapshot was taken
    database: Store
    members: Mapping[str, Entry]  # every member but the manifest, by name
    pg_schema: str | None = None  # PostgreSQL: the schema the store lived in
    rows: Mapping[str, int] = dataclasses.field(default_factory=dict)  # rows per table in the snapshot
    skipped: tuple[str, ...] = ()  # what the data dir held but the backup could not take (and why)

    @property
    def database_member(self) -> str:
        return DATABASE_MEMBER[self.database]

    def to_json(self) -> bytes:
        body = {"format": FORMAT, "chatcron_version": self.chatcron_version, "schema_revision": self.schema_revision,
                "created_at": self.created_at.astimezone(dt.UTC).isoformat().replace("+00:00", "Z"),
                "database": self.database.value, "database_member": self.database_member,
                "pg_schema": self.pg_schema, "rows": dict(sorted(self.rows.items())), "skipped": list(self.skipped),
                "members": {name: entry.to_json() for name, entry in self.members.items()}}
        # ASCII: a file name that is not UTF-8 (kept by Python as surrogates) round-trips as \\udcXX
        return (json.dumps(body, indent=1, ensure_ascii=True) + "\n").encode()


def name_problem(name: str, store: Store | None = None) -> str | None:
    """Why ``name`` may not be a member (None: it may): a relative path without ``.``/``..`` parts
    inside one of the data dir's ROOTS, or the database member of ``store`` (either database when
    None). Nothing a restore writes can land outside those folders."""
    if not name or "\x00" in name or name.startswith("/"):
        return "is not a relative path"
    parts = name.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return "has an empty, '.' or '..' part"
    databases = [DATABASE_MEMBER[store]] if store else list(DATABASE_MEMBER.values())
    if name in databases or parts[0] in ROOTS:
        return None
    return f"is outside {', '.join(f'{root}/' for root in ROOTS)} and is not the database"


def parse(data: bytes) -> Manifest:
    """The manifest of ``data``; raises BackupError naming the first field that is missing or wrong."""
    try:
        body = json.loads(data.decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BackupError(f"the archive's manifest.json is not valid JSON ({exc})") from None
    if not isinstance(body, dict):
        raise BackupError("the archive's manifest.json is not a JSON object")
    if body.get("format") != FORMAT:
        raise BackupError(f"the archive's format {body.get('format')!r} is not one this chatcron reads ({FORMAT}): "
                          "upgrade chatcron first")
    version, revision = _text(body, "chatcron_version"), _text(body, "schema_revision")
    try:
        created = dt.datetime.fromisoformat(_text(body, "created_at").replace("Z", "+00:00"))
        database = Store(body.get("database"))
    except ValueError as exc:
        raise BackupError(f"the archive's manifest.json has a bad created_at or database ({exc})") from None
    if created.tzinfo is None:
        raise BackupError("the archive's manifest.json has a created_at without a time zone")
    schema = body.get("pg_schema")
    if database == Store.POSTGRESQL and not (isinstance(schema, str) and schema):
        raise BackupError("the archive's manifest.json names no pg_schema for its PostgreSQL dump")
    rows, skipped = body.get("rows", {}), body.get("skipped", [])
    if not (isinstance(rows, dict) and all(isinstance(v, int) for v in rows.values())) or not (
            isinstance(skipped, list) and all(isinstance(v, str) for v in skipped)):
        raise BackupError("the archive's manifest.json has bad rows or skipped fields")
    return Manifest(chatcron_version=version, schema_revision=revision, created_at=created.astimezone(dt.UTC),
                    database=database, members=_members(body.get("members"), database),
                    pg_schema=schema if database == Store.POSTGRESQL else None, rows=rows, skipped=tuple(skipped))


def _text(body: dict, key: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise BackupError(f"the archive's manifest.json has no {key}")
    return value


def _members(raw: object, database: Store) -> dict[str, Entry]:
    if not isinstance(raw, dict):
        raise BackupError("the archive's manifest.json lists no members")
    members: dict[str, Entry] = {}
    for name, item in raw.items():
        problem = name_problem(name, database)
        if problem:
            raise BackupError(f"the archive's manifest.json lists {name!r}, which {problem}")
        try:
            entry = Entry(Kind(item["type"]), item["size"], item["sha256"])
        except (TypeError, KeyError, ValueError):
            raise BackupError(f"the archive's manifest.json has a bad entry for {name!r}") from None
        if not (isinstance(entry.size, int) and entry.size >= 0 and isinstance(entry.sha256, str)
                and _SHA256.fullmatch(entry.sha256)):
            raise BackupError(f"the archive's manifest.json has a bad size or sha256 for {name!r}")
        members[name] = entry
    if DATABASE_MEMBER[database] not in members:
        raise BackupError(f"the archive's manifest.json lists no {DATABASE_MEMBER[database]}")
    return members


def differences(listed: Mapping[str, Entry], seen: Mapping[str, Entry]) -> list[str]:
    """What the archive's members (``seen``) do not match in the manifest (``listed``), in name order:
    a member missing, one not listed, one of another type, size or checksum."""
    found = []
    for name in sorted(listed.keys() | seen.keys()):
        want, got = listed.get(name), seen.get(name)
        if got is None:
            found.append(f"{name} is missing")
        elif want is None:
            found.append(f"{name} is not in the manifest")
        elif want.kind != got.kind:
            found.append(f"{name} is a {got.kind.value}, the manifest says {want.kind.value}")
        elif want.sha256 != got.sha256 or want.size != got.size:
            found.append(f"{name} does not match its sha256")
    return found


def shape_problems(manifest: Manifest, seen: Mapping[str, Entry]) -> list[str]:
    """What no backup of ours holds, whatever its checksums say: a root that is not a folder, a
    database member that is not a regular file, or a member below a link (a restore writing it
    would go through the link, out of the data dir)."""
    found = []
    for root in ROOTS:
        if root in seen and seen[root].kind != Kind.DIR:
            found.append(f"{root} is not a folder")
    database = seen.get(manifest.database_member)
    if database is not None and database.kind != Kind.FILE:
        found.append(f"{manifest.database_member} is not a regular file")
    links = {name for name, entry in seen.items() if entry.kind == Kind.SYMLINK}
    for name in sorted(seen):
        parts = name.split("/")
        if any("/".join(parts[:i]) in links for i in range(1, len(parts))):
            found.append(f"{name} is below a link")
    return found


def verify(manifest: Manifest, seen: Mapping[str, Entry]) -> None:
    """Raise BackupError unless every member matches the manifest (the sentence names the first few)."""
    found = shape_problems(manifest, seen) + differences(manifest.members, seen)
    if found:
        more = f" (and {len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        raise BackupError(f"the archive does not match its manifest: {'; '.join(found[:SHOWN])}{more}; "
                          "nothing was restored")
