"""Analyst commands: `chronicle stats`, `chronicle export`, `chronicle chart`, `chronicle sql`."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from chronicle.cli.common import check, console, err, known_project, read_settings, settings_from_options
from chronicle.cli.output import Format, emit, format_option

STATS_COLUMNS = ("week_number", "entries", "messages", "enrolled", "enrolled_total", "ae", "sae", "deviations",
                 "queries", "decisions", "report_status", "report_engine", "report_stale", "report_needs_review")


def _weeks(start: str | None, end: str | None) -> tuple[int | None, int | None]:
    """`--from` / `--to` checked like every other command's (syntax, existence, order): one line, status 2."""
    from chronicle.param_checks import check_range, parse_week

    first, last = check(parse_week, start, "--from"), check(parse_week, end, "--to")
    check(check_range, first, last, "--from", "--to")
    return (first.number if first else None), (last.number if last else None)


def register(app: typer.Typer) -> None:
    @app.command()
    def stats(project: str = typer.Option(..., "--project", "-p"),
              start: str | None = typer.Option(None, "--from", help="First ISO week, e.g. 2026-W01."),
              end: str | None = typer.Option(None, "--to", help="Last ISO week."),
              fmt: Format = format_option(),
              home: str | None = typer.Option(None, "--home")) -> None:
        """Weekly stats of a project (the `weekly_stats` view), including weeks without a report."""
        from chronicle.storage.analytics import weekly_stats
        from chronicle.storage.db import read

        settings = read_settings(home)
        project = known_project(settings, project)
        rows = read(settings, weekly_stats, project, *_weeks(start, end))
        if not rows:
            err.print(f"[red]no weeks for project {project!r}[/]")
            raise typer.Exit(1)
        emit(rows, fmt, columns=STATS_COLUMNS if fmt is Format.table else None, title=f"{project} weekly stats")

    @app.command()
    def export(out_dir: Path = typer.Argument(..., help="Folder for the Parquet files."),
               fmt: str = typer.Option("parquet", "--format", help="Only parquet for now."),
               home: str | None = typer.Option(None, "--home")) -> None:
        """Every table and view as Parquet, for BI tools."""
        if fmt != "parquet":
            raise typer.BadParameter("only --format parquet is supported")
        from chronicle.storage.analytics import export_parquet
        from chronicle.storage.db import read

        written = read(read_settings(home), export_parquet, out_dir)
        for name, path, n in written:
            console.print(f"{name:<24} {n:>8} rows -> {path}")

    @app.command()
    def sql(print_attach: bool = typer.Option(False, "--print-attach",
                                              help="Print the SQL that attaches the live database."),
            home: str | None = typer.Option(None, "--home")) -> None:
        """How a `duckdb` shell reaches the data: `duckdb -cmd "$(chronicle sql --print-attach)"`."""
        settings = settings_from_options(home)
        from chronicle.storage.analytics import shell_attach_sql

        text = shell_attach_sql(settings)
        if print_attach:
            sys.stdout.write(text + "\n")
        else:
            console.print(f'duckdb -cmd "$(chronicle sql --print-attach)"   # runs:\n{text}')

    @app.command()
    def chart(project: str = typer.Option(..., "--project", "-p"),
              out: Path = typer.Option(Path("charts"), "--out", help="Folder for the PNG files."),
              home: str | None = typer.Option(None, "--home")) -> None:
        """Weekly enrolment (bars + cumulative) and AE / SAE / deviation charts as PNG."""
        from chronicle.services.analytics import write_charts

        settings = read_settings(home)
        project = known_project(settings, project)
        for path in write_charts(settings, project, out):
            console.print(f"chart: {path}")
