"""`chronicle` command line: every command is a thin shell over a flow or a storage query."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from rich.table import Table

from chronicle.ingest.model import IngestSummary
from cli.common import console, err, load_settings, progress_bar, run_flow

app = typer.Typer(help="Chronicle: raw project logs -> weekly chronicle + distilled memory.", no_args_is_help=True)
HomeOpt = typer.Option(None, "--home", help="Data folder (overrides CHRONICLE_HOME).")


@app.command()
def config(home: str | None = HomeOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the effective settings, secrets masked."""
    data = load_settings(home).masked()
    if as_json:
        console.print_json(json.dumps(data, default=str))
        return
    table = Table("setting", "value", title="Effective settings")
    for key, value in data.items():
        table.add_row(key, str(value))
    console.print(table)


@app.command()
def sample(out_dir: Path = typer.Argument(..., help="Folder to write the sample into."),
           seed: int = typer.Option(7), weeks: int = typer.Option(56)) -> None:
    """Write the synthetic two-project clinical trial and daily notes, with their ground truth."""
    from chronicle.sample import generate_sample

    manifest = generate_sample(out_dir, seed=seed, weeks=weeks)
    console.print(f"sample written to [bold]{out_dir}[/] ({len(manifest.files)} files); "
                  f"ground truth: {manifest.ground_truth}")
    console.print(f"CSV column mapping for this sample: {json.dumps(manifest.column_map)}")


@app.command()
def ingest(paths: list[Path] = typer.Argument(..., help="Files or folders (recursive)."),
           project: str | None = typer.Option(None, "--project", "-p", help="Project for entries without one."),
           force: bool = typer.Option(False, "--force", help="Re-read every file whole, even one that looks "
                                                             "unchanged (size, mtime, head and tail)."),
           home: str | None = HomeOpt) -> None:
    """Ingest logs into DuckDB: incremental, idempotent; bad input goes to `rejects`."""
    settings = load_settings(home)
    from flows.ingest_logs import ingest_logs

    with progress_bar():
        summary = run_flow(settings, ingest_logs, [str(p) for p in paths], project, force)
    print_ingest_summary(summary)
    if summary.files and summary.readable == 0:
        err.print("[red]nothing could be read: every file was rejected (see the rejects table)[/]")
        raise typer.Exit(1)
    if not summary.files:
        err.print("[red]no log files found under the given paths[/]")
        raise typer.Exit(1)


def print_ingest_summary(summary: IngestSummary) -> None:
    console.print(f"files: {summary.files} {summary.by_status}  entries added: {summary.entries_added}"
                  f"  removed: {summary.entries_removed}  skipped non-log files: {summary.skipped_files}")
    if summary.rejects:
        table = Table("reject reason", "count", title="Rejected (kept in table rejects)")
        for reason, n in sorted(summary.rejects.items()):
            table.add_row(reason, str(n))
        console.print(table)


@app.command()
def weeks(project: str | None = typer.Option(None, "--project", "-p"),
          as_csv: bool = typer.Option(False, "--csv", help="CSV on stdout instead of a table."),
          home: str | None = HomeOpt) -> None:
    """Entries per project and ISO week (project-local time), by event type."""
    settings = load_settings(home)
    from storage.db import connect
    from storage.queries import week_table

    with connect(settings, read_only=True) as conn:
        rows = week_table(conn, project)
    if as_csv:
        import csv
        import sys

        writer = csv.DictWriter(sys.stdout, fieldnames=list(rows[0]) if rows else ["project_id", "week_number"])
        writer.writeheader()
        writer.writerows(rows)
        return
    print_week_table(rows)


def print_week_table(rows: list[dict]) -> None:
    if not rows:
        console.print("no entries yet — run `chronicle ingest PATH`")
        return
    cols = [c for c in rows[0] if c != "first_day"]
    table = Table(*cols, title="raw_logs per ISO week")
    for row in rows:
        table.add_row(*(str(row[c]) for c in cols))
    console.print(table)


def _register_subcommands() -> None:
    # Each capability registers its commands from its own module, keeping this file small.
    from cli import analyst_cmds, demo, memory_cmds, ops_cmds, report_cmds

    for module in (demo, report_cmds, memory_cmds, ops_cmds, analyst_cmds):
        module.register(app)


_register_subcommands()
