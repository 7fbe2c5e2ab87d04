"""Flow `summarize-week`: write (or refresh from the cache) one project's report for one ISO week."""

from __future__ import annotations

from datetime import UTC, datetime

from prefect import flow
from prefect.runtime import flow_run
from prefect.states import Completed

from chronicle.param_checks import ParameterError, name_part, week_label
from chronicle.params import Force, IsoWeekStr, ProjectId
from chronicle.services.param_checks import one_week
from chronicle.services.run_tracking import REFUSALS, RUN_HOOKS, refused, tracked_run
from chronicle.services.weekly import plan_project
from chronicle.settings import load_settings
from chronicle.tasks.weekly import fan_out, run_label
from chronicle.weekly.outcome import WeekOutcome, WeeksFailedError, run_message
from chronicle.weeks import last_completed_week


def summarize_run_name() -> str:
    """`weekly-XH201-2026W05`; never raises, whatever the parameters."""
    params = flow_run.parameters
    return f"weekly-{name_part(params.get('project_id'), 'none')}-{week_label(params.get('week'), 'none')}"


@flow(name="summarize-week", flow_run_name=summarize_run_name, log_prints=False, **RUN_HOOKS)
def summarize_week(project_id: ProjectId, week: IsoWeekStr, force: Force = False,
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
    params = {"project_id": project_id, "week": week, "force": force, "overwrite_edited": overwrite_edited}
    try:
        with tracked_run(settings, "summarize-week", params) as run:
            project, iso = one_week(settings, project_id, week)
            plan = plan_project(settings, project, iso, iso, force=force, overwrite_edited=overwrite_edited,
                                only_missing=False)
            if not plan.to_run:  # outside the project's weeks: say on which side
                if iso > last_completed_week(datetime.now(UTC), settings.tz_for(project)):
                    raise ParameterError(f"week {iso} has not ended and project {project!r} has no entries in it: "
                                         "nothing to summarise (a week past the last entry gets no empty page "
                                         "before it ends)")
                raise ParameterError(f"week {iso} is before the first entry of project {project!r}; "
                                     "nothing to summarise")
            # fan_out takes the LLM slot (not for the offline engine) and raises WeeksFailedError on failure.
            rows = fan_out(settings, [plan], key=f"weekly-{run_label(project)}", title=flow_run.name or "week",
                           max_workers=1, counts=run)
            run.message = run_message(rows, f"{project} {iso}")
    except REFUSALS as exc:  # a typo, or the database held by another process: one line, no traceback
        return refused(exc)
    except WeeksFailedError as exc:
        return refused(exc, said="partly failed")
    return Completed(message=run.message, data=rows[0])
