"""Wake hints for turns waiting on an approval (SPEC §13), across processes.

The answer is a row: a web worker writes it, and the turn that asked — in the scheduler process
or any web worker — reads it back. A turn re-reads its approval at least every
``FALLBACK_SECONDS``; a hint only makes the re-read prompt, so a lost hint delays an answer by at
most that, and never loses it.

- PostgreSQL: ``NOTIFY chatcron_approval``; each process that has a waiting turn keeps one
  ``LISTEN`` connection (a thread).
- SQLite: a folder of named pipes beside the database file (``<db>.approvals/``), one per process
  that has a waiting turn; the answering process writes a byte into each. A pipe whose process is
  gone has no reader (``ENXIO``) and is removed by the next writer.

A hint carries no data. The listener thread of a process wakes every waiting turn of that
process (an ``asyncio.Event`` per wait, set on the waiter's own loop).
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import secrets
import select
import threading
from pathlib import Path

from sqlalchemy.engine import make_url

from app.core.db import Database, first_line
from app.core.ports import APPROVAL_RECHECK_SECONDS

CHANNEL = "chatcron_approval"
FALLBACK_SECONDS = APPROVAL_RECHECK_SECONDS  # the longest a waiting turn goes without re-reading its approval
IDLE_SECONDS = 10.0  # a listener with no waiting turn for this long ends (its pipe removed)
log = logging.getLogger("chatcron.approvals")


def pipes_dir(db: Database) -> Path:
    database = make_url(db.url).database or "chatcron.db"
    return Path(database).resolve().with_suffix(".approvals")


def notify(db: Database) -> None:
    """Wake every process's waiting turns to re-read their approvals; never raises."""
    try:
        if db.sqlite:
            _poke_all(pipes_dir(db))
        else:
            with db.engine.connect() as conn:
                conn.exec_driver_sql(f"NOTIFY {CHANNEL}")
                conn.commit()
    except Exception as exc:  # a hint is best effort: the waiter's fallback re-read covers it
        log.debug("action=approval_hint_failed error=%s", exc)


def _poke_all(folder: Path) -> None:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return  # no process waits
    for name in names:
        path = folder / name
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # nobody reads it: its process is gone
                with contextlib.suppress(OSError):
                    path.unlink()
            continue
        try:
            os.write(fd, b"!")
        except BlockingIOError:
            pass  # full of unread hints: that process is already woken
        finally:
            os.close(fd)


class Listener:
    """This process's side: one thread that turns hints into wake-ups of the waiting turns."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._lock = threading.Lock()
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._thread: threading.Thread | None = None
        self.ready = threading.Event()  # set while hints are being received (tests wait for it)

    def subscribe(self) -> asyncio.Event:
        """An event set (on the calling loop) whenever a hint arrives; call on the waiter's loop."""
        event = asyncio.Event()
        with self._lock:
            self._waiters.add((asyncio.get_running_loop(), event))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="approval-hints", daemon=True)
                self._thread.start()
        return event

    def unsubscribe(self, event: asyncio.Event) -> None:
        with self._lock:
            self._waiters = {w for w in self._waiters if w[1] is not event}

    def _wake(self) -> None:
        with self._lock:
            waiters = list(self._waiters)
        for loop, event in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed
                loop.call_soon_threadsafe(event.set)

    def _still_wanted(self) -> bool:
        with self._lock:
            return bool(self._waiters)

    def _idle(self) -> bool:
        """True (and the thread is to end) when no turn waits; the next waiter starts a new one."""
        with self._lock:
            if self._waiters:
                return False
            self._thread = None
            return True

    def _run(self) -> None:
        while not self._idle():
            try:
                self._listen_sqlite() if self.db.sqlite else self._listen_postgres()
            except Exception as exc:  # waiters fall back to re-reading every second meanwhile
                log.warning("action=approval_listener_lost error=%s", first_line(exc))
                self._wake()  # hints may have been missed
                threading.Event().wait(FALLBACK_SECONDS)

    def _listen_sqlite(self) -> None:
        folder = pipes_dir(self.db)
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"{os.getpid()}-{secrets.token_hex(4)}"
        os.mkfifo(path, 0o600)
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)  # keeps the pipe from reporting EOF
        self.ready.set()
        try:
            while True:
                ready, _, _ = select.select([reader], [], [], IDLE_SECONDS)
                if not ready:
                    if not path.exists() or not self._still_wanted():  # removed by someone, or idle
                        return
                    continue
                with contextlib.suppress(BlockingIOError):
                    while os.read(reader, 4096):
                        pass
                self._wake()
        finally:
            self.ready.clear()
            for fd in (reader, keeper):
                os.close(fd)
            with contextlib.suppress(OSError):
                path.unlink()

    def _listen_postgres(self) -> None:
        import psycopg

        url = make_url(self.db.url).set(drivername="postgresql")
        with psycopg.connect(url.render_as_string(hide_password=False), autocommit=True) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            self._wake()  # listening now: re-read what may have been answered before
            self.ready.set()
            try:
                while True:
                    if any(True for _ in conn.notifies(timeout=IDLE_SECONDS, stop_after=1)):
                        self._wake()
                    elif not self._still_wanted():
                        return
            finally:
                self.ready.clear()


_listeners: dict[str, Listener] = {}
_listeners_lock = threading.Lock()


def listener(db: Database) -> Listener:
    """The process's listener for this database (started by its first waiter)."""
    with _listeners_lock:
        found = _listeners.get(db.url)
        if found is None:
            found = _listeners[db.url] = Listener(db)
        return found
