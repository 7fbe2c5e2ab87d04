"""The one registry of Chronicle's deployments, used by `chronicle serve`, `prefect.yaml` and its checker.

Every deployment is declared once here. `chronicle serve` turns the registry into
`flow.to_deployment(...)` objects; `prefect.yaml` (for `prefect deploy --all` to the process work pool)
is *rendered* from it by `chronicle deploy-check --write`, and `chronicle deploy-check` / the tests fail
when the file and the registry disagree. Schedules and the ingest folders depend on the site's
settings (timezone, `source_paths`), so both ways of deploying read the same `Settings`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

from chronicle.settings import Settings

if TYPE_CHECKING:
    from prefect import Flow
    from prefect.deployments.runner import RunnerDeployment
    from prefect.schedules import Schedule

WORK_POOL = "chronicle-process"
"""Process work pool `prefect deploy --all` targets and `chronicle setup` creates."""

LLM_LIMIT = "llm"
"""Global concurrency limit around every LLM call (slots = `settings.llm.concurrency`)."""

DUCKDB_WRITER_LIMIT = "duckdb-writer"
"""Global concurrency limit with one slot: the lock for write windows when runs span machines."""

# Interval schedules count from a fixed local wall-clock time, so "hourly" means minute 05 of every hour
# and "every 3 days" means 03:00 local every third day, whatever day the deployment was (re)applied.
_ANCHOR_HOURLY = "2026-01-05T00:05:00"
_ANCHOR_DISTILL = "2026-01-05T03:00:00"  # a Monday, after the 02:00 weekly chronicle


@dataclass(frozen=True)
class ScheduleSpec:
    """One schedule: a cron string or an interval, in an IANA timezone; renders for Python and YAML."""

    timezone: str
    cron: str | None = None
    interval: timedelta | None = None
    anchor: str | None = None
    """Local wall-clock time (naive ISO) in `timezone` the interval counts from."""
    active: bool = True

    def anchor_date(self) -> datetime | None:
        # With an explicit UTC offset: `prefect deploy` would read a naive anchor as UTC.
        return datetime.fromisoformat(self.anchor).replace(tzinfo=ZoneInfo(self.timezone)) if self.anchor else None

    def to_prefect(self) -> Schedule:
        from prefect.schedules import Cron, Interval

        if self.cron:
            return Cron(self.cron, timezone=self.timezone, active=self.active)
        assert self.interval is not None, "a schedule needs cron or interval"
        return Interval(self.interval, anchor_date=self.anchor_date(), timezone=self.timezone, active=self.active)

    def to_yaml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"cron": self.cron} if self.cron else {"interval": int(self.interval.total_seconds())}
        if anchor := self.anchor_date():
            out["anchor_date"] = anchor.isoformat()
        out.update(timezone=self.timezone, active=self.active)
        return out


@dataclass(frozen=True)
class DeploymentSpec:
    """A deployment of one flow: what runs, when, with which defaults, and how many at once."""

    name: str
    """Deployment name; the full name is `<flow_name>/<name>` (UI, `prefect deployment run`)."""
    flow_name: str
    """The flow's `@flow(name=...)`, which Prefect groups deployments under."""
    module: str
    """Import path of the flow module, e.g. `chronicle.flows.ingest_logs`."""
    function: str
    """The flow function's name in `module`."""
    description: str
    """Shown on the deployment's page; `{timezone}` is replaced by the configured timezone, so a schedule's
    description says in which timezone it runs (the UI's schedule badge shows only the cron's wording)."""
    tags: tuple[str, ...] = ()
    schedules: Callable[[Settings], list[ScheduleSpec]] = field(default=lambda s: [])
    parameters: Callable[[Settings], dict[str, Any]] = field(default=lambda s: {})
    concurrency_limit: int | None = None
    """At most this many runs of the deployment at once; further runs wait (ENQUEUE) instead of starting."""

    @property
    def full_name(self) -> str:
        return f"{self.flow_name}/{self.name}"

    @property
    def entrypoint(self) -> str:
        # A module path, not `flows/x.py:f`: the package is installed, so workers and `serve` find
        # the flow whatever their working directory is.
        return f"{self.module}.{self.function}"

    def describe(self, settings: Settings) -> str:
        return self.description.replace("{timezone}", settings.timezone)

    def load_flow(self) -> Flow[..., Any]:
        return getattr(importlib.import_module(self.module), self.function)

    def to_runner_deployment(self, settings: Settings) -> RunnerDeployment:
        """`flow.to_deployment(...)` for `prefect.serve`."""
        from prefect.client.schemas.objects import ConcurrencyLimitConfig, ConcurrencyLimitStrategy
        from prefect.deployments.runner import EntrypointType

        flow = self.load_flow()
        if flow.name != self.flow_name:
            raise ValueError(f"{self.entrypoint} is flow {flow.name!r}, the registry says {self.flow_name!r}")
        limit = None
        if self.concurrency_limit:
            limit = ConcurrencyLimitConfig(limit=self.concurrency_limit,
                                           collision_strategy=ConcurrencyLimitStrategy.ENQUEUE)
        return flow.to_deployment(name=self.name, schedules=[s.to_prefect() for s in self.schedules(settings)],
                                  parameters=self.parameters(settings), description=self.describe(settings),
                                  tags=list(self.tags), concurrency_limit=limit,
                                  entrypoint_type=EntrypointType.MODULE_PATH)

    def to_yaml(self, settings: Settings) -> dict[str, Any]:
        """This deployment's entry in `prefect.yaml`."""
        out: dict[str, Any] = {
            "name": self.name,
            "entrypoint": self.entrypoint,
            "description": self.describe(settings),
            "tags": list(self.tags),
            "parameters": self.parameters(settings),
            "schedules": [s.to_yaml() for s in self.schedules(settings)],
        }
        if self.concurrency_limit:
            out["concurrency_limit"] = {"limit": self.concurrency_limit, "collision_strategy": "ENQUEUE"}
        out["work_pool"] = {"name": WORK_POOL, "job_variables": {"env": dict(RUN_ENV)}}
        return out


RUN_ENV: dict[str, str] = {
    # Chronicle's own loggers (e.g. "DuckDB file ... is held by another process; waiting") reach the UI.
    "PREFECT_LOGGING_EXTRA_LOGGERS": "chronicle",
    # The CLI quiets Prefect to WARNING for terminal use; a served run that inherited that would send
    # no INFO lines to the UI, leaving its Logs tab empty.
    "PREFECT_LOGGING_LEVEL": "INFO",
    # A heartbeat event every 30 s (Prefect's minimum; its default is 180): the `chronicle-zombie-runs`
    # automation marks a run Crashed when they stop (deployments/automations.py, `zombie_after_s`).
    "PREFECT_FLOWS_HEARTBEAT_FREQUENCY": "30",
}
"""Environment every flow run gets, from `serve` and from the process work pool alike."""


def _ingest_schedules(settings: Settings) -> list[ScheduleSpec]:
    # Without source folders there is nothing to read: the schedule exists but stays paused.
    return [ScheduleSpec(settings.timezone, interval=timedelta(minutes=settings.ingest.interval_minutes),
                         anchor=_ANCHOR_HOURLY, active=bool(settings.ingest.source_paths))]


DEPLOYMENTS: tuple[DeploymentSpec, ...] = (
    DeploymentSpec(
        name="ingest",
        flow_name="ingest-logs",
        module="chronicle.flows.ingest_logs",
        function="ingest_logs",
        description="Every hour at minute 05 ({timezone}): read new and changed log files under the configured "
                    "source folders (CHRONICLE_SOURCE_PATHS) into DuckDB, then publish the analysts' read snapshot.",
        tags=("chronicle", "ingest", "scheduled"),
        schedules=_ingest_schedules,
        parameters=lambda s: {"paths": list(s.ingest.source_paths)},
        concurrency_limit=1,
    ),
    DeploymentSpec(
        name="weekly-chronicle",
        flow_name="weekly-chronicle",
        module="chronicle.flows.weekly_chronicle",
        function="weekly_chronicle",
        description="Every Monday 02:00 {timezone}: write the weekly report of the week that just ended "
                    "for every project (seed 000).",
        tags=("chronicle", "reports", "scheduled"),
        schedules=lambda s: [ScheduleSpec(s.timezone, cron="0 2 * * 1")],
        concurrency_limit=1,
    ),
    DeploymentSpec(
        name="distill-memory",
        flow_name="distill-memory",
        module="chronicle.flows.distill_memory",
        function="distill_memory",
        description="Every 3 days at 03:00 {timezone} (seed 002's heartbeat): distill recent daily notes into "
                    "long-term memories (LanceDB + MEMORY.md and friends).",
        tags=("chronicle", "memory", "scheduled"),
        schedules=lambda s: [ScheduleSpec(s.timezone, interval=timedelta(days=3), anchor=_ANCHOR_DISTILL)],
        concurrency_limit=1,
    ),
    DeploymentSpec(
        name="backfill-weeks",
        flow_name="backfill-weeks",
        module="chronicle.flows.backfill_weeks",
        function="backfill_weeks",
        description="On demand: write weekly reports for a past range of ISO weeks (Run > Custom run: choose "
                    "projects and weeks). Weeks that already have a report are skipped unless `force`.",
        tags=("chronicle", "reports", "backfill"),
        concurrency_limit=1,
    ),
    DeploymentSpec(
        name="backfill-shard",
        flow_name="backfill-shard",
        module="chronicle.flows.backfill_shard",
        function="backfill_shard",
        description="Started by backfill-weeks when CHRONICLE_BACKFILL_SPREAD is set (lake topology): one child run "
                    "sharing a backfill's weeks with the other workers of the pool. Not for manual runs.",
        tags=("chronicle", "reports", "backfill", "shard"),
        # No concurrency limit: the children of one backfill run side by side (and beside their parent).
    ),
)
"""Every Chronicle deployment, in the order the UI lists them in the docs."""


def by_name(name: str) -> DeploymentSpec:
    """The spec called `name` (deployment name or `flow/deployment`)."""
    for spec in DEPLOYMENTS:
        if name in (spec.name, spec.full_name):
            return spec
    raise KeyError(f"no deployment {name!r}; known: {', '.join(s.full_name for s in DEPLOYMENTS)}")


def available(specs: tuple[DeploymentSpec, ...] = DEPLOYMENTS) -> tuple[list[DeploymentSpec], list[str]]:
    """(specs whose flow module imports, names of those whose module does not exist yet).

    A flow module that exists but fails to import is a bug and raises; only a missing module is skipped,
    so `serve` keeps working on a checkout where a capability has not landed.
    """
    ok, missing = [], []
    for spec in specs:
        try:
            importlib.import_module(spec.module)
        except ModuleNotFoundError as exc:
            if exc.name != spec.module:
                raise
            missing.append(spec.full_name)
            continue
        ok.append(spec)
    return ok, missing
