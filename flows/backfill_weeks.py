"""Flow `backfill-weeks`: write the weekly chronicle of past weeks, concurrently, resumably.

Caching lives in DuckDB, not in Prefect's result cache: a report is current when its stored
`input_hash` (ordered entry ids + content), `model` and `prompt_version` match — durable, shared by
every process and flow run, visible to SQL, and invalidated exactly by a late entry, a new model or
a new prompt. Prefect's cache would need its own storage, could not see human edits, and keys on
task parameters rather than on what the LLM actually read.
"""

from __future__ import annotations

from prefect import flow, get_run_logger
from prefect.futures import PrefectFuture
from prefect.runtime import flow_run
from prefect.states import Completed

from chronicle.param_checks import name_part, week_label
from chronicle.params import Force, OnlyMissing, OptionalIsoWeekStr, ProjectSelector, Workers
from chronicle.services.alerts import BACKFILL_HOOKS
from chronicle.services.param_checks import backfill_scope
from chronicle.services.run_tracking import REFUSALS, after_stored, refused, tracked_run
from chronicle.services.weekly import plan_project
from chronicle.settings import Settings, load_settings
from chronicle.tasks.analytics import publish_charts
from chronicle.tasks.spread import spread_backfill
from chronicle.tasks.weekly import fan_out, run_label
from chronicle.weekly.outcome import WeekOutcome, WeeksFailedError, run_message


def backfill_run_name() -> str:
    """`backfill-XH201-2026W01..2026W10` (or `backfill-all-first..last`); never raises, whatever the parameters."""
    params = flow_run.parameters
    return (f"backfill-{name_part(params.get('project_id'), 'all')}-{week_label(params.get('start_week'), 'first')}.."
            f"{week_label(params.get('end_week'), 'last')}")


@flow(name="backfill-weeks", flow_run_name=backfill_run_name, log_prints=False, **BACKFILL_HOOKS)
def backfill_weeks(project_id: ProjectSelector = "all", start_week: OptionalIsoWeekStr = "",
                   end_week: OptionalIsoWeekStr = "", only_missing: OnlyMissing = True, force: Force = False,
                   overwrite_edited: bool = False, max_workers: Workers = 0) -> list[WeekOutcome]:
    """Summarise every week of `project_id` (or all projects) from `start_week` to `end_week`.

    Zero-entry weeks get the fixed “本周无记录” report (outcome `empty`) so the chronicle has no
    gaps. Raises `WeeksFailedError` after storing every week that succeeded; a rerun picks up only
    the failures. Returns one outcome row per week (also published as a table artifact). Parameters are
    checked first: an unknown project, a week that does not exist or a reversed range fail the run.
    With the `backfill_spread` setting (lake topology) the weeks are shared with child runs on other workers.

    Args:
        project_id: A project id as in raw_logs.project_id, or `all` for every project.
        start_week: First ISO week, YYYY-Www, e.g. 2026-W05; empty = each project's first week with entries.
        end_week: Last ISO week, YYYY-Www, e.g. 2026-W10; empty = each project's last week with entries.
        only_missing: Answer current weeks from DuckDB at planning, without a task; run only weeks with no
            report, a stale or failed one, or changed entries, model or prompt (a rerun costs no LLM calls).
        force: Regenerate every week even when its report is current (spends LLM calls); human edits are
            still kept unless overwrite_edited is set.
        overwrite_edited: Also regenerate weeks a human corrected (the edit stays in the version history).
        max_workers: Weeks in flight at once (task threads); 0 = the backfill_max_workers setting,
            default four times llm_concurrency (weeks waiting for their commit leave the LLM slots busy).
    """
    settings = load_settings()
    params = {"project_id": project_id, "start_week": start_week, "end_week": end_week, "only_missing": only_missing,
              "force": force, "overwrite_edited": overwrite_edited, "max_workers": max_workers}
    try:
        with tracked_run(settings, "backfill-weeks", params) as run:
            scope = backfill_scope(settings, project_id, start_week, end_week)
            plans = [plan_project(settings, p, scope.start, scope.end, force=force, overwrite_edited=overwrite_edited,
                                  only_missing=only_missing, to_last_entry=True) for p in scope.projects]
            charts = _Charts(settings, scope.projects)
            fan = {"key": f"backfill-{run_label(project_id)}", "title": flow_run.name or "backfill",
                   "max_workers": max_workers, "counts": run, "on_start": charts.start}
            try:
                if settings.weekly.backfill_spread:  # the lake's workers share the weeks (tasks/spread.py)
                    rows = spread_backfill(settings, plans, force=force, overwrite_edited=overwrite_edited, **fan)
                else:
                    rows = fan_out(settings, plans, **fan)
            finally:
                charts.start()  # a fan-out that failed before its first task run still publishes the charts
            where = scope.describe() if scope.projects else "any project (nothing ingested yet)"
            run.message = run_message(rows, where)
            get_run_logger().info("backfill %s: %s", project_id, run.message)
    except REFUSALS as exc:  # a typo, or the database held by another process: one line, no traceback
        return refused(exc)
    except WeeksFailedError as exc:
        return refused(exc, said="partly failed")
    message = charts.wait(run.message)  # the read snapshot was published as the run's row was written
    return Completed(message=message, data=rows)  # the UI shows the message on the run page


class _Charts:
    """The project charts, drawn beside the weeks.

    They read raw-log stats only (no report), so they are drawn while the weeks are written instead of after
    the last one: off the critical path of the run (0.6 s of a 156-week backfill). Started once the first
    weeks' task runs are submitted, not before: their artifact (inline PNGs) is a long write on the API's
    SQLite file, and the `llm` reservation written beside it got a 503, which Prefect's client retries only
    2 s later.
    """

    def __init__(self, settings: Settings, projects: list[str]) -> None:
        self.settings, self.projects = settings, projects
        self.futures: list[PrefectFuture[list[str]]] = []

    def start(self) -> None:
        if not self.futures:
            self.futures.append(publish_charts.submit(self.settings, self.projects))

    def wait(self, message: str | None) -> str | None:
        """The run's final message once the charts are drawn: charts that cannot be written (a full disk) do not fail a
        run whose weeks are stored (`after_stored`)."""
        for chart in self.futures:
            message = after_stored(message, chart.result, "the charts were not drawn", "the next backfill draws them")
        return message
