"""Wake-up hints for the scheduler loop, through the database's own machinery.

PostgreSQL: ``NOTIFY chatcron_wake`` / ``LISTEN``. SQLite: a named pipe beside the database
file (every process using a SQLite file shares its folder). A hint carries no data — the
loop re-reads the database — and a lost hint only delays a fire to the loop's next safety
check, so notifying never fails the caller.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import select
import stat
import time
from pathlib import Path
from typing import Protocol

from sqlalchemy.engine import make_url

from app.core.db import Database, first_line

CHANNEL = "chatcron_wake"
log = logging.getLogger("chatcron.wake")


class Waker(Protocol):
    """Cross-process wake-up hint for the scheduler loop; carries no data (the database is the truth)."""

    def notify(self) -> None: ...


class NullWaker:
    """A waker for processes with no loop to wake (tests, one-off commands)."""

    def notify(self) -> None:
        return None


def fifo_path(db: Database) -> Path:
    database = make_url(db.url).database or "chatcron.db"
    return Path(database).resolve().with_suffix(".wake")


class DatabaseWaker:
    """Sends a wake hint; safe to call from any thread, never raises."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._fifo = fifo_path(db) if db.sqlite else None

    def notify(self) -> None:
        try:
            if self._fifo is not None:
                _poke_fifo(self._fifo)
            else:
                with self.db.engine.connect() as conn:
                    conn.exec_driver_sql(f"NOTIFY {CHANNEL}")
                    conn.commit()
        except Exception as exc:  # a hint is best effort; the loop's safety check covers a lost one
            log.debug("action=wake_failed error=%s", exc)


def _poke_fifo(path: Path) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.ENOENT):  # no scheduler listening: nothing to wake
            return
        raise
    try:
        os.write(fd, b"!")
    except BlockingIOError:
        pass  # the pipe is full of unread hints: the loop is already woken
    finally:
        os.close(fd)


class WakeListener:
    """The loop's side: ``wait(timeout)`` returns True when a hint arrived."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._fds: tuple[int, int] | None = None
        self._pg = None

    def open(self) -> None:
        if self.db.sqlite:
            path = fifo_path(self.db)
            if path.exists() and not stat.S_ISFIFO(path.stat().st_mode):
                path.unlink()
            if not path.exists():
                os.mkfifo(path, 0o600)
            reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # keeps the pipe from reporting EOF
            self._fds = (reader, keeper)
        else:
            import psycopg

            url = make_url(self.db.url).set(drivername="postgresql")
            self._pg = psycopg.connect(url.render_as_string(hide_password=False), autocommit=True)
            self._pg.execute(f"LISTEN {CHANNEL}")

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for a hint; drains every pending hint."""
        if self._fds is not None:
            ready, _, _ = select.select([self._fds[0]], [], [], max(0.0, timeout))
            if not ready:
                return False
            with contextlib.suppress(BlockingIOError):
                while os.read(self._fds[0], 4096):
                    pass
            return True
        import psycopg

        if self._pg is None or self._pg.closed:
            return self._reconnect(timeout)
        got = False
        try:
            for _ in self._pg.notifies(timeout=max(0.0, timeout), stop_after=1):
                got = True
        except psycopg.Error as exc:  # the server restarted or failed over: listen again
            log.warning("action=wake_listener_lost error=%s", first_line(exc))
            with contextlib.suppress(Exception):
                self._pg.close()
            return True  # re-read what is due: hints may have been missed meanwhile
        return got

    def _reconnect(self, timeout: float) -> bool:
        """Listen again after a lost connection; waits ``timeout`` before a retry when it fails."""
        try:
            self.open()
            return True
        except Exception as exc:
            log.warning("action=wake_listener_reconnect_failed error=%s", type(exc).__name__)
            time.sleep(max(0.0, timeout))
            return False

    def close(self) -> None:
        if self._fds is not None:
            for fd in self._fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._fds = None
        if self._pg is not None:
            with contextlib.suppress(Exception):
                self._pg.close()
            self._pg = None
