"""A backfill spread over the work pool's workers (`CHRONICLE_BACKFILL_SPREAD`, lake topology).

The operator's backfill run plans the weeks as always, cuts them into disjoint shards (`services/shards.py`)
and starts a child run of the `backfill-shard` deployment for every shard but its own — no more than the pool
has other free workers (the API's view) — with `run_deployment` (an idempotency key derived from the run and
the shard, so a retried parent finds its children instead of doubling them). It writes its own shard, then
settles each child: one that ended gives its outcome rows (its table artifact); one that never started
working has its shard written here (still queued, it is cancelled); one whose worker died (its heartbeat
lapsed) is set Crashed and the weeks it did not finish are written here. The week leases of every fan-out
keep a week from being written twice whatever the timing. The parent publishes ONE progress bar, outcome
table and summary under its usual keys, as an unspread backfill does.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from chronicle.services import shards
from chronicle.services.run_tracking import current_flow_run_id
from chronicle.services.weekly import ProjectPlan, plan_project
from chronicle.settings import Settings
from chronicle.tasks.weekly import Progress, fan_out, publish_outcome, run_weeks
from chronicle.weekly.engine import WeekJob
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek

log = logging.getLogger("chronicle.weekly.spread")

SHARD_DEPLOYMENT = "backfill-shard/backfill-shard"
"""The deployment child runs are started from (declared in deployments/definitions.py)."""

WORKER_LABEL = "prefect.worker.name"
"""The label a Prefect worker gives every flow run it submits (its `--name`)."""


def shard_weeks(jobs: list[WeekJob]) -> shards.Weeks:
    out: shards.Weeks = {}
    for job in jobs:
        out.setdefault(job.project_id, []).append(job.week.number)
    return out


def plan_share(settings: Settings, weeks: shards.Weeks, *, force: bool,
               overwrite_edited: bool) -> tuple[list[WeekJob], datetime]:
    """A child's view of its shard: each project's weeks and their inputs, read in one window per project;
    and when they were read."""
    planned_at = datetime.now(UTC)
    work: list[WeekJob] = []
    for project, numbers in weeks.items():
        wanted = set(numbers)
        plan = plan_project(settings, project, IsoWeek.from_number(min(numbers)), IsoWeek.from_number(max(numbers)),
                            force=force, overwrite_edited=overwrite_edited, only_missing=False)
        work += [job for job in plan.to_run if job.week.number in wanted]
    return work, planned_at


def shard(settings: Settings, batch: str, weeks: shards.Weeks, participant: int, *, title: str, force: bool,
          overwrite_edited: bool, max_workers: int | None, counts: dict[str, Any]) -> list[WeekOutcome]:
    """A child run's part: take its shard, say it is alive, write the shard, publish its rows for the parent."""
    if not shards.own_shard(settings, batch, participant, participant):
        # Started after the parent had finished its own weeks and taken this shard: end at once, without
        # reading the weeks' inputs — on a shared host that CPU is the other runs'.
        _run_log().info("the parent run took this shard before this run started; nothing to do")
        return publish_outcome([], key=None, title=title, counts=counts, table=WeekOutcome.as_dict)
    with shards.alive(settings, batch, participant):
        work, planned_at = plan_share(settings, weeks, force=force, overwrite_edited=overwrite_edited)
        progress = Progress(None, len(work), 0, description="weeks of this shard done")
        rows = run_weeks(settings, work, max_workers=max_workers, planned_at=planned_at,
                         on_done=lambda _row: progress.step())
        # Full rows (reasons, messages), unkeyed: the parent reads them back and publishes the real table.
        return publish_outcome(rows, key=None, title=title, counts=counts, table=WeekOutcome.as_dict)


def spread_backfill(settings: Settings, plans: list[ProjectPlan], *, key: str, title: str, force: bool,
                     overwrite_edited: bool, max_workers: int | None, counts: dict[str, Any],
                     on_start: Callable[[], None] | None = None) -> list[WeekOutcome]:
    """`fan_out` spread over child runs (lake topology), or `fan_out` itself when spreading cannot work or does not
    pay. `on_start()` (once): when the first weeks' task runs are submitted, or before the children start."""
    work = sorted((job for plan in plans for job in plan.to_run), key=lambda job: (job.project_id, job.week.number))
    children = _children_wanted(settings, len(work), max_workers)
    if not children:
        return fan_out(settings, plans, key=key, title=title, max_workers=max_workers, counts=counts,
                       on_start=on_start)
    if on_start is not None:
        on_start()
    batch = current_flow_run_id()
    t0 = time.monotonic()
    parts = shards.cut(work, children + 1)
    started = _start_children(batch, parts, title=title, force=force, overwrite_edited=overwrite_edited,
                              max_workers=max_workers)
    if not started:
        return fan_out(settings, plans, key=key, title=title, max_workers=max_workers,
                       counts=counts)  # on_start was called above
    t_started = time.monotonic()
    mine = [job for i, part in enumerate(parts) if i not in started for job in part]
    rows = [row for plan in plans for row in plan.done]
    planned_at = min(plan.planned_at for plan in plans)
    watch = _Children(settings, batch, started)
    here: list[WeekOutcome] = []
    progress = Progress(key, len(rows) + len(work), len(rows), count=lambda: len(here) + watch.done())

    def write(jobs: list[WeekJob]) -> None:
        here.extend(run_weeks(settings, jobs, max_workers=max_workers, planned_at=planned_at,
                              on_done=lambda _row: progress.refresh()))

    try:
        write(mine)
        t1 = time.monotonic()
        _run_log().info("spread backfill: %d child run(s) started in %.1fs; this run wrote its %d week(s) in %.1fs",
                        len(started), t_started - t0, len(mine), t1 - t_started)
        while watch.pending:
            settled = watch.settle(progress)
            # What a settled child left unwritten (all of it, for a child that never started) is written here.
            have = {(r.project, r.week_number) for r in [*here, *watch.rows]}
            write([job for i in settled for job in parts[i] if (job.project_id, job.week.number) not in have])
        _run_log().info("spread backfill: %d week(s) from the child runs; %.1fs after this run's own shard; child "
                        "start-up (created -> working) %s", len(watch.rows), time.monotonic() - t1,
                        ", ".join(f"{s:.1f}s" for s in watch.start_times()) or "none (no child started)")
        credited, own = _credit_children(settings, here, {str(run_id) for run_id in started.values()})
        rows += [*watch.rows, *credited, *own]
    finally:
        shards.tidy(settings)
    progress.refresh(force=True)
    counts["spread"] = {"runs": len(started) + 1, "weeks_here": len(own),
                        "weeks_children": len(watch.rows) + len(credited), "child_start_s": watch.start_times()}
    return publish_outcome(_one_per_week(rows), key=key, title=title, counts=counts)


def _children_wanted(settings: Settings, weeks: int, max_workers: int | None) -> int:
    """How many child runs to start for a backfill of `weeks` weeks: 0 when spreading does not pay or
    cannot work, else the setting, capped by the pool's free workers."""
    children = settings.weekly.backfill_spread
    if children and not settings.lake.enabled:
        log.warning("backfill_spread=%d needs the lake topology (CHRONICLE_CATALOG): with an embedded DuckDB file "
                    "each worker would write its own file; running every week in this run", children)
        return 0
    if children < 1 or not shards.worth_spreading(settings, weeks, max_workers):
        return 0
    try:
        free = _free_workers()
    except Exception as exc:  # the API's view of the pool is an optimisation: without it, start them all
        log.warning("could not read the pool's workers (%s: %s); starting %d child run(s)", type(exc).__name__,
                    exc, children)
        return children
    if free is not None and free < children:
        _run_log().info("spread backfill: %d other worker(s) of the pool free; starting %d child run(s) instead of "
                        "%d", free, free, children)
        return free
    return children


def _credit_children(settings: Settings, rest: list[WeekOutcome],
                     children: set[str]) -> tuple[list[WeekOutcome], list[WeekOutcome]]:
    """Weeks the sweep found already written by a child (killed before it published its rows) are the
    child's: their outcome is what the child did, not `cached`. Returns (the children's, this run's)."""
    cached = [(r.project, r.week_number) for r in rest if r.outcome == "cached"]
    writers = shards.written_by(settings, cached)
    theirs, mine = [], []
    for row in rest:
        writer = writers.get((row.project, row.week_number)) if row.outcome == "cached" else None
        if writer in children:
            outcome = "empty" if row.entries == 0 else "generated"
            theirs.append(replace(row, outcome=outcome, why=f"written by child run {writer} before it ended"))
        else:
            mine.append(row)
    return theirs, mine


def _run_log() -> logging.Logger | logging.LoggerAdapter:
    """The flow run's logger (lines reach the run's page in the UI), or this module's outside a run."""
    from prefect import get_run_logger
    from prefect.exceptions import MissingContextError

    try:
        return get_run_logger()
    except MissingContextError:
        return log


def _one_per_week(rows: list[WeekOutcome]) -> list[WeekOutcome]:
    seen: dict[tuple[str, int], WeekOutcome] = {}
    for row in rows:
        seen.setdefault((row.project, row.week_number), row)
    return list(seen.values())


def _start_children(batch: str, parts: list[list[WeekJob]], *, title: str, force: bool, overwrite_edited: bool,
                    max_workers: int | None) -> dict[int, UUID]:
    """Start a child run for each shard but the first (participants 1..n); {} when the shard deployment
    cannot be run."""
    from prefect.deployments import run_deployment

    started: dict[int, UUID] = {}
    children = len(parts) - 1
    for participant in range(1, len(parts)):
        params = {"batch": batch, "weeks": shard_weeks(parts[participant]), "participant": participant,
                  "force": force, "overwrite_edited": overwrite_edited, "max_workers": max_workers}
        try:
            run = run_deployment(SHARD_DEPLOYMENT, parameters=params, timeout=0, as_subflow=True,
                                 idempotency_key=f"{batch}:shard-{participant}",
                                 flow_run_name=f"{title}-shard{participant}of{children}",
                                 tags=["chronicle", "backfill", "shard"])
        except Exception as exc:  # no such deployment (e.g. an ephemeral API): this run writes the shards
            log.warning("could not start a %s run (%s: %s); the shards of the runs that did not start are "
                        "written here", SHARD_DEPLOYMENT, type(exc).__name__, exc)
            break
        started[participant] = run.id
    return started


class _Children:
    """The parent's view of its child runs: which are still `pending` (not yet settled), the outcome `rows` of
    those that ended, and how long each took from being created to running (its start-up: the worker's poll,
    a process, imports)."""

    def __init__(self, settings: Settings, batch: str, started: dict[int, UUID]) -> None:
        self._settings, self._batch = settings, batch
        self.pending = dict(started)
        self.rows: list[WeekOutcome] = []
        self._start_s: dict[UUID, float] = {}
        self._silent_since: dict[int, float] = {}
        self._started: set[int] = set()

    def done(self) -> int:
        """Weeks the children finished so far: the rows of those that ended, the reports of the others."""
        running = [str(run_id) for run_id in self.pending.values()]
        return len(self.rows) + shards.written_count(self._settings, running)

    def start_times(self) -> list[float]:
        return [round(s, 1) for s in self._start_s.values()]

    def settle(self, progress: Progress) -> list[int]:
        """Wait until at least one pending child is settled; those settled (their unwritten weeks are the
        caller's).

        A child that ended gives its rows. One that has not started working is not waited for (a backfill too
        small to profit does not pay a child's start-up): its shard is taken from it, and still queued, it is
        cancelled. A child that started and whose heartbeat lapsed died (worker killed, host lost): it is set
        Crashed, as `chronicle runs` says, not Cancelled, and the weeks it wrote are credited to it by the caller.
        """
        from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

        from chronicle.services.prefect_client import prefect_client

        ended: list[UUID] = []
        settled: list[int] = []
        with prefect_client() as client:
            while not settled:
                runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(
                    id=FlowRunFilterId(any_=list(self.pending.values()))))
                by_id = {run.id: run for run in runs}
                for participant, run_id in list(self.pending.items()):
                    verdict = self._verdict(client, participant, by_id.get(run_id))
                    if verdict == "ended":
                        ended.append(run_id)
                    if verdict is not None:
                        settled.append(participant)
                        del self.pending[participant]
                progress.refresh()
                if not settled:
                    time.sleep(0.5)
        self.rows += _rows_of(ended)
        return settled

    def _verdict(self, client: Any, participant: int, run: Any) -> str | None:
        """"ended", "orphaned" (its shard is the parent's now), or None (still working: wait)."""
        from prefect.states import Cancelled, Crashed

        state = run.state if run is not None else None
        if state is None:
            return None
        if run.start_time is not None and run.created is not None:
            self._start_s[run.id] = (run.start_time - run.created).total_seconds()
        if state.is_final():
            return "ended"
        if shards.is_alive(self._settings, self._batch, participant):
            self._silent_since.pop(participant, None)
            return None
        if participant not in self._started and shards.own_shard(self._settings, self._batch, participant, 0):
            if state.is_scheduled():  # nobody picked it up: it never needs to run
                client.set_flow_run_state(run.id, Cancelled(message="its shard was written by the parent run"),
                                          force=True)
            else:
                log.info("child run %s (%s) had not started working when the parent was done; the parent writes "
                         "its shard", run.id, state.name)
            return "orphaned"
        self._started.add(participant)  # its child took the shard first
        silent_s = time.monotonic() - self._silent_since.setdefault(participant, time.monotonic())
        if silent_s < self._settings.weekly.spread_alive_s:
            return None  # between taking its shard and its first heartbeat, or ending: not dead yet
        log.warning("child run %s stopped its heartbeat; its unfinished weeks are written here", run.id)
        client.set_flow_run_state(run.id, Crashed(message="its heartbeat stopped (worker gone)"), force=True)
        return "orphaned"


def _free_workers() -> int | None:
    """How many other workers of this run's pool are online and running no flow run (a child started now would
    find one at once), or None when it cannot be told (no worker runs this run: a local `chronicle` command or
    `serve`). With `--limit 1` on every worker (docs/deploy.md) the parent's own worker cannot take the child."""
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
        WorkPoolFilter,
        WorkPoolFilterName,
    )
    from prefect.client.schemas.objects import StateType, WorkerStatus

    from chronicle.services.prefect_client import prefect_client

    with prefect_client() as client:
        me = client.read_flow_run(UUID(current_flow_run_id()))
        pool = me.work_pool_name
        if not pool or WORKER_LABEL not in me.labels:
            return None
        now = datetime.now(UTC)
        # ONLINE lasts three missed heartbeats on the server; a worker silent for more than one and a bit is
        # taken for gone (killed hosts would otherwise be counted free for ~90 s).
        online = {w.name for w in client.read_workers_for_work_pool(pool) if w.status == WorkerStatus.ONLINE
                  and w.last_heartbeat_time is not None
                  and (now - w.last_heartbeat_time).total_seconds() <= 1.5 * (w.heartbeat_interval_seconds or 30) + 5}
        busy = client.read_flow_runs(
            flow_run_filter=FlowRunFilter(state=FlowRunFilterState(type=FlowRunFilterStateType(
                any_=[StateType.PENDING, StateType.RUNNING]))),
            work_pool_filter=WorkPoolFilter(name=WorkPoolFilterName(any_=[pool])))
    taken = {run.labels.get(WORKER_LABEL) for run in busy} | {me.labels[WORKER_LABEL]}
    return len(online - taken)


def _rows_of(run_ids: list[UUID]) -> list[WeekOutcome]:
    """The outcome rows the children published (their table artifacts)."""
    if not run_ids:
        return []
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterType

    from chronicle.services.prefect_client import prefect_client

    with prefect_client() as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=run_ids), type=ArtifactFilterType(any_=["table"])))
    rows: list[WeekOutcome] = []
    for artifact in found:
        data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        rows += [WeekOutcome.from_dict(item) for item in data or []]
    return rows
