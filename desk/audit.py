"""The audit trail in the browser, for administrators (REDCap's "Logging" page): who signed in, was refused,
corrected, signed or changed an account, when and from where — filtered, paged, and downloadable as CSV. An admin
of some projects reads their rows; an admin of every project (`*`) reads every row, sign-ins included. Anyone
else is told there is no such page. Rows are read through services/audit.py; the page writes nothing, the download
writes one audit row of its own."""

from __future__ import annotations

import csv
import io
import json

from fastapi import APIRouter, HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from chronicle.desk.security import client_address
from chronicle.desk.web import account, iso_week, render, settings_of
from chronicle.services.accounts import Account
from chronicle.services.audit import AuditFilter, AuditRow, audit_page, export_audit
from chronicle.storage.db import one_window
from chronicle.weeks import IsoWeek

router = APIRouter()
PAGE_SIZE = 100
OUTCOMES = {"ok": False, "refused": True}
"""The outcome filter: `refused` rows are `refused:<why>`."""
COLUMNS = ("happened_at_utc", "actor", "action", "outcome", "project_id", "week", "version", "detail", "remote")
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection"): the trail holds
# text people typed (a failed sign-in's name, an edit's reason), so such a cell is written as text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _scope_and_filter(request: Request, who: Account) -> tuple[list[str] | None, AuditFilter]:
    scope = who.admin_scope()
    if scope == []:
        raise HTTPException(404, "no such page")
    q = request.query_params
    project = q.get("project") or None
    if project is not None and scope is not None and project not in scope:
        raise HTTPException(404, "no such project")
    week = iso_week(q["week"]).number if q.get("week") else None
    return scope, AuditFilter(project, week, q.get("actor") or None, q.get("action") or None,
                              OUTCOMES.get(q.get("outcome", "")))


def week_of(row: AuditRow) -> str:
    return str(IsoWeek.from_number(row.week_number)) if row.week_number else ""


@router.get("/audit", response_class=HTMLResponse)
def audit(request: Request, page: int = 1) -> HTMLResponse:
    settings = settings_of(request)
    with one_window(settings):
        who = account(request)
        scope, f = _scope_and_filter(request, who)
        found = audit_page(settings, scope, f, page=page, size=PAGE_SIZE)
    asked = {k: v for k, v in request.query_params.items() if k != "page" and v}
    return render(request, "audit.html", who=who, a=found, asked=asked, projects=scope, week_of=week_of,
                  outcomes=OUTCOMES)


@router.get("/audit.csv")
def audit_csv(request: Request) -> Response:
    settings = settings_of(request)
    who = account(request)
    scope, f = _scope_and_filter(request, who)
    rows = export_audit(settings, scope, f, actor=who.username, remote=client_address(request))
    return Response(to_csv(rows), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": 'attachment; filename="chronicle-audit.csv"'})


def to_csv(rows: list[AuditRow]) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for r in rows:
        cells = (r.at.isoformat(), r.actor, r.action, r.outcome, r.project_id or "", week_of(r), r.version or "",
                 json.dumps(r.detail, ensure_ascii=False, sort_keys=True, default=str) if r.detail else "",
                 r.remote or "")
        writer.writerow([f"'{c}" if isinstance(c, str) and c.startswith(_FORMULA_START) else c for c in cells])
    return out.getvalue()
