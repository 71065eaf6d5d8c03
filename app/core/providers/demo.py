"""The offline demo agent: deterministic, streams word by word, obeys a few directives.

Directives (anywhere in the prompt, one per line):
``/sleep N`` works for N seconds first; ``/fail`` fails the turn; ``/marker`` ends the reply with
the completion marker. (``/schedule`` and ``/complete`` come with the agent tools.)
"""

from __future__ import annotations

import re
import threading

from app.core.providers.base import Emit, ProviderError, TurnRequest

MARKER = "SCHEDULE_STATUS=COMPLETE"
MAX_SLEEP = 3600.0
_SLEEP = re.compile(r"^/sleep\s+(\d+(?:\.\d+)?)\s*$")


def directives(text: str) -> list[str]:
    """The directive lines of a prompt, in order."""
    return [line.strip() for line in text.splitlines() if line.strip().startswith("/")]


_ENVELOPE = re.compile(
    r'^\[scheduled task "(?P<name>.*)", fire (?P<fire>\S+)\]\n\n(?P<body>.*?)\n\nContinue the standing task', re.S)


def reply_for(text: str) -> str:
    """The demo's reply text for a prompt (without directives' side effects)."""
    fire = _ENVELOPE.match(text)
    if fire:
        said = reply_for(fire.group("body")).removeprefix("Demo agent here. ")
        return f'Demo agent here. Scheduled task "{fire.group("name")}", fire {fire.group("fire")}. {said}'
    plain = " ".join(line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("/"))
    words = plain.split()
    summary = " ".join(words[:40]) + (" …" if len(words) > 40 else "")
    if summary:
        return f"Demo agent here. You said: {summary}"
    return "Demo agent here. Done."


class DemoProvider:
    name = "demo"

    def __init__(self, word_delay: float = 0.04) -> None:
        self.word_delay = word_delay

    def run(self, request: TurnRequest, emit: Emit, cancel: threading.Event) -> None:
        lines = directives(request.text)
        for line in lines:
            match = _SLEEP.match(line)
            if match:
                seconds = min(float(match.group(1)), MAX_SLEEP)
                emit(f"Working for {match.group(1)} seconds… ")
                if cancel.wait(seconds):
                    raise ProviderError("cancelled while sleeping")
        self._stream(reply_for(request.text), emit, cancel)
        if "/fail" in lines:
            raise ProviderError("demo failure requested with /fail")
        if "/marker" in lines:
            emit("\n" + MARKER)

    def _stream(self, reply: str, emit: Emit, cancel: threading.Event) -> None:
        words = reply.split(" ")
        for i, word in enumerate(words):
            if cancel.is_set():
                raise ProviderError("cancelled")
            emit(word if i == len(words) - 1 else word + " ")
            if self.word_delay and cancel.wait(self.word_delay):
                raise ProviderError("cancelled")
