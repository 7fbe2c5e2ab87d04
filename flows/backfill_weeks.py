"""Flow `backfill-weeks`: write the weekly chronicle of past weeks, concurrently, resumably.

Caching lives in DuckDB, not in Prefect's result cache: a report is current when its stored
`input_hash` (ordered entry ids + content), `model` and `prompt_version` match — durable, shared by
every process and flow run, visible to SQL, and invalidated exactly by a late entry, a new model or
a new prompt. Prefect's cache would need its own storage, could not see human edits, and keys on
task parameters rather than on what the LLM actually read.
"""

from __future__ import annotations

import queue
import time
from collections import Counter, deque
from contextlib import nullcontext
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import (
    create_markdown_artifact,
    create_progress_artifact,
    create_table_artifact,
    update_progress_artifact,
)
from prefect.context import FlowRunContext
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run
from prefect.task_runners import ThreadPoolTaskRunner

from chronicle.params import Force, OnlyMissing, OptionalIsoWeekStr, ProjectSelector
from chronicle.progress import report
from chronicle.settings import Settings, get_settings
from chronicle.weekly.report_md import outcome_markdown
from chronicle.weeks import IsoWeek
from services.llm_gate import reserve_llm
from services.runs import tracked_run
from storage import queries
from storage.db import connect
from storage.snapshot import publish_snapshot
from tasks.analytics import publish_charts
from tasks.weekly import ProjectPlan, artifact_key, artifacts, plan_project, summarize_week_task

TABLE_COLUMNS = ("project", "week", "outcome", "engine", "duration_s", "entries", "llm_calls", "needs_review")


class WeeksFailedError(RuntimeError):
    """Some weeks failed; every other week was stored. `rows` is the full outcome table."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        failed = [r for r in rows if r["outcome"] == "failed"]
        first = failed[0] if failed else {}
        super().__init__(f"{len(failed)} of {len(rows)} week(s) failed (first: {first.get('project')} "
                         f"{first.get('week')}: {first.get('message')}); rerun to retry only those")
        self.rows = rows

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.rows,))


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


def _failed_row(project_id: str, week: IsoWeek, n: int, exc: BaseException, t0: float) -> dict[str, Any]:
    return {"project": project_id, "week": str(week), "week_number": week.number, "entries": n, "llm_calls": 0,
            "outcome": "failed", "engine": "-", "needs_review": False, "reasons": [],
            "duration_s": round(time.perf_counter() - t0, 3), "message": f"{type(exc).__name__}: {exc}"[:500]}


def _tasks_in_process() -> bool:
    """Whether submitted tasks run in this process's threads (and so can share its slot reservation)."""
    ctx = FlowRunContext.get()
    return ctx is None or isinstance(ctx.task_runner, ThreadPoolTaskRunner)


def fan_out(settings: Settings, plans: list[ProjectPlan], *, key: str, title: str, force: bool,
            overwrite_edited: bool, max_workers: int | None, counts: dict[str, Any]) -> list[dict[str, Any]]:
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
                future = summarize_week_task.submit(project_id, week.number, force, overwrite_edited, prepared)
                info = (project_id, week, len(prepared[0].entries), t0)
                future.add_done_callback(lambda f, info=info: finished.put((f, *info)))
                in_flight += 1
            future, project_id, week, n, t0 = finished.get()
            in_flight -= 1
            try:
                rows.append(future.result())
            except Exception as exc:
                rows.append(_failed_row(project_id, week, n, exc, t0))
            progress.step()
    artifacts.drain()  # the per-week Markdown artifacts are published in the background
    rows.sort(key=lambda r: (r["project"], r["week_number"]))
    outcomes = Counter(r["outcome"] for r in rows)
    counts.update(weeks=len(rows), outcomes=dict(outcomes), llm_calls=sum(r["llm_calls"] for r in rows),
                  needs_review=sum(1 for r in rows if r["needs_review"]))
    create_table_artifact(table=[{c: r.get(c) for c in TABLE_COLUMNS} for r in rows], key=key,
                          description=f"{title}: outcome per week")
    create_markdown_artifact(markdown=outcome_markdown(title, rows), key=f"{key}-summary",
                             description=f"{title}: failures and weeks needing review")
    if outcomes.get("failed"):
        raise WeeksFailedError(rows)
    return rows


def _week_label(text: str | None, fallback: str) -> str:
    if not text:
        return fallback
    week = IsoWeek.parse(text)
    return f"{week.year}W{week.week:02d}"


def backfill_run_name() -> str:
    """`backfill-XH201-2026W01..2026W10` (or `backfill-all-first..last`)."""
    params = flow_run.parameters
    project = params.get("project_id") or "all"
    return (f"backfill-{project}-{_week_label(params.get('start_week'), 'first')}.."
            f"{_week_label(params.get('end_week'), 'last')}")


@flow(name="backfill-weeks", flow_run_name=backfill_run_name, log_prints=False)
def backfill_weeks(project_id: ProjectSelector = "all", start_week: OptionalIsoWeekStr = None,
                   end_week: OptionalIsoWeekStr = None, only_missing: OnlyMissing = True, force: Force = False,
                   overwrite_edited: bool = False, max_workers: int | None = None) -> list[dict[str, Any]]:
    """Summarise every week of `project_id` (or all projects) from `start_week` to `end_week`.

    Zero-entry weeks get the fixed “本周无记录” report (outcome `empty`) so the chronicle has no
    gaps. Raises `WeeksFailedError` after storing every week that succeeded; a rerun picks up only
    the failures. Returns one outcome row per week (also published as a table artifact).

    Args:
        project_id: A project id as in raw_logs.project_id, or `all` for every project.
        start_week: First ISO week (YYYY-Www); empty = each project's first week with entries.
        end_week: Last ISO week (YYYY-Www); empty = each project's last week with entries.
        only_missing: Answer current weeks from DuckDB at planning, without a task; run only weeks with no
            report, a stale or failed one, or changed entries, model or prompt (a rerun costs no LLM calls).
        force: Regenerate every week even when its report is current (spends LLM calls); human edits are
            still kept unless overwrite_edited is set.
        overwrite_edited: Also regenerate weeks a human corrected (the edit stays in the version history).
        max_workers: Weeks in flight at once (task threads); empty = the backfill_max_workers setting,
            default twice llm_concurrency.
    """
    settings = get_settings()
    start = IsoWeek.parse(start_week) if start_week else None
    end = IsoWeek.parse(end_week) if end_week else None
    params = {"project_id": project_id, "start_week": start_week, "end_week": end_week, "only_missing": only_missing,
              "force": force, "overwrite_edited": overwrite_edited, "max_workers": max_workers}
    with tracked_run(settings, "backfill-weeks", params) as counts:
        if project_id == "all":
            with connect(settings) as conn:
                projects = queries.projects(conn)
        else:
            projects = [project_id]
        plans = [plan_project(settings, p, start, end, force=force, overwrite_edited=overwrite_edited,
                              only_missing=only_missing) for p in projects]
        rows = fan_out(settings, plans, key=f"backfill-{run_label(project_id)}", title=flow_run.name or "backfill",
                       force=force, overwrite_edited=overwrite_edited, max_workers=max_workers, counts=counts)
        get_run_logger().info("backfill %s: %s", project_id, counts.get("outcomes"))
    publish_charts(projects)
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write
    return rows
