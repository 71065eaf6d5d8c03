"""One attempt of one delivery: a webhook POST or an email over SMTP. Never raises: every failure
becomes an :class:`~app.attention.notify.policy.Outcome` with the status (HTTP or SMTP code) and a reason."""

from __future__ import annotations

import dataclasses
import smtplib
import ssl
import urllib.error
import urllib.request
from email.message import EmailMessage
from email.utils import formatdate, make_msgid

from app.attention.notify import policy
from app.attention.notify.outbox import Job
from app.core.config import SmtpServer

TIMEOUT_SECONDS = 10.0
USER_AGENT = "chatcron"


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A webhook answers where it is; following a redirect would re-send the body elsewhere."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # urllib calls it with these
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def webhook_request(job: Job) -> urllib.request.Request:
    """The POST of a webhook delivery: the exact stored body, signed with the channel's secret."""
    body = job.body.encode()
    headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT, "X-Chatcron-Event": job.kind,
               "X-Chatcron-Delivery": str(job.id), policy.SIGNATURE_HEADER: policy.sign(job.secret or "", body)}
    return urllib.request.Request(job.target, data=body, headers=headers, method="POST")


def send_webhook(job: Job, timeout: float = TIMEOUT_SECONDS) -> policy.Outcome:
    """POST the body; a 2xx answer is delivered, anything else (or no answer in ``timeout``) is not."""
    try:
        with _OPENER.open(webhook_request(job), timeout=timeout) as answer:
            status = answer.status
    except urllib.error.HTTPError as exc:
        return policy.Outcome(False, exc.code, f"HTTP {exc.code} {exc.reason}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return policy.Outcome(False, None, f"{type(exc).__name__}: {reason}")
    if 200 <= status < 300:
        return policy.Outcome(True, status)
    return policy.Outcome(False, status, f"HTTP {status}")


@dataclasses.dataclass(frozen=True)
class Mailer:
    """Sends a delivery's email through the configured SMTP server (STARTTLS when offered)."""

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
        server = self.server
        try:
            client_class = smtplib.SMTP_SSL if server.ssl else smtplib.SMTP
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
