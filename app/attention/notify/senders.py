"""One attempt of one delivery: a webhook POST or an email over SMTP. Never raises: every failure
becomes an :class:`~app.attention.notify.policy.Outcome` with the status (HTTP or SMTP code) and a reason.

An attempt — connect, send, read the whole answer — ends within its ``timeout`` seconds, however
the other side behaves (CHATCRON_NOTIFY_ATTEMPT_SECONDS). A socket timeout alone would not do it:
it bounds each read, and a receiver that sends one header line every few seconds never trips it.
So each attempt has an :class:`AttemptDeadline` that shuts the attempt's sockets down when its time
is up; the blocked read returns at once and the attempt is a failed one (retried with back-off).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import http.client
import os
import smtplib
import socket
import ssl
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Any

from app.attention.notify import policy
from app.attention.notify.outbox import Job
from app.core.config import SmtpServer

TIMEOUT_SECONDS = 10.0  # the default bound of one attempt (Settings.notify_attempt_seconds)
USER_AGENT = "chatcron"
ANSWER_MAX_BYTES = 65536  # of a webhook's answer body read (and dropped); the rest is not waited for


class AttemptDeadline:
    """The wall-time bound of one attempt: every socket the attempt opens is shut down when
    ``seconds`` have passed since :meth:`start`, which ends any read or write blocked on it.

    Sockets are watched through a duplicate of their descriptor, so one that is later wrapped in
    TLS (STARTTLS detaches the original object) is still reached."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._lock = threading.Lock()
        self._watched: list[socket.socket] = []
        self._expired = False
        self._started = time.monotonic()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    @property
    def expired(self) -> bool:
        """The time is up (a socket timeout of ``seconds`` on an operation begun since the start
        can only fire after it, so it counts the same as the watchdog)."""
        with self._lock:
            return self._expired or time.monotonic() - self._started >= self.seconds

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down at the deadline (at once if it has passed)."""
        dup = socket.socket(fileno=os.dup(sock.fileno()))
        with self._lock:
            self._watched.append(dup)
            if self._expired:
                _shut(dup)

    def _expire(self) -> None:
        with self._lock:
            self._expired = True
            for sock in self._watched:
                _shut(sock)

    def reason(self) -> str:
        return f"no complete answer within {self.seconds:g} s (the attempt's time limit)"

    @contextlib.contextmanager
    def running(self) -> Iterator[AttemptDeadline]:
        """Start the clock and make this the deadline of sockets this thread opens meanwhile."""
        token = _CURRENT.set(self)
        self._started = time.monotonic()
        self._timer.start()
        try:
            yield self
        finally:
            self._timer.cancel()
            _CURRENT.reset(token)
            with self._lock:
                for sock in self._watched:
                    sock.close()
                self._watched.clear()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


# The deadline of the attempt the current thread is making; the connection classes below hand it
# every socket they open (urllib and smtplib open them deep inside, on the calling thread).
_CURRENT: contextvars.ContextVar[AttemptDeadline | None] = contextvars.ContextVar("notify_attempt", default=None)


def _watched(sock: socket.socket) -> socket.socket:
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.watch(sock)
    return sock


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = lambda *a, **k: _watched(socket.create_connection(*a, **k))


class _HTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._create_connection = lambda *a, **k: _watched(socket.create_connection(*a, **k))  # before TLS


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(_HTTPSConnection, req, context=self._context)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook answers where it is; following a redirect would re-send the body elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # urllib calls it with these
        return None


_OPENER = urllib.request.build_opener(_NoRedirects, _HTTPHandler, _HTTPSHandler)


def webhook_request(job: Job) -> urllib.request.Request:
    """The POST of a webhook delivery: the exact stored body, signed with the channel's secret."""
    body = job.body.encode()
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Chatcron-Event": job.kind,
               "X-Chatcron-Delivery": str(job.id), policy.SIGNATURE_HEADER: policy.sign(job.secret or "", body)}
    return urllib.request.Request(job.target, data=body, headers=headers, method="POST")


def send_webhook(job: Job, timeout: float = TIMEOUT_SECONDS) -> policy.Outcome:
    """POST the body; a 2xx answer read to its end within ``timeout`` seconds (in all) is delivered,
    anything else is not."""
    deadline = AttemptDeadline(timeout)
    with deadline.running():
        try:
            with _OPENER.open(webhook_request(job), timeout=timeout) as answer:
                status = answer.status
                answer.read(ANSWER_MAX_BYTES)
        except urllib.error.HTTPError as exc:
            exc.close()
            if deadline.expired:
                return policy.Outcome(False, None, deadline.reason())
            return policy.Outcome(False, exc.code, f"HTTP {exc.code} {exc.reason}")
        except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as exc:
            if deadline.expired:
                return policy.Outcome(False, None, deadline.reason())
            reason = getattr(exc, "reason", exc)
            return policy.Outcome(False, None, f"{type(exc).__name__}: {reason}")
    if deadline.expired:  # a cut-off answer can parse as a complete one: it was not
        return policy.Outcome(False, None, deadline.reason())
    if 200 <= status < 300:
        return policy.Outcome(True, status)
    return policy.Outcome(False, status, f"HTTP {status}")


class _SMTP(smtplib.SMTP):
    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        return _watched(super()._get_socket(host, port, timeout))


class _SMTPS(smtplib.SMTP_SSL, _SMTP):
    """SMTP over TLS from the start; ``_SMTP`` sits under SMTP_SSL, so the plain socket is watched
    before the handshake."""


@dataclasses.dataclass(frozen=True)
class Mailer:
    """Sends a delivery's email through the configured SMTP server (STARTTLS when offered), the
    whole conversation within ``timeout`` seconds."""

    server: SmtpServer
    sender: str
    timeout: float = TIMEOUT_SECONDS

    def message(self, job: Job) -> EmailMessage:
        subject, text = policy.email_text(job.body)
        msg = EmailMessage()
        msg["From"], msg["To"], msg["Subject"] = self.sender, job.target, subject
        msg["Date"], msg["Message-ID"] = formatdate(usegmt=True), make_msgid(domain="chatcron")
        msg["X-Chatcron-Event"], msg["X-Chatcron-Delivery"] = job.kind, str(job.id)
        msg.set_content(text)
        return msg

    def send(self, job: Job) -> policy.Outcome:
        deadline = AttemptDeadline(self.timeout)
        with deadline.running():
            outcome = self._converse(job)
        if deadline.expired and not outcome.ok:
            return policy.Outcome(False, None, deadline.reason())
        return outcome

    def _converse(self, job: Job) -> policy.Outcome:
        server = self.server
        try:
            client_class = _SMTPS if server.ssl else _SMTP
            with client_class(server.host, server.port, timeout=self.timeout) as smtp:
                smtp.ehlo()
                if not server.ssl and smtp.has_extn("starttls"):
                    smtp.starttls(context=ssl.create_default_context())
                    smtp.ehlo()
                if server.user:
                    smtp.login(server.user, server.password)
                smtp.send_message(self.message(job))
        except smtplib.SMTPResponseException as exc:
            return policy.Outcome(False, exc.smtp_code, f"SMTP {exc.smtp_code} {_text(exc.smtp_error)}")
        except smtplib.SMTPRecipientsRefused as exc:
            code, text = next(iter(exc.recipients.values()), (None, b""))
            return policy.Outcome(False, code, f"SMTP recipient refused: {_text(text)}")
        except (smtplib.SMTPException, OSError) as exc:
            return policy.Outcome(False, None, f"{type(exc).__name__}: {exc}")
        return policy.Outcome(True, 250)


def _text(raw: bytes | str) -> str:
    return raw.decode(errors="replace") if isinstance(raw, bytes) else str(raw)
