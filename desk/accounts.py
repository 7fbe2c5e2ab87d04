"""Accounts in the browser, for administrators (REDCap's "User Rights"): who holds which role where, when they last
signed in; add an account, give it a temporary password, disable or enable it, grant or revoke a role. What an
administrator may change is services/accounts.py's `check_manages` (an admin of every project: any other account;
an admin of some projects: roles on those); every change is the same use case, audit row included, as
`chronicle desk user`, with the administrator as its actor. Anyone who administers nothing finds no such page."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from chronicle.desk.security import client_address
from chronicle.desk.web import account, form_of, render, settings_of, text_of
from chronicle.services.accounts import (
    ALL_PROJECTS,
    MIN_PASSWORD,
    ROLES,
    Account,
    AccountError,
    ManageRefused,
    list_accounts,
    manage,
)
from chronicle.services.desk_views import visible
from chronicle.storage.db import one_window

router = APIRouter()
DONE = {"add": "{u} added, with a temporary password to hand over: they choose their own at their first sign-in",
        "grant": "{u}: {role} on {where}", "disable": "{u} disabled: their sessions are signed out",
        "enable": "{u} enabled", "password": "{u} has a new temporary password; their sessions are signed out"}
"""What the page says after each change."""


def _admin(request: Request) -> Account:
    who = account(request)
    if not who.administers:
        raise HTTPException(404, "no such page")
    return who


def _page(request: Request, who: Account, status_code: int = 200, **shown: object) -> HTMLResponse:
    settings = settings_of(request)
    with one_window(settings):
        people = list_accounts(settings, who)
        scope = who.admin_scope()
        projects = visible(settings, who.can_read) if scope is None else scope
    return render(request, "accounts.html", status_code=status_code, who=who, people=people, everything=scope is None,
                  projects=projects, roles=ROLES, all_projects=ALL_PROJECTS, min_password=MIN_PASSWORD, **shown)


@router.get("/accounts", response_class=HTMLResponse)
def accounts(request: Request) -> HTMLResponse:
    who = _admin(request)
    # What the last change did, said once: kept in the signed session rather than the URL, so a link cannot make
    # the page announce a change nobody made.
    return _page(request, who, done=request.session.pop("done", ""))


@router.post("/accounts", response_class=HTMLResponse)
async def change(request: Request) -> Response:
    """One change to one account, named by the form's `change` (services/accounts.py CHANGES)."""
    who = _admin(request)
    form = await form_of(request)
    what, username = text_of(form, "change"), text_of(form, "username").strip()
    project, role = text_of(form, "project").strip(), text_of(form, "role")
    try:
        manage(settings_of(request), who, what, username, remote=client_address(request), project_id=project,
               role=role, printed_name=text_of(form, "printed_name"), password=text_of(form, "password"))
    except ManageRefused as exc:
        return _page(request, who, status_code=403, error=str(exc))
    except AccountError as exc:
        return _page(request, who, status_code=422, error=str(exc))
    where = "every project" if project == ALL_PROJECTS else project
    request.session["done"] = DONE[what].format(u=username, role=role, where=where)
    return RedirectResponse("/accounts", status_code=303)
