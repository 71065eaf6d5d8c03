"""No secret reaches a log line, and no line is longer than :data:`MAX_CHARS`.

Every log record either process makes — ours, Reflex's, the ASGI server's, a library's, with its
traceback — passes through :func:`redact` when it is created (:func:`install` sets the record
factory): session cookies, ``Authorization`` values, tokens in query strings and the like become
``[redacted]``, and what is left is cut at :data:`MAX_CHARS` characters, so a crafted frame of
90 KB makes one short line, not 90 KB of log.
"""

from __future__ import annotations

import logging
import re
import traceback
from collections.abc import Mapping

MAX_CHARS = 2000
MAX_TRACEBACK_CHARS = 8000  # a traceback keeps its start and its end (where the error is)
MARK = "[redacted]"
# A setting whose name says it holds a secret (``api_key``, ``env.GH_TOKEN``…): its value is shown
# by no answer, page, message or log line (SPEC §18).
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD", re.IGNORECASE)
HIDDEN = "[secret, not shown]"  # what a person reads where a secret setting's value would be
_SECRETS = re.compile(
    r"""(?ix)
    (chatcron_\w+['"]?\s*[=:]\s*['"]?)[^;,\s'"&]+                # our cookies, in a header or a dict
    | (\b(?:authorization|x-chatcron-signature|cookie|set-cookie)['"]?\s*[:=,]\s*['"]?)[^'"\n]{4,}
    | (\bbearer\s+)[A-Za-z0-9._~+/=-]{8,}                      # a bearer token anywhere
    | (\bwhsec_)[A-Za-z0-9+/=]{8,}                             # a trigger URL's secret anywhere (SPEC §19)
    | ([?&](?:token|ticket|secret|password)=)[^&\s'"]+         # query strings
    | (['"][\w-]*(?:password|secret|token|ticket)['"]\s*:\s*['"])[^'"]*  # JSON/dict values (api_token…)
    """)


def _keep_name(match: re.Match[str]) -> str:
    return next(g for g in match.groups() if g is not None) + MARK


def _cut_traceback(text: str) -> str:
    if len(text) <= MAX_TRACEBACK_CHARS:
        return text
    head, tail = MAX_TRACEBACK_CHARS // 4, MAX_TRACEBACK_CHARS * 3 // 4
    return f"{text[:head]}\n… [{len(text) - head - tail} characters not logged] …\n{text[-tail:]}"


def redact(text: str) -> str:
    """``text`` without secrets, at most MAX_CHARS characters long (a cut says how much it left out)."""
    cleaned = _SECRETS.sub(_keep_name, text)
    if len(cleaned) > MAX_CHARS:
        cleaned = f"{cleaned[:MAX_CHARS]}… [{len(cleaned) - MAX_CHARS} more characters not logged]"
    return cleaned


def _exception_text(record: logging.LogRecord) -> str:
    if record.exc_info and record.exc_info[0] is not None:
        return "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
    return record.exc_text or ""


def install() -> None:
    """Redact every record made from now on in this process (idempotent)."""
    current = logging.getLogRecordFactory()
    if getattr(current, "_chatcron_redacting", False):
        return

    def factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = current(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: log what there is, as logging would
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info or record.exc_text:
            # Formatters print exc_text when set: the traceback is redacted and cut like the message.
            record.exc_text = _cut_traceback(_SECRETS.sub(_keep_name, _exception_text(record)))
            record.exc_info = None
        return record

    factory._chatcron_redacting = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def hide_setting_values(text: str, settings: Mapping[str, object], mark: str = MARK) -> str:
    """``text`` with the value of every secret setting in ``settings`` replaced by ``mark`` (values
    shorter than 4 characters are left: replacing them would garble the sentence, not hide much)."""
    for name, value in settings.items():
        if SECRET_NAME.search(name) and isinstance(value, str) and len(value.strip()) >= 4:
            text = text.replace(value.strip(), mark)
    return text
