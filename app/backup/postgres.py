"""The PostgreSQL store: ``pg_dump --format=custom`` of exactly the schema the store lives in, taken in
one snapshot, and ``pg_restore`` of such a dump into an empty schema — whatever either is called.

The store's schema is the connection's ``current_schema()``: ``public`` for an ordinary install, or
the one a ``search_path`` option in ``CHATCRON_DATABASE_URL`` names (the test suite runs every store
as a schema of one database that way). A dump is loaded without its ``CREATE SCHEMA``: into the
target schema itself when the names match, else into the target schema renamed for the load to the
dump's name and renamed back afterwards — so the target keeps its owner and grants, and the load is
one transaction (``--single-transaction --exit-on-error``): on any error nothing stays.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy.engine import URL, make_url

from app.backup.errors import BackupError
from app.backup.manifest import Snapshot
from app.core.db import Database
from app.core.migrate import current_revision

_SCHEMA_ENTRY = re.compile(r"^\d+; \d+ \d+ (SCHEMA|COMMENT - SCHEMA|ACL - SCHEMA) ")  # a TOC line of the schema itself
_DEBIAN = "/usr/lib/postgresql/*/bin/{tool}"  # Debian and Ubuntu keep every major version's tools here


def find_tool(tool: str, given: str | None, option: str) -> str:
    """The ``pg_dump``/``pg_restore`` to run: ``given`` (``option``'s value), else the one on PATH (the
    client tools are installed side by side), else the newest in Debian's versioned folders.
    BackupError when there is none."""
    if given:
        path = shutil.which(given)
        if path is None:
            raise BackupError(f"{option} {given}: no such executable")
        return path
    found = shutil.which(tool) or next(
        iter(sorted(glob.glob(_DEBIAN.format(tool=tool)), key=_major, reverse=True)), None)
    if found is None:
        raise BackupError(f"{tool} was not found on PATH: install the PostgreSQL client tools (the server's major "
                          f"version or newer) or name it with {option} PATH")
    return found


def _major(path: str) -> int:
    parts = Path(path).parts
    return int(parts[-3]) if parts[-3].isdigit() else 0


def libpq(db: Database, work: Path) -> str:
    """A libpq connection URI for the tools. The password is never in it (a command line is visible to
    every user of the host): it goes into a password file of ``work`` (0600) that the URI names."""
    url = make_url(db.url)
    query = dict(url.query)
    if url.password:
        passfile = work / "pgpass"
        secret = str(url.password).replace("\\", "\\\\").replace(":", "\\:")
        fd = os.open(passfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"*:*:*:*:{secret}\n")
        query["passfile"] = str(passfile)
    return URL.create("postgresql", username=url.username, host=url.host, port=url.port, database=url.database,
                      query=query).render_as_string(hide_password=False)


def _run(argv: list[str], what: str) -> str:
    done = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    if done.returncode != 0:
        reason = next((line.strip() for line in done.stderr.splitlines() if line.strip()), f"exit {done.returncode}")
        raise BackupError(f"{what} failed: {reason[:300]}")
    return done.stdout


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def snapshot(db: Database, dest: Path, pg_dump: str) -> Snapshot:
    """Dump the store's schema into ``dest`` (custom format, uncompressed: the archive compresses it)
    from one exported snapshot, and read its revision and row counts in that same snapshot."""
    uri = libpq(db, dest.parent)
    with db.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
        with conn.begin():
            exported = conn.exec_driver_sql("SELECT pg_export_snapshot()").scalar_one()
            schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
            revision = current_revision(conn) if schema else None
            if revision is None:
                raise BackupError("the database has no schema yet: run `python -m app.manage migrate` first")
            rows = _rows(conn, schema)
            _run([pg_dump, "--format=custom", "--compress=0", "--no-password", f"--schema={_quoted(schema)}",
                  f"--snapshot={exported}", f"--file={dest}", f"--dbname={uri}"], "pg_dump")
    return Snapshot(revision=revision, rows=rows, schema=schema)


def _tables(conn: sa.Connection, schema: str) -> list[str]:
    return list(conn.execute(sa.text("SELECT tablename FROM pg_tables WHERE schemaname = :s ORDER BY tablename"),
                             {"s": schema}).scalars())


def _rows(conn: sa.Connection, schema: str) -> dict[str, int]:
    return {name: conn.exec_driver_sql(f"SELECT count(*) FROM {_quoted(schema)}.{_quoted(name)}").scalar_one()
            for name in _tables(conn, schema)}


def target_problem(db: Database) -> str | None:
    """Why the store at ``db`` cannot take a restore (None: it can): its schema must exist and hold
    nothing."""
    with db.engine.connect() as conn:
        schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
        if schema is None:
            return "the database URL's search_path names no schema that exists (create it first)"
        count = conn.execute(sa.text("SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                                     "WHERE n.nspname = :s"), {"s": schema}).scalar_one()
        tables = _tables(conn, schema) if count else []
    if count:
        shown = ", ".join(tables[:3]) + (", …" if len(tables) > 3 else "")
        return f"schema {schema} of the database holds {count} objects ({len(tables)} tables: {shown})"
    return None


def name_clash(db: Database, dumped: str) -> str | None:
    """Why a dump of schema ``dumped`` cannot be loaded into the store's schema (None: it can): the
    load borrows the dump's name for a moment, so no other schema of the database may have it."""
    with db.engine.connect() as conn:
        schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
        taken = dumped != schema and conn.execute(sa.text("SELECT 1 FROM pg_namespace WHERE nspname = :s"),
                                                  {"s": dumped}).first() is not None
    if taken:
        return (f"the backup's schema {dumped} is another schema of this database, whose name the restore needs for a "
                f"moment: restore into another database, or into a schema called {dumped} (nothing was written)")
    return None


def load(db: Database, dump: Path, dumped: str, pg_restore: str, work: Path) -> None:
    """Load ``dump`` (of schema ``dumped``) into the store's empty schema in one transaction; on an
    error nothing stays and the schema keeps its name."""
    uri = libpq(db, work)
    listing = [line for line in _run([pg_restore, "--list", str(dump)], "pg_restore --list").splitlines()
               if not _SCHEMA_ENTRY.match(line)]
    toc = work / "restore.list"
    toc.write_text("\n".join(listing) + "\n")
    with db.engine.connect() as conn:
        target = conn.exec_driver_sql("SELECT current_schema()").scalar_one()
    renamed = target != dumped
    if renamed:
        _rename(db, target, dumped)
    try:
        _run([pg_restore, "--no-owner", "--no-acl", "--no-password", "--single-transaction", "--exit-on-error",
              f"--use-list={toc}", f"--dbname={uri}", str(dump)], "pg_restore")
    except BackupError as exc:
        raise BackupError(f"{exc}; nothing was restored (the load is one transaction)") from None
    finally:
        if renamed:
            _rename(db, dumped, target)
    db.dispose()  # the pool's connections were opened before the load: none keeps a stale catalog


def _rename(db: Database, old: str, new: str) -> None:
    with db.engine.begin() as conn:
        conn.exec_driver_sql(f"ALTER SCHEMA {_quoted(old)} RENAME TO {_quoted(new)}")
