"""The desk's forms that change something: sign in and out, correct a week (preview, then save against the
version it was made on), sign a version (password asked again). Every POST checks the CSRF token first; the
writes, their refusals and their audit rows are the use cases' (services/reports.py, services/accounts.py)."""

from __future__ import annotations

from fastapi import APIRouter, HTTPException
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from chronicle.desk.security import client_address, start_session
from chronicle.desk.web import account, form_of, iso_week, render, reviewable, settings_of, text_of
from chronicle.services import desk_views
from chronicle.services.accounts import MIN_PASSWORD, AccountError, LoginRefused, authenticate, change_own_password
from chronicle.services.corrections import InvalidEdit
from chronicle.services.reports import (
    MEANINGS,
    NoReportError,
    SignRefused,
    VersionConflict,
    edit_report,
    preview_edit,
)
from chronicle.services.reports import sign_report as sign_version

router = APIRouter()


def _int(form: FormData, name: str) -> int:
    try:
        return int(text_of(form, name))
    except ValueError:
        raise HTTPException(400, f"{name} is missing") from None


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request) -> HTMLResponse:
    return render(request, "login.html")


@router.post("/login")
async def login(request: Request) -> Response:
    form = await form_of(request)
    try:
        who = authenticate(settings_of(request), text_of(form, "username"), text_of(form, "password"),
                           remote=client_address(request))
    except LoginRefused as exc:
        return render(request, "login.html", status_code=401 if exc.reason != "throttled" else 429, error=str(exc))
    start_session(request, who.username, who.credential)
    return RedirectResponse("/", status_code=303)


@router.get("/account", response_class=HTMLResponse)
def account_page(request: Request) -> HTMLResponse:
    return render(request, "account.html", who=account(request, temporary_ok=True), min_password=MIN_PASSWORD)


@router.post("/account", response_class=HTMLResponse)
async def change_password(request: Request) -> Response:
    """Change one's own password: the current one, then the new one twice. Every other session of the account
    ends; this one goes on under the new password (no longer temporary, when an administrator had set it)."""
    who = account(request, temporary_ok=True)
    form = await form_of(request)
    try:
        who = change_own_password(settings_of(request), who.username, text_of(form, "current"), text_of(form, "new"),
                                  text_of(form, "repeat"), remote=client_address(request))
    except LoginRefused as exc:
        return render(request, "account.html", status_code=401 if exc.reason != "throttled" else 429, who=who,
                      error=str(exc), min_password=MIN_PASSWORD)
    except AccountError as exc:
        return render(request, "account.html", status_code=422, who=who, error=str(exc), min_password=MIN_PASSWORD)
    start_session(request, who.username, who.credential)
    return render(request, "account.html", who=who, changed=True, min_password=MIN_PASSWORD)


@router.post("/logout")
async def logout(request: Request) -> Response:
    await form_of(request)
    request.session.clear()
    return RedirectResponse("/login", status_code=303)


def _current(request: Request, project_id: str, week: str):  # type: ignore[no-untyped-def]
    page = desk_views.week_page(settings_of(request), project_id, iso_week(week))
    if page is None:
        raise HTTPException(404, f"{project_id} {week} has no report yet")
    return page


@router.get("/p/{project_id}/w/{week}/correct", response_class=HTMLResponse)
def correct_page(request: Request, project_id: str, week: str) -> HTMLResponse:
    who = account(request)
    reviewable(who, project_id)
    page = _current(request, project_id, week)
    return render(request, "correct.html", who=who, p=page, text=page.summary, reason="", base=page.version)


@router.post("/p/{project_id}/w/{week}/correct", response_class=HTMLResponse)
async def correct(request: Request, project_id: str, week: str) -> Response:
    who = account(request)
    form = await form_of(request)
    reviewable(who, project_id)
    settings, iso = settings_of(request), iso_week(week)
    page = _current(request, project_id, week)
    text, reason, base = text_of(form, "text"), text_of(form, "reason"), _int(form, "base_version")
    shown = {"who": who, "p": page, "text": text, "reason": reason, "base": base}
    try:
        if text_of(form, "action") != "save":
            return render(request, "correct.html", preview=preview_edit(settings, project_id, iso, text), **shown)
        result = edit_report(settings, project_id, iso, text, author=who.username, reason=reason, base_version=base,
                             remote=client_address(request))
    except InvalidEdit as exc:
        return render(request, "correct.html", status_code=422, error=str(exc), **shown)
    except VersionConflict as exc:
        return render(request, "correct.html", status_code=409, error=str(exc), conflict=exc, **shown)
    except NoReportError as exc:
        raise HTTPException(404, str(exc)) from None
    return RedirectResponse(f"/p/{project_id}/w/{iso}/history?saved={result.version}", status_code=303)


@router.get("/p/{project_id}/w/{week}/sign", response_class=HTMLResponse)
def sign_page(request: Request, project_id: str, week: str) -> HTMLResponse:
    who = account(request)
    reviewable(who, project_id)
    return render(request, "sign.html", who=who, p=_current(request, project_id, week), meanings=MEANINGS)


@router.post("/p/{project_id}/w/{week}/sign", response_class=HTMLResponse)
async def sign(request: Request, project_id: str, week: str) -> Response:
    who = account(request)
    form = await form_of(request)
    reviewable(who, project_id)
    iso = iso_week(week)
    shown = {"who": who, "p": _current(request, project_id, week), "meanings": MEANINGS}
    try:
        sign_version(settings_of(request), project_id, iso, version=_int(form, "version"), account=who,
                     password=text_of(form, "password"), meaning=text_of(form, "meaning"),  # type: ignore[arg-type]
                     remote=client_address(request), note=text_of(form, "note") or None)
    except LoginRefused as exc:
        return render(request, "sign.html", status_code=401 if exc.reason != "throttled" else 429, error=str(exc),
                      **shown)
    except SignRefused as exc:
        return render(request, "sign.html", status_code=403, error=str(exc), **shown)
    except VersionConflict as exc:
        return render(request, "sign.html", status_code=409, error=str(exc), conflict=exc, **shown)
    return RedirectResponse(f"/p/{project_id}/w/{iso}", status_code=303)
