"""Flow `weekly-chronicle`: the Monday job of seed 000 — last week's report for every project."""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow, get_run_logger
from prefect.runtime import flow_run
from prefect.states import Completed

from chronicle.param_checks import week_label
from chronicle.params import Force, OptionalIsoWeekStr
from chronicle.services.param_checks import weekly_scope
from chronicle.services.run_tracking import REFUSALS, RUN_HOOKS, after_stored, refused, tracked_run
from chronicle.services.weekly import plan_project
from chronicle.settings import load_settings
from chronicle.tasks.analytics import publish_charts
from chronicle.tasks.weekly import fan_out
from chronicle.weekly.outcome import WeekOutcome, WeeksFailedError, run_message
from chronicle.weeks import last_completed_week


def weekly_run_name() -> str:
    """`weekly-all-2026W05` (the week in the default timezone when not given); never raises."""
    week = flow_run.parameters.get("week")
    if not week:
        try:
            last = last_completed_week(datetime.now(UTC), load_settings().tz_for(""))
            week = str(last)
        except Exception:  # a broken setting fails the run in its body, with the message, not here
            week = ""
    return f"weekly-all-{week_label(week, 'last')}"


@flow(name="weekly-chronicle", flow_run_name=weekly_run_name, log_prints=False, **RUN_HOOKS)
def weekly_chronicle(week: OptionalIsoWeekStr = "", force: Force = False) -> list[WeekOutcome]:
    """Summarise one ISO week for every project (seed 000's Monday 02:00 job).

    Projects whose first entry is after that week are skipped; a project with no entries that
    week gets the “本周无记录” report. Returns the outcome rows (also a table artifact).

    Args:
        week: ISO week YYYY-Www, e.g. 2026-W05; empty = the last completed week in each project's own timezone.
        force: Regenerate even a current report (human edits are always kept).
    """
    settings = load_settings()
    now = datetime.now(UTC)
    try:
        with tracked_run(settings, "weekly-chronicle", {"week": week, "force": force}) as run:
            scope = weekly_scope(settings, week)
            plans = []
            for project_id in scope.projects:
                iso = scope.start or last_completed_week(now, settings.tz_for(project_id))
                plan = plan_project(settings, project_id, iso, iso, force=force, only_missing=True)
                if plan.total:
                    plans.append(plan)
            rows = fan_out(settings, plans, key="weekly-chronicle", title=flow_run.name or "weekly", max_workers=0,
                           counts=run)
            what = f"week {scope.start}" if scope.start else "the last completed week"
            run.message = run_message(rows, f"{what} of {len(scope.projects)} project(s)")
            get_run_logger().info("weekly chronicle: %s", run.message)
    except REFUSALS as exc:  # a typo, or the database held by another process: one line, no traceback
        return refused(exc)
    except WeeksFailedError as exc:
        return refused(exc, said="partly failed")
    message = after_stored(run.message, lambda: publish_charts(settings, scope.projects), "the charts were not drawn",
                           "the next run draws them")
    return Completed(message=message, data=rows)
