"""`create_app(settings)`: the desk's FastAPI application — pages, forms, sessions, headers, static files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.staticfiles import StaticFiles

from chronicle.desk import accounts, actions, audit, pages
from chronicle.desk.security import (
    COOKIE,
    BodyLimit,
    CsrfRefused,
    LoginRequired,
    PasswordChangeRequired,
    SecurityHeaders,
    body_limit,
    session_secret,
)
from chronicle.desk.web import render
from chronicle.settings import Settings

STATIC = Path(__file__).parent / "static"


def cjk_font() -> Path | None:
    """Noto Sans CJK SC as packaged by mplfonts (a dependency already, for the charts): served to browsers on
    machines without a CJK font of their own, so the desk needs no font download from the internet."""
    spec = importlib.util.find_spec("mplfonts")
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = Path(folder) / "fonts" / "NotoSansCJKsc-Regular.otf"
        if found.is_file():
            return found
    return None


def create_app(settings: Settings, *, https_only: bool = False) -> FastAPI:
    """The desk for `settings`' home. `https_only`: mark the cookie Secure (behind a TLS reverse proxy)."""
    app = FastAPI(title="Chronicle desk", docs_url=None, redoc_url=None, openapi_url=None)
    app.state.settings = settings
    # Outermost last: the headers wrap every response, sessions are decoded before the routes run. The cookie
    # itself lives as long as the browser; the idle timeout is checked inside it (security.signed_in).
    app.add_middleware(BodyLimit, most=body_limit(settings))
    app.add_middleware(SessionMiddleware, secret_key=session_secret(settings), session_cookie=COOKIE,
                       max_age=None, same_site="strict", https_only=https_only)
    app.add_middleware(SecurityHeaders)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(actions.router)
    app.include_router(pages.router)
    app.include_router(audit.router)
    app.include_router(accounts.router)

    font = cjk_font()

    @app.get("/font/cjk.otf", include_in_schema=False)
    def _font() -> Response:
        if font is None:
            return Response(status_code=404)
        # 16 MB: cached by the browser for a week instead of the desk's default no-store.
        return FileResponse(font, media_type="font/otf", headers={"Cache-Control": "public, max-age=604800"})

    @app.exception_handler(LoginRequired)
    def _login(request: Request, exc: LoginRequired) -> Response:
        return RedirectResponse("/login", status_code=303)

    @app.exception_handler(PasswordChangeRequired)
    def _temporary(request: Request, exc: PasswordChangeRequired) -> Response:
        return RedirectResponse("/account", status_code=303)

    @app.exception_handler(CsrfRefused)
    def _csrf(request: Request, exc: CsrfRefused) -> Response:
        return HTMLResponse("refused: the form's security token is missing or stale; reload the page and retry",
                            status_code=403)

    @app.exception_handler(HTTPException)
    def _http(request: Request, exc: HTTPException) -> Response:
        return render(request, "error.html", status_code=exc.status_code, message=str(exc.detail),
                      status=exc.status_code)

    return app
