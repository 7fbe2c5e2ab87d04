"""`chronicle report show|edit|history|list`, `weekly`, `backfill`, `context`, `ask` — the weekly chronicle."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click
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
from chronicle.cli.output import Format, emit, format_option, print_text
from chronicle.settings import Settings
from chronicle.weekly.outcome import TABLE_COLUMNS, WeekOutcome, WeeksFailedError, outcome_counts
from chronicle.weeks import IsoWeek

ProjectOpt = typer.Option(..., "--project", "-p", help="Project id.")
WeekOpt = typer.Option(..., "--week", "-w", help="ISO week, e.g. 2026-W05.")


def engine_banner(settings: Settings) -> str:
    """Which engine writes reports — said on every command that writes them."""
    if settings.llm.offline:
        return ("engine: [bold]offline-extractive[/] (no LLM_URL set: deterministic extractive reports; "
                "configure an endpoint and rerun to regenerate those weeks with the model)")
    from chronicle.llm import base_url
    from chronicle.redaction.urls import mask_url_credentials

    shown = mask_url_credentials(base_url(settings.llm.url or ""))  # `http://admin:pw@host` -> `admin:****@`
    return f"engine: [bold]LLM {escape(settings.llm.model)}[/] at {escape(shown)}"


def _parse_week(text: str) -> IsoWeek:
    from chronicle.param_checks import parse_week

    week = check(parse_week, text, "--week")
    if week is None:
        fail("--week is empty: write an ISO week, e.g. 2026-W05", code=2)
    return week


def print_outcomes(rows: list[WeekOutcome], limit: int = 30) -> None:
    """The per-week outcome table; long runs show what changed and summarise the cached weeks."""
    counts = outcome_counts(rows)
    shown = rows if len(rows) <= limit else [r for r in rows if r.outcome != "cached" or r.needs_review]
    if shown:
        emit([row.table_row() for row in shown[:limit]], columns=TABLE_COLUMNS, title="weeks")
    if len(shown) > limit:
        console.print(f"... {len(shown) - limit} more rows (see the Prefect table artifact)")
    console.print("outcomes: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    for row in rows:
        if row.outcome == "failed":
            err.print(f"[red]failed {row.project} {row.week}: {escape(str(row.message))}[/]")
        elif row.needs_review and row.reasons:
            console.print(f"[yellow]needs review {row.project} {row.week}: {escape('; '.join(row.reasons))}[/]")


def run_weekly_flow(settings: Settings, flow: Any, **params: Any) -> tuple[list[WeekOutcome], bool]:
    """Run a weekly flow with a progress bar; (outcome rows, all weeks succeeded)."""
    try:
        with progress_bar():
            return run_flow(settings, flow, **params), True
    except WeeksFailedError as exc:
        return exc.rows, False


def show_report(settings: Settings, project: str, week: IsoWeek) -> None:
    from chronicle.services.reports import NoReportError, view_report
    from chronicle.weekly.faithfulness import describe
    from chronicle.weekly.report_md import stats_table

    try:
        view = view_report(settings, project, week)
    except NoReportError:
        err.print(f"[red]no report for {project} {week}[/] — run `chronicle backfill --project {project} "
                  f"--from {week} --to {week}`")
        raise typer.Exit(1) from None
    row = view.row
    console.print(f"[bold]{project} {week}[/] ({row['start_date']} – {row['end_date']}) · {row['status']} · "
                  f"{row['model']} · prompt {row['prompt_version']} · version {row['version']} · "
                  f"updated {row['updated_at']:%Y-%m-%d %H:%M} UTC")
    if row["needs_review"]:
        for reason in row["review_reasons"] or []:
            console.print(f"[yellow]needs review: {escape(describe(reason))}[/]")
    if view.stale:
        console.print(f"[yellow]stale: the week's entries changed since this text was written "
                      f"({row['entry_count']} then, {len(view.current.entries)} now)[/]")
    console.print()
    print_text(row["summary"])
    console.print()
    console.print(escape(stats_table(row["stats"], row["summary"])))
    if row["citations"]:
        console.print("citations: " + ", ".join(f"{k}→{v}" for k, v in row["citations"].items()))
    if row["llm_stats"]:
        console.print(f"LLM stats (not used as counts): {escape(str(row['llm_stats']))}")


def _edit_author(settings: Settings, project: str, account: str | None, author: str | None) -> str:
    """Who the correction is by: a desk account (enabled, reviewer of the project) or a name given explicitly —
    never the shell user silently (the history is an audit trail)."""
    if bool(account) == bool(author):
        fail("say who corrects the report: --as ACCOUNT (a desk account) or --author NAME (one of them)", code=2)
    if author:
        return author
    from chronicle.services.accounts import get_account

    found = get_account(settings, account or "")
    if found is None or found.disabled:
        fail(f"--as {account}: no enabled desk account of that name (chronicle desk user add)", code=2)
    if not found.can_review(project):
        fail(f"--as {account}: not a reviewer of {project} (chronicle desk user grant)", code=2)
    return found.username


def edit_report(settings: Settings, project: str, week: IsoWeek, file: Path | None, reason: str, author: str,
                base_version: int | None) -> None:
    from chronicle.services import reports
    from chronicle.weekly.faithfulness import describe

    try:
        view = reports.view_report(settings, project, week)
    except reports.NoReportError:
        err.print(f"[red]no report for {project} {week}[/]; generate it before correcting it")
        raise typer.Exit(1) from None
    current, base = view.row["summary"], base_version or view.row["version"]
    text = _edit_file_text(file) if file else click.edit(current, extension=".md")
    if text is not None and base == view.row["version"] and text.strip() == current.strip():
        text = None
    if text is None:
        console.print("no change; nothing stored")
        return
    try:
        result = reports.edit_report(settings, project, week, text, reason=reason, author=author,
                                     base_version=base, remote="cli")
    except reports.InvalidEdit as exc:
        fail(f"{'--file ' + str(file) + ': ' if file else ''}{exc}", code=2)
    except reports.VersionConflict as exc:
        err.print(f"[red]{escape(str(exc))}[/]")
        print_text("\n".join(exc.diff_lines), target=err)
        raise typer.Exit(1) from None
    if result.redacted:
        console.print(f"[yellow]redacted in the edit: {result.redacted}[/]")
    console.print(f"stored version {result.version} of {project} {week} (edited; regeneration will keep it)")
    for line in (describe(r) for r in result.reasons):
        print_text(f"needs review: {line}")
    if result.needs_review:
        console.print("[yellow]the week awaits review: a sign-off clears it (chronicle review accept)[/]")
    if result.unknown_citations:
        console.print(f"[yellow]note: {', '.join(result.unknown_citations)} are not entries of this week; "
                      "kept as text only[/]")


def _edit_file_text(file: Path) -> str:
    data = file.read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        fail(f"--file {file} is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r}); save it as "
             "UTF-8 and run the command again", code=2)


def print_history(settings: Settings, project: str, week: IsoWeek, full: bool, fmt: Format = Format.table) -> None:
    from chronicle.storage.db import read
    from chronicle.storage.reports import history

    rows = read(settings, history, project, week.number)
    if not rows:
        err.print(f"[red]no versions for {project} {week}[/]")
        raise typer.Exit(1)
    if fmt is not Format.table:  # every column, the text of each version included
        emit([{"project": project, "week": str(week), **r} for r in rows], fmt)
        return
    emit([{"version": r["version"], "status": r["status"], "author": r["author"],
           "when (UTC)": f"{r['created_at']:%Y-%m-%d %H:%M}", "reason": r["reason"] or "", "model": r["model"],
           "input": r["input_hash"][:10], "review": "yes" if r["needs_review"] else ""} for r in rows],
         title=f"{project} {week}")
    for r in rows if full else []:
        console.rule(f"version {r['version']}")
        print_text(r["summary"])


def print_context_excerpt(context: str, head: int = 12, tail: int = 3) -> None:
    """First and last lines of a chronicle (each wrapped to the terminal)."""
    lines = context.splitlines()
    if len(lines) > head + tail + 1:
        lines = [*lines[:head], f"... {len(lines) - head - tail} more lines ...", *lines[-tail:]]
    for line in lines:
        print_text(line, soft_wrap=None)


def print_run_summary(rows: list[WeekOutcome], seconds: float) -> None:
    """One paragraph for a whole run: outcomes, empty weeks, flags, LLM calls."""
    counts = outcome_counts(rows)
    projects = sorted({r.project for r in rows})
    empty = [f"{r.project} {r.week}" for r in rows if r.outcome == "empty"]
    console.print(f"{len(rows)} project-weeks of {', '.join(projects)} in {seconds:.1f}s: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
                  + f"; needs review {sum(1 for r in rows if r.needs_review)}"
                  + f"; LLM calls {sum(r.llm_calls for r in rows)}")
    if empty:
        console.print(f"weeks without entries get the fixed “本周无记录” report: {', '.join(empty)}")


def demo_weekly(settings: Settings) -> None:
    """Backfill every week of every project, then print one project's chronicle (head and tail)."""
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.services.history import build_history_context
    from chronicle.storage.db import read
    from chronicle.storage.reports import report_projects

    console.print(engine_banner(settings))
    started = time.perf_counter()
    rows, ok = run_weekly_flow(settings, backfill_weeks, project_id="all")
    print_run_summary(rows, time.perf_counter() - started)
    projects = read(settings, report_projects)
    if not projects:
        console.print("no reports written (no entries ingested?)")
        return
    trial = [p for p in projects if p.upper().startswith("XH")] or projects
    project = trial[0]
    console.rule(f"chronicle of {project} (build_history_context)")
    print_context_excerpt(build_history_context(settings, project))
    console.print(f"more: chronicle report show --project {project} --week <YYYY-Www> · "
                  f"chronicle context --project {project} · chronicle ask --project {project} \"哪几周发生了 SAE？\"")
    if not ok:
        err.print("[red]some weeks failed; rerun `chronicle backfill --all` to retry only those[/]")


def report_show(project: str = ProjectOpt, week: str = WeekOpt, home: str | None = HomeOpt) -> None:
    """The week's report, its review flags, staleness, stats and citations."""
    settings = read_settings(home)
    show_report(settings, known_project(settings, project), _parse_week(week))


def report_edit(project: str = ProjectOpt, week: str = WeekOpt,
                file: Path | None = typer.Option(None, "--file", "-f", exists=True, dir_okay=False,
                                                 help="New text from this file instead of $EDITOR."),
                reason: str = typer.Option(..., "--reason", help="Why (required; kept in the history and the audit)."),
                account: str | None = typer.Option(None, "--as", help="The desk account making the correction."),
                author: str | None = typer.Option(None, "--author", help="Who, when not a desk account."),
                base_version: int | None = typer.Option(None, "--base-version", min=1,
                                                        help="Refuse unless the week is still at this version "
                                                             "(default: the version read when the edit starts)."),
                home: str | None = HomeOpt) -> None:
    """Correct a report; the edit becomes the truth and survives regeneration (a sign-off clears a flag)."""
    settings = read_settings(home)
    project = known_project(settings, project)
    who = _edit_author(settings, project, account, author)
    edit_report(settings, project, _parse_week(week), file, reason, who, base_version)


def report_history(project: str = ProjectOpt, week: str = WeekOpt,
                   full: bool = typer.Option(False, "--full", help="Print every version's text."),
                   fmt: Format = format_option(), home: str | None = HomeOpt) -> None:
    """Every version ever written for the week: generated and edited, who, when, why."""
    settings = read_settings(home)
    print_history(settings, known_project(settings, project), _parse_week(week), full, fmt)


def report_list(project: str = ProjectOpt, home: str | None = HomeOpt) -> None:
    """One line per stored week of a project."""
    from chronicle.storage.db import read
    from chronicle.storage.reports import list_reports

    settings = read_settings(home)
    project = known_project(settings, project)
    rows = read(settings, list_reports, project)
    emit([{"week": str(IsoWeek.from_number(r["week_number"])), "status": r["status"], "model": r["model"],
           "stale": "yes" if r["stale"] else "", "needs_review": "yes" if r["needs_review"] else "",
           "entries": r["entry_count"], "chars": r["chars"], "version": r["version"]} for r in rows],
         empty=f"no reports for {project}")


def weekly(week: str | None = typer.Option(None, "--week", "-w",
                                           help="ISO week YYYY-Www, e.g. 2026-W05; default: last completed week."),
           force: bool = typer.Option(False, "--force", help="Regenerate even current reports."),
           home: str | None = HomeOpt) -> None:
    """Write last week's report for every project (the Monday job of seed 000)."""
    settings = settings_from_options(home)
    from chronicle.services.param_checks import weekly_scope

    check(weekly_scope, settings, week, "--week")
    from chronicle.flows.weekly_chronicle import weekly_chronicle

    console.print(engine_banner(settings))
    rows, ok = run_weekly_flow(settings, weekly_chronicle, week=week or "", force=force)
    print_outcomes(rows)
    if not ok:
        raise typer.Exit(1)


def backfill(project: str | None = typer.Option(None, "--project", "-p", help="One project."),
             all_: bool = typer.Option(False, "--all", help="Every project."),
             start: str | None = typer.Option(None, "--from", help="First ISO week, YYYY-Www, e.g. 2026-W01 "
                                              "(default: each project's first week with entries)."),
             end: str | None = typer.Option(None, "--to", help="Last ISO week, YYYY-Www, e.g. 2026-W10 "
                                            "(default: each project's last week with entries)."),
             force: bool = typer.Option(False, "--force", help="Regenerate all but human edits."),
             overwrite_edited: bool = typer.Option(False, "--overwrite-edited",
                                                   help="Regenerate human edits too (they stay in the history)."),
             every_week: bool = typer.Option(False, "--every-week",
                                             help="Run a task for every week, not only missing/stale ones."),
             workers: int | None = typer.Option(None, "--workers", min=1, help="Weeks in flight at once."),
             home: str | None = HomeOpt) -> None:
    """Write the reports of a range of past weeks, concurrently; a rerun does only what is missing."""
    if bool(project) == all_:
        raise typer.BadParameter("give exactly one of --project P or --all")
    settings = settings_from_options(home)
    from chronicle.services.param_checks import backfill_scope

    check(backfill_scope, settings, project or "all", start, end, names=("--project", "--from", "--to"))
    from chronicle.flows.backfill_weeks import backfill_weeks

    console.print(engine_banner(settings))
    rows, ok = run_weekly_flow(settings, backfill_weeks, project_id=project or "all", start_week=start or "",
                         end_week=end or "", only_missing=not every_week, force=force,
                         overwrite_edited=overwrite_edited, max_workers=workers or 0)
    print_outcomes(rows)
    if not ok:
        raise typer.Exit(1)


def context(project: str = ProjectOpt,
            max_tokens: int | None = typer.Option(None, "--max-tokens", min=100,
                                                  help="Fold older weeks into rollups beyond this budget."),
            home: str | None = HomeOpt) -> None:
    """Print the project chronicle block (seed 000) an assistant reads."""
    settings = read_settings(home)
    project = known_project(settings, project)
    from chronicle.services.history import build_history_context

    # soft_wrap: the block is meant to be piped into a prompt, so no hard line breaks are added.
    print_text(build_history_context(settings, project, max_tokens))


def ask(question: str = typer.Argument(..., help="The question, in any language."),
        project: str = ProjectOpt, home: str | None = HomeOpt) -> None:
    """Answer a question from the project's chronicle (offline: the weeks matching its terms)."""
    settings = read_settings(home)
    project = known_project(settings, project)
    from chronicle.services.history import ask_chronicle

    answer = ask_chronicle(settings, project, question)
    if answer.engine == "offline-stats":
        console.print(f"[bold]from the counted stats[/]: {escape(answer.text)}")
        for w in answer.weeks:
            print_text(f"[Week {w['week']}] ({w['terms'][0]}): {w['text']}")
        return
    if answer.engine != "offline":
        console.print(f"[dim]answered by {escape(answer.engine)} from the chronicle[/]")
        print_text(answer.text)
        return
    console.print("[bold]offline[/]: no LLM endpoint configured (LLM_URL), so no answer is written; "
                  "these chronicle weeks match the question's terms:")
    if not answer.weeks:
        console.print("no week matches")
    for w in answer.weeks:
        console.print(f"\\[Week {w['week']}] ({escape(', '.join(w['terms'][:6]))}): {escape(w['text'])}",
                      soft_wrap=True)


def register(app: typer.Typer) -> None:
    report = typer.Typer(help="Read, correct and trace weekly reports (a human edit is the truth).",
                         no_args_is_help=True)
    for name, command in (("show", report_show), ("edit", report_edit), ("history", report_history),
                          ("list", report_list)):
        report.command(name)(command)
    app.add_typer(report, name="report")
    for command in (weekly, backfill, context, ask):
        app.command()(command)
