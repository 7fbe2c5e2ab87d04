"""Flow `summarize-week`: write (or refresh from the cache) one project's report for one ISO week."""

from __future__ import annotations

from prefect import flow
from prefect.runtime import flow_run

from chronicle.names import bounded_label
from chronicle.params import Force, IsoWeekStr
from chronicle.settings import load_settings
from chronicle.weekly.outcome import WeekOutcome
from chronicle.weeks import IsoWeek
from services.runs import tracked_run
from services.weekly import plan_project
from tasks.fanout import fan_out, run_label


def summarize_run_name() -> str:
    """`weekly-XH201-2026W05`."""
    params = flow_run.parameters
    week = IsoWeek.parse(params["week"])
    return f"weekly-{bounded_label(str(params['project_id']), limit=60)}-{week.year}W{week.week:02d}"


@flow(name="summarize-week", flow_run_name=summarize_run_name, log_prints=False)
def summarize_week(project_id: str, week: IsoWeekStr, force: Force = False,
                   overwrite_edited: bool = False) -> WeekOutcome:
    """Summarise one project's ISO week; returns its outcome row.

    A current report is answered from DuckDB without an LLM call; a human edit is kept (marked
    stale when its inputs changed) unless `overwrite_edited`.

    Args:
        project_id: The project id, as in raw_logs.project_id.
        week: ISO week YYYY-Www, e.g. 2026-W05.
        force: Regenerate even a current report.
        overwrite_edited: Regenerate even a human-corrected report (the edit stays in the history).
    """
    settings = load_settings()
    iso = IsoWeek.parse(week)
    params = {"project_id": project_id, "week": str(iso), "force": force, "overwrite_edited": overwrite_edited}
    with tracked_run(settings, "summarize-week", params) as counts:
        plan = plan_project(settings, project_id, iso, iso, force=force, overwrite_edited=overwrite_edited,
                            only_missing=False)
        if not plan.to_run:
            raise ValueError(f"project {project_id!r} has no entries up to {iso}; nothing to summarise")
        # fan_out takes the LLM slot (not for the offline engine) and raises WeeksFailedError on failure.
        rows = fan_out(settings, [plan], key=f"weekly-{run_label(project_id)}", title=flow_run.name or "week",
                       force=force, overwrite_edited=overwrite_edited, max_workers=1, counts=counts)
    return rows[0]
