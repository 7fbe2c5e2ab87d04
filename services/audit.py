"""The desk's audit trail: every login, refusal, edit, acceptance, signature and account change, append-only.

`record` writes one row in its own short transaction; a use case that changes data writes its row with
`storage.desk.insert_audit` inside its own transaction instead, so the change and its row land together.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from chronicle.settings import Settings
from chronicle.storage import desk
from chronicle.storage.db import read, write
from chronicle.storage.desk import AuditFilter, AuditRow
from chronicle.weeks import utc_now

__all__ = ["AuditFilter", "AuditPage", "AuditRow", "audit_page", "audit_row", "audit_trail", "export_audit", "record"]


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
    return read(settings, desk.audit_rows, None, AuditFilter(project_id, week_number))


@dataclass(frozen=True)
class AuditPage:
    rows: list[AuditRow]
    """Newest first."""
    total: int
    page: int
    pages: int
    actions: list[str]
    """Every action the reader's rows hold (the filter's list)."""
    projects: list[str]
    """Every project the reader's rows name (the filter's list)."""


def audit_page(settings: Settings, scope: list[str] | None, f: AuditFilter, *, page: int, size: int) -> AuditPage:
    """One page of the rows `f` selects among those of `scope` (`Account.admin_scope`), in one read window."""
    def look(conn: Any) -> AuditPage:
        total = desk.audit_count(conn, scope, f)
        pages = max(1, -(-total // size))
        shown = min(max(1, page), pages)
        rows = desk.audit_rows(conn, scope, f, newest_first=True, limit=size, offset=(shown - 1) * size)
        return AuditPage(rows, total, shown, pages, *desk.audit_choices(conn, scope))

    return read(settings, look)


def export_audit(settings: Settings, scope: list[str] | None, f: AuditFilter, *, actor: str,
                 remote: str | None) -> list[AuditRow]:
    """Every row `f` selects among those of `scope`, newest first. Taking a copy of the trail is itself audited
    (who, which filter, how many rows, from where), as a data export is in REDCap."""
    rows = read(settings, desk.audit_rows, scope, f, newest_first=True)
    record(settings, actor=actor, action="audit-export", project_id=f.project_id, week_number=f.week_number,
           detail={"rows": len(rows), "filter": {k: v for k, v in asdict(f).items() if v is not None}}, remote=remote)
    return rows
