"""`chronicle desk user add|disable|enable|passwd|grant|show|list`: the review desk's accounts, scriptable headless.

A password comes from a hidden prompt, or from standard input with `--password-stdin` (its first line), never
from an option (it would sit in the shell history and the process list). Every change is an audit row.
"""

from __future__ import annotations

import getpass
import sys

import typer
from rich.markup import escape

from chronicle.cli.common import HomeOpt, console, fail, settings_from_options

StdinOpt = typer.Option(False, "--password-stdin", help="Read the password from the first line of standard input.")
TemporaryOpt = typer.Option(False, "--temporary", help="A password to hand over: the account must change it at its "
                                                     "next desk sign-in, and cannot sign until it has.")


def _password(from_stdin: bool) -> str:
    if from_stdin:
        line = sys.stdin.readline()
        if not line:
            fail("--password-stdin: standard input is empty", code=2)
        return line.rstrip("\r\n")
    first = getpass.getpass("password: ")
    if first != getpass.getpass("again: "):
        fail("the two passwords differ: nothing changed", code=2)
    return first


def _actor() -> str:
    # Who ran the command, as the audit trail names it: the shell account (an administrator at this machine).
    return f"cli:{getpass.getuser()}"


def _roles(grants: list[str]) -> dict[str, str]:
    roles = {}
    for item in grants:
        project, sep, role = item.rpartition("=")
        if not sep or not project:
            fail(f"--role {item!r}: write PROJECT=ROLE (e.g. XH201=reviewer, *=reader)", code=2)
        roles[project] = role
    return roles


def _describe(account: object) -> str:
    roles = ", ".join(f"{p}={r}" for p, r in sorted(account.roles.items())) or "no roles"  # type: ignore[attr-defined]
    state = " (disabled)" if account.disabled else ""  # type: ignore[attr-defined]
    state += " (temporary password)" if account.temporary else ""  # type: ignore[attr-defined]
    return f"{escape(account.username)} “{escape(account.printed_name)}”{state}: {escape(roles)}"  # type: ignore[attr-defined]


def _change(change: str, *args: object, **kwargs: object) -> None:
    """Make one change of `chronicle.services.accounts` as this shell account, and print the account after it."""
    from chronicle.services import accounts  # imported when a command runs: the CLI starts without DuckDB

    try:
        account = getattr(accounts, change)(*args, actor=_actor(), remote="cli", **kwargs)
    except accounts.AccountError as exc:
        fail(str(exc), code=2)
    console.print(_describe(account))


def register(desk: typer.Typer) -> None:
    user = typer.Typer(help="Desk accounts: add, disable, change a password, grant roles per project.",
                       no_args_is_help=True)
    desk.add_typer(user, name="user")

    @user.command("add")
    def add(username: str = typer.Argument(..., help="Sign-in name."),
            name: str = typer.Option(..., "--name", help="Printed name, shown with every signature."),
            role: list[str] = typer.Option([], "--role", help="PROJECT=reader|reviewer|admin (* = every project); "
                                                             "repeatable."),
            password_stdin: bool = StdinOpt, temporary: bool = TemporaryOpt, home: str | None = HomeOpt) -> None:
        """Create an account."""
        settings = settings_from_options(home)
        roles = _roles(role)
        _change("add_user", settings, username, name, _password(password_stdin), roles, temporary=temporary)

    @user.command("passwd")
    def passwd(username: str, password_stdin: bool = StdinOpt, temporary: bool = TemporaryOpt,
               home: str | None = HomeOpt) -> None:
        """Set an account's password."""
        _change("set_password", settings_from_options(home), username, _password(password_stdin), temporary=temporary)

    @user.command("disable")
    def disable(username: str, home: str | None = HomeOpt) -> None:
        """Disable an account (it can no longer sign in or sign; its history stays)."""
        _change("disable_user", settings_from_options(home), username)

    @user.command("enable")
    def enable(username: str, home: str | None = HomeOpt) -> None:
        """Enable a disabled account again."""
        _change("disable_user", settings_from_options(home), username, disabled=False)

    @user.command("grant")
    def grant(username: str,
              project: str = typer.Option(..., "--project", "-p", help="A project id, or * for every project."),
              role: str = typer.Option(..., "--role", help="reader | reviewer | admin | none (revoke)."),
              home: str | None = HomeOpt) -> None:
        """Give an account a role on a project (replacing the one it had there)."""
        _change("grant", settings_from_options(home), username, project, None if role == "none" else role)

    @user.command("show")
    def show(username: str, home: str | None = HomeOpt) -> None:
        """An account's printed name, state and roles."""
        from chronicle.services.accounts import get_account

        found = get_account(settings_from_options(home), username)
        if found is None:
            fail(f"no account {username!r}", code=1)
        console.print(_describe(found))

    @user.command("list")
    def list_(home: str | None = HomeOpt) -> None:
        """Every account: printed name, state, roles."""
        from chronicle.services.accounts import list_accounts

        for found in list_accounts(settings_from_options(home)):
            console.print(_describe(found))
