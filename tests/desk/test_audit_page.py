"""The audit trail in the browser (real app, real DuckDB file, real accounts): an admin of a project reads that
project's rows and nobody else's, an admin of every project reads sign-ins too, anyone else finds no such page;
filters and pages narrow it, the CSV download is itself audited and never hands a spreadsheet a formula."""

from __future__ import annotations

import csv
import io
import re

import pytest

from chronicle.settings import Settings
from tests.desk.conftest import PASSWORD, PROJECT
from tests.desk.web import client, csrf, login

pytestmark = pytest.mark.timeout(300)
WEEK = "2025-W30"


@pytest.fixture
def trail(people: Settings) -> Settings:
    """Admins of XH201 and of every project; a correction of XH201 2025-W30 through the desk (its reason written
    to look like a formula and like markup), a refused signature, a failed sign-in, and a row of another project."""
    from chronicle.services.accounts import add_user
    from chronicle.services.audit import record

    add_user(people, "adam", "Adam Admin", PASSWORD, {PROJECT: "admin"})
    add_user(people, "root", "Rooted Admin", PASSWORD, {"*": "admin"})
    c = login(client(people), "ana", PASSWORD)
    token = csrf(c, f"/p/{PROJECT}/w/{WEEK}/correct")
    saved = c.post(f"/p/{PROJECT}/w/{WEEK}/correct", data={
        "csrf": token, "text": "本周按计划推进。", "reason": "=HYPERLINK(\"http://x\") <b>typo</b>",
        "base_version": "1", "action": "save"})
    assert saved.status_code == 303, saved.text[:500]
    token = csrf(c, f"/p/{PROJECT}/w/{WEEK}/sign")
    refused = c.post(f"/p/{PROJECT}/w/{WEEK}/sign", data={"csrf": token, "version": "2", "meaning": "reviewed",
                                                          "password": "not the password"})
    assert refused.status_code in (401, 403), refused.status_code
    anonymous = client(people)
    anonymous.post("/login", data={"csrf": csrf(anonymous), "username": "mallory", "password": "guess"})
    record(people, actor="otto", action="edit", project_id="XH305", week_number=202530, detail={"reason": "theirs"},
           remote="10.0.0.9")
    return people


def _rows(page: str) -> int:
    return page.count("<tr") - 1  # the header row


def test_only_admins_read_the_trail_and_only_of_their_projects(trail: Settings) -> None:
    for name in ("ana", "rita", "otto"):  # reviewers and readers: no link, no page, no download
        c = login(client(trail), name, PASSWORD)
        assert 'id="nav-audit"' not in c.get("/").text
        assert c.get("/audit").status_code == 404 and c.get("/audit.csv").status_code == 404
    assert client(trail).get("/audit").status_code == 303  # signed out: the sign-in page

    adam = login(client(trail), "adam", PASSWORD)
    assert 'id="nav-audit"' in adam.get("/").text
    page = adam.get("/audit").text
    assert "ana" in page and "edit" in page and "refused:" in page and "10.0.0.9" not in page
    assert "mallory" not in page and "XH305" not in page  # sign-ins have no project; another project is not his
    assert adam.get("/audit", params={"project": "XH305"}).status_code == 404
    # The reason is text: escaped, never markup.
    assert "&lt;b&gt;typo&lt;/b&gt;" in page and "<b>typo</b>" not in page

    root = login(client(trail), "root", PASSWORD).get("/audit").text
    assert "mallory" in root and "XH305" in root and "login" in root
    assert re.search(r"<option[^>]*>XH305</option>", root) and re.search(rf"<option[^>]*>{PROJECT}</option>", root)
    assert not re.search(r"<option[^>]*>XH305</option>", page)  # a project admin's list holds his projects only


def test_filters_narrow_the_rows_and_pages_hold_the_rest(trail: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronicle.desk import audit

    root = login(client(trail), "root", PASSWORD)
    everything = _rows(root.get("/audit").text)
    refused = root.get("/audit", params={"outcome": "refused"}).text
    assert 0 < _rows(refused) < everything and "mallory" in refused and "<td>ok</td>" not in refused
    edits = root.get("/audit", params={"action": "edit", "project": PROJECT, "week": WEEK, "actor": "ana"}).text
    assert _rows(edits) == 1 and "typo" in edits and "XH305" not in edits[edits.index('id="audit"'):]
    assert root.get("/audit", params={"week": "2025-W99"}).status_code == 404

    monkeypatch.setattr(audit, "PAGE_SIZE", 2)
    first = root.get("/audit", params={"outcome": "ok"}).text
    assert _rows(first) == 2 and 'id="older"' in first and 'id="newer"' not in first
    second = root.get("/audit", params={"outcome": "ok", "page": 2}).text
    assert 'id="newer"' in second and "outcome=ok" in second  # the filter is kept from page to page
    assert set(first.split("<tr")[1:]).isdisjoint(second.split("<tr")[2:])


def test_the_download_is_audited_and_holds_no_formula(trail: Settings) -> None:
    from chronicle.services.audit import audit_trail

    adam = login(client(trail), "adam", PASSWORD)
    got = adam.get("/audit.csv", params={"project": PROJECT})
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    assert "attachment" in got.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(got.text)))
    assert rows and {r["project_id"] for r in rows} == {PROJECT}
    edit = next(r for r in rows if r["action"] == "edit")
    assert edit["week"] == WEEK and edit["actor"] == "ana" and "typo" in edit["detail"]
    cells = [c for r in rows for c in r.values()]
    assert not any(c.startswith(("=", "+", "-", "@")) for c in cells), cells
    exported = [r for r in audit_trail(trail, PROJECT) if r.action == "audit-export"]
    assert [(r.actor, r.detail["rows"], r.detail["filter"]) for r in exported] == [
        ("adam", len(rows), {"project_id": PROJECT})]

