"""Flow `backfill-weeks`: write the weekly chronicle of past weeks, concurrently, resumably.

Caching lives in DuckDB, not in Prefect's result cache: a report is current when its stored
`input_hash` (ordered entry ids + content), `model` and `prompt_version` match — durable, shared by
every process and flow run, visible to SQL, and invalidated exactly by a late entry, a new model or
a new prompt. Prefect's cache would need its own storage, could not see human edits, and keys on
task parameters rather than on what the LLM actually read.
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from chronicle.names import bounded_label
from chronicle.params import Force, OnlyMissing, OptionalIsoWeekStr, ProjectSelector
from chronicle.settings import load_settings
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek
from services.runs import tracked_run
from services.weekly import plan_project
from storage import queries
from storage.db import connect
from storage.snapshot import publish_snapshot
from tasks.analytics import publish_charts
from tasks.fanout import fan_out, run_label


def _week_label(text: str | None, fallback: str) -> str:
    if not text:
        return fallback
    week = IsoWeek.parse(text)
    return f"{week.year}W{week.week:02d}"


def backfill_run_name() -> str:
    """`backfill-XH201-2026W01..2026W10` (or `backfill-all-first..last`)."""
    params = flow_run.parameters
    project = bounded_label(str(params.get("project_id") or "all"), limit=60)
    return (f"backfill-{project}-{_week_label(params.get('start_week'), 'first')}.."
            f"{_week_label(params.get('end_week'), 'last')}")


@flow(name="backfill-weeks", flow_run_name=backfill_run_name, log_prints=False)
def backfill_weeks(project_id: ProjectSelector = "all", start_week: OptionalIsoWeekStr = None,
                   end_week: OptionalIsoWeekStr = None, only_missing: OnlyMissing = True, force: Force = False,
                   overwrite_edited: bool = False, max_workers: int | None = None) -> list[WeekOutcome]:
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
    settings = load_settings()
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
    publish_charts(settings, projects)
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write
    return rows
