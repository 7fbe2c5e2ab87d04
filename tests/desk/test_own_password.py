"""A person changes their own password in the desk: the current one first (a wrong one counts like a failed
sign-in), the new one twice; the change is audited as theirs, and every other session of the account ends."""

from __future__ import annotations

from chronicle.settings import Settings
from tests.desk.conftest import PASSWORD
from tests.desk.web import client, csrf, login

NEW = "a brand new passphrase"


def _change(c, current: str, new: str, repeat: str):  # type: ignore[no-untyped-def]
    return c.post("/account", data={"csrf": csrf(c, "/account"), "current": current, "new": new, "repeat": repeat})


def test_a_reviewer_changes_their_password_and_their_other_sessions_end(people: Settings) -> None:
    from chronicle.storage.db import connect

    laptop, phone = login(client(people), "ana", PASSWORD), login(client(people), "ana", PASSWORD)
    page = laptop.get("/account")
    assert page.status_code == 200 and "Dr. Ana Li" in page.text and "XH201: reviewer" in page.text
    assert 'href="/account"' in laptop.get("/").text  # reachable from every page, under one's own name

    wrong = _change(laptop, "not my password", NEW, NEW)
    assert wrong.status_code == 401 and "wrong username or password" in wrong.text
    differ = _change(laptop, PASSWORD, NEW, NEW + "!")
    assert differ.status_code == 422 and "differ" in differ.text
    short = _change(laptop, PASSWORD, "short", "short")
    assert short.status_code == 422 and "shorter than" in short.text
    same = _change(laptop, PASSWORD, PASSWORD, PASSWORD)
    assert same.status_code == 422 and "is the current one" in same.text
    assert laptop.post("/account", data={"current": PASSWORD, "new": NEW, "repeat": NEW}).status_code == 403  # CSRF

    done = _change(laptop, PASSWORD, NEW, NEW)
    assert done.status_code == 200 and 'id="changed"' in done.text
    assert laptop.get("/").status_code == 200  # this session goes on
    assert phone.get("/").status_code in (302, 303, 307)  # the other one is signed out
    fresh = client(people)
    refused = fresh.post("/login", data={"csrf": csrf(fresh), "username": "ana", "password": PASSWORD})
    assert refused.status_code == 401
    login(client(people), "ana", NEW)

    with connect(people) as conn:
        rows = conn.execute("SELECT actor, action, outcome FROM desk_audit WHERE action IN ('user-passwd', 'reauth') "
                            "ORDER BY happened_at").fetchall()
    assert ("ana", "user-passwd", "ok") in rows
    assert ("ana", "reauth", "refused:wrong-password") in rows
