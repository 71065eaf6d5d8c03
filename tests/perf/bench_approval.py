"""Approval answered → the agent goes on, with the real Claude Code (SPEC §13).

A chat whose project runs the ``claude`` preset with ``tool_policy=ask`` and a warm agent; each
sample is a turn whose Bash call becomes an approval. Another process answers it the way the API
does (``approvals.answer`` then the wake hint; tests/integration/answer_approval.py) and records
the instant its transaction committed. Measured from that instant (wall clock, polled every
millisecond) to

- *decision*: the turn's tool event that records the decision (the waiting request re-read the
  row and answered the agent: what the hint makes prompt);
- *text*: the agent's first ``assistant_text`` after the decision (the tool ran in the sandbox and
  the scripted model answered — Claude Code's own work included).

The same decision figure without the hint (``--no-hint``: the fallback re-read alone) shows what
the hint buys.

    python -m tests.perf.bench_approval [--quick]
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time

from sqlmodel import select

from app.attention import approvals
from app.core.models import Event, RunStatus
from tests.agents.anthropic_server import AnthropicServer, bash, text
from tests.agents.rig import ROOT, AgentRig, build_rig
from tests.perf.common import emit, main_for, median, percentile, prepared

DECISION_P95_TARGET_MS = 100.0
WAIT_S = 180.0
METRICS = ["approval_decision_p50_ms", "approval_decision_p95_ms", "approval_text_p50_ms", "approval_text_p95_ms",
           "approval_decision_nohint_p50_ms", "approval_decision_nohint_p95_ms"]


@dataclasses.dataclass(frozen=True)
class Sizes:
    samples: int
    no_hint: int


FULL, QUICK = Sizes(samples=25, no_hint=10), Sizes(samples=2, no_hint=1)


def _poll(what: str, found) -> object:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        value = found()
        if value:
            return value
        time.sleep(0.001)
    raise AssertionError(f"timed out waiting for {what}")


def _events_after(rig: AgentRig, run_id: int, after: int) -> list[Event]:
    with rig.core.db.read() as s:
        return list(s.exec(select(Event).where(Event.run_id == run_id, Event.id > after).order_by(Event.id)))


def _decided(event: Event) -> bool:
    if event.type != "tool":
        return False
    approval = json.loads(event.text).get("approval") or {}
    return approval.get("state") not in (None, "pending")


def _sample(rig: AgentRig, i: int, hint: bool) -> tuple[float, float]:
    rig.model.play(bash(f"touch sample-{i}.txt", "Checking."), text(f"Sample {i} done."))
    handle = rig.core.prompts.start(rig.chat, f"Run sample {i}.")
    [approval] = _poll("the approval", lambda: approvals.list_for(rig.core.db, rig.user, "pending"))
    mark = max((e.id for e in _events_after(rig, handle.run_id, 0)), default=0)
    allow = next(o["option_id"] for o in json.loads(approval.options) if o["kind"] == "allow_once")
    answerer = subprocess.Popen([sys.executable, "-m", "tests.integration.answer_approval", rig.core.db.url,
                                 str(approval.id), allow, "alice@example.com", *([] if hint else ["--no-hint"])],
                                cwd=ROOT, stdout=subprocess.PIPE, text=True)
    answered_at = json.loads(answerer.stdout.readline())["answered_at"]  # it exits while we poll
    decided = _poll("the decision", lambda: [e for e in _events_after(rig, handle.run_id, mark) if _decided(e)])
    decision_ms = (time.time() - answered_at) * 1000 if decided else 0.0
    replied = _poll("the reply", lambda: [e for e in _events_after(rig, handle.run_id, decided[0].id)
                                          if e.type == "assistant_text"])
    text_ms = (time.time() - answered_at) * 1000 if replied else 0.0
    result = handle.wait(WAIT_S)
    assert answerer.wait(60) == 0
    answerer.stdout.close()
    assert result is not None and result.status == RunStatus.SUCCEEDED, result
    return decision_ms, text_ms


def bench(kind: str, sizes: Sizes) -> None:
    model = AnthropicServer()
    try:
        with prepared(kind, "bench-approval-") as b:
            os.chmod(b.tmp, 0o711)  # the sandboxed agent's uid must traverse to its workspace and home
            rig = build_rig(b.settings, model, skill=False)
            try:
                rig.configure(tool_policy="ask")
                model.play(text("Ready."))
                warm = rig.core.prompts.start(rig.chat, "Are you there?").wait(WAIT_S)
                assert warm is not None and warm.status == RunStatus.SUCCEEDED, warm
                _measure(rig, sizes, kind)
            finally:
                rig.close()
    finally:
        model.close()


def _measure(rig: AgentRig, sizes: Sizes, kind: str) -> None:
    hinted = [_sample(rig, i, True) for i in range(sizes.samples)]
    bare = [_sample(rig, sizes.samples + i, False)[0] for i in range(sizes.no_hint)]
    decision, replied = [d for d, _ in hinted], [t for _, t in hinted]
    emit("approval_decision_p50_ms", median(decision), "ms", None, kind)
    emit("approval_decision_p95_ms", percentile(decision, 95), "ms", DECISION_P95_TARGET_MS, kind)
    emit("approval_text_p50_ms", median(replied), "ms", None, kind)
    emit("approval_text_p95_ms", percentile(replied, 95), "ms", None, kind)
    emit("approval_decision_nohint_p50_ms", median(bare), "ms", None, kind)
    emit("approval_decision_nohint_p95_ms", percentile(bare, 95), "ms", None, kind)


if __name__ == "__main__":
    main_for(__doc__, bench, FULL, QUICK)
