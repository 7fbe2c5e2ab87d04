"""A backfill spread over the work pool's workers (`CHRONICLE_BACKFILL_SPREAD`, lake topology).

The operator's backfill run plans the weeks as always, then starts up to `backfill_spread` child runs of the
`backfill-shard` deployment — no more than the pool has other free workers (the API's view) — with
`run_deployment` (each with an idempotency key derived from the run and its index, so a retried parent finds
its children instead of doubling them). It works on the weeks itself too, and every participant takes a week
only if it gets the week's dibs first (`services/week_dibs.py`), so two workers share the CPU-bound work
whatever the order they start in. Then the parent waits for the children that started working (one still
queued when every week is taken is cancelled, one not yet working is left to end by itself; one whose worker
died is noticed by its lapsed heartbeat and set Crashed), reads their outcome rows from their table
artifacts, writes any week nobody finished, and publishes ONE progress bar, outcome table and summary under
its usual keys, as an unspread backfill does.
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

from chronicle.services import week_dibs as spread
from chronicle.services.run_tracking import current_flow_run_id
from chronicle.services.weekly import ProjectPlan, plan_project
from chronicle.tasks.fan_out.weeks import Progress, fan_out, own_artifacts, publish_outcome, run_weeks

from chronicle.settings import Settings
from chronicle.weekly.engine import WeekJob
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek

log = logging.getLogger("chronicle.weekly.spread")

SHARD_DEPLOYMENT = "backfill-shard/backfill-shard"
"""The deployment child runs are started from (declared in deployments/definitions.py)."""

WORKER_LABEL = "prefect.worker.name"
"""The label a Prefect worker gives every flow run it submits (its `--name`)."""


def ordered(work: list[WeekJob]) -> list[WeekJob]:
    """The one order every participant walks (each from its own starting point)."""
    return sorted(work, key=lambda job: (job.project_id, job.week.number))


def batch_weeks(work: list[WeekJob]) -> spread.Weeks:
    out: spread.Weeks = {}
    for job in ordered(work):
        out.setdefault(job.project_id, []).append(job.week.number)
    return out


def run_share(settings: Settings, batch: str, participant: int, participants: int, work: list[WeekJob], *,
              max_workers: int | None, planned_at: datetime,
              on_done: Callable[[WeekOutcome], None] | None = None) -> list[WeekOutcome]:
    """The weeks of the batch this participant gets the dibs of, written as concurrent tasks."""
    finished = _DoneMarks(settings, batch, participant)

    def take(weeks: list[WeekJob]) -> list[WeekJob]:
        got = set(spread.take(settings, batch, participant, [(job.project_id, job.week.number) for job in weeks]))
        return [job for job in weeks if (job.project_id, job.week.number) in got]

    def done(row: WeekOutcome) -> None:
        finished.add(row)
        if on_done is not None:
            on_done(row)

    try:
        return run_weeks(settings, spread.rotated(ordered(work), participant, participants), max_workers=max_workers,
                         planned_at=planned_at, on_done=done, take=take)
    finally:
        finished.flush()


class _DoneMarks:
    """Finished weeks, marked for the progress bar at most once a second (one round trip for them all)."""

    def __init__(self, settings: Settings, batch: str, participant: int) -> None:
        self._args = (settings, batch, participant)
        self._weeks: list[tuple[str, int]] = []
        self._last = time.monotonic()

    def add(self, row: WeekOutcome) -> None:
        self._weeks.append((row.project, row.week_number))
        if time.monotonic() - self._last >= 1.0:
            self.flush()

    def flush(self) -> None:
        self._last = time.monotonic()
        if self._weeks:
            weeks, self._weeks = self._weeks, []
            spread.mark_done(*self._args, weeks)


def plan_share(settings: Settings, weeks: spread.Weeks, *, force: bool,
               overwrite_edited: bool) -> tuple[list[WeekJob], datetime]:
    """A child's view of the batch: each project's weeks and their inputs, read in one window per project;
    and when they were read."""
    planned_at = datetime.now(UTC)
    work: list[WeekJob] = []
    for project, numbers in weeks.items():
        wanted = set(numbers)
        plan = plan_project(settings, project, IsoWeek.from_number(min(numbers)), IsoWeek.from_number(max(numbers)),
                            force=force, overwrite_edited=overwrite_edited, only_missing=False)
        work += [job for job in plan.to_run if job.week.number in wanted]
    return work, planned_at


def shard(settings: Settings, batch: str, weeks: spread.Weeks, participant: int, participants: int, *,
          title: str, force: bool, overwrite_edited: bool, max_workers: int | None,
          counts: dict[str, Any]) -> list[WeekOutcome]:
    """A child run's part: say it is alive, take what weeks are left, publish its rows for the parent."""
    with spread.alive(settings, batch, participant):
        if spread.taken_count(settings, batch) >= sum(len(numbers) for numbers in weeks.values()):
            # Started after every week was taken (a start-up longer than the backfill): end at once, without
            # reading the weeks' inputs — on a shared host that CPU is the other runs'.
            _run_log().info("every week of the backfill was taken before this run started; nothing to do")
            return publish_outcome([], key=None, title=title, counts=counts, table=WeekOutcome.as_dict)
        work, planned_at = plan_share(settings, weeks, force=force, overwrite_edited=overwrite_edited)
        progress = Progress(None, len(work), 0, description="weeks of the whole backfill done (all its runs)",
                            count=lambda: spread.done_count(settings, batch))
        rows = run_share(settings, batch, participant, participants, work, max_workers=max_workers,
                         planned_at=planned_at, on_done=lambda _row: progress.refresh())
        # Full rows (reasons, messages), unkeyed: the parent reads them back and publishes the real table.
        return publish_outcome(rows, key=None, title=title, counts=counts, table=WeekOutcome.as_dict)


def backfill_fan_out(settings: Settings, plans: list[ProjectPlan], *, key: str, title: str, force: bool,
                     overwrite_edited: bool, max_workers: int | None, counts: dict[str, Any],
                     on_start: Callable[[], None] | None = None) -> list[WeekOutcome]:
    """`fan_out`, or with `backfill_spread` set (lake topology) the same spread over child runs. `on_start()` (once):
    when the first weeks' task runs are submitted (`run_weeks`), or before a spread run starts its children."""
    own_artifacts()
    work = [job for plan in plans for job in plan.to_run]
    children = settings.backfill_spread
    if children and not settings.lake:
        log.warning("backfill_spread=%d needs the lake topology (CHRONICLE_CATALOG): with an embedded DuckDB file "
                    "each worker would write its own file; running every week in this run", children)
        children = 0
    if children < 1 or not spread.worth_spreading(settings, len(work)):
        return fan_out(settings, plans, key=key, title=title, max_workers=max_workers, counts=counts,
                       on_start=on_start)
    if on_start is not None:
        on_start()
    batch = current_flow_run_id()
    t0 = time.monotonic()
    try:
        free = _free_workers()
    except Exception as exc:  # the API's view of the pool is an optimisation: without it, start them all
        log.warning("could not read the pool's workers (%s: %s); starting %d child run(s)", type(exc).__name__,
                    exc, children)
        free = None
    if free is not None and free < children:
        _run_log().info("spread backfill: %d other worker(s) of the pool free; starting %d child run(s) instead of "
                        "%d", free, free, children)
        children = free
    started = _start_children(batch, batch_weeks(work), children, title=title, force=force,
                              overwrite_edited=overwrite_edited, max_workers=max_workers) if children else {}
    t_started = time.monotonic()
    if not started:
        return fan_out(settings, plans, key=key, title=title, max_workers=max_workers,
                       counts=counts)  # on_start was called above
    rows = [row for plan in plans for row in plan.done]
    planned_at = min(plan.planned_at for plan in plans)
    progress = Progress(key, len(rows) + len(work), len(rows), count=lambda: spread.done_count(settings, batch))
    try:
        mine = run_share(settings, batch, 0, children + 1, work, max_workers=max_workers, planned_at=planned_at,
                         on_done=lambda _row: progress.refresh())
        t1 = time.monotonic()
        _run_log().info("spread backfill: %d child run(s) started in %.1fs; this run wrote %d of %d week(s) in %.1fs",
                 len(started), t_started - t0, len(mine), len(work), t1 - t_started)
        theirs, start_s = _wait_for_children(settings, batch, started, progress)
        _run_log().info("spread backfill: %d week(s) from the child runs; waited %.1fs for them; child start-up "
                        "(created -> working) %s", len(theirs), time.monotonic() - t1,
                        ", ".join(f"{s:.1f}s" for s in start_s) or "none (every week was done before one started)")
        have = {(r.project, r.week_number) for r in [*mine, *theirs]}
        left = [job for job in work if (job.project_id, job.week.number) not in have]
        if left:
            log.warning("%d week(s) have no outcome from the run that took them (its worker died?); writing "
                        "them here", len(left))

        swept = _DoneMarks(settings, batch, 0)

        def sweep_done(row: WeekOutcome) -> None:
            swept.add(row)
            progress.refresh()

        rest = run_weeks(settings, left, max_workers=max_workers, planned_at=planned_at, on_done=sweep_done)
        swept.flush()
        credited, rest = _credit_children(settings, rest, {str(run_id) for run_id in started.values()})
        theirs += credited
        rows += [*mine, *theirs, *rest]
    finally:
        spread.tidy(settings)
    progress.refresh(force=True)
    counts["spread"] = {"runs": len(started) + 1, "weeks_here": len(mine) + len(rest), "weeks_children": len(theirs),
                        "child_start_s": [round(s, 1) for s in start_s]}
    return publish_outcome(_one_per_week(rows), key=key, title=title, counts=counts)


def _credit_children(settings: Settings, rest: list[WeekOutcome],
                     children: set[str]) -> tuple[list[WeekOutcome], list[WeekOutcome]]:
    """Weeks the sweep found already written by a child (killed before it published its rows) are the
    child's: their outcome is what the child did, not `cached`. Returns (the children's, this run's)."""
    cached = [(r.project, r.week_number) for r in rest if r.outcome == "cached"]
    writers = spread.written_by(settings, cached)
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


def _start_children(batch: str, weeks: spread.Weeks, children: int, *, title: str, force: bool,
                    overwrite_edited: bool, max_workers: int | None) -> dict[int, UUID]:
    """Start the child runs (participants 1..n); {} when the shard deployment cannot be run."""
    from prefect.deployments import run_deployment

    started: dict[int, UUID] = {}
    for participant in range(1, children + 1):
        params = {"batch": batch, "weeks": weeks, "participant": participant, "participants": children + 1,
                  "force": force, "overwrite_edited": overwrite_edited, "max_workers": max_workers}
        try:
            run = run_deployment(SHARD_DEPLOYMENT, parameters=params, timeout=0, as_subflow=True,
                                 idempotency_key=f"{batch}:shard-{participant}",
                                 flow_run_name=f"{title}-shard{participant}of{children}",
                                 tags=["chronicle", "backfill", "shard"])
        except Exception as exc:  # no such deployment (e.g. an ephemeral API): this run does it all
            log.warning("could not start a %s run (%s: %s); its weeks are written by the runs that did start",
                        SHARD_DEPLOYMENT, type(exc).__name__, exc)
            break
        started[participant] = run.id
    return started


def _wait_for_children(settings: Settings, batch: str, children: dict[int, UUID],
                       progress: Progress) -> tuple[list[WeekOutcome], list[float]]:
    """Wait until every child that started working has ended or died; their outcome rows, and how long each
    child that ran took from being created to running (its start-up: the worker's poll, a process, imports).

    Called once this run has walked every week, so every week's dibs are taken by now: a child that has not
    started working has nothing left to do and is not waited for (a backfill too small to profit does not pay
    a child's start-up) — still queued, it is cancelled; picked up, it ends by itself finding every week taken.
    A child that started and whose heartbeat lapsed died (worker killed, host lost): it is set Crashed, as
    `chronicle runs` says, not Cancelled, and the weeks it wrote are credited to it by the caller.
    """
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Cancelled, Crashed

    pending = dict(children)
    ended: list[UUID] = []
    start_s: dict[UUID, float] = {}
    silent_since: dict[int, float] = {}
    with get_client(sync_client=True) as client:
        while pending:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(pending.values()))))
            by_id = {run.id: run for run in runs}
            for participant, run_id in list(pending.items()):
                run = by_id.get(run_id)
                state = run.state if run is not None else None
                if state is None:
                    continue
                if run.start_time is not None and run.created is not None:
                    start_s[run_id] = (run.start_time - run.created).total_seconds()
                if state.is_final():
                    ended.append(run_id)
                    del pending[participant]
                elif spread.is_alive(settings, batch, participant):
                    silent_since.pop(participant, None)
                elif not spread.has_started(settings, batch, participant):
                    if state.is_scheduled():  # nobody picked it up: it never needs to run
                        client.set_flow_run_state(run_id, Cancelled(message="every week was taken by other runs"),
                                                  force=True)
                    else:
                        log.info("child run %s (%s) had not started working when every week was taken; it ends "
                                 "by itself", run_id, state.name)
                    del pending[participant]
                elif time.monotonic() - silent_since.setdefault(participant, time.monotonic()) >= spread.ALIVE_TTL_S:
                    # A child that ended releases its heartbeat a moment before the API says so; one whose
                    # heartbeat stays lapsed this long is gone.
                    log.warning("child run %s stopped its heartbeat; its unfinished weeks are written here", run_id)
                    client.set_flow_run_state(run_id, Crashed(message="its heartbeat stopped (worker gone)"),
                                              force=True)
                    del pending[participant]
            progress.refresh()
            if pending:
                time.sleep(0.5)
    return _rows_of(ended), list(start_s.values())


def _free_workers() -> int | None:
    """How many other workers of this run's pool are online and running no flow run (a child started now would
    find one at once), or None when it cannot be told (no worker runs this run: a local `chronicle` command or
    `serve`). With `--limit 1` on every worker (docs/deploy.md) the parent's own worker cannot take the child."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (
        FlowRunFilter,
        FlowRunFilterState,
        FlowRunFilterStateType,
        WorkPoolFilter,
        WorkPoolFilterName,
    )
    from prefect.client.schemas.objects import StateType, WorkerStatus

    with get_client(sync_client=True) as client:
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
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId, ArtifactFilterType

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(
            flow_run_id=ArtifactFilterFlowRunId(any_=run_ids), type=ArtifactFilterType(any_=["table"])))
    rows: list[WeekOutcome] = []
    for artifact in found:
        data = json.loads(artifact.data) if isinstance(artifact.data, str) else artifact.data
        rows += [WeekOutcome.from_dict(item) for item in data or []]
    return rows
