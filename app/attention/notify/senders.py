"""One attempt of one delivery: a webhook POST or an email over SMTP. Never raises: every failure
becomes an :class:`~app.attention.notify.policy.Outcome` with the status (HTTP or SMTP code) and a reason.

An attempt — connect, send, read the whole answer — ends within its ``timeout`` seconds, however
the other side behaves (CHATCRON_NOTIFY_ATTEMPT_SECONDS). A socket timeout alone would not do it:
it bounds each read, and a receiver that sends one header line every few seconds never trips it.
So each attempt has an :class:`AttemptDeadline` that shuts the attempt's sockets down when its time
is up; the blocked read returns at once and the attempt is a failed one (retried with back-off).

A webhook connects only where its :class:`~app.attention.notify.destinations.Destinations` lets
it, on the first URL and on every redirect, and its failure is told in a status code or a few
fixed words: the delivery log is no window on what a receiver (or an internal service) answers.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import errno
import functools
import http.client
import os
import smtplib
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from urllib.parse import urljoin, urlsplit

from app.attention.notify import policy
from app.attention.notify.destinations import REFUSED, STRICT, DestinationRefused, Destinations
from app.attention.notify.outbox import Job
from app.core.config import SmtpServer

TIMEOUT_SECONDS = 10.0  # the default bound of one attempt (Settings.notify_attempt_seconds)
REDIRECTS = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 5  # hops followed after the first POST
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
    """Connects only where ``guard`` lets it — to the very address it checked — with the socket
    watched by the attempt's deadline."""

    def __init__(self, host: str, port: int | None, *, timeout: float, guard: Destinations) -> None:
        super().__init__(host, port, timeout=timeout)
        self._create_connection = lambda *a, **k: _watched(guard.connect(*a, **k))


class _HTTPSConnection(http.client.HTTPSConnection):
    """As :class:`_HTTPConnection`; TLS then names the URL's host (SNI, certificate check)."""

    def __init__(self, host: str, port: int | None, *, timeout: float, guard: Destinations) -> None:
        super().__init__(host, port, timeout=timeout, context=_tls())
        self._create_connection = lambda *a, **k: _watched(guard.connect(*a, **k))  # before TLS


@functools.cache
def _tls() -> ssl.SSLContext:
    return ssl.create_default_context()


@dataclasses.dataclass(frozen=True)
class _Answer:
    status: int
    location: str | None = None  # a redirect's Location


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float, guard: Destinations) -> _Answer:
    """One POST of ``body``; a 2xx answer is read to its end (up to ANSWER_MAX_BYTES)."""
    parts = urlsplit(url)
    connection_class = _HTTPSConnection if parts.scheme == "https" else _HTTPConnection
    # the port always given: http.client reads a bare IPv6 host's last group as a port otherwise
    port = parts.port or (443 if parts.scheme == "https" else 80)
    conn = connection_class(parts.hostname or "", port, timeout=timeout, guard=guard)
    try:
        conn.request("POST", (parts.path or "/") + (f"?{parts.query}" if parts.query else ""), body=body,
                     headers={**headers, "Connection": "close"})
        answer = conn.getresponse()
        if 200 <= answer.status < 300:
            answer.read(ANSWER_MAX_BYTES)
        return _Answer(answer.status, answer.getheader("Location") if answer.status in REDIRECTS else None)
    finally:
        conn.close()


def _next_hop(url: str, location: str) -> str | None:
    """Where a redirect leads, if it may be followed: an http(s) URL with a host, never from https
    down to plain http (the body and its signature would then cross the network in the clear)."""
    target = urljoin(url, location.strip())
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    return None if urlsplit(url).scheme == "https" and parts.scheme == "http" else target


def _exchange(job: Job, timeout: float, guard: Destinations) -> policy.Outcome:
    """POST the body, following redirects: a webhook is this POST wherever the receiver points
    (a redirect followed as a GET would deliver nothing), so every hop gets the same body and
    headers, and every hop's connection passes ``guard``."""
    body = job.body.encode()
    # The receiver checks webhook-timestamp against its own clock: the real time of this attempt,
    # not the deliverer's Clock (a test's is fake).
    headers = policy.webhook_headers(job.id, job.kind, job.secret or "", body, int(time.time()))
    url = job.target
    for _ in range(MAX_REDIRECTS + 1):
        answer = _post(url, body, headers, timeout, guard)
        if answer.location is None:
            if 200 <= answer.status < 300:
                return policy.Outcome(True, answer.status)
            return policy.Outcome(False, answer.status, f"HTTP {answer.status}")
        next_url = _next_hop(url, answer.location)
        if next_url is None:
            return policy.Outcome(False, answer.status, f"HTTP {answer.status}: a redirect to no http(s) URL "
                                                        "(or from https down to http)")
        url = next_url
    return policy.Outcome(False, answer.status, f"HTTP {answer.status}: more than {MAX_REDIRECTS} redirects")


# What the log says of an exchange that ended before a status: fixed words, never the other side's
# (a status line's reason, a banner, a certificate's names, an internal service's error text).
_FAILURES: tuple[tuple[type[BaseException], str], ...] = (
    (ConnectionRefusedError, "connection refused"),
    (TimeoutError, "timed out"),
    (socket.gaierror, "name not resolved"),
    (ssl.SSLCertVerificationError, "TLS certificate not accepted"),
    (ssl.SSLError, "TLS failed"),
    (ConnectionError, "connection closed"),  # reset, aborted, a broken pipe, closed before any answer
    (http.client.HTTPException, "not an HTTP answer"),
    (ValueError, "not a valid URL"),
)
_UNREACHABLE = (errno.EHOSTUNREACH, errno.ENETUNREACH)


def failure_words(exc: BaseException) -> str:
    """The delivery log's words for an exchange that failed with ``exc``."""
    for kind, words in _FAILURES:
        if isinstance(exc, kind):
            return words
    return "unreachable" if isinstance(exc, OSError) and exc.errno in _UNREACHABLE else "connection failed"


def send_webhook(job: Job, timeout: float = TIMEOUT_SECONDS, guard: Destinations = STRICT) -> policy.Outcome:
    """POST the body (and again on up to MAX_REDIRECTS redirects); a 2xx answer read to its end
    within ``timeout`` seconds (in all) is delivered, anything else is not. The log gets the status
    code or a few fixed words, never more of the receiver's answer."""
    deadline = AttemptDeadline(timeout)
    with deadline.running():
        try:
            outcome = _exchange(job, timeout, guard)
        except DestinationRefused:
            # Final: no back-off makes the rule allow it, and each retry would be one more probe of
            # the server's own network; the next event's delivery checks again.
            return policy.Outcome(False, None, REFUSED, final=True)
        except (http.client.HTTPException, OSError, ValueError) as exc:
            outcome = policy.Outcome(False, None, failure_words(exc))
    if deadline.expired:  # a cut-off answer can parse as a complete one: it was not
        return policy.Outcome(False, None, deadline.reason())
    return outcome


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
