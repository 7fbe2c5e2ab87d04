"""`chronicle status`: freshness at a glance — is everything up to date, and if not, what is missing."""

from __future__ import annotations

import typer
from rich.markup import escape

from chronicle.cli.common import HomeOpt, console, err, read_settings
from chronicle.cli.output import Format, emit, format_option


def register(app: typer.Typer) -> None:
    @app.command()
    def status(fmt: Format = format_option(),
               home: str | None = HomeOpt) -> None:
        """Per project: the last week with a current report, ended weeks with entries but no report, stale reports,
        weeks flagged for review; per scheduled flow: its last success and how old it is against its schedule
        (views pipeline_freshness / pipeline_run_freshness; embedded file or lake). Exits 1 when something is
        missing or overdue and 2 when the database cannot be read, so a cron job or a monitor can call it."""
        from chronicle.ops import human_age, week_list
        from chronicle.services.freshness import freshness

        settings = read_settings(home)
        try:
            report = freshness(settings)
        except Exception as exc:  # a monitor wants one line and its own exit status, not a traceback
            from chronicle.settings import mask_conninfo

            err.print(f"[red]cannot read the pipeline database: {escape(mask_conninfo(str(exc)))}[/]", soft_wrap=True)
            raise typer.Exit(2) from None
        projects = [{"project": p.project_id, "last ended week": week_list((p.last_ended_week,) if p.last_ended_week
                                                                          else ()),
                     "last current report": week_list((p.last_current_week,) if p.last_current_week else ()),
                     "missing": week_list(p.missing_weeks), "stale": week_list(p.stale_weeks),
                     "needs review": week_list(p.review_weeks),
                     "last entry (UTC)": p.last_entry_at.isoformat(sep=" ", timespec="minutes") if p.last_entry_at
                     else "—"} for p in report.projects]
        flows = [{"flow": f.flow_name, "last success (UTC)": f.last_completed.isoformat(sep=" ", timespec="minutes")
                  if f.last_completed else "never", "age": human_age(f.age), "allowed": human_age(f.allowed),
                  "last run": f.last_state or "—", "failures since": report.failures.get(f.flow_name, 0),
                  "verdict": f.verdict} for f in report.flows]
        if fmt is not Format.table:
            emit([{"kind": "project", **p} for p in projects] + [{"kind": "flow", **f} for f in flows]
                 + [{"kind": "refused safety line", "file": path, "line": line}
                    for path, line in report.safety_rejects], fmt, columns=None)
        else:
            emit(projects, title="reports per project (pipeline_freshness)", empty="no entries ingested yet")
            emit(flows, title="scheduled flows (pipeline_run_freshness)")
            problems = report.problems()
            for line in problems:
                err.print(f"[yellow]{line}[/]", soft_wrap=True)
            console.print("everything is up to date" if report.up_to_date else
                          f"NOT up to date: {len(problems)} problem(s) above", soft_wrap=True)
        if not report.up_to_date:
            raise typer.Exit(1)
