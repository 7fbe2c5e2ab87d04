"""A backfill spread over the work pool's workers (`CHRONICLE_BACKFILL_SPREAD`, lake topology).

The operator's backfill run plans the weeks as always, then starts `backfill_spread` child runs of the
`backfill-shard` deployment with `run_deployment` (each with an idempotency key derived from the run and
its index, so a retried parent finds its children instead of doubling them). It works on the weeks
itself too, and every participant takes a week only if it gets the week's dibs first
(`services/week_dibs.py`), so two workers share the CPU-bound work whatever the order they start in. Then
the parent waits for its children (a child that is still queued when every week is taken is cancelled;
one whose worker died is noticed by its lapsed heartbeat), reads their outcome rows from their table
artifacts, writes any week nobody finished, and publishes ONE progress bar, outcome table and summary
under its usual keys, as an unspread backfill does.
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
from chronicle.tasks.fan_out.weeks import Progress, Work, fan_out, publish_outcome, run_weeks

from chronicle.settings import Settings
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek

log = logging.getLogger("chronicle.weekly.spread")

SHARD_DEPLOYMENT = "backfill-shard/backfill-shard"
"""The deployment child runs are started from (declared in deployments/definitions.py)."""

NEVER_STARTED_S = 60.0
"""A child picked up by a worker that has not said it is alive this long after the parent's own share
is done is cancelled: every week is taken by then, it would find nothing to do."""


def ordered(work: list[Work]) -> list[Work]:
    """The one order every participant walks (each from its own starting point)."""
    return sorted(work, key=lambda w: (w[0], w[1].number))


def batch_weeks(work: list[Work]) -> spread.Weeks:
    out: spread.Weeks = {}
    for project, week, _ in ordered(work):
        out.setdefault(project, []).append(week.number)
    return out


def run_share(settings: Settings, batch: str, participant: int, participants: int, work: list[Work], *,
              force: bool, overwrite_edited: bool, max_workers: int | None, planned_at: datetime,
              on_done: Callable[[WeekOutcome], None] | None = None) -> list[WeekOutcome]:
    """The weeks of the batch this participant gets the dibs of, written as concurrent tasks."""
    finished = _DoneMarks(settings, batch, participant)

    def take(weeks: list[Work]) -> list[Work]:
        got = set(spread.take(settings, batch, participant, [(p, w.number) for p, w, _ in weeks]))
        return [item for item in weeks if (item[0], item[1].number) in got]

    def done(row: WeekOutcome) -> None:
        finished.add(row)
        if on_done is not None:
            on_done(row)

    try:
        return run_weeks(settings, spread.rotated(ordered(work), participant, participants), force=force,
                         overwrite_edited=overwrite_edited, max_workers=max_workers, planned_at=planned_at,
                         on_done=done, take=take)
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
               overwrite_edited: bool) -> tuple[list[Work], datetime]:
    """A child's view of the batch: each project's weeks and their inputs, read in one window per project;
    and when they were read."""
    planned_at = datetime.now(UTC)
    work: list[Work] = []
    for project, numbers in weeks.items():
        wanted = set(numbers)
        plan = plan_project(settings, project, IsoWeek.from_number(min(numbers)), IsoWeek.from_number(max(numbers)),
                            force=force, overwrite_edited=overwrite_edited, only_missing=False)
        work += [(project, week, prepared) for week, prepared in plan.to_run if week.number in wanted]
    return work, planned_at


def shard(settings: Settings, batch: str, weeks: spread.Weeks, participant: int, participants: int, *,
          title: str, force: bool, overwrite_edited: bool, max_workers: int | None,
          counts: dict[str, Any]) -> list[WeekOutcome]:
    """A child run's part: say it is alive, take what weeks are left, publish its rows for the parent."""
    with spread.alive(settings, batch, participant):
        work, planned_at = plan_share(settings, weeks, force=force, overwrite_edited=overwrite_edited)
        progress = Progress(None, len(work), 0, description="weeks of the whole backfill done (all its runs)",
                            count=lambda: spread.done_count(settings, batch))
        rows = run_share(settings, batch, participant, participants, work, force=force,
                         overwrite_edited=overwrite_edited, max_workers=max_workers, planned_at=planned_at,
                         on_done=lambda _row: progress.refresh())
        # Full rows (reasons, messages), unkeyed: the parent reads them back and publishes the real table.
        return publish_outcome(rows, key=None, title=title, counts=counts, table=WeekOutcome.as_dict)


def backfill_fan_out(settings: Settings, plans: list[ProjectPlan], *, key: str, title: str, force: bool,
                     overwrite_edited: bool, max_workers: int | None, counts: dict[str, Any]) -> list[WeekOutcome]:
    """`fan_out`, or with `backfill_spread` set (lake topology) the same spread over child runs."""
    work = [(plan.project_id, week, prepared) for plan in plans for week, prepared in plan.to_run]
    children = settings.backfill_spread
    if children and not settings.lake:
        log.warning("backfill_spread=%d needs the lake topology (CHRONICLE_CATALOG): with an embedded DuckDB file "
                    "each worker would write its own file; running every week in this run", children)
        children = 0
    if children < 1 or not spread.worth_spreading(settings, len(work)):
        return fan_out(settings, plans, key=key, title=title, force=force, overwrite_edited=overwrite_edited,
                       max_workers=max_workers, counts=counts)
    batch = current_flow_run_id()
    t0 = time.monotonic()
    started = _start_children(batch, batch_weeks(work), children, title=title, force=force,
                              overwrite_edited=overwrite_edited, max_workers=max_workers)
    t_started = time.monotonic()
    if not started:
        return fan_out(settings, plans, key=key, title=title, force=force, overwrite_edited=overwrite_edited,
                       max_workers=max_workers, counts=counts)
    rows = [row for plan in plans for row in plan.done]
    planned_at = min(plan.planned_at for plan in plans)
    progress = Progress(key, len(rows) + len(work), len(rows), count=lambda: spread.done_count(settings, batch))
    try:
        mine = run_share(settings, batch, 0, children + 1, work, force=force, overwrite_edited=overwrite_edited,
                         max_workers=max_workers, planned_at=planned_at, on_done=lambda _row: progress.refresh())
        t1 = time.monotonic()
        _run_log().info("spread backfill: %d child run(s) started in %.1fs; this run wrote %d of %d week(s) in %.1fs",
                 len(started), t_started - t0, len(mine), len(work), t1 - t_started)
        theirs = _wait_for_children(settings, batch, started, progress, total=len(work))
        _run_log().info("spread backfill: %d week(s) from the child runs; waited %.1fs for them", len(theirs),
                 time.monotonic() - t1)
        have = {(r.project, r.week_number) for r in [*mine, *theirs]}
        left = [w for w in work if (w[0], w[1].number) not in have]
        if left:
            log.warning("%d week(s) have no outcome from the run that took them (its worker died?); writing "
                        "them here", len(left))

        swept = _DoneMarks(settings, batch, 0)

        def sweep_done(row: WeekOutcome) -> None:
            swept.add(row)
            progress.refresh()

        rest = run_weeks(settings, left, force=force, overwrite_edited=overwrite_edited, max_workers=max_workers,
                         planned_at=planned_at, on_done=sweep_done)
        swept.flush()
        credited, rest = _credit_children(settings, rest, {str(run_id) for run_id in started.values()})
        theirs += credited
        rows += [*mine, *theirs, *rest]
    finally:
        spread.tidy(settings)
    progress.refresh(force=True)
    counts["spread"] = {"runs": len(started) + 1, "weeks_here": len(mine) + len(rest), "weeks_children": len(theirs)}
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
                       progress: Progress, *, total: int) -> list[WeekOutcome]:
    """Wait until every child has ended, been cancelled (never started) or died; their outcome rows."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId
    from prefect.states import Cancelled, Cancelling, Crashed

    pending = dict(children)
    ended: list[UUID] = []
    seen_alive: set[int] = set()
    silent_since: dict[int, float] = {}
    waiting_since: dict[int, float] = {}
    with get_client(sync_client=True) as client:
        while pending:
            runs = client.read_flow_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=list(pending.values()))))
            by_id = {run.id: run for run in runs}
            for participant, run_id in list(pending.items()):
                state = by_id[run_id].state if run_id in by_id else None
                if state is None:
                    continue
                if state.is_final():
                    ended.append(run_id)
                    del pending[participant]
                elif state.is_scheduled():
                    # Still queued (no free worker) while every week is taken: it would find nothing to do.
                    client.set_flow_run_state(run_id, Cancelled(message="every week was taken by other runs"),
                                              force=True)
                    del pending[participant]
                elif spread.is_alive(settings, batch, participant):
                    seen_alive.add(participant)
                    silent_since.pop(participant, None)
                elif participant in seen_alive:
                    # A child that ended has released its heartbeat a moment before the API says so; one whose
                    # heartbeat lapsed and stays silent is gone (worker killed, host lost).
                    if time.monotonic() - silent_since.setdefault(participant, time.monotonic()) < spread.ALIVE_TTL_S:
                        continue
                    log.warning("child run %s stopped its heartbeat; its unfinished weeks are written here", run_id)
                    client.set_flow_run_state(run_id, Crashed(message="its heartbeat stopped (worker gone)"),
                                              force=True)
                    del pending[participant]
                elif (time.monotonic() - waiting_since.setdefault(participant, time.monotonic()) > NEVER_STARTED_S
                      or spread.done_count(settings, batch) >= total):
                    # Every week is done already: a child that has not started has nothing left to do, and
                    # waiting for its process to start (tens of seconds on a busy worker) is pure loss.
                    # Picked up but never started working: stop it, every week is taken anyway.
                    log.warning("child run %s (%s) never started working; cancelling it", run_id, state.name)
                    client.set_flow_run_state(run_id, Cancelling(message="every week was taken by other runs"),
                                              force=True)
                    del pending[participant]
            progress.refresh()
            if pending:
                time.sleep(0.5)
    return _rows_of(ended)


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
