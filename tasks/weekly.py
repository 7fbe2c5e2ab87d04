"""The weekly fan-out: weeks planned by `services/weekly.py` run as groups in the `summarize-weeks` task, a few
groups in flight at once, and the run's progress bar, outcome table and summary published. Shared by the
backfill, weekly and single-week flows (it lives with the tasks so that flows never import each other).

No `retries=` here: the only network is the LLM, and `ChatClient` (behind `chronicle.services.llm_gate`) is the
one retry layer (exponential backoff + jitter, Retry-After); stacking Prefect retries would multiply
attempts.
"""

from __future__ import annotations

import contextvars
import logging
import queue
import shlex
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, NamedTuple

from prefect import get_run_logger, task
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.states import Cancelled, Failed
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from chronicle.names import bounded_label, bounded_name
from chronicle.progress import report
from chronicle.redaction.configured import redactor_for
from chronicle.services.llm_gate import ReservationEnded, reserve_llm
from chronicle.services.run_tracking import current_flow_run_id, run_notes
from chronicle.services.weekly import ProjectPlan, lease_weeks, run_week_group
from chronicle.settings import Settings
from chronicle.storage import claims
from chronicle.weekly.engine import WeekJob, engine_model
from chronicle.weekly.grouping import grouping, weeks_in_flight
from chronicle.weekly.model import WeekReport
from chronicle.weekly.outcome import GroupFailedError, WeekOutcome, WeeksFailedError, failed, outcome_counts
from chronicle.weekly.report_md import outcome_markdown, report_markdown
from chronicle.weeks import IsoWeek

_log = logging.getLogger("chronicle.weekly")


class _ArtifactPublisher:
    """Creates the per-week Markdown artifacts off the task's critical path.

    The Prefect API stores artifacts one at a time (~40 ms each against its SQLite database, far
    more under load), so a week's worker hands its artifact over and goes back to work; `drain()`
    (called by the fan-out before it finishes) waits for them. The task-run context is copied, so
    each artifact is still linked to its task and flow run.
    """

    def __init__(self) -> None:
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="chronicle-artifacts")
        self._lock = threading.Lock()
        self._pending: set[Future[Any]] = set()

    def submit(self, fn: Any, /, **kwargs: Any) -> None:
        future = self._pool.submit(contextvars.copy_context().run, fn, **kwargs)
        with self._lock:
            self._pending.add(future)
        future.add_done_callback(self._done)

    def _done(self, future: Future[Any]) -> None:
        with self._lock:
            self._pending.discard(future)
        if future.exception() is not None:
            _log.warning("weekly report artifact not published: %s", future.exception())

    def drain(self, timeout_s: float = 120.0) -> None:
        with self._lock:
            pending = list(self._pending)
        wait(pending, timeout=timeout_s)


artifacts = _ArtifactPublisher()


def artifact_key(prefix: str, project_id: str, week: IsoWeek | None = None) -> str:
    """Prefect artifact keys allow lowercase letters, digits and dashes only; long ids are cut and hashed."""
    return f"{prefix}-{bounded_name(project_id, limit=48, lower=True)}" + (
        f"-{week.year}w{week.week:02d}" if week else "")


def publish_report(report: WeekReport) -> None:
    """Hand a freshly written report to the artifact publisher (kept out of the task body: Dask pickles
    the task function by value, and the publisher's thread pool cannot travel)."""
    artifacts.submit(create_markdown_artifact, markdown=report_markdown(report),
                     key=artifact_key("report", report.project_id, report.week),
                     description=f"Weekly report {report.project_id} {report.week} ({report.model})")


def group_task_name(parameters: dict[str, Any]) -> str:
    """`summarize-XH201-202605..202618 (14 weeks)`: what a group task run wrote, readable in the UI."""
    jobs: list[WeekJob] = parameters.get("jobs") or []
    if not jobs:
        return "summarize-none"
    projects = sorted({job.project_id for job in jobs})
    who = bounded_label(projects[0], limit=60) + (f"+{len(projects) - 1}" if len(projects) > 1 else "")
    return f"summarize-{who}-{jobs[0].week.number}..{jobs[-1].week.number} ({len(jobs)} weeks)"


@task(name="summarize-weeks", task_run_name=group_task_name, cache_policy=NO_CACHE)
def summarize_weeks_task(settings: Settings, jobs: list[WeekJob], cards: bool = False, threads: int = 1) -> Any:
    """A group of weeks in one task run, their new reports stored in one window; one outcome (or the
    week's error) per week, in order. `cards`: also publish each new report as a Markdown artifact (a run
    of a few weeks; a long backfill shows its weeks in the run's one outcome table instead). `threads`:
    weeks of the group in flight at once (LLM latency overlaps).

    A group in which weeks failed ends Failed (not green in the UI), its message saying which; the outcomes
    travel in its `GroupFailedError`, so the fan-out still gets every week's row. A returned state, not a
    raise: an expected partial failure gets no traceback in the run's logs. A group whose run was cancelled under it
    (its weeks found the run's LLM slots given back) ends Cancelled, like its run."""
    runs = run_week_group(settings, jobs, current_flow_run_id(), threads=threads)
    out: list[WeekOutcome | Exception] = []
    for run in runs:
        if isinstance(run, Exception):
            out.append(run)
            continue
        if cards and run.report is not None:
            publish_report(run.report)
        out.append(run.outcome)
    errors = [r for r in out if isinstance(r, Exception)]
    if not errors:
        return out
    if all(isinstance(e, ReservationEnded) for e in errors):  # its run was cancelled: nothing went wrong here
        return Cancelled(message=f"stopped with its run: {len(errors)} of {len(out)} week(s) not written")
    error = GroupFailedError(out, redactor_for(settings).redact(f"{type(errors[0]).__name__}: {errors[0]}"))
    get_run_logger().error("%s", error)
    return Failed(message=str(error)[:1000], data=error)


REPORT_CARDS_MAX = 8
"""A run of at most this many weeks also shows each new report as its own Markdown artifact; a longer one
shows its weeks in its one outcome table (`chronicle report show PROJECT WEEK` one click away), not as
hundreds of unordered cards."""


def run_label(project_id: str | None) -> str:
    return artifact_key("x", project_id or "all")[2:]


class Progress:
    """Progress for the CLI on every week, for the Prefect progress artifact at most once a second.

    `count` (optional) recounts the weeks done (a spread backfill's, its child runs' included) instead of
    counting this run's own steps.
    """

    def __init__(self, key: str | None, total: int, done: int, *, description: str = "weeks done in this run",
                 count: Callable[[], int] | None = None) -> None:
        self.total, self.done, self._last = total, done, 0.0
        self._base, self._count = done, count
        self._artifact = create_progress_artifact(progress=self._pct(), key=f"{key}-progress" if key else None,
                                                   description=description)
        report("weekly", done, total)

    def _pct(self) -> float:
        return min(100.0, 100.0 * self.done / self.total) if self.total else 100.0

    def step(self, n: int = 1) -> None:
        if self._count is None:
            self.done += n
        self.refresh(force=self._count is None and self.done >= self.total)

    def refresh(self, force: bool = False) -> None:
        now = time.monotonic()
        if not force and now - self._last < 1.0:
            return
        self._last = now
        if self._count is not None:
            self.done = min(self.total, self._base + self._count())
        report("weekly", self.done, self.total)
        update_progress_artifact(artifact_id=self._artifact, progress=self._pct())


def _tasks_in_process() -> bool:
    """Whether submitted tasks run in this process's threads (and so can share its slot reservation)."""
    ctx = FlowRunContext.get()
    return ctx is None or isinstance(ctx.task_runner, ThreadPoolTaskRunner)


class _Shape(NamedTuple):
    """How a fan-out runs its weeks: task runs of `group` weeks, `threads` weeks at a time inside one,
    `in_flight` task runs at once, and `slots` LLM slots reserved for them all (0: none)."""

    group: int
    threads: int
    in_flight: int
    slots: int


def _shape(settings: Settings, jobs: list[WeekJob], max_workers: int | None, in_process: bool) -> _Shape:
    workers = weeks_in_flight(settings, max_workers)
    llm_weeks = sum(1 for job in jobs if job.input.entries)
    # Weeks per task run: the orchestration (task run, events, write window) is paid per group of weeks.
    group, threads, in_flight = grouping(len(jobs), workers, settings.weekly.weeks_per_task)
    if settings.llm.offline or not llm_weeks:
        # Offline and empty weeks are pure Python (the GIL) and take no LLM slot: threads inside a group only
        # take turns, and each round of them is a barrier. One thread per group; the groups in flight overlap
        # the commits.
        return _Shape(group, 1, in_flight, 0)
    # Tasks in other processes (Dask) take their own slots.
    return _Shape(group, threads, in_flight, min(workers, llm_weeks) if in_process else 0)


def run_weeks(settings: Settings, work: Iterable[WeekJob], *, max_workers: int | None, planned_at: datetime,
              on_done: Callable[[WeekOutcome], None], on_start: Callable[[], None] | None = None) -> list[WeekOutcome]:
    """Run weeks as concurrent tasks (at most `max_workers` in flight), in order; one outcome row per week run,
    each also handed to `on_done`.

    The weeks to write are leased first (their cache keys, `services.weekly.lease_weeks`), in one round trip:
    a week another run wrote since `planned_at` (when the weeks' inputs were read) is answered by its row, and
    the others run owned by this fan-out's leases. `on_start()`, when given, is called once the first task
    runs are submitted (the LLM slots held), or when there is nothing to submit.
    """
    jobs = list(work)
    in_process = _tasks_in_process()
    shape = _shape(settings, jobs, max_workers, in_process)
    gate = reserve_llm(settings, shape.slots) if shape.slots else nullcontext()
    # Tasks in other processes cannot see this process's leases: they claim their week themselves.
    leasing = claims.Leases(settings, ttl_s=settings.weekly.week_lease_s) if in_process else nullcontext()
    finished: queue.Queue[tuple[PrefectFuture[Any], list[tuple[str, IsoWeek, int]], float]] = queue.Queue()
    in_flight, submitted, cards = 0, 0, len(jobs) <= REPORT_CARDS_MAX
    with gate, leasing as leases:
        answered = (lease_weeks(settings, leases, jobs, engine_model(settings), planned_at=planned_at)
                    if leases is not None and jobs else {})
        owner = leases.owner if leases is not None else None
        in_hand = deque(replace(job, lease_owner=owner) for job in jobs
                        if (job.project_id, job.week.number) not in answered)
        rows = list(answered.values())
        for row in rows:
            on_done(row)
        while in_hand or in_flight:
            while in_flight < shape.in_flight and in_hand:
                # The run's first group is half a group: the groups in flight then end half a group apart, so
                # one is mid-way (its threads filling the LLM slots) while the next starts after the other. Of
                # equal size they ran in lockstep and every slot went idle at each hand-over.
                size = max(1, shape.group // 2) if submitted == 0 and shape.in_flight > 1 else shape.group
                submitted += 1
                _submit(settings, [in_hand.popleft() for _ in range(min(size, len(in_hand)))], cards,
                        shape.threads, in_process, finished)
                in_flight += 1
            if on_start is not None:
                on_start, call = None, on_start
                call()
            future, info, t0 = finished.get()
            in_flight -= 1
            for row in _group_rows(settings, future, info, t0):
                rows.append(row)
                on_done(row)
    if on_start is not None:
        on_start()
    artifacts.drain()  # the per-week Markdown artifacts are published in the background
    return rows


def _submit(settings: Settings, jobs: list[WeekJob], cards: bool, threads: int, in_process: bool,
            finished: queue.Queue[tuple[PrefectFuture[Any], list[tuple[str, IsoWeek, int]], float]]) -> None:
    """Start a group's task run; `finished` gets (its future, its weeks, when it started) once it ends."""
    t0 = time.perf_counter()
    # quote(): Prefect would otherwise walk every entry of every week's input twice per task run (looking for
    # futures to wait on; there are none), ~a tenth of a week's worker CPU. In threads only: the Dask runner
    # ships the annotation as it is and the task got a tuple, not its settings.
    wrap = quote if in_process else (lambda value: value)
    future = summarize_weeks_task.submit(wrap(settings), wrap(jobs), cards, threads)
    info = [(job.project_id, job.week, len(job.input.entries)) for job in jobs]
    future.add_done_callback(lambda f: finished.put((f, info, t0)))


def _group_rows(settings: Settings, future: PrefectFuture[Any], info: list[tuple[str, IsoWeek, int]],
                t0: float) -> list[WeekOutcome]:
    """One outcome row per week of a finished group task: its own row, or a failed row whose message is
    redacted (it lands in the outcome artifact, pipeline_runs and the CLI, like everything shown)."""
    try:
        results = future.result()
    except GroupFailedError as exc:  # some weeks failed: the task run is Failed, the others' rows stand
        results = exc.results
    except Exception as exc:  # the group's task itself failed: every week of it failed
        results = [exc] * len(info)
    rows = []
    for (project_id, week, n), result in zip(info, results, strict=True):
        if isinstance(result, BaseException):
            row = failed(project_id, week, n, result, time.perf_counter() - t0)
            result = replace(row, message=redactor_for(settings).redact(row.message or ""))
        rows.append(result)
    return rows


def outcome_row(row: WeekOutcome) -> dict[str, Any]:
    """A row of the run's outcome table, with the command that shows the week's report."""
    week = IsoWeek.from_number(row.week_number)
    shown = f"chronicle report show -p {shlex.quote(row.project)} -w {week.year}-W{week.week:02d}"
    return row.table_row() | {"report": shown}


def publish_outcome(rows: list[WeekOutcome], *, key: str | None, title: str, counts: dict[str, Any],
                    table: Callable[[WeekOutcome], dict[str, Any]] = outcome_row) -> list[WeekOutcome]:
    """Sort the rows, count them into `counts`, publish the outcome table and summary; raise
    `WeeksFailedError` if any week failed."""
    rows.sort(key=lambda r: (r.project, r.week_number))
    outcomes = outcome_counts(rows)
    counts.update(weeks=len(rows), outcomes=outcomes, llm_calls=sum(r.llm_calls for r in rows),
                  needs_review=sum(1 for r in rows if r.needs_review),
                  # kept with the run row: the desk's grid shows these weeks as failed until a report lands
                  failed_weeks=[[r.project, r.week_number] for r in rows if r.outcome == "failed"])
    create_table_artifact(table=[table(r) for r in rows], key=key, description=f"{title}: outcome per week")
    create_markdown_artifact(markdown=outcome_markdown(title, rows, run_notes()), key=f"{key}-summary" if key else None,
                             description=f"{title}: failures and weeks needing review")
    if outcomes.get("failed"):
        raise WeeksFailedError(rows)
    return rows


def fan_out(settings: Settings, plans: list[ProjectPlan], *, key: str, title: str, max_workers: int | None,
            counts: dict[str, Any], on_start: Callable[[], None] | None = None) -> list[WeekOutcome]:
    """Run the planned weeks as concurrent tasks (at most `max_workers` in flight), publish the
    outcome table, and raise `WeeksFailedError` if any week failed. `on_start`: as in `run_weeks`."""
    rows = [row for plan in plans for row in plan.done]
    work = [job for plan in plans for job in plan.to_run]
    progress = Progress(key, len(rows) + len(work), len(rows))
    planned_at = min((plan.planned_at for plan in plans), default=datetime.now(UTC))
    rows += run_weeks(settings, work, max_workers=max_workers, planned_at=planned_at,
                      on_done=lambda _row: progress.step(), on_start=on_start)
    return publish_outcome(rows, key=key, title=title, counts=counts)
