"""Desk accounts: who may read, review or administer which project, and signing in (argon2, throttled, audited).

Passwords are hashed with pwdlib's recommended argon2 hasher; the hash is checked outside any database window
(argon2 is slow on purpose) and the attempt is written after. Throttling counts the failed attempts of one account
from one address in the database, so every desk process (and every host of a lake deployment) sees the same count.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from functools import cache
from typing import Any

from pwdlib import PasswordHash

from chronicle.services.audit import audit_row, record
from chronicle.settings import Settings
from chronicle.storage import desk
from chronicle.storage.db import read, write
from chronicle.weeks import utc_now

ROLES = ("reader", "reviewer", "admin")
ALL_PROJECTS = "*"
_RANK = {role: i for i, role in enumerate(ROLES, start=1)}
_USERNAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
MIN_PASSWORD = 8


class AccountError(ValueError):
    """A refused account change (bad name, unknown account, duplicate, weak password, unknown role)."""


class LoginRefused(Exception):
    """A refused sign-in. `reason`: wrong-password | unknown-user | disabled | throttled (the audit trail keeps it;
    what a visitor is shown should not tell an unknown name from a wrong password)."""

    def __init__(self, reason: str) -> None:
        super().__init__("sign-in refused: too many failed attempts, try again later" if reason == "throttled"
                         else "sign-in refused: wrong username or password, or the account is disabled")
        self.reason = reason


@dataclass(frozen=True)
class Account:
    username: str
    printed_name: str
    disabled: bool
    roles: dict[str, str] = field(default_factory=dict)
    """project id or "*" -> reader | reviewer | admin."""
    credential: str = ""
    """A digest of the stored password hash: a desk session carries the one it signed in with, so a password
    change ends every other session of the account (as Django's session auth hash does)."""
    temporary: bool = False
    """Its password was set by an administrator: the desk lets it do nothing but change it, and it cannot sign."""
    last_sign_in: datetime | None = None

    def role_for(self, project_id: str) -> str | None:
        """The strongest role on `project_id` (its own or the "*" one); None for a disabled account."""
        if self.disabled:
            return None
        found = [r for r in (self.roles.get(project_id), self.roles.get(ALL_PROJECTS)) if r in _RANK]
        return max(found, key=_RANK.__getitem__) if found else None

    def can_read(self, project_id: str) -> bool:
        return self.role_for(project_id) is not None

    def can_review(self, project_id: str) -> bool:
        return self.role_for(project_id) in ("reviewer", "admin")

    def admin_scope(self) -> list[str] | None:
        """What this account administers in the desk (its audit rows; its accounts' roles): an admin of every
        project ("*"), everything (None) — every audit row, sign-ins included, and every account; an admin of some
        projects, those ([] for an account that administers none)."""
        if self.role_for(ALL_PROJECTS) == "admin":
            return None
        return sorted(p for p in self.roles if p != ALL_PROJECTS and self.role_for(p) == "admin")

    @property
    def administers(self) -> bool:
        return self.admin_scope() != []


@cache
def _hasher() -> PasswordHash:
    return PasswordHash.recommended()


@cache
def _dummy_hash() -> str:
    # Checked against for unknown names, so a refusal takes as long whether or not the account exists.
    return _hasher().hash("chronicle-no-such-account")


def _account(row: desk.AccountRow | None) -> Account | None:
    if row is None:
        return None
    credential = hashlib.sha256(row.password_hash.encode()).hexdigest()[:24]
    return Account(row.username, row.printed_name, row.disabled, dict(row.roles), credential, row.temporary,
                   row.last_sign_in)


def get_account(settings: Settings, username: str) -> Account | None:
    return _account(read(settings, desk.get_account, username))


def list_accounts(settings: Settings, viewer: Account | None = None) -> list[Account]:
    """The accounts `viewer` administers: an admin of every project (or the command line's operator, None) sees
    every account and role; an admin of some projects sees the accounts that hold a role on them, with those roles
    only — not who else uses the desk or when they signed in (they grant a role to another account by its name)."""
    scope = viewer.admin_scope() if viewer else None
    found = [_account(row) for row in read(settings, desk.list_accounts)]
    if scope is None:
        return found  # type: ignore[return-value]
    shown = [replace(a, roles={p: r for p, r in a.roles.items() if p in scope}) for a in found]  # type: ignore[misc]
    return [a for a in shown if a.roles]


class ManageRefused(AccountError):
    """A change the administrator may not make from the desk."""


def check_manages(manager: Account, username: str, project_id: str | None = None) -> None:
    """What an administrator may change in the desk, or ManageRefused. An admin of every project changes any other
    account: adds it, disables or enables it, gives it a temporary password, grants it any role anywhere. An admin
    of some projects grants and revokes roles on those projects only (`project_id`). Nobody changes their own
    account here: their password is changed on their own page and their roles by another admin, so no slip of a
    click locks the last administrator out."""
    scope = manager.admin_scope()
    if scope == []:
        raise ManageRefused("you administer no project")
    if username == manager.username:
        raise ManageRefused("you cannot change your own account here: your password is changed on your own page, "
                            "your roles by another administrator")
    if scope is None:
        return
    if project_id is None:
        raise ManageRefused("only an administrator of every project adds accounts, disables them or sets their "
                            "passwords")
    if project_id not in scope:
        raise ManageRefused(f"you do not administer {project_id!r}: you grant roles on "
                            f"{', '.join(scope)} only")


CHANGES = {"add": "user-add", "grant": "grant", "disable": "user-disable", "enable": "user-enable",
           "password": "user-passwd"}
"""What an administrator changes in the desk, and the audit action of each (the same as the command line's)."""


def manage(settings: Settings, manager: Account, change: str, username: str, *, remote: str, project_id: str = "",
           role: str = "", printed_name: str = "", password: str = "") -> Account:
    """`manager`'s change to another account from the desk: `change` is one of CHANGES; a password given here is
    temporary (to be changed at the account's next sign-in), since the administrator knows it. ManageRefused when
    `check_manages` says no (audited as a refusal, nothing changed); AccountError when the change is invalid."""
    if change not in CHANGES:
        raise AccountError(f"unknown change {change!r}")
    if change == "grant" and not project_id:
        raise AccountError("choose a project for the role")
    try:
        check_manages(manager, username, project_id if change == "grant" else None)
    except ManageRefused:
        record(settings, actor=manager.username, action=CHANGES[change], outcome="refused:not-permitted",
               detail={"username": username, **({"project_id": project_id} if project_id else {})}, remote=remote)
        raise
    by: dict[str, Any] = {"actor": manager.username, "remote": remote}
    if change == "add":
        return add_user(settings, username, printed_name, password, {project_id: role} if project_id else {},
                        temporary=True, **by)
    if change == "grant":
        return grant(settings, username, project_id, None if role == "none" else role, **by)
    if change == "password":
        return set_password(settings, username, password, temporary=True, **by)
    return disable_user(settings, username, disabled=change == "disable", **by)


def _check_text(value: str, what: str) -> str:
    value = (value or "").strip()
    if not value:
        raise AccountError(f"{what} is empty")
    if any(unicodedata.category(ch).startswith("C") for ch in value):
        raise AccountError(f"{what} contains control characters")
    return value


def _check_password(password: str) -> str:
    if len(password or "") < MIN_PASSWORD:
        raise AccountError(f"the password is shorter than {MIN_PASSWORD} characters")
    if "\x00" in password:
        raise AccountError("the password contains a NUL byte")
    return password


def _check_roles(roles: dict[str, str]) -> dict[str, str]:
    for project, role in roles.items():
        if role not in _RANK:
            raise AccountError(f"unknown role {role!r} for {project!r}: use one of {', '.join(ROLES)}")
        _check_text(project, "the project id")
    return roles


def add_user(settings: Settings, username: str, printed_name: str, password: str,
             roles: dict[str, str] | None = None, *, temporary: bool = False, actor: str = "cli",
             remote: str | None = "cli") -> Account:
    """Create an account; AccountError when the name is taken or anything is invalid. Audited. `temporary`: the
    password is one an administrator hands over, to be changed at the first sign-in."""
    if not _USERNAME.fullmatch(username or ""):
        raise AccountError(f"username {username!r}: letters, digits and . _ @ - only (at most 64), "
                           "starting with a letter or digit")
    printed = _check_text(printed_name, "the printed name")
    roles = _check_roles(dict(roles or {}))
    hashed = _hasher().hash(_check_password(password))

    def create(conn) -> None:  # type: ignore[no-untyped-def]
        if desk.get_account(conn, username) is not None:
            raise AccountError(f"account {username!r} exists already (use `desk user passwd` or `desk user grant`)")
        now = utc_now()
        desk.insert_account(conn, username, printed, hashed, now, temporary=temporary)
        for project, role in roles.items():
            desk.set_role(conn, username, project, role, now)
        desk.insert_audit(conn, audit_row(actor=actor, action="user-add", remote=remote, detail={
            "username": username, "roles": roles, "temporary_password": temporary}))

    write(settings, create, guard=desk.account_guard(username))
    return Account(username, printed, False, roles, temporary=temporary)


def _change(settings: Settings, username: str, action: str, detail: dict[str, object], *, actor: str,
            remote: str | None, password_hash: str | None = None, temporary: bool = False,
            disabled: bool | None = None, role: tuple[str, str | None] | None = None) -> Account:
    def change(conn) -> Account:  # type: ignore[no-untyped-def]
        if desk.get_account(conn, username) is None:
            raise AccountError(f"no account {username!r}")
        now = utc_now()
        if password_hash is not None or disabled is not None:
            desk.update_account(conn, username, now, password_hash=password_hash, temporary=temporary,
                                disabled=disabled)
        if role is not None:
            desk.set_role(conn, username, role[0], role[1], now)
        desk.insert_audit(conn, audit_row(actor=actor, action=action, detail={"username": username, **detail},
                                          remote=remote))
        return _account(desk.get_account(conn, username))  # type: ignore[return-value]

    return write(settings, change, guard=desk.account_guard(username))


def set_password(settings: Settings, username: str, password: str, *, temporary: bool = False, actor: str = "cli",
                 remote: str | None = "cli") -> Account:
    """Set the password (every session of the account ends with it). `temporary`: one an administrator hands over,
    to be changed at the next sign-in."""
    hashed = _hasher().hash(_check_password(password))
    return _change(settings, username, "user-passwd", {"temporary": True} if temporary else {}, actor=actor,
                   remote=remote, password_hash=hashed, temporary=temporary)


def change_own_password(settings: Settings, username: str, current: str, new: str, repeated: str, *,
                        remote: str) -> Account:
    """A signed-in person's own change: the current password first (LoginRefused, counted like a failed sign-in),
    then the new one twice (AccountError). Audited as `user-passwd` by the account itself."""
    authenticate(settings, username, current, remote=remote, action="reauth")
    if new != repeated:
        raise AccountError("the new password and its repetition differ")
    if new == current:
        raise AccountError("the new password is the current one")
    return set_password(settings, username, new, actor=username, remote=remote)


def disable_user(settings: Settings, username: str, *, disabled: bool = True, actor: str = "cli",
                 remote: str | None = "cli") -> Account:
    """Disable (or re-enable) an account: a disabled account cannot sign in or sign; its past rows stay."""
    return _change(settings, username, "user-disable" if disabled else "user-enable", {}, actor=actor,
                   remote=remote, disabled=disabled)


def grant(settings: Settings, username: str, project_id: str, role: str | None, *, actor: str = "cli",
          remote: str | None = "cli") -> Account:
    """Give `role` on `project_id` ("*" = every project), replacing the one held there; None revokes it."""
    if role is not None:
        _check_roles({project_id: role})
    return _change(settings, username, "grant", {"project_id": project_id, "role": role}, actor=actor,
                   remote=remote, role=(_check_text(project_id, "the project id"), role))


def _refuse(settings: Settings, username: str, remote: str, reason: str, action: str, *,
            attempt: bool = True, concerning: dict[str, Any]) -> LoginRefused:
    def log(conn) -> None:  # type: ignore[no-untyped-def]
        if attempt:
            desk.record_attempt(conn, username, remote, False, utc_now())
        desk.insert_audit(conn, audit_row(actor=username, action=action, outcome=f"refused:{reason}",
                                          remote=remote, **concerning))

    write(settings, log)
    return LoginRefused(reason)


def authenticate(settings: Settings, username: str, password: str, *, remote: str,
                 action: str = "login", concerning: dict[str, Any] | None = None) -> Account:
    """The account, when the password is right and the account enabled and not throttled; else LoginRefused.

    Every attempt is an audit row (`action`: login, or reauth when a signature asks for the password again;
    `concerning`: the project, week and version a reauth is for, so the week's trail holds a refused signature).
    """
    concerning = concerning or {}
    username = (username or "").strip()
    since = utc_now() - timedelta(seconds=settings.desk.login_window_s)

    def look(conn) -> tuple[desk.AccountRow | None, int]:  # type: ignore[no-untyped-def]
        return desk.get_account(conn, username), desk.recent_failures(conn, username, remote, since)

    row, failures = read(settings, look)
    if failures >= settings.desk.login_max_failures:
        raise _refuse(settings, username, remote, "throttled", action, attempt=False, concerning=concerning)
    ok = _hasher().verify(password or "", row.password_hash if row else _dummy_hash())
    if row is None:
        raise _refuse(settings, username, remote, "unknown-user", action, concerning=concerning)
    if not ok:
        raise _refuse(settings, username, remote, "wrong-password", action, concerning=concerning)
    if row.disabled:
        raise _refuse(settings, username, remote, "disabled", action, concerning=concerning)

    def log(conn) -> None:  # type: ignore[no-untyped-def]
        desk.record_attempt(conn, username, remote, True, utc_now())
        desk.insert_audit(conn, audit_row(actor=username, action=action, remote=remote, **concerning))

    write(settings, log)
    return _account(row)  # type: ignore[return-value]
