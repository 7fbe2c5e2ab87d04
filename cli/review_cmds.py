"""`chronicle review` (flagged weeks and why) and `chronicle review accept` — the weekly chronicle's review queue."""

from __future__ import annotations

import getpass
import os
import sys

import typer
from rich.markup import escape

from chronicle.cli.common import console, err, known_project, read_settings
from chronicle.cli.output import Format, emit, format_option
from chronicle.settings import Settings
from chronicle.weeks import IsoWeek


def _reviewer(by: str | None) -> str:
    return by or os.environ.get("USER") or getpass.getuser()  # as `report edit` names its author


def _sign_accept(settings: Settings, project: str, week: IsoWeek, account: str, note: str | None,
                 password_stdin: bool) -> None:
    from chronicle.services.accounts import LoginRefused
    from chronicle.services.reports import NoReportError, SignRefused, VersionConflict, sign_report, view_report

    try:
        view = view_report(settings, project, week)
    except NoReportError:
        view = None
    if view is None or not view.row["needs_review"]:
        err.print(f"[red]{project} {week} is not awaiting review[/]")
        raise typer.Exit(1)
    password = sys.stdin.readline().rstrip("\r\n") if password_stdin else getpass.getpass(f"password of {account}: ")
    try:
        sig = sign_report(settings, project, week, version=view.row["version"], account=account, password=password,
                          meaning="reviewed", remote="cli", note=note)
    except (LoginRefused, SignRefused, VersionConflict) as exc:
        err.print(f"[red]{escape(str(exc))}[/]")
        raise typer.Exit(1) from None
    console.print(f"accepted {project} {week} version {sig.version}: signed by {escape(sig.printed_name)} "
                  f"({sig.signer}) at {sig.signed_at:%Y-%m-%d %H:%M:%S} UTC, meaning {sig.meaning}")


def review_queue(ctx: typer.Context,
                 project: str | None = typer.Option(None, "--project", "-p", help="Only this project."),
                 fmt: Format = format_option(),
                 home: str | None = typer.Option(None, "--home")) -> None:
    """List flagged weeks with every reason (which sentence, and why)."""
    if ctx.invoked_subcommand is not None:
        return
    from chronicle.services.review import flagged_weeks

    settings = read_settings(home)
    weeks = flagged_weeks(settings, known_project(settings, project) if project else None)
    if fmt is not Format.table:
        emit([w.as_dict() for w in weeks], fmt)
        return
    if not weeks:
        console.print("no week awaits review")
        return
    for w in weeks:
        console.print(f"[bold]{w.project_id} {w.week}[/] · {w.status} · {escape(w.model)} · version {w.version}")
        for line in w.lines:
            console.print(f"  [yellow]-[/] {escape(line)}", soft_wrap=True)
    console.print(f"{len(weeks)} week(s) await review — read one with `chronicle report show -p P -w W`, "
                  "correct it with `chronicle report edit`, or accept it with `chronicle review accept -p P -w W`")


def accept_cmd(project: str = typer.Option(..., "--project", "-p"),
               week: str = typer.Option(..., "--week", "-w", help="ISO week, e.g. 2026-W05."),
               note: str | None = typer.Option(None, "--note", help="Why the flagged text is right."),
               by: str | None = typer.Option(None, "--by", help="Reviewer, without a signature (default: $USER)."),
               account: str | None = typer.Option(None, "--as", help="Sign as this desk account (meaning "
                                                  "\"reviewed\"), its password asked again."),
               password_stdin: bool = typer.Option(False, "--password-stdin",
                                                   help="With --as: the password from standard input."),
               home: str | None = typer.Option(None, "--home")) -> None:
    """Accept a flagged week as it stands (a correction goes through `chronicle report edit` instead).

    With --as ACCOUNT the acceptance is a signature (printed name, UTC time, meaning "reviewed") bound to the
    current version's text, as on the desk; without it, the shell user's acceptance is recorded (audited)."""
    try:
        iso = IsoWeek.parse(week)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from exc
    settings = read_settings(home)
    project = known_project(settings, project)
    if account:
        _sign_accept(settings, project, iso, account, note, password_stdin)
        return
    from chronicle.services.review import accept

    version = accept(settings, project, iso, reviewer=_reviewer(by), note=note)
    if version is None:
        err.print(f"[red]{project} {iso} is not awaiting review[/]")
        raise typer.Exit(1)
    console.print(f"accepted {project} {iso} version {version}")


def backlog_cmd(fmt: Format = format_option(), home: str | None = typer.Option(None, "--home")) -> None:
    """Weeks awaiting review per project (the `review_backlog` view)."""
    from chronicle.storage.db import read
    from chronicle.storage.review import review_backlog

    emit(read(read_settings(home), review_backlog), fmt, title="weeks awaiting review", empty="no reports yet")


def register(app: typer.Typer) -> None:
    review = typer.Typer(help="Weeks the faithfulness guard flagged: list them with their reasons, accept them.",
                         invoke_without_command=True, no_args_is_help=False)
    app.add_typer(review, name="review")
    review.callback()(review_queue)
    review.command("accept")(accept_cmd)
    review.command("backlog")(backlog_cmd)
