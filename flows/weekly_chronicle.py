"""Flow `weekly-chronicle`: the Monday job of seed 000 — last week's report for every project."""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from chronicle.params import Force, OptionalIsoWeekStr
from chronicle.settings import load_settings
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek, last_completed_week
from services.runs import tracked_run
from services.weekly import plan_project
from storage import queries
from storage.db import connect
from storage.snapshot import publish_snapshot
from tasks.analytics import publish_charts
from tasks.fanout import fan_out


def weekly_run_name() -> str:
    """`weekly-all-2026W05` (the week in the default timezone when not given)."""
    week = flow_run.parameters.get("week")
    iso = IsoWeek.parse(week) if week else last_completed_week(datetime.now(UTC), load_settings().tz_for(""))
    return f"weekly-all-{iso.year}W{iso.week:02d}"


@flow(name="weekly-chronicle", flow_run_name=weekly_run_name, log_prints=False)
def weekly_chronicle(week: OptionalIsoWeekStr = None, force: Force = False) -> list[WeekOutcome]:
    """Summarise one ISO week for every project (seed 000's Monday 02:00 job).

    Projects whose first entry is after that week are skipped; a project with no entries that
    week gets the “本周无记录” report. Returns the outcome rows (also a table artifact).

    Args:
        week: ISO week YYYY-Www; empty = the last completed week in each project's own timezone.
        force: Regenerate even a current report (human edits are always kept).
    """
    settings = load_settings()
    now = datetime.now(UTC)
    with tracked_run(settings, "weekly-chronicle", {"week": week, "force": force}) as counts:
        with connect(settings) as conn:
            projects = queries.projects(conn)
        plans = []
        for project_id in projects:
            iso = IsoWeek.parse(week) if week else last_completed_week(now, settings.tz_for(project_id))
            plan = plan_project(settings, project_id, iso, iso, force=force, only_missing=True)
            if plan.total:
                plans.append(plan)
        rows = fan_out(settings, plans, key="weekly-chronicle", title=flow_run.name or "weekly", force=force,
                       overwrite_edited=False, max_workers=None, counts=counts)
        get_run_logger().info("weekly chronicle: %s", counts.get("outcomes"))
    publish_charts(settings, projects)
    publish_snapshot(settings)  # analysts query the snapshot, never the file flows write
    return rows
