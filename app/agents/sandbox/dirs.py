"""The folders an agent may see, and the host-side modes and owners that make them reachable.

bubblewrap runs as the agent's uid (see ``app.agents.sandbox``), so it resolves every bind source
with that uid's permissions. The product sets what it owns — the data dir and its own folders get
``o=x`` (traverse, never list), the SQLite file ``0600`` — and never touches a folder above the
data dir: a source under a closed folder (:func:`closed_parent`) is staged by the root server
instead (app.agents.sandbox.bwrap).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from sqlalchemy.engine import make_url

from app.core.config import Settings
from app.core.db import is_sqlite, normalize_url
from app.core.ports import AgentStartError

SCRATCH_PREFIX = "chatcron-turn-"


class SandboxError(AgentStartError):
    """The agent sandbox cannot run this turn; the message says how to fix it (to an administrator:
    the user sees that the agent could not start)."""


def switches_uid(settings: Settings) -> bool:
    """Whether agents run under their own host uid: only a root server can hand them one."""
    return settings.agent_sandbox == "bwrap" and os.geteuid() == 0


def _traversable(st: os.stat_result, uid: int, gid: int) -> bool:
    if st.st_uid == uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == gid:  # setpriv --clear-groups: the primary gid is the agent's only group
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def closed_parent(path: Path, uid: int, gid: int) -> Path | None:
    """The first folder above ``path`` that ``uid``/``gid`` cannot traverse, or None."""
    for parent in reversed(path.parents):
        try:
            st = parent.stat()
        except OSError:
            return parent
        if not _traversable(st, uid, gid):
            return parent
    return None


def _open_to_traverse(path: Path) -> None:
    """o=x on a folder the product owns: the agent's uid may pass through it, never list it."""
    with contextlib.suppress(OSError):  # not ours to change (e.g. a mounted volume): reported at the turn
        mode = stat.S_IMODE(path.stat().st_mode)
        wanted = (mode & ~0o006) | 0o001
        if wanted != mode:
            os.chmod(path, wanted)


def prepare_data_dir(settings: Settings) -> None:
    """Create the data dir's agent folders with the modes the sandbox needs; the SQLite file 0600.

    The database must be unreadable to every uid but the server's even though the data dir is
    traversable: SQLite gives its -wal/-shm/-journal files the database file's mode.
    """
    data = settings.data_dir
    data.mkdir(parents=True, exist_ok=True)
    if switches_uid(settings):
        for folder in (data, settings.workspaces_dir, settings.agent_homes_dir, settings.agent_tokens_dir,
                       data / "tmp", data / "egress"):
            folder.mkdir(exist_ok=True)
            _open_to_traverse(folder)
    url = normalize_url(settings.db_url)
    database = make_url(url).database if is_sqlite(url) else None
    if database and database != ":memory:":
        db_file = Path(database)
        if db_file.parent.resolve() == data.resolve():
            if not db_file.exists():
                with contextlib.suppress(FileExistsError):
                    os.close(os.open(db_file, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            for suffix in ("", "-wal", "-shm", "-journal"):
                with contextlib.suppress(FileNotFoundError):
                    os.chmod(f"{db_file}{suffix}", 0o600)


def hand_over(settings: Settings, folder: Path) -> None:
    """Make ``folder`` (a workspace or agent home) the agent uid's own, mode 0700.

    Done once: a folder already owned by the agent is left alone. Links are never followed
    (lchown), so nothing a former unfenced agent planted makes the server chown outside.
    """
    if not switches_uid(settings):
        return
    uid, gid = settings.agent_uid, settings.agent_gid
    st = folder.lstat()
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise SandboxError(f"{folder} is not a folder")
    if (st.st_uid, st.st_gid) == (uid, gid):
        return
    for root, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            os.chown(os.path.join(root, name), uid, gid, follow_symlinks=False)
    os.chown(folder, uid, gid, follow_symlinks=False)
    os.chmod(folder, 0o700)


def hand_over_written(settings: Settings, home: Path, paths: Sequence[Path]) -> None:
    """Give the agent uid what the server just wrote into its (handed-over) ``home``: each path and
    the folders between it and ``home`` (a preset's config files, rewritten before every start).
    Links are not followed, and nothing outside ``home`` is touched."""
    if not switches_uid(settings):
        return
    uid, gid = settings.agent_uid, settings.agent_gid
    base = home.resolve()
    for path in paths:
        if not path.resolve().is_relative_to(base):
            continue
        chain = [path, *path.parents]
        for item in chain[:chain.index(home)] if home in chain else [path]:
            with contextlib.suppress(FileNotFoundError):
                if item.lstat().st_uid != uid:
                    os.chown(item, uid, gid, follow_symlinks=False)


@contextlib.contextmanager
def scratch(settings: Settings) -> Iterator[Path]:
    """A temporary folder for a loose chat's turn (workspace and home at once), removed afterwards.

    Sandboxed, it lives under ``<data-dir>/tmp`` (the system's temporary folder is not bound) and
    belongs to the agent uid.
    """
    if settings.agent_sandbox == "off":
        with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX) as folder:
            yield Path(folder)
        return
    parent = settings.data_dir / "tmp"
    parent.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX, dir=parent)).resolve()
    try:
        hand_over(settings, folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)  # rmtree never follows the links it meets
