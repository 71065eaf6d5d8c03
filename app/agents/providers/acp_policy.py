"""How a permission request is answered (SPEC §11, §13): pure choices, no SDK, no database.

- :func:`choose`: what the project's ``tool_policy`` does with a request — allow or reject it at
  once with one of the agent's options, or ask a person (an approval);
- :func:`outcome_of`: what a settled approval tells the agent.

Options are the agent's own, as ``{"option_id", "name", "kind"}`` dicts.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

ALLOW, DENY, ASK = "allow", "deny", "ask"
ALLOW_KINDS = ("allow_once", "allow_always")  # "allow once" first: a policy never widens itself
REJECT_KINDS = ("reject_once", "reject_always")
CANCELLED = "cancelled"


@dataclasses.dataclass(frozen=True)
class Choice:
    """``outcome``: "allowed", "rejected", "ask" or "cancelled" (no option fits); ``option_id``
    the option to answer with (None to ask, or when cancelled); ``by`` who decided."""

    outcome: str
    option_id: str | None
    by: str


def pick(options: Sequence[dict[str, str]], kinds: tuple[str, ...]) -> str | None:
    """The id of the first option of the first kind in ``kinds`` the agent offers."""
    for kind in kinds:
        for option in options:
            if option.get("kind") == kind:
                return option.get("option_id")
    return None


def choose(policy: str, options: Sequence[dict[str, str]], remote_schedule: bool) -> Choice:
    """The answer to a permission request under ``policy``: a plain call of the workspace's
    remote-schedule is always allowed (its grant scopes it); ``ask`` defers to a person."""
    if remote_schedule:
        return _answer(True, options, "capability")
    if policy == ASK:
        return Choice("ask", None, f"policy:{ASK}")
    return _answer(policy == ALLOW, options, f"policy:{policy}")


def _answer(allow: bool, options: Sequence[dict[str, str]], by: str) -> Choice:
    option = pick(options, ALLOW_KINDS if allow else REJECT_KINDS)
    if option is None:
        return Choice(CANCELLED, None, by)
    return Choice("allowed" if allow else "rejected", option, by)


def outcome_of(state: str | None, option_id: str | None, decided_by: str | None,
               options: Sequence[dict[str, str]]) -> Choice:
    """What a settled approval (its ``state``) answers the agent: the person's option; the reject
    option when nobody answered in time; "cancelled" when the turn ended first (or ``state`` is
    None: the turn was cancelled while waiting)."""
    if state in ("allowed", "rejected") and any(o.get("option_id") == option_id for o in options):
        return Choice(state, option_id, f"user:{decided_by}")
    if state == "expired":
        return _answer(False, options, "timeout")
    return Choice(CANCELLED, None, CANCELLED)
