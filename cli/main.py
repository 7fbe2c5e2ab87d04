"""`chronicle` command line: every command is a thin shell over a flow or a storage query."""

from __future__ import annotations

from chronicle.cli.launch import delegate_if_console_script

# The `chronicle` script imports this module to call `app()`: before the imports below (the slow part of a
# command), hand the command to a warm process when one serves it (cli/launch.py). Returns if not.
delegate_if_console_script()

import json
from pathlib import Path

import typer
from rich.markup import escape

from chronicle.cli.common import (
    HomeOpt,
    check,
    console,
    err,
    fail,
    known_project,
    progress_bar,
    read_settings,
    run_flow,
    settings_from_options,
)
from chronicle.cli.output import Format, emit, format_option
from chronicle.ingest.model import IngestSummary, refused_lines
from chronicle.settings import Settings
from chronicle.settings_checks import env_names

app = typer.Typer(help="Chronicle: raw project logs -> weekly chronicle + distilled memory.", no_args_is_help=True)


@app.command()
def config(home: str | None = HomeOpt, as_json: bool = typer.Option(False, "--json")) -> None:
    """Print the effective settings, secrets masked."""
    data = settings_from_options(home).masked()
    if as_json:
        console.print_json(json.dumps(data, default=str))
        return
    names = env_names(Settings)  # (section, field) -> environment names; derived values have none
    top = [{"setting": key, "env": names.get((None, key), ("",))[0], "value": value}
           for key, value in data.items() if key not in Settings.sections()]
    rows = [{"setting": f"{key}.{field}", "env": names[(key, field)][0], "value": value}
            for key in Settings.sections() for field, value in data[key].items()]
    emit(top + rows, title="Effective settings")


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
           replace: bool = typer.Option(False, "--replace", help="Replace the rows read from these files before "
                                        "(kept as superseded) with what they hold now; says how many and which "
                                        "weeks."),
           home: str | None = HomeOpt) -> None:
    """Ingest logs into DuckDB: incremental, idempotent; bad input goes to `rejects`.

    Exits 1 when no log file was found, or when nothing could be read (see the README's input contract).
    """
    settings = settings_from_options(home)
    from chronicle.services.param_checks import ingest_paths

    given = check(ingest_paths, settings, [str(p) for p in paths], "PATHS")
    from chronicle.flows.ingest_logs import ingest_logs

    with progress_bar():
        summary = run_flow(settings, ingest_logs, given, project or "", force, replace)
    print_ingest_summary(summary)
    if replace:
        weeks = ", ".join(map(str, summary.superseded_weeks)) or "none"
        console.print(f"replaced: {summary.entries_removed} row(s) superseded (kept in raw_logs_superseded), "
                      f"{summary.entries_added} read again; weeks changed: {weeks}", soft_wrap=True)
    if not summary.files:
        fail("no log files found under the given paths")
    if summary.nothing_read:
        fail("nothing could be read: no entry in any new or changed file (every line or file was refused; "
             "see the rejects table)")


def print_ingest_summary(summary: IngestSummary) -> None:
    console.print(f"files: {summary.files} {summary.by_status}  entries added: {summary.entries_added}"
                  f"  removed: {summary.entries_removed}  skipped non-log files: {summary.skipped_files}",
                  soft_wrap=True)
    for document in summary.skipped_documents:
        err.print(f"[yellow]skipped {escape(document)}: one JSON document, not log lines or LoCoMo[/]", soft_wrap=True)
    if summary.rejects:
        emit([{"reject reason": reason, "count": n} for reason, n in sorted(summary.rejects.items())],
             title="Rejected (kept in table rejects)")
    print_file_notes(summary)
    if summary.safety_rejects:
        where = escape(refused_lines(summary.safety_rejects, 10))
        err.print(f"[bold red]{len(summary.safety_rejects)} refused line(s) name a safety event (SAE/AE) and are in "
                  f"no week's report until fixed and ingested again: {where} (their reasons: table rejects)[/]",
                  soft_wrap=True)


def print_file_notes(summary: IngestSummary) -> None:
    """One line per file the operator must hear about: refused whole, repeating another, known by content."""
    for path, why in summary.refused_files.items():
        err.print(f"[yellow]refused {escape(path)}: {escape(why)}[/]", soft_wrap=True)
    for path, per in summary.duplicates.items():
        for other, n in per.items():
            err.print(f"[yellow]{escape(path)}: {n} entr(ies) already held by {escape(other)}; stored once[/]",
                      soft_wrap=True)
    for path, other in summary.known.items():
        console.print(f"{escape(path)} is {escape(other)} (renamed, rotated or copied): read on from where it stopped",
                      soft_wrap=True)
    for path, note in summary.notes.items():
        err.print(f"[yellow]{escape(path)}: {escape(note)}[/]", soft_wrap=True)


@app.command()
def weeks(project: str | None = typer.Option(None, "--project", "-p"),
          fmt: Format = format_option(),
          as_csv: bool = typer.Option(False, "--csv", hidden=True, help="Same as --format csv."),
          home: str | None = HomeOpt) -> None:
    """Entries per project and ISO week (project-local time), by event type."""
    settings = read_settings(home)
    if project:
        project = known_project(settings, project)
    from chronicle.storage.db import read
    from chronicle.storage.queries import week_table

    rows = read(settings, week_table, project)
    fmt = Format.csv if as_csv else fmt
    if fmt is not Format.table:
        from chronicle.ingest.model import STANDARD_TYPES

        emit(rows, fmt, columns=list(rows[0]) if rows else ["project_id", "week_number", "first_day", "entries",
                                                              *STANDARD_TYPES])
        return
    print_week_table(rows)


def print_week_table(rows: list[dict]) -> None:
    cols = [c for c in rows[0] if c != "first_day"] if rows else []
    emit(rows, columns=cols, title="raw_logs per ISO week", empty="no entries yet — run `chronicle ingest PATH`")


def _register_subcommands() -> None:
    # Each capability registers its commands from its own module, keeping this file small.
    from chronicle.cli import (
        analyst_cmds,
        demo,
        desk_cmds,
        mcp_cmds,
        memory_cmds,
        ops_cmds,
        report_cmds,
        review_cmds,
        status_cmds,
    )

    for module in (demo, report_cmds, memory_cmds, ops_cmds, analyst_cmds, status_cmds, review_cmds, desk_cmds,
                   mcp_cmds):
        module.register(app)


_register_subcommands()
