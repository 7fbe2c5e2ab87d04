"""The weekly fan-out shared by the backfill, weekly and single-week flows: weeks as concurrent tasks.

It lives with the tasks (not in a flow module) so that flows never import each other.
"""

from __future__ import annotations

import queue
import time
from collections import deque
from contextlib import nullcontext
from dataclasses import replace
from typing import Any

from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.task_runners import ThreadPoolTaskRunner

from chronicle.progress import report
from chronicle.settings import Settings
from chronicle.weekly.outcome import WeekOutcome, WeeksFailedError, failed, outcome_counts
from chronicle.weekly.report_md import outcome_markdown
from chronicle.weeks import IsoWeek
from services.llm_gate import redactor_for, reserve_llm
from services.runs import run_notes
from services.weekly import ProjectPlan
from tasks.weekly import artifact_key, artifacts, summarize_week_task


def run_label(project_id: str | None) -> str:
    return artifact_key("x", project_id or "all")[2:]


class _Progress:
    """Progress for the CLI on every week, for the Prefect progress artifact at most once a second."""

    def __init__(self, key: str, total: int, done: int) -> None:
        self.total, self.done, self._last = total, done, 0.0
        self._artifact = create_progress_artifact(progress=self._pct(), key=f"{key}-progress",
                                                   description="weeks done in this run")
        report("weekly", done, total)

    def _pct(self) -> float:
        return 100.0 * self.done / self.total if self.total else 100.0

    def step(self) -> None:
        self.done += 1
        report("weekly", self.done, self.total)
        now = time.monotonic()
        if now - self._last >= 1.0 or self.done == self.total:
            self._last = now
            update_progress_artifact(artifact_id=self._artifact, progress=self._pct())


def _tasks_in_process() -> bool:
    """Whether submitted tasks run in this process's threads (and so can share its slot reservation)."""
    ctx = FlowRunContext.get()
    return ctx is None or isinstance(ctx.task_runner, ThreadPoolTaskRunner)


def fan_out(settings: Settings, plans: list[ProjectPlan], *, key: str, title: str, force: bool,
            overwrite_edited: bool, max_workers: int | None, counts: dict[str, Any]) -> list[WeekOutcome]:
    """Run the planned weeks as concurrent tasks (at most `max_workers` in flight), publish the
    outcome table, and raise `WeeksFailedError` if any week failed."""
    rows = [row for plan in plans for row in plan.done]
    work = deque((plan.project_id, week, prepared) for plan in plans for week, prepared in plan.to_run)
    progress = _Progress(key, len(rows) + len(work), len(rows))
    workers = max(1, max_workers or settings.backfill_max_workers or 2 * settings.llm_concurrency)
    llm_weeks = sum(1 for _, _, (week_input, _) in work if week_input.entries)
    # The offline engine and empty weeks take no LLM slot; tasks in other processes (Dask) take their own.
    reserve = llm_weeks and not settings.offline_llm and _tasks_in_process()
    gate = reserve_llm(settings, min(workers, llm_weeks)) if reserve else nullcontext()
    finished: queue.Queue[tuple[PrefectFuture[Any], str, IsoWeek, int, float]] = queue.Queue()
    in_flight = 0
    with gate:
        while work or in_flight:
            while work and in_flight < workers:
                project_id, week, prepared = work.popleft()
                t0 = time.perf_counter()
                future = summarize_week_task.submit(settings, project_id, week.number, force, overwrite_edited,
                                                    prepared)
                info = (project_id, week, len(prepared[0].entries), t0)
                future.add_done_callback(lambda f, info=info: finished.put((f, *info)))
                in_flight += 1
            future, project_id, week, n, t0 = finished.get()
            in_flight -= 1
            try:
                rows.append(future.result())
            except Exception as exc:
                row = failed(project_id, week, n, exc, time.perf_counter() - t0)
                # The message lands in the outcome artifact, pipeline_runs and the CLI: redacted like all shown.
                rows.append(replace(row, message=redactor_for(settings).redact(row.message or "")))
            progress.step()
    artifacts.drain()  # the per-week Markdown artifacts are published in the background
    rows.sort(key=lambda r: (r.project, r.week_number))
    outcomes = outcome_counts(rows)
    counts.update(weeks=len(rows), outcomes=outcomes, llm_calls=sum(r.llm_calls for r in rows),
                  needs_review=sum(1 for r in rows if r.needs_review))
    create_table_artifact(table=[r.table_row() for r in rows], key=key, description=f"{title}: outcome per week")
    create_markdown_artifact(markdown=outcome_markdown(title, rows, run_notes()), key=f"{key}-summary",
                             description=f"{title}: failures and weeks needing review")
    if outcomes.get("failed"):
        raise WeeksFailedError(rows)
    return rows
