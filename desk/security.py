"""Sessions, CSRF and security headers of the desk.

Sessions are Starlette's signed cookie (itsdangerous), HttpOnly and SameSite=Strict, with an idle timeout kept
inside the signed payload; the signing secret is generated once and kept private in the home folder, so a
restart keeps people signed in and two desk processes on one home accept each other's cookies. Every POST
carries the session's CSRF token (compared in constant time). Headers forbid framing, inline script and
sniffing, and send no referrer (a week's URL names a project).
"""

from __future__ import annotations

import hmac
import os
import secrets
import time
from pathlib import Path

from starlette.datastructures import FormData, Headers
from starlette.exceptions import HTTPException
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chronicle.settings import Settings

SECRET_FILE = "desk_secret"
COOKIE = "chronicle_desk"
HEADERS = {
    # No inline script or style at all; images only from the desk itself, so a link or image in a log line never
    # loads anything remote.
    "Content-Security-Policy": "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; "
                               "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cache-Control": "no-store",
}


class CsrfRefused(Exception):
    """A state-changing request without the session's CSRF token."""


class LoginRequired(Exception):
    """No live session: the visitor is sent to the login page."""


class PasswordChangeRequired(Exception):
    """The account's password is temporary (set by an administrator): the visitor is sent to their own page."""


def session_secret(settings: Settings) -> str:
    """The home's signing secret, created on first use readable by its owner only."""
    home = settings.home.expanduser().resolve()
    home.mkdir(parents=True, exist_ok=True)
    path = home / SECRET_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _read_secret(path)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(secrets.token_urlsafe(48))
    return _read_secret(path)


def _read_secret(path: Path) -> str:
    for _ in range(50):  # another process created it a moment ago and may still be writing
        text = path.read_text(encoding="utf-8").strip()
        if text:
            return text
        time.sleep(0.02)
    raise RuntimeError(f"{path} is empty: delete it to make a new desk secret")


def csrf_token(request: Request) -> str:
    token = request.session.get("csrf")
    if not token:
        token = request.session["csrf"] = secrets.token_urlsafe(32)
    return token


def check_csrf(request: Request, form: FormData) -> None:
    expected = request.session.get("csrf")
    given = form.get("csrf")
    if not expected or not isinstance(given, str) or not hmac.compare_digest(expected, given):
        raise CsrfRefused()


def signed_in(request: Request, idle_timeout_s: int) -> str | None:
    """The signed-in username, or None; a session idle longer than the timeout is ended."""
    user = request.session.get("user")
    seen = request.session.get("seen", 0)
    now = int(time.time())
    if user and now - int(seen) > idle_timeout_s:
        request.session.clear()
        return None
    if user:
        request.session["seen"] = now
    return user


def start_session(request: Request, username: str, credential: str) -> None:
    """A fresh session for a successful login (a new CSRF token: nothing from before the login carries over);
    `credential`, the account's password digest: the session ends when the password changes."""
    request.session.clear()
    request.session.update(user=username, cred=credential, seen=int(time.time()), csrf=secrets.token_urlsafe(32))


class SecurityHeaders(BaseHTTPMiddleware):
    async def dispatch(self, request: Request, call_next) -> Response:  # type: ignore[no-untyped-def]
        response = await call_next(request)
        for name, value in HEADERS.items():
            response.headers.setdefault(name, value)
        return response


def body_limit(settings: Settings) -> int:
    """The largest request body a desk form needs: a correction of `edit_max_chars` characters, each up to 12 bytes
    once UTF-8 and form-encoded (`%F0%9F%98%80`), and the form's other fields."""
    return 12 * settings.weekly.edit_max_chars + 64 * 1024


class BodyLimit:
    """A request body over `most` bytes is refused (413) before a form parser holds it: Starlette reads a form whole
    into memory, and the sign-in form is open to anyone who reaches the port. A declared length is refused at once,
    a streamed body as soon as it passes the limit."""

    def __init__(self, app: ASGIApp, most: int) -> None:
        self.app, self.most = app, most

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = Headers(scope=scope).get("content-length", "") if scope["type"] == "http" else ""
        if declared.isdigit() and int(declared) > self.most:
            await PlainTextResponse(self._refusal, status_code=413)(scope, receive, send)
            return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.most:  # raised inside the route's form read: the app's error page answers it
                raise HTTPException(413, self._refusal)
            return message

        await self.app(scope, counted if scope["type"] == "http" else receive, send)

    @property
    def _refusal(self) -> str:
        return f"refused: a form of this desk is at most {self.most:,} bytes"


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"
