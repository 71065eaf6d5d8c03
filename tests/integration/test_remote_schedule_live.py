"""``remote-schedule`` (SPEC §7) against the real agent API (SPEC §5, §6), on SQLite and PostgreSQL.

The web process's FastAPI app is served over a real socket by granian (the server Reflex runs
on, embedded in a thread); the CLI is the copy published into the project's workspace, run as a
subprocess with a grant minted by ``app.core.grants`` — exactly what an agent turn gets.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from app.agents.workspace import ASSETS_DIR, workspace_path
from app.core import chats, projects
from app.core.context import Core
from app.core.grants import Scope
from app.core.models import User
from app.schedules.model import RunOutcome, ScheduledTask, TaskRun, TaskStatus
from app.schedules.service import Actor, TaskService
from tests.integration.apiclient import add_user
from tests.integration.apiserver import ApiServer
from tests.store import issue_grant, revoke_grant

pytestmark = pytest.mark.slow  # remote-schedule processes against a live API: left out of `make check`

CRON = ["--cron", "0 9 * * 1-5", "--tz", "Europe/Paris"]


@dataclasses.dataclass
class Agent:
    """Alice's project chat with the published CLI, as one agent turn sees it."""

    core: Core
    server: ApiServer
    alice: User
    project_id: int
    chat_id: int
    other_chat_id: int
    workspace: Path
    token: str = ""

    @property
    def tasks(self) -> TaskService:
        return TaskService(self.core.db, self.core.clock, self.core.settings)

    def grant(self, scope: Scope = Scope.MANAGE, ttl: int = 600, chat_id: int | None = None,
              task_id: int | None = None, run_id: int | None = None) -> tuple[str, int]:
        return issue_grant(self.core.db, self.core.clock, ttl, scope, self.alice.id, chat_id or self.chat_id,
                           self.project_id, task_id=task_id, task_run_id=run_id)

    def cli(self, *args: str, token: str | None = None) -> subprocess.CompletedProcess[str]:
        """``scripts/remote-schedule`` run from the workspace with the turn's two variables."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SCHEDULE_API_")}
        env |= {"SCHEDULE_API_URL": self.server.url, "SCHEDULE_API_TOKEN": token or self.token}
        return subprocess.run([sys.executable, "scripts/remote-schedule", *args], cwd=self.workspace, env=env,
                              capture_output=True, text=True, timeout=60, check=False)

    def ok(self, *args: str, token: str | None = None) -> Any:
        """Run with --json, expect exit 0, return the printed JSON."""
        result = self.cli("--json", *args, token=token)
        assert result.returncode == 0, (args, result.stdout, result.stderr)
        return json.loads(result.stdout)

    def row(self, task_id: int) -> ScheduledTask | None:
        with self.core.db.read() as s:
            return s.get(ScheduledTask, task_id)

    def rows(self) -> list[ScheduledTask]:
        with self.core.db.read() as s:
            return list(s.exec(select(ScheduledTask).order_by(ScheduledTask.id)))

    def draft(self, name: str = "daily news", *extra: str) -> dict[str, Any]:
        return self.ok("create", "--name", name, "--prompt", "Goal: a digest.", *CRON, *extra)

    def armed(self, name: str = "watch CI") -> int:
        """A task created through the CLI and armed by Alice through the service, as the drawer does."""
        task_id = self.ok("create", "--name", name, "--prompt", "Check CI.", "--every", "600")["id"]
        self.tasks.arm(Actor(self.alice), task_id)
        return task_id


@pytest.fixture
def agent(core: Core) -> Iterator[Agent]:
    alice = add_user(core, "alice@example.com")
    project = projects.create_project(core.db, core.clock, core.settings.workspaces_dir, "Alice's", alice)
    chat = chats.create_chat(core.db, core.clock, alice, project.id, "Plans")
    other = chats.create_chat(core.db, core.clock, alice, project.id, "Other")
    server = ApiServer(core)
    try:
        a = Agent(core, server, alice, project.id, chat.id, other.id,
                  workspace_path(core.settings.workspaces_dir, project.id))
        a.token = a.grant()[0]
        yield a
    finally:
        server.close()


def test_the_workspace_copy_is_the_shipped_cli(agent: Agent) -> None:
    published = agent.workspace / "scripts" / "remote-schedule"
    assert published.read_bytes() == (ASSETS_DIR / "remote-schedule").read_bytes()
    assert os.access(published, os.X_OK)


def test_whoami_describes_the_manage_grant(agent: Agent) -> None:
    who = agent.ok("whoami")
    assert (who["scope"], who["chat_id"], who["project_id"], who["owner"]) == (
        "manage", agent.chat_id, agent.project_id, "alice@example.com")
    assert who["task_id"] is None and who["run_id"] is None and who["expires_at"].endswith("Z")
    human = agent.cli("whoami")
    assert human.returncode == 0 and human.stdout.startswith("scope:    manage")


def test_create_makes_a_draft_that_list_and_show_report(agent: Agent) -> None:
    created = agent.draft("daily news", "--max-runs", "20", "--overlap", "skip", "--idempotency-key", "news")
    row = agent.row(created["id"])
    assert row is not None and row.chat_id == agent.chat_id
    assert (row.status, row.created_by, row.max_runs, row.overlap, row.idempotency_key, row.next_run_at) == (
        TaskStatus.DRAFT.value, "agent", 20, "skip", "news", None)
    assert json.loads(row.schedule) == {"kind": "cron", "cron": "0 9 * * 1-5", "timezone": "Europe/Paris"}
    assert created["status"] == "draft" and created["enabled"] is False

    listed = agent.ok("list")["schedules"]
    assert [t["id"] for t in listed] == [created["id"]]
    assert agent.ok("show", str(created["id"]))["prompt"] == "Goal: a digest."

    human = agent.cli("list").stdout
    assert f"{created['id']}" in human and "daily news" in human and "draft" in human
    assert "Monday through Friday" in human


def test_create_human_output_tells_the_agent_a_user_must_arm_it(agent: Agent) -> None:
    result = agent.cli("create", "--name", "daily news", "--prompt", "Goal: a digest.", *CRON)
    assert result.returncode == 0, result.stderr
    task_id = agent.rows()[0].id
    assert result.stdout.splitlines()[0] == (
        f'created schedule {task_id} "daily news" (draft — a user must arm it in the Schedules drawer)')


@pytest.mark.parametrize(("flags", "schedule"), [
    (["--every", "15m"], {"kind": "interval", "every_seconds": 900}),
    (["--at", "+2h"], {"kind": "once"}),
    (["--cron", "@daily", "--tz", "UTC"], {"kind": "cron", "cron": "@daily", "timezone": "UTC"}),
], ids=["every", "at-relative", "cron-macro"])
def test_each_timing_kind_is_stored(agent: Agent, flags: list[str], schedule: dict[str, Any]) -> None:
    created = agent.ok("create", "--name", "n", "--prompt", "p", *flags)
    stored = json.loads(agent.row(created["id"]).schedule)
    assert {k: stored[k] for k in schedule} == schedule


def test_prompt_from_stdin_is_stored_verbatim(agent: Agent) -> None:
    prompt = "Goal: résumé — “quoted”.\nEach fire: check.\n"
    env = {**os.environ, "SCHEDULE_API_URL": agent.server.url, "SCHEDULE_API_TOKEN": agent.token}
    result = subprocess.run([sys.executable, "scripts/remote-schedule", "create", "--name", "n", "--prompt-file", "-",
                             "--every", "3600"], cwd=agent.workspace, env=env, input=prompt, capture_output=True,
                            text=True, timeout=60, check=False)
    assert result.returncode == 0, result.stderr
    assert agent.rows()[0].prompt == prompt


def test_repeated_create_with_the_same_key_returns_the_same_task(agent: Agent) -> None:
    first = agent.draft("daily news", "--idempotency-key", "news")
    again = agent.cli("create", "--name", "daily news", "--prompt", "Goal: a digest.", *CRON,
                      "--idempotency-key", "news")
    assert again.returncode == 0
    assert "already exists for idempotency key 'news'" in again.stdout
    assert [r.id for r in agent.rows()] == [first["id"]]


def test_a_value_the_api_refuses_exits_1_with_its_message_and_creates_nothing(agent: Agent) -> None:
    bad_zone = agent.cli("create", "--name", "n", "--prompt", "p", "--cron", "0 9 * * *", "--tz", "Mars/Olympus")
    too_often = agent.cli("create", "--name", "n", "--prompt", "p", "--every", "5")
    assert (bad_zone.returncode, too_often.returncode) == (1, 1)
    assert "schedule.timezone" in bad_zone.stderr and "Mars/Olympus" in bad_zone.stderr
    assert "schedule.every_seconds" in too_often.stderr and "must be at least 1 minute" in too_often.stderr
    assert agent.rows() == []


def test_run_now_then_pause_an_armed_task(agent: Agent) -> None:
    task_id = agent.armed()
    queued = agent.cli("run-now", str(task_id))
    assert queued.returncode == 0, queued.stderr
    row = agent.row(task_id)
    assert row.pending_run and row.status == TaskStatus.ACTIVE.value

    paused = agent.cli("pause", str(task_id))
    assert paused.returncode == 0, paused.stderr
    assert paused.stdout.startswith(f'paused schedule {task_id} "watch CI"')
    assert agent.row(task_id).status == TaskStatus.PAUSED.value
    assert agent.ok("pause", str(task_id))["status"] == "paused"  # pausing again is fine


def test_a_draft_can_neither_run_nor_be_paused(agent: Agent) -> None:
    task_id = agent.draft()["id"]
    run_now, pause = agent.cli("run-now", str(task_id)), agent.cli("pause", str(task_id))
    assert (run_now.returncode, pause.returncode) == (1, 1)
    assert "a user must arm it first" in run_now.stderr
    row = agent.row(task_id)
    assert (row.status, row.pending_run) == (TaskStatus.DRAFT.value, False)


def test_arm_and_resume_are_refused_for_agents(agent: Agent) -> None:
    draft = agent.draft()["id"]
    paused = agent.armed()
    agent.tasks.pause(Actor(agent.alice), paused)
    arm, resume = agent.cli("arm", str(draft)), agent.cli("resume", str(paused))
    for result in (arm, resume):
        assert result.returncode == 1
        assert "only a user can arm or resume a schedule" in result.stderr
    assert (agent.row(draft).status, agent.row(paused).status) == (TaskStatus.DRAFT.value, TaskStatus.PAUSED.value)


def test_delete_removes_the_task(agent: Agent) -> None:
    task_id = agent.draft()["id"]
    deleted = agent.cli("delete", str(task_id))
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted schedule {task_id}\n")
    assert agent.row(task_id) is None
    gone = agent.cli("show", str(task_id))
    assert gone.returncode == 1 and f"no schedule with id {task_id}" in gone.stderr


def test_cancel_deletes_only_the_task_with_that_key(agent: Agent) -> None:
    keyed = agent.draft("keyed", "--idempotency-key", "news")["id"]
    other = agent.draft("other")["id"]
    cancelled = agent.cli("cancel", "--idempotency-key", "news")
    assert cancelled.returncode == 0, cancelled.stderr
    assert [r.id for r in agent.rows()] == [other] and keyed != other
    again = agent.cli("cancel", "--idempotency-key", "news")
    assert again.returncode == 1 and "no schedule in this chat has idempotency key 'news'" in again.stderr


def test_schedules_of_another_chat_are_invisible(agent: Agent) -> None:
    theirs, _ = agent.tasks.create(Actor(agent.alice), agent.other_chat_id,
                                   {"name": "other chat", "prompt": "p", "schedule": {"kind": "interval",
                                                                                      "every_seconds": 600}})
    assert agent.ok("list")["schedules"] == []
    for command in ("show", "pause", "run-now", "delete"):
        result = agent.cli(command, str(theirs.id))
        assert result.returncode == 1 and f"no schedule with id {theirs.id}" in result.stderr, command
    assert agent.row(theirs.id).status == TaskStatus.ACTIVE.value


def _claimed(agent: Agent) -> tuple[int, int]:
    """An armed task whose fire is in flight: a TaskRun claim recorded as its ``active_run_id``."""
    task_id = agent.armed("until green")
    now = agent.core.clock.now()
    with agent.core.db.write() as s:
        claim = TaskRun(task_id=task_id, occurrence_at=now, status=RunOutcome.RUNNING.value, fire_number=1,
                        claimed_at=now, started_at=now)
        s.add(claim)
        s.flush()
        row = s.get(ScheduledTask, task_id)
        row.active_run_id, row.run_count = claim.id, 1
        s.add(row)
        return task_id, claim.id


def test_complete_current_with_the_fires_grant_completes_its_task(agent: Agent) -> None:
    task_id, claim_id = _claimed(agent)
    token, _ = agent.grant(Scope.COMPLETE_SELF, task_id=task_id, run_id=claim_id)
    who = agent.ok("whoami", token=token)
    assert (who["scope"], who["task_id"], who["run_id"]) == ("complete-self", task_id, claim_id)

    done = agent.cli("complete-current", "--reason", "CI is green", token=token)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f'completed schedule {task_id} "until green"; it will not fire again\n'
    row = agent.row(task_id)
    assert (row.status, row.next_run_at) == (TaskStatus.COMPLETED.value, None)


def test_complete_current_from_a_fire_that_no_longer_holds_the_claim_changes_nothing(agent: Agent) -> None:
    task_id, claim_id = _claimed(agent)
    token, _ = agent.grant(Scope.COMPLETE_SELF, task_id=task_id, run_id=claim_id + 1000)
    result = agent.cli("complete-current", token=token)
    assert result.returncode == 1 and "no longer holds the schedule's claim" in result.stderr
    assert agent.row(task_id).status == TaskStatus.ACTIVE.value


def test_a_fires_grant_cannot_manage_schedules(agent: Agent) -> None:
    task_id, claim_id = _claimed(agent)
    token, _ = agent.grant(Scope.COMPLETE_SELF, task_id=task_id, run_id=claim_id)
    for args in (["list"], ["show", str(task_id)], ["pause", str(task_id)],
                 ["create", "--name", "n", "--prompt", "p", "--every", "600"]):
        result = agent.cli(*args, token=token)
        assert result.returncode == 1 and "can only complete its own task" in result.stderr, args
    assert [r.id for r in agent.rows()] == [task_id]
    assert agent.row(task_id).status == TaskStatus.ACTIVE.value


def test_complete_current_is_refused_to_an_interactive_turn(agent: Agent) -> None:
    task_id, _ = _claimed(agent)
    result = agent.cli("complete-current")
    assert result.returncode == 1 and "does not allow that" in result.stderr
    assert agent.row(task_id).status == TaskStatus.ACTIVE.value


def test_an_expired_grant_exits_3(agent: Agent) -> None:
    token, _ = agent.grant(ttl=0)
    result = agent.cli("list", token=token)
    assert result.returncode == 3
    assert "SCHEDULE_API_TOKEN" in result.stderr and "expired" in result.stderr


def test_a_revoked_grant_exits_3(agent: Agent) -> None:
    token, grant_id = agent.grant()
    assert agent.cli("whoami", token=token).returncode == 0
    revoke_grant(agent.core.db, agent.core.clock, grant_id)
    result = agent.cli("whoami", token=token)
    assert result.returncode == 3 and "revoked" in result.stderr


def test_an_unknown_token_exits_3_and_creates_nothing(agent: Agent) -> None:
    result = agent.cli("create", "--name", "n", "--prompt", "p", "--every", "600", token="ccg_not-a-real-token")
    assert result.returncode == 3 and "unknown schedule token" in result.stderr
    assert agent.rows() == []


# -- SPEC §14: the timing flags, a pause with a note and an end, skip-next ------------------------------


def test_timing_flags_reach_the_task(agent: Agent) -> None:
    created = agent.ok("create", "--name", "standup", "--prompt", "Remind.", *CRON, "--catchup", "none",
                       "--jitter", "2m", "--starts", "2030-01-01T00:00:00Z", "--ends", "2030-02-01T00:00:00+01:00")
    row = agent.row(created["id"])
    assert (row.catchup_window_seconds, row.jitter_seconds) == (None, 120)
    assert (row.starts_at.isoformat(), row.ends_at.isoformat()) == ("2030-01-01T00:00:00+00:00",
                                                                    "2030-01-31T23:00:00+00:00")
    too_much = agent.cli("create", "--name", "x", "--prompt", "p", "--every", "600", "--jitter", "61")
    assert too_much.returncode == 1 and "jitter_seconds" in too_much.stderr


def test_pause_with_note_and_until_then_skip_next_after_a_resume(agent: Agent) -> None:
    task_id = agent.armed()
    paused = agent.ok("pause", str(task_id), "--note", "waiting for the release", "--until", "+2h")
    assert (paused["pause_note"], paused["paused_by"]) == ("waiting for the release", "agent")
    row = agent.row(task_id)
    assert row.status == TaskStatus.PAUSED.value and row.paused_until is not None
    agent.tasks.resume(Actor(agent.alice), task_id)
    before = agent.row(task_id).next_run_at
    skipped = agent.cli("skip-next", str(task_id))
    assert skipped.returncode == 0, skipped.stderr
    with agent.core.db.read() as s:
        [record] = s.exec(select(TaskRun).where(TaskRun.task_id == task_id))
    assert (record.status, record.occurrence_at, record.error) == ("skipped", before, "skipped by the agent")
    assert agent.row(task_id).next_run_at > before


def test_an_agent_cannot_change_a_pause_a_user_made(agent: Agent) -> None:
    task_id = agent.armed()
    agent.tasks.pause(Actor(agent.alice), task_id, {"note": "on holiday"})
    refused = agent.cli("pause", str(task_id), "--until", "+10m")
    assert refused.returncode == 1 and "a user paused this schedule" in refused.stderr
    row = agent.row(task_id)
    assert (row.pause_note, row.paused_until, row.paused_by) == ("on holiday", None, "user")
