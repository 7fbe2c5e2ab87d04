"""The desk's audit trail: every login, refusal, edit, acceptance, signature and account change, append-only.

`record` writes one row in its own short transaction; a use case that changes data writes its row with
`storage.desk.insert_audit` inside its own transaction instead, so the change and its row land together.
"""

from __future__ import annotations

from typing import Any

from chronicle.settings import Settings
from chronicle.storage import desk
from chronicle.storage.db import read, write
from chronicle.storage.desk import AuditRow
from chronicle.weeks import utc_now

__all__ = ["AuditRow", "audit_row", "audit_trail", "record"]


def audit_row(*, actor: str, action: str, outcome: str = "ok", project_id: str | None = None,
              week_number: int | None = None, version: int | None = None, detail: dict[str, Any] | None = None,
              remote: str | None = None) -> AuditRow:
    return AuditRow(utc_now(), actor, action, outcome, project_id, week_number, version, dict(detail or {}), remote)


def record(settings: Settings, *, actor: str, action: str, outcome: str = "ok", project_id: str | None = None,
           week_number: int | None = None, version: int | None = None, detail: dict[str, Any] | None = None,
           remote: str | None = None) -> AuditRow:
    """Append one audit row (its own transaction); returns it."""
    row = audit_row(actor=actor, action=action, outcome=outcome, project_id=project_id, week_number=week_number,
                    version=version, detail=detail, remote=remote)
    write(settings, lambda conn: desk.insert_audit(conn, row))
    return row


def audit_trail(settings: Settings, project_id: str | None, week_number: int | None = None) -> list[AuditRow]:
    """A project's (or one week's) audit rows, oldest first; `project_id=None`: every row (accounts, logins too)."""
    return read(settings, desk.audit_rows, project_id, week_number)
