"""The fire envelope (SPEC §3 "Fire"): the exact text a scheduled fire sends to the agent, its
parser, and the completion markers an agent ends its reply with. The one owner of that format:
the scheduler builds it, the transcript and the demo agent read it back."""

from __future__ import annotations

import dataclasses
import re

MARKER = "SCHEDULE_STATUS=COMPLETE"
MARKERS = (MARKER, "TASK_COMPLETE")  # the last non-empty line of a reply that completes its task

_TAIL = (
    "Continue the standing task from earlier in this chat. If the standing goal\n"
    "is complete, end your response with exactly:\n"
    f"{MARKER}\n\n"
    "Otherwise, report the current status and what remains. The backend will\n"
    "manage this schedule."
)
_PARSE = re.compile(
    r'\A\[scheduled task "(?P<name>.*)", fire (?P<number>\d+)/(?P<bound>\d+|∞)\]\n\n(?P<prompt>.*)\n\n'
    + re.escape(_TAIL) + r"\Z",
    re.S,
)


@dataclasses.dataclass(frozen=True)
class Envelope:
    """What a fire's text says: the task's name, which fire of how many, the stored prompt."""

    name: str
    fire_number: int
    max_runs: int | None
    prompt: str

    @property
    def fire_label(self) -> str:
        """"3/12", or "1/∞" for a task without a run limit."""
        return f"{self.fire_number}/{'∞' if self.max_runs is None else self.max_runs}"

    def text(self) -> str:
        return build(self.name, self.prompt, self.fire_number, self.max_runs)


def fire_bound(max_runs: int | None, once: bool, fires: int = 1) -> int | None:
    """How many fires a task has at most, as its envelope says: 1 for a once task, else its
    ``max_runs`` (None: no limit, written ∞). ``fires``: the fires counted so far (this one
    included) — a user's run-now before a once task's time is an extra fire, so its scheduled
    fire reads 2/2, never 2/1."""
    return max(1, fires) if once else max_runs


def build(name: str, prompt: str, fire_number: int, max_runs: int | None) -> str:
    """The exact text a fire sends to the agent (``max_runs``: the task's :func:`fire_bound`)."""
    bound = "∞" if max_runs is None else str(max_runs)
    return f'[scheduled task "{name}", fire {fire_number}/{bound}]\n\n{prompt}\n\n{_TAIL}'


def parse(text: str) -> Envelope | None:
    """The envelope ``text`` is, or None when it is any other prompt."""
    match = _PARSE.match(text)
    if match is None:
        return None
    bound = match["bound"]
    return Envelope(match["name"], int(match["number"]), None if bound == "∞" else int(bound), match["prompt"])


def has_marker(output: str) -> bool:
    """True when the last non-empty line of the assistant text is a completion marker."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return bool(lines) and lines[-1] in MARKERS


def split_marker(output: str) -> tuple[str, str]:
    """(the reply without its completion marker, the marker's tail: the marker line and what
    follows it, all blank) — or (``output``, "") when the last non-empty line is no marker.
    ``body + tail == output`` always, so streamed chunks can be joined back and split again."""
    stripped = output.rstrip()
    start = stripped.rfind("\n") + 1
    if not has_marker(output) or stripped[start:].strip() not in MARKERS:
        return output, ""
    return output[:start], output[start:]
