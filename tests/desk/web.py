"""Helpers of the desk's HTTP tests: a TestClient on the real app and real database, signing in, CSRF tokens."""

from __future__ import annotations

import re

from starlette.testclient import TestClient

from chronicle.settings import Settings

CSRF = re.compile(r'name="csrf" value="([^"]+)"')


def client(settings: Settings) -> TestClient:
    from chronicle.desk.app import create_app

    return TestClient(create_app(settings), base_url="http://127.0.0.1", follow_redirects=False)


def csrf(c: TestClient, url: str = "/login") -> str:
    page = c.get(url)
    assert page.status_code == 200, (url, page.status_code, page.text[:300])
    return CSRF.search(page.text).group(1)


def login(c: TestClient, username: str, password: str) -> TestClient:
    r = c.post("/login", data={"csrf": csrf(c), "username": username, "password": password})
    assert r.status_code == 303 and r.headers["location"] == "/", r.text[:500]
    return c

