"""Accounts in the browser (real app, real DuckDB file, real argon2): an admin of every project adds an account with
a temporary password, which can do nothing but choose its own (not even sign) until it has; an admin of a project
grants roles on that project and nothing else; disabling an account or setting its password ends its sessions; no
administrator changes their own account here; every change and every refusal is an audit row naming the admin."""

from __future__ import annotations

import pytest

from chronicle.settings import Settings
from tests.desk.conftest import PASSWORD, PROJECT
from tests.desk.web import client, csrf, login

pytestmark = pytest.mark.timeout(300)
TEMPORARY = "handed over 1234"
OWN = "my very own passphrase"


@pytest.fixture
def admins(people: Settings) -> Settings:
    """`people` (ana reviews XH201, rita reads it, otto reviews XH305) with an admin of XH201 and one of everything."""
    from chronicle.services.accounts import add_user

    add_user(people, "adam", "Adam Admin", PASSWORD, {PROJECT: "admin"})
    add_user(people, "root", "Rooted Admin", PASSWORD, {"*": "admin"})
    return people


def _change(c, **fields: str):  # type: ignore[no-untyped-def]
    return c.post("/accounts", data={"csrf": csrf(c, "/accounts"), **fields})


def _audit(settings: Settings, action: str) -> list[tuple]:
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        return conn.execute("SELECT actor, outcome, detail FROM desk_audit WHERE action = ? ORDER BY happened_at",
                            [action]).fetchall()


def _signed_out(c) -> bool:  # type: ignore[no-untyped-def]
    r = c.get("/")
    return r.status_code == 303 and r.headers["location"] == "/login"


def test_a_new_account_chooses_its_own_password_before_anything_else(admins: Settings) -> None:
    from chronicle.services.accounts import get_account
    from chronicle.services.reports import SignRefused, sign_report
    from chronicle.weeks import IsoWeek

    root = login(client(admins), "root", PASSWORD)
    assert 'id="nav-accounts"' in root.get("/").text
    added = _change(root, change="add", username="nina", printed_name="Nina <b>Nurse</b>", password=TEMPORARY,
                    project=PROJECT, role="reviewer")
    assert added.status_code == 303 and added.headers["location"] == "/accounts", added.text[:500]
    page = root.get("/accounts").text
    assert 'id="done"' in page and "nina added" in page and "temporary password" in page
    assert "Nina &lt;b&gt;Nurse&lt;/b&gt;" in page and "<b>Nurse</b>" not in page  # a name is text, never markup
    assert "nina added" not in root.get("/accounts").text  # said once

    nina = login(client(admins), "nina", TEMPORARY)
    for url in ("/", f"/p/{PROJECT}", f"/p/{PROJECT}/w/2025-W30/sign", "/queue"):
        r = nina.get(url)
        assert r.status_code == 303 and r.headers["location"] == "/account", (url, r.status_code)
    assert 'id="temporary"' in nina.get("/account").text
    with pytest.raises(SignRefused, match="set by an administrator"):  # not through any door: the use case refuses
        sign_report(admins, PROJECT, IsoWeek.parse("2025-W30"), version=1, account="nina", password=TEMPORARY,
                    meaning="reviewed", remote="test")
    assert ("nina", "refused:temporary-password", '{"meaning": "reviewed"}') in _audit(admins, "sign")

    changed = nina.post("/account", data={"csrf": csrf(nina, "/account"), "current": TEMPORARY, "new": OWN,
                                          "repeat": OWN})
    assert changed.status_code == 200 and 'id="temporary"' not in changed.text
    assert nina.get(f"/p/{PROJECT}").status_code == 200
    assert get_account(admins, "nina").temporary is False
    assert [(a, o) for a, o, _ in _audit(admins, "user-add")][-1] == ("root", "ok")
    assert '"temporary_password": true' in _audit(admins, "user-add")[-1][2]


def test_a_project_admin_grants_roles_on_their_projects_only(admins: Settings) -> None:
    from chronicle.services.accounts import get_account

    for name in ("ana", "rita", "otto"):  # no administrator: no link, no page, no change
        c = login(client(admins), name, PASSWORD)
        assert 'id="nav-accounts"' not in c.get("/").text
        assert c.get("/accounts").status_code == 404
        assert c.post("/accounts", data={"change": "grant", "username": name, "project": PROJECT,
                                         "role": "admin"}).status_code == 404
    assert client(admins).get("/accounts").status_code == 303  # signed out: the sign-in page

    adam = login(client(admins), "adam", PASSWORD)
    page = adam.get("/accounts").text
    # The accounts of his project, with their roles there; not who else uses the desk, nor another project's roles.
    assert 'id="account-rita"' in page and 'id="account-otto"' not in page and "XH305" not in page
    assert 'id="add-form"' not in page and 'id="disable-rita"' not in page
    ok = _change(adam, change="grant", username="otto", project=PROJECT, role="reader")  # granted by name
    assert ok.status_code == 303, ok.text[:500]
    assert 'id="account-otto"' in adam.get("/accounts").text and "XH305" not in adam.get("/accounts").text
    otto = login(client(admins), "otto", PASSWORD)
    assert otto.get(f"/p/{PROJECT}").status_code == 200

    refusals = [dict(change="grant", username="otto", project="XH305", role="reader"),  # not his project
                dict(change="grant", username="otto", project="*", role="reader"),
                dict(change="grant", username="adam", project=PROJECT, role="reader"),  # himself
                dict(change="add", username="eve", printed_name="Eve", password=TEMPORARY, project=PROJECT,
                     role="admin"),
                dict(change="disable", username="ana"),
                dict(change="password", username="ana", password=TEMPORARY)]
    for fields in refusals:
        r = _change(adam, **fields)
        assert r.status_code == 403 and 'id="error"' in r.text, (fields, r.status_code)
    assert get_account(admins, "otto").roles == {PROJECT: "reader", "XH305": "reviewer"}
    assert get_account(admins, "eve") is None and not get_account(admins, "ana").disabled
    assert get_account(admins, "adam").roles == {PROJECT: "admin"}
    assert adam.post("/accounts", data={"change": "grant", "username": "otto", "project": PROJECT,
                                        "role": "admin"}).status_code == 403  # no CSRF token
    assert get_account(admins, "otto").roles[PROJECT] == "reader"

    refused = [(a, o) for a, o, _ in _audit(admins, "grant") if o != "ok"]
    assert refused == [("adam", "refused:not-permitted")] * 3
    assert ("adam", "ok") in [(a, o) for a, o, _ in _audit(admins, "grant")]
    assert [(a, o) for a, o, _ in _audit(admins, "user-disable")] == [("adam", "refused:not-permitted")]


def test_disabling_or_setting_a_password_ends_the_accounts_sessions(admins: Settings) -> None:
    from chronicle.services.accounts import get_account

    root = login(client(admins), "root", PASSWORD)
    ana = login(client(admins), "ana", PASSWORD)
    assert _change(root, change="disable", username="ana").status_code == 303
    assert _signed_out(ana) and get_account(admins, "ana").disabled
    fresh = client(admins)
    assert fresh.post("/login", data={"csrf": csrf(fresh), "username": "ana",
                                      "password": PASSWORD}).status_code == 401
    assert _change(root, change="enable", username="ana").status_code == 303
    ana = login(client(admins), "ana", PASSWORD)

    assert _change(root, change="password", username="ana", password=TEMPORARY).status_code == 303
    assert _signed_out(ana)
    again = login(client(admins), "ana", TEMPORARY)
    assert again.get("/").headers["location"] == "/account"

    for fields, status, words in [
        (dict(change="disable", username="root"), 403, "your own account"),
        (dict(change="grant", username="root", project="*", role="reader"), 403, "your own account"),
        (dict(change="add", username="bad name", printed_name="B", password=TEMPORARY), 422, "letters, digits"),
        (dict(change="add", username="rita", printed_name="R", password=TEMPORARY), 422, "exists already"),
        (dict(change="add", username="sam", printed_name="Sam", password="short"), 422, "shorter than"),
        (dict(change="grant", username="ghost", project=PROJECT, role="reader"), 422, "no account"),
        (dict(change="grant", username="rita", project=PROJECT, role="owner"), 422, "unknown role"),
        (dict(change="grant", username="rita", project="", role="reader"), 422, "choose a project"),
        (dict(change="rename", username="rita"), 422, "unknown change"),
    ]:
        r = _change(root, **fields)
        assert r.status_code == status and words in r.text, (fields, r.status_code, r.text[:300])
    assert get_account(admins, "root").roles == {"*": "admin"} and not get_account(admins, "root").disabled
    assert get_account(admins, "sam") is None and get_account(admins, "rita").roles == {PROJECT: "reader"}
    assert [a for a, o, _ in _audit(admins, "user-disable") if o == "ok"] == ["root"]
