"""``GET /metrics`` (Prometheus text format), computed from the database at scrape time.

The scheduler is another process, so its figures are read from the rows it writes (task runs,
tasks, its instance row) rather than from in-memory counters; any web worker answers the same.
Lateness is taken over the task runs kept in history (CHATCRON_RUN_HISTORY_LIMIT per task).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator

import sqlalchemy as sa
from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from sqlmodel import func, select

from app.api.deps import core_of
from app.core.context import Core
from app.core.db import STORE_FAILURES
from app.core.models import Chat, Event, EventType, Project, Run, UsageDay
from app.core.spend import utc_day
from app.schedules.model import ScheduledTask, SchedulerInstance, TaskRun

router = APIRouter(include_in_schema=False)
BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def scheduler_beat(core: Core) -> tuple[bool, dt.datetime | None]:
    """(alive, last heartbeat) of the freshest running scheduler instance."""
    with core.db.read() as s:
        last = s.exec(select(func.max(SchedulerInstance.heartbeat_at))
                      .where(SchedulerInstance.stopped_at.is_(None))).one()
    if last is None:
        return False, None
    return last >= core.clock.now() - dt.timedelta(seconds=core.settings.run_lease_seconds), last


class DatabaseCollector:
    def __init__(self, core_provider: Callable[[], Core]) -> None:
        self.core_provider = core_provider

    def collect(self) -> Iterator[object]:
        core = self.core_provider()
        with core.db.read() as s:
            by_outcome = s.exec(select(TaskRun.status, func.count()).group_by(TaskRun.status)).all()
            by_run = s.exec(select(Run.source, Run.status, func.count()).group_by(Run.source, Run.status)).all()
            queued = s.exec(select(func.count()).select_from(ScheduledTask).where(ScheduledTask.pending_run)).one()
            iterations = s.exec(select(func.coalesce(func.sum(SchedulerInstance.iterations), 0))).one()
            late = s.exec(select(TaskRun.started_at, func.coalesce(TaskRun.planned_at, TaskRun.occurrence_at)).where(
                TaskRun.trigger == "schedule", TaskRun.started_at.is_not(None))).all()
            spent = s.exec(_usage_sums(core)).one()
            refused = s.exec(_egress_refusals()).all()
            ledger = _ledger(s, utc_day(core.clock.now()))
        fires = GaugeMetricFamily("chatcron_fires", "Fires kept in history, by outcome", labels=["outcome"])
        for status, count in by_outcome:
            fires.add_metric([status], count)
        yield fires
        running = dict(by_outcome).get("running", 0)
        yield GaugeMetricFamily("chatcron_claims_in_flight", "Scheduled turns claimed and running", value=running)
        yield GaugeMetricFamily("chatcron_queued_follow_ups", "Tasks with a queued follow-up", value=queued)
        yield CounterMetricFamily("chatcron_loop_iterations", "Scheduler loop iterations, all instances",
                                  value=iterations)
        runs = GaugeMetricFamily("chatcron_runs", "Agent turns by source and status", labels=["source", "status"])
        for source, status, count in by_run:
            runs.add_metric([source, status], count)
        yield runs
        yield _lateness([(a - b).total_seconds() for a, b in late])
        tokens = CounterMetricFamily("chatcron_tokens", "Tokens agents reported, all runs", labels=["direction"])
        for direction, total in zip(USAGE_DIRECTIONS, spent[:3], strict=True):
            tokens.add_metric([direction], float(total or 0))
        yield tokens
        yield CounterMetricFamily("chatcron_cost_usd", "Cost agents reported (USD), all runs",
                                  value=float(spent[3] or 0))
        egress = CounterMetricFamily("chatcron_agent_egress_refused",
                                     "Connections the egress proxy refused agents (SPEC §12.1), by project",
                                     labels=["project"])
        for project_id, count in refused:
            egress.add_metric([str(project_id)], count)
        yield egress
        yield from _spend_metrics(*ledger)
        alive, _ = scheduler_beat(core)
        yield GaugeMetricFamily("chatcron_scheduler_alive", "1 when a scheduler heartbeat is fresh", value=int(alive))


USAGE_DIRECTIONS = ("input", "output", "cached")
_USAGE_KEYS = ("input_tokens", "output_tokens", "cached_tokens", "cost_usd")


def _usage_sums(core: Core) -> sa.Select:
    """Sums of the ``runs.usage`` JSON fields, computed by the database (SQLite's json functions
    read the text column as is; PostgreSQL casts it to json first)."""
    column = sa.type_coerce(Run.usage, sa.JSON) if core.db.sqlite else sa.cast(Run.usage, sa.JSON)
    values = [column[key].as_integer() for key in _USAGE_KEYS[:3]] + [column[_USAGE_KEYS[3]].as_float()]
    return sa.select(*[func.coalesce(func.sum(v), 0) for v in values]).where(Run.usage.is_not(None))


def _ledger(s, today: dt.date) -> tuple[list, list, list]:
    """(per project: today's and all-time spend; per task: all-time spend; budgets) from the ledger."""
    days = UsageDay.__table__
    today_sum = lambda column: func.sum(sa.case((days.c.day == today, column), else_=0))  # noqa: E731
    projects = s.exec(sa.select(days.c.project_id, today_sum(days.c.tokens), today_sum(days.c.cost_usd),
                                func.sum(days.c.tokens), func.sum(days.c.cost_usd))
                      .where(days.c.project_id != 0).group_by(days.c.project_id)).all()
    tasks = s.exec(sa.select(days.c.task_id, func.sum(days.c.tokens), func.sum(days.c.cost_usd))
                   .where(days.c.task_id != 0).group_by(days.c.task_id)).all()
    budgets = s.exec(select(Project.id, Project.daily_token_budget, Project.daily_cost_budget_usd).where(
        sa.or_(Project.daily_token_budget.is_not(None), Project.daily_cost_budget_usd.is_not(None)))).all()
    return projects, tasks, budgets


def _spend_metrics(projects: list, tasks: list, budgets: list) -> Iterator[object]:
    """SPEC §15: what each project spent today (UTC) and in all, each task's fires in all, the budgets."""
    today_tokens = GaugeMetricFamily("chatcron_project_tokens_today", "Tokens a project's turns spent today (UTC)",
                                     labels=["project"])
    today_cost = GaugeMetricFamily("chatcron_project_cost_usd_today", "Cost of a project's turns today (UTC, USD)",
                                   labels=["project"])
    all_tokens = CounterMetricFamily("chatcron_project_tokens", "Tokens a project's turns spent, all days",
                                     labels=["project"])
    all_cost = CounterMetricFamily("chatcron_project_cost_usd", "Cost of a project's turns (USD), all days",
                                   labels=["project"])
    for pid, tokens_today, cost_today, tokens, cost in projects:
        today_tokens.add_metric([str(pid)], float(tokens_today or 0))
        today_cost.add_metric([str(pid)], float(cost_today or 0))
        all_tokens.add_metric([str(pid)], float(tokens or 0))
        all_cost.add_metric([str(pid)], float(cost or 0))
    task_tokens = CounterMetricFamily("chatcron_task_tokens", "Tokens a task's fires spent, all days", labels=["task"])
    task_cost = CounterMetricFamily("chatcron_task_cost_usd", "Cost of a task's fires (USD), all days", labels=["task"])
    for tid, tokens, cost in tasks:
        task_tokens.add_metric([str(tid)], float(tokens or 0))
        task_cost.add_metric([str(tid)], float(cost or 0))
    budget_tokens = GaugeMetricFamily("chatcron_project_daily_token_budget", "A project's daily token budget",
                                      labels=["project"])
    budget_cost = GaugeMetricFamily("chatcron_project_daily_cost_budget_usd", "A project's daily budget (USD)",
                                    labels=["project"])
    for pid, tokens, cost in budgets:
        if tokens is not None:
            budget_tokens.add_metric([str(pid)], float(tokens))
        if cost is not None:
            budget_cost.add_metric([str(pid)], float(cost))
    yield from (today_tokens, today_cost, all_tokens, all_cost, task_tokens, task_cost, budget_tokens, budget_cost)


def _egress_refusals() -> sa.Select:
    """(project id, refusals) from the turns' ``network … refused`` cards. The card's JSON is the
    proxy's own (app.agents.egress.refusal_reporter); an agent's tool cards never have that kind."""
    return (sa.select(Chat.project_id, func.count()).select_from(Event).join(Chat, Chat.id == Event.chat_id)
            .where(Event.type == EventType.TOOL.value, Event.text.like('%"kind": "network"%'),
                   Event.text.like('%"status": "refused"%'), Chat.project_id.is_not(None))
            .group_by(Chat.project_id))


def _lateness(values: list[float]) -> HistogramMetricFamily:
    buckets, total = [], 0
    for bound in BUCKETS:
        total = sum(1 for v in values if v <= bound)
        buckets.append((str(bound), total))
    buckets.append(("+Inf", len(values)))
    return HistogramMetricFamily("chatcron_fire_lateness_seconds",
                                 "Actual turn start minus the planned instant (the nominal one with its jitter)",
                                 buckets=buckets, sum_value=sum(values))


@router.get("/metrics")
def metrics(request: Request) -> Response:
    registry = CollectorRegistry()
    registry.register(DatabaseCollector(lambda: core_of(request)))
    try:
        body = generate_latest(registry)
    except STORE_FAILURES as exc:
        return Response(f"# database unavailable: {type(exc).__name__}\n", status_code=503, media_type="text/plain")
    return Response(body, media_type=CONTENT_TYPE_LATEST)
