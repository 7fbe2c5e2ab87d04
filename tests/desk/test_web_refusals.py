"""The desk refuses over HTTP what it must (real app, real DuckDB file, real accounts): no session, wrong role,
another project (404, as if it did not exist), missing or invalid CSRF token, a stale base version, a signed
version, throttled logins, a non-loopback bind; and it sends its security headers and cookie flags."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from chronicle.settings import Settings
from tests.desk.conftest import PASSWORD, PROJECT
from tests.desk.web import client, csrf, login

pytestmark = pytest.mark.timeout(300)
WEEK = "2025-W30"
PAGES = ["/", "/queue", f"/p/{PROJECT}", f"/p/{PROJECT}/w/{WEEK}", f"/p/{PROJECT}/w/{WEEK}/history",
         f"/p/{PROJECT}/w/{WEEK}/correct", f"/p/{PROJECT}/w/{WEEK}/sign"]


def _versions(settings: Settings) -> list[int]:
    from chronicle.services.desk_views import history
    from chronicle.weeks import IsoWeek

    return [v.version for v in history(settings, PROJECT, IsoWeek.parse(WEEK)).versions]


def test_no_session_sees_only_the_login_page(people: Settings) -> None:
    c = client(people)
    for url in PAGES:
        r = c.get(url)
        assert r.status_code == 303 and r.headers["location"] == "/login", url
    token = csrf(c)  # an anonymous session has a token for the login form, and still cannot post a correction
    r = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={"csrf": token, "text": "x", "reason": "y",
                                                       "base_version": "1", "action": "save"})
    assert r.status_code == 303 and r.headers["location"] == "/login"
    assert _versions(people) == [1]


def test_headers_and_cookie(people: Settings) -> None:
    c = client(people)
    page = c.get("/login")
    csp = page.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-inline" not in csp
    assert page.headers["x-frame-options"] == "DENY" and page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "<script>" not in page.text and " style=" not in page.text  # nothing inline for the CSP to block
    r = c.post("/login", data={"csrf": csrf(c), "username": "ana", "password": PASSWORD})
    cookie = r.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie


def test_login_refusals_and_throttling(people: Settings) -> None:
    strict = people.updated(desk_login_max_failures=3)
    c = client(strict)
    wrong = c.post("/login", data={"csrf": csrf(c), "username": "ana", "password": "not it"})
    unknown = c.post("/login", data={"csrf": csrf(c), "username": "nobody", "password": "not it"})
    assert wrong.status_code == unknown.status_code == 401
    assert "wrong username or password" in wrong.text and "wrong username or password" in unknown.text
    for _ in range(3):
        c.post("/login", data={"csrf": csrf(c), "username": "ana", "password": "still wrong"})
    throttled = c.post("/login", data={"csrf": csrf(c), "username": "ana", "password": PASSWORD})
    assert throttled.status_code == 429 and "too many failed attempts" in throttled.text
    assert c.get("/").status_code == 303  # not signed in


def test_csrf_missing_or_invalid_is_refused_and_nothing_is_written(people: Settings) -> None:
    c = client(people)
    assert c.post("/login", data={"username": "ana", "password": PASSWORD}).status_code == 403
    login(c, "ana", PASSWORD)
    form = {"text": "入组 5 人。", "reason": "typo", "base_version": "1", "action": "save"}
    assert c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data=form).status_code == 403
    assert c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data=form | {"csrf": "forged"}).status_code == 403
    sign = {"version": "1", "meaning": "reviewed", "password": PASSWORD}
    assert c.post(f"/p/{PROJECT}/w/{WEEK}/sign", data=sign | {"csrf": "forged"}).status_code == 403
    other = client(people)  # a token of another session is no good either
    stolen = csrf(login(other, "ana", PASSWORD), f"/p/{PROJECT}/w/{WEEK}/correct")
    assert c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data=form | {"csrf": stolen}).status_code == 403
    assert c.post("/logout", data={}).status_code == 403
    assert _versions(people) == [1]


def test_a_reader_cannot_change_anything(people: Settings) -> None:
    c = login(client(people), "rita", PASSWORD)
    week = c.get(f"/p/{PROJECT}/w/{WEEK}")
    assert week.status_code == 200 and 'id="correct-link"' not in week.text and 'id="sign-link"' not in week.text
    token = csrf(c, "/")
    assert c.get(f"/p/{PROJECT}/w/{WEEK}/correct").status_code == 403
    assert c.get(f"/p/{PROJECT}/w/{WEEK}/sign").status_code == 403
    r = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={"csrf": token, "text": "入组 5 人。", "reason": "mine",
                                                       "base_version": "1", "action": "save"})
    assert r.status_code == 403 and "reader" in r.text
    r = c.post(f"/p/{PROJECT}/w/{WEEK}/sign", data={"csrf": token, "version": "1", "meaning": "approved",
                                                    "password": PASSWORD})
    assert r.status_code == 403
    assert _versions(people) == [1]
    from chronicle.services.reports import signatures
    from chronicle.weeks import IsoWeek

    assert signatures(people, PROJECT, IsoWeek.parse(WEEK)) == []


def test_another_projects_reviewer_cannot_see_the_project(people: Settings) -> None:
    c = login(client(people), "otto", PASSWORD)
    token = csrf(c, "/")
    grid = c.get("/")
    assert PROJECT not in grid.text
    for url in PAGES[2:]:
        r = c.get(url)
        assert r.status_code == 404, url
    assert c.get("/p/NO-SUCH-PROJECT").text == c.get(f"/p/{PROJECT}").text  # indistinguishable from absent
    r = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={"csrf": token, "text": "x", "reason": "y",
                                                       "base_version": "1", "action": "save"})
    assert r.status_code == 404
    assert PROJECT not in c.get("/queue").text
    assert _versions(people) == [1]


def test_a_stale_base_version_is_refused_with_the_diff(people: Settings) -> None:
    from chronicle.services.reports import edit_report
    from chronicle.weeks import IsoWeek

    c = login(client(people), "ana", PASSWORD)
    form = c.get(f"/p/{PROJECT}/w/{WEEK}/correct")
    token = csrf(c, f"/p/{PROJECT}/w/{WEEK}/correct")
    assert 'name="base_version" value="1"' in form.text
    # Someone else saves first (another reviewer, through the same write path).
    edit_report(people, PROJECT, IsoWeek.parse(WEEK), "另一位审阅者的更正：本周按计划推进。", author="bo",
                reason="their fix", base_version=1)
    r = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={"csrf": token, "text": "我的更正：本周无事。",
                                                       "reason": "mine", "base_version": "1", "action": "save"})
    assert r.status_code == 409
    assert 'id="conflict"' in r.text and "另一位审阅者的更正" in r.text and "version 2" in r.text
    assert _versions(people) == [1, 2]  # nothing overwritten, nothing added


def test_a_signed_version_is_never_changed_and_its_signature_not_carried_over(people: Settings) -> None:
    c = login(client(people), "ana", PASSWORD)
    token = csrf(c, f"/p/{PROJECT}/w/{WEEK}/sign")
    wrong = c.post(f"/p/{PROJECT}/w/{WEEK}/sign", data={"csrf": token, "version": "1", "meaning": "approved",
                                                        "password": "not mine"})
    assert wrong.status_code == 401
    ok = c.post(f"/p/{PROJECT}/w/{WEEK}/sign", data={"csrf": token, "version": "1", "meaning": "approved",
                                                     "password": PASSWORD})
    assert ok.status_code == 303
    week = c.get(f"/p/{PROJECT}/w/{WEEK}").text
    assert "approved by <b>Dr. Ana Li</b>" in week and "UTC" in week and "earlier version" not in week
    original = c.get(f"/p/{PROJECT}/w/{WEEK}/history").text
    saved = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={"csrf": token, "text": "更正后的文本：本周按计划推进。",
                                                           "reason": "wording", "base_version": "1",
                                                           "action": "save"})
    assert saved.status_code == 303
    # The edit made a new version; version 1 (the signed text) is as it was and its signature stays with it.
    assert _versions(people) == [1, 2]
    week = c.get(f"/p/{PROJECT}/w/{WEEK}").text
    assert "belongs to an earlier version" in week and "version 1" in week
    again = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={"csrf": token, "text": "再改一次。", "reason": "again",
                                                           "base_version": "1", "action": "save"})
    assert again.status_code == 409  # an edit made on the signed (old) version is refused
    from chronicle.services.desk_views import history
    from chronicle.weeks import IsoWeek

    v1 = history(people, PROJECT, IsoWeek.parse(WEEK), 1, 2).versions[0]
    assert v1.summary in original.replace("&amp;", "&") or v1.status == "generated"


def test_idle_session_ends(people: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    import time as real_time

    from chronicle.desk import security

    short = people.updated(desk_idle_timeout_s=30)
    c = login(client(short), "ana", PASSWORD)
    assert c.get("/").status_code == 200

    class Later:
        @staticmethod
        def time() -> float:
            return real_time.time() + 31

    monkeypatch.setattr(security, "time", Later)
    assert c.get("/").status_code == 303


def test_non_loopback_bind_is_refused_in_one_line(people: Settings) -> None:
    from chronicle.cli.common import loopback
    from chronicle.cli.main import app

    result = CliRunner().invoke(app, ["desk", "--host", "0.0.0.0", "--port", "1"])
    assert result.exit_code == 2
    assert "refusing to serve the desk on 0.0.0.0" in result.output and "--allow-remote" in result.output
    assert len(result.output.strip().splitlines()) <= 2  # one sentence (wrapped at most once by the console)
    assert loopback("127.0.0.1") and loopback("::1") and loopback("localhost") and loopback("127.1.2.3")
    assert not loopback("0.0.0.0") and not loopback("192.168.1.5") and not loopback("example.org")


def test_a_body_past_the_largest_form_is_refused_before_it_is_read(people: Settings) -> None:
    """Starlette reads a form whole into memory, and the sign-in form is open to anyone who reaches the port: a body
    past what the largest correction needs is refused (413), declared or streamed, and the largest real form — a
    correction of `edit_max_chars` four-byte characters — still goes through."""
    from chronicle.desk.security import body_limit

    small = people.updated(edit_max_chars=1000)
    most = body_limit(small)
    c = client(small)
    token = csrf(c)
    declared = c.post("/login", content=b"u" * (most + 1),
                      headers={"content-type": "application/x-www-form-urlencoded"})
    assert declared.status_code == 413 and declared.headers["x-frame-options"] == "DENY"

    def chunks():  # no Content-Length: counted as it arrives
        yield f"csrf={token}&username=ana&password=".encode()
        for _ in range(most // 4096 + 2):
            yield b"x" * 4096

    streamed = c.post("/login", content=chunks(), headers={"content-type": "application/x-www-form-urlencoded"})
    assert streamed.status_code == 413 and "at most" in streamed.text

    login(c, "ana", PASSWORD)
    largest = {"csrf": csrf(c, f"/p/{PROJECT}/w/{WEEK}/correct"), "text": "😀" * 1000, "reason": "r" * 200,
               "base_version": "1", "action": "preview"}
    assert c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data=largest).status_code == 200
    assert _versions(people) == [1]
