"""SQL of the review desk: accounts and roles, the audit trail, signatures, sign-in attempts.

`desk_audit`, `report_signatures` and `desk_login_attempts` are only ever inserted into: this module has no
statement that updates or deletes them, and tests/storage/test_desk_append_only.py checks that no statement in
the package does. Every function takes an open connection; the caller holds the transaction (and, in the lake,
the `guard_keys` claim that stands in for the primary keys DuckLake lacks).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import duckdb

from chronicle.storage.db import from_json


@dataclass(frozen=True)
class AccountRow:
    username: str
    printed_name: str
    password_hash: str
    disabled: bool
    roles: dict[str, str]
    temporary: bool = False
    """The password was set by an administrator for this account: it must be changed before anything else."""
    last_sign_in: datetime | None = None
    """UTC, of the last successful sign-in (read by `list_accounts` only)."""


@dataclass(frozen=True)
class AuditRow:
    """One audit row: who did what, when (UTC), with which outcome, on which week/version, from where."""

    at: datetime
    actor: str
    action: str
    outcome: str
    project_id: str | None
    week_number: int | None
    version: int | None
    detail: dict[str, Any]
    remote: str | None


@dataclass(frozen=True)
class SignatureRow:
    project_id: str
    week_number: int
    version: int
    content_hash: str
    signer: str
    printed_name: str
    meaning: str
    signed_at: datetime


def account_guard(username: str) -> list[str]:
    """Claim key for creating or changing one account (the lake has no primary key to refuse a duplicate)."""
    return [f"desk-account:{username}"]


# --- accounts --------------------------------------------------------------------------------
_ACCOUNT_COLUMNS = "printed_name, password_hash, disabled, coalesce(password_temporary, false)"
"""An account row's columns after its name (NULL temporary: an account made before the column, not temporary)."""


def get_account(conn: duckdb.DuckDBPyConnection, username: str) -> AccountRow | None:
    rows = conn.execute(f"SELECT {_ACCOUNT_COLUMNS} FROM desk_accounts WHERE username = ?", [username]).fetchall()
    if not rows:
        return None
    roles = dict(conn.execute("SELECT project_id, role FROM desk_roles WHERE username = ? ORDER BY project_id",
                              [username]).fetchall())
    printed, hashed, disabled, temporary = rows[0]
    return AccountRow(username, printed, hashed, bool(disabled), roles, bool(temporary))


def list_accounts(conn: duckdb.DuckDBPyConnection) -> list[AccountRow]:
    """Every account by name, with its roles and last successful sign-in: three reads, whatever the count."""
    roles: dict[str, dict[str, str]] = {}
    for username, project_id, role in conn.execute("SELECT username, project_id, role FROM desk_roles").fetchall():
        roles.setdefault(username, {})[project_id] = role
    last = dict(conn.execute("SELECT username, max(tried_at) FROM desk_login_attempts WHERE ok GROUP BY username")
                .fetchall())
    rows = conn.execute(f"SELECT username, {_ACCOUNT_COLUMNS} FROM desk_accounts ORDER BY username").fetchall()
    return [AccountRow(u, printed, hashed, bool(disabled), dict(sorted(roles.get(u, {}).items())), bool(temporary),
                       last.get(u)) for u, printed, hashed, disabled, temporary in rows]


def insert_account(conn: duckdb.DuckDBPyConnection, username: str, printed_name: str, password_hash: str,
                   now: datetime, *, temporary: bool = False) -> None:
    conn.execute("INSERT INTO desk_accounts (username, printed_name, password_hash, disabled, password_temporary,"
                 " created_at, updated_at) VALUES (?, ?, ?, false, ?, ?, ?)",
                 [username, printed_name, password_hash, temporary, now, now])


def update_account(conn: duckdb.DuckDBPyConnection, username: str, now: datetime, *,
                   password_hash: str | None = None, temporary: bool = False, disabled: bool | None = None) -> None:
    """`temporary` goes with a new `password_hash` (and is ignored without one)."""
    sets, args = ["updated_at = ?"], [now]  # type: list[str], list[Any]
    if password_hash is not None:
        sets.append("password_hash = ?, password_temporary = ?")
        args.extend([password_hash, temporary])
    if disabled is not None:
        sets.append("disabled = ?")
        args.append(disabled)
    conn.execute(f"UPDATE desk_accounts SET {', '.join(sets)} WHERE username = ?", [*args, username])


def set_role(conn: duckdb.DuckDBPyConnection, username: str, project_id: str, role: str | None,
             now: datetime) -> None:
    """Give `username` `role` on `project_id` (replacing the one it had there); None takes it away."""
    conn.execute("DELETE FROM desk_roles WHERE username = ? AND project_id = ?", [username, project_id])
    if role is not None:
        conn.execute("INSERT INTO desk_roles (username, project_id, role, granted_at) VALUES (?, ?, ?, ?)",
                     [username, project_id, role, now])


# --- sign-in attempts ------------------------------------------------------------------------
def record_attempt(conn: duckdb.DuckDBPyConnection, username: str, remote: str, ok: bool, now: datetime) -> None:
    conn.execute("INSERT INTO desk_login_attempts (username, remote, tried_at, ok) VALUES (?, ?, ?, ?)",
                 [username, remote, now, ok])


def recent_failures(conn: duckdb.DuckDBPyConnection, username: str, remote: str, since: datetime) -> int:
    """Failed attempts of `username` from `remote` after `since` and after its last success from there."""
    return conn.execute(
        """SELECT count(*) FROM desk_login_attempts
           WHERE username = ? AND remote = ? AND NOT ok AND tried_at >= ?
             AND tried_at > coalesce((SELECT max(tried_at) FROM desk_login_attempts
                                WHERE username = ? AND remote = ? AND ok), TIMESTAMP '1970-01-01')""",
        [username, remote, since, username, remote]).fetchall()[0][0]


# --- audit -----------------------------------------------------------------------------------
def insert_audit(conn: duckdb.DuckDBPyConnection, row: AuditRow) -> None:
    conn.execute(
        """INSERT INTO desk_audit (id, happened_at, actor, action, outcome, project_id, week_number, version, detail,
                                   remote) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [str(uuid.uuid4()), row.at, row.actor, row.action, row.outcome, row.project_id, row.week_number,
         row.version, json.dumps(row.detail, ensure_ascii=False, sort_keys=True, default=str), row.remote])


@dataclass(frozen=True)
class AuditFilter:
    """What the desk's audit page asks for; None is "any". `refused`: True only refusals, False only successes."""

    project_id: str | None = None
    week_number: int | None = None
    actor: str | None = None
    action: str | None = None
    refused: bool | None = None


def _audit_where(scope: list[str] | None, f: AuditFilter) -> tuple[str, list[Any]]:
    """`scope`: the projects whose rows may be shown, or None for every row (those of no project too: sign-ins,
    account changes)."""
    clauses, params = [], []
    if scope is not None:
        clauses.append(f"project_id IN ({', '.join('?' * len(scope))})" if scope else "FALSE")
        params += scope
    for column, value in (("project_id", f.project_id), ("week_number", f.week_number), ("actor", f.actor),
                          ("action", f.action)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    if f.refused is not None:
        clauses.append(("" if f.refused else "NOT ") + "starts_with(outcome, 'refused')")
    return " AND ".join(clauses) or "TRUE", params


def audit_count(conn: duckdb.DuckDBPyConnection, scope: list[str] | None, f: AuditFilter) -> int:
    where, params = _audit_where(scope, f)
    return conn.execute(f"SELECT count(*) FROM desk_audit WHERE {where}", params).fetchall()[0][0]


def audit_rows(conn: duckdb.DuckDBPyConnection, scope: list[str] | None, f: AuditFilter, *, newest_first: bool = False,
               limit: int | None = None, offset: int = 0) -> list[AuditRow]:
    """The rows `scope` and `f` select, oldest first (`limit` None: all of them)."""
    where, params = _audit_where(scope, f)
    order = "DESC" if newest_first else "ASC"
    rows = conn.execute(
        f"""SELECT happened_at, actor, action, outcome, project_id, week_number, version, detail, remote
            FROM desk_audit WHERE {where} ORDER BY happened_at {order}, id {order} LIMIT ? OFFSET ?""",
        [*params, limit, offset]).fetchall()
    return [AuditRow(*r[:7], from_json(r[7]) or {}, r[8]) for r in rows]


def audit_choices(conn: duckdb.DuckDBPyConnection, scope: list[str] | None) -> tuple[list[str], list[str]]:
    """The actions and projects `scope`'s rows hold, for the page's filter lists (actors are typed: a failed
    sign-in's actor is whatever name was tried, so there may be many)."""
    where, params = _audit_where(scope, AuditFilter())
    found = [[r[0] for r in conn.execute(f"SELECT DISTINCT {column} FROM desk_audit WHERE {where} AND {column} "
                                         "IS NOT NULL ORDER BY 1", params).fetchall()]
             for column in ("action", "project_id")]
    return found[0], found[1]


# --- signatures ------------------------------------------------------------------------------
def insert_signature(conn: duckdb.DuckDBPyConnection, sig: SignatureRow) -> None:
    conn.execute(
        """INSERT INTO report_signatures (id, project_id, week_number, version, content_hash, signer, printed_name,
                                          meaning, signed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        [str(uuid.uuid4()), sig.project_id, sig.week_number, sig.version, sig.content_hash, sig.signer,
         sig.printed_name, sig.meaning, sig.signed_at])


def signature_rows(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> list[SignatureRow]:
    rows = conn.execute(
        """SELECT project_id, week_number, version, content_hash, signer, printed_name, meaning, signed_at
           FROM report_signatures WHERE project_id = ? AND week_number = ? ORDER BY signed_at, id""",
        [project_id, week_number]).fetchall()
    return [SignatureRow(*r) for r in rows]


def clear_review(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int, version: int, *,
                 reviewer: str, note: str | None, now: datetime) -> bool:
    """Clear the review flag of the week's current report if it still is `version`; whether it was that version."""
    found = conn.execute("SELECT 1 FROM weekly_reports WHERE project_id = ? AND week_number = ? AND version = ?",
                         [project_id, week_number, version]).fetchall()
    if not found:
        return False
    conn.execute(
        """UPDATE weekly_reports SET needs_review = false, reviewed_by = ?, reviewed_at = ?, reviewed_version = ?,
               review_note = ? WHERE project_id = ? AND week_number = ? AND version = ?""",
        [reviewer, now, version, note, project_id, week_number, version])
    return True
