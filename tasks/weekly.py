"""Weekly-report tasks: a group of weeks as a Prefect task, and a report as a Markdown artifact.

No `retries=` here: the only network is the LLM, and `ChatClient` (behind `chronicle.services.llm_gate`) is the
one retry layer (exponential backoff + jitter, Retry-After); stacking Prefect retries would multiply
attempts.
"""

from __future__ import annotations

import contextvars
import logging
import threading
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from chronicle.services.llm_gate import redactor_for
from chronicle.services.run_tracking import current_flow_run_id
from chronicle.services.weekly import run_week_group
from prefect import get_run_logger, task
from prefect.artifacts import create_markdown_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Failed

from chronicle.names import bounded_label, bounded_name
from chronicle.settings import Settings
from chronicle.weekly.engine import WeekJob
from chronicle.weekly.model import WeekReport
from chronicle.weekly.outcome import GroupFailedError, WeekOutcome
from chronicle.weekly.report_md import report_markdown
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
    raise: an expected partial failure gets no traceback in the run's logs."""
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
    error = GroupFailedError(out, redactor_for(settings).redact(f"{type(errors[0]).__name__}: {errors[0]}"))
    get_run_logger().error("%s", error)
    return Failed(message=str(error)[:1000], data=error)
