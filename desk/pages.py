"""The desk's read pages: projects (the week grid), a project's chronicle with its charts and search, one week,
a week's history, the review queue. Each reads the account and its rows through services/desk_views.py in one
short window (`one_window`), closed before the page is rendered."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from chronicle.desk.charts import trend_charts
from chronicle.desk.web import account, iso_week, readable, render, run_link, settings_of
from chronicle.services import desk_views
from chronicle.services.accounts import ALL_PROJECTS, Account
from chronicle.services.ingest import safety_rejects
from chronicle.settings import Settings
from chronicle.storage import desk_views as storage_views
from chronicle.storage.db import one_window, read

router = APIRouter()
PAGE_SIZE = 40
"""Projects per page of the grid: a page stays a few hundred kB at 156 weeks each."""


@router.get("/", response_class=HTMLResponse)
def projects(request: Request, state: str | None = None, page: int = 1) -> HTMLResponse:
    if state not in desk_views.STATES:
        state = None
    settings = settings_of(request)
    with one_window(settings):
        who = account(request)
        found = desk_views.grid_page(settings, who.can_read, state=state, page=page, size=PAGE_SIZE)
        safety = _safety_rejects(settings, who)
    return render(request, "projects.html", who=who, grids=found.grids, states=desk_views.STATES, state=state,
                  page=found.page, pages=found.pages, total=found.visible, safety=safety)


@router.get("/p/{project_id}", response_class=HTMLResponse)
def chronicle(request: Request, project_id: str, q: str = "") -> HTMLResponse:
    settings = settings_of(request)
    with one_window(settings):
        who = account(request)
        readable(who, project_id)
        weeks = desk_views.chronicle(settings, project_id)
    result = desk_views.search(weeks, q.strip()[:500]) if q.strip() else None
    return render(request, "chronicle.html", who=who, project_id=project_id, weeks=weeks, q=q, result=result,
                  charts=trend_charts(weeks))


@router.get("/p/{project_id}/w/{week}", response_class=HTMLResponse)
def week_page(request: Request, project_id: str, week: str) -> HTMLResponse:
    settings = settings_of(request)
    with one_window(settings):
        who = account(request)
        readable(who, project_id)
        iso = iso_week(week)
        page = desk_views.week_page(settings, project_id, iso)
        # A missing, empty or failed week is reachable from the grid too: say what to do.
        entries = read(settings, storage_views.week_entry_count, project_id, iso.number) if page is None else 0
    if page is None:
        return render(request, "no_report.html", status_code=404, who=who, project_id=project_id, week=str(iso),
                      entries=entries)
    return render(request, "week.html", who=who, p=page, run_url=run_link(settings, page.flow_run_id),
                  can_review=who.can_review(project_id))


@router.get("/p/{project_id}/w/{week}/history", response_class=HTMLResponse)
def history(request: Request, project_id: str, week: str, a: int | None = None, b: int | None = None) -> HTMLResponse:
    settings = settings_of(request)
    with one_window(settings):
        who = account(request)
        readable(who, project_id)
        iso = iso_week(week)
        found = desk_views.history(settings, project_id, iso, a, b)
    if not found.versions:
        raise HTTPException(404, f"{project_id} {iso} has no report yet")
    return render(request, "history.html", who=who, project_id=project_id, week=str(iso), h=found)


@router.get("/queue", response_class=HTMLResponse)
def queue(request: Request) -> HTMLResponse:
    settings = settings_of(request)
    with one_window(settings):
        who = account(request)
        items = desk_views.review_queue(settings, desk_views.visible(settings, who.can_read))
        safety = _safety_rejects(settings, who)
    return render(request, "queue.html", who=who, items=items, safety=safety,
                  reviewable={i.project_id for i in items if who.can_review(i.project_id)})


def _safety_rejects(settings: Settings, who: Account) -> list[tuple[str, int | None]]:
    """Refused log lines that name a safety event, for an account with a role on every project: a refused line
    names no project the desk could trust (it could not be read), so only such an account may see where they are."""
    return safety_rejects(settings) if who.role_for(ALL_PROJECTS) else []


