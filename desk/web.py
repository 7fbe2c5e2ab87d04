"""What every desk page shares: the signed-in account, project visibility (404 for a project you cannot see,
so its existence is not disclosed), the week in the URL, and rendering a template with the CSRF token."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse

from chronicle.desk.security import LoginRequired, PasswordChangeRequired, check_csrf, csrf_token, signed_in
from chronicle.services.accounts import Account, get_account
from chronicle.services.desk_views import STATE_LABELS
from chronicle.settings import Settings
from chronicle.weeks import IsoWeek

TEMPLATES = Path(__file__).parent / "templates"
# Autoescape everything: log text, report text and reasons are data, never markup.
ENV = Environment(loader=FileSystemLoader(TEMPLATES),
                  autoescape=select_autoescape(default=True, default_for_string=True))


def grid_cells(project_id: str, cells: list[Any], state: str | None) -> Markup:
    """One year of a project's grid as markup, every value escaped. Built here rather than by a template loop:
    a page holds 40 projects x 156 weeks, and Jinja's per-cell expressions were most of the grid's server time."""
    pid = escape(project_id)
    out = []
    column = 1
    for c in cells:
        # Column n is ISO week n in every year's line: a year whose first week with a report is W10 starts with nine
        # blank squares, so its first square does not read as January.
        out.append(_PAD * (c.week_number % 100 - column))
        column = c.week_number % 100 + 1
        week, kind = escape(c.week), escape(c.state)
        label = escape(STATE_LABELS.get(c.state, c.state))
        dim = " dim" if state and c.state != state else ""
        out.append(f'<a class="cell {kind}{dim}" href="/p/{pid}/w/{week}" title="{week}: {label}, {c.entries} entries" '
                   f'data-week="{week}" data-state="{kind}"></a>')
    return Markup("".join(out))


_PAD = '<span class="cell pad"></span>'
WEEK_SCALE = Markup("".join(f'<span class="cell tick">{f"W{n:02d}" if n == 1 or n % 10 == 0 else ""}</span>'
                            for n in range(1, 54)))
"""The grid's column heads: W01, W10, ..., W50 above the squares of those weeks."""

# `tojson` (the audit page's details) keeps Chinese readable; it still escapes <, >, & and ' for HTML.
ENV.policies["json.dumps_kwargs"] = {"sort_keys": True, "ensure_ascii": False}
ENV.globals["grid_cells"] = grid_cells
ENV.globals["state_labels"] = STATE_LABELS
ENV.globals["week_scale"] = WEEK_SCALE


def settings_of(request: Request) -> Settings:
    return request.app.state.settings


def account(request: Request, *, temporary_ok: bool = False) -> Account:
    """The signed-in, enabled account whose password is the one the session signed in with; LoginRequired
    otherwise. An account whose password an administrator set reaches nothing but its own page
    (`temporary_ok`) until it has changed it: PasswordChangeRequired."""
    settings = settings_of(request)
    username = signed_in(request, settings.desk.idle_timeout_s)
    found = get_account(settings, username) if username else None
    if found is None or found.disabled or request.session.get("cred") != found.credential:
        request.session.clear()
        raise LoginRequired()
    if found.temporary and not temporary_ok:
        raise PasswordChangeRequired()
    return found


async def form_of(request: Request) -> FormData:
    """The POSTed form, once its CSRF token is the session's (CsrfRefused otherwise)."""
    form = await request.form()
    check_csrf(request, form)
    return form


def text_of(form: FormData, name: str) -> str:
    value = form.get(name)
    return value if isinstance(value, str) else ""


def readable(who: Account, project_id: str) -> str:
    if not who.can_read(project_id):
        raise HTTPException(404, "no such project")
    return project_id


def reviewable(who: Account, project_id: str) -> str:
    readable(who, project_id)
    if not who.can_review(project_id):
        raise HTTPException(403, "your role on this project is reader: you cannot change anything")
    return project_id


def iso_week(text: str) -> IsoWeek:
    try:
        return IsoWeek.parse(text)
    except ValueError:
        raise HTTPException(404, "no such week") from None


def run_link(settings: Settings, flow_run_id: str | None) -> str | None:
    """The Prefect UI page of a run: the desk's setting, else Prefect's UI URL, else its API URL's server."""
    base = settings.desk.prefect_ui_url or os.environ.get("PREFECT_UI_URL")
    api = os.environ.get("PREFECT_API_URL", "").rstrip("/")
    if not base and api.endswith("/api"):
        base = api.removesuffix("/api")
    return f"{base.rstrip('/')}/runs/flow-run/{flow_run_id}" if base and flow_run_id else None


def render(request: Request, name: str, status_code: int = 200, **context: Any) -> HTMLResponse:
    who = context.pop("who", None)
    html = ENV.get_template(name).render(request=request, csrf=csrf_token(request), who=who, **context)
    return HTMLResponse(html, status_code=status_code)
