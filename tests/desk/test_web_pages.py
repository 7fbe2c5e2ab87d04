"""The desk's read pages over HTTP on the real sample weeks: the grid's states, the week page's citations read by
id (only the cited entries), escaping, the chronicle's stats answers and negation-aware search (also offline
`chronicle ask`), history diffs between any two versions, the review queue."""

from __future__ import annotations

import re

import pytest

from chronicle.settings import Settings
from chronicle.weeks import IsoWeek
from tests.desk.conftest import PASSWORD, PROJECT
from tests.desk.web import client, csrf, login
from tests.fakellm import FakeLLMServer
from tests.weekly.conftest import online  # noqa: F401  (the fake endpoint fixture)

pytestmark = pytest.mark.timeout(300)


def _cell_states(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-week="([0-9W-]+)" data-state="([a-z-]+)"', html))


def _edit(settings: Settings, week: str, change: tuple[str, str] | None = None, text: str | None = None) -> int:
    from chronicle.services.desk_views import week_page
    from chronicle.services.reports import edit_report

    page = week_page(settings, PROJECT, IsoWeek.parse(week))
    new = text if text is not None else page.summary.replace(*change)
    return edit_report(settings, PROJECT, IsoWeek.parse(week), new, author="ana", reason="test",
                       base_version=page.version).version


def test_the_grid_shows_each_weeks_state(people: Settings) -> None:
    from chronicle.services.reports import sign_report
    from chronicle.services.weekly import plan_week, run_week
    from chronicle.storage import reports
    from chronicle.storage.db import connect, transaction

    run_week(people, plan_week(people, PROJECT, IsoWeek.parse("2025-W28")), "older-run")
    # W29..W31 were written by an earlier run
    run_week(people, plan_week(people, PROJECT, IsoWeek.parse("2025-W27")), "newest-run")
    _edit(people, "2025-W28", ("本周记录", "本周共记录"))  # a clean correction: edited, not flagged
    _edit(people, "2025-W29", text="本周入组 5 人，无其他事件。")  # the guard questions it: flagged
    sign_report(people, PROJECT, IsoWeek.parse("2025-W30"), version=1, account="ana", password=PASSWORD,
                meaning="reviewed", remote="test")
    with transaction(people) as conn:
        reports.mark_stale(conn, PROJECT, 202531)
    with connect(people) as conn:  # a run that failed a week with entries and no report
        conn.execute("""INSERT INTO pipeline_runs (flow_run_id, flow_name, started_at, state, counts)
                        VALUES ('failed-run', 'backfill-weeks', now()::TIMESTAMP, 'FAILED',
                                '{"failed_weeks": [["XH201", 202532]]}')""")
    c = login(client(people), "ana", PASSWORD)
    states = _cell_states(c.get("/").text)
    assert {w: states[w] for w in ("2025-W27", "2025-W28", "2025-W29", "2025-W30", "2025-W31", "2025-W32",
                                   "2025-W33")} == {
        "2025-W27": "generated", "2025-W28": "edited", "2025-W29": "flagged", "2025-W30": "signed",
        "2025-W31": "stale", "2025-W32": "failed", "2025-W33": "missing"}
    assert len(states) >= 50  # every week of the trial is reachable from the grid
    assert all(f'href="/p/{PROJECT}/w/{w}"' in c.get("/").text for w in states)
    missing = c.get(f"/p/{PROJECT}/w/2025-W33")
    assert missing.status_code == 404 and "No report for this week yet" in missing.text
    assert f"chronicle backfill --project {PROJECT} --from 2025-W33 --to 2025-W33" in missing.text
    assert 'id="project-XH201"' in c.get("/?state=signed").text
    assert 'id="project-XH201"' not in c.get("/?state=accepted").text
    # The legend, the filter and a square's tooltip say what a state means to a reviewer, not its internal key.
    grid = c.get("/?state=flagged").text
    legend = re.search(r'<ul class="legend">(.*?)</ul>', grid, re.S).group(1)
    assert "needs review" in legend and "written earlier, still current" in legend
    assert not re.search(r">\s*(?:cached-current|flagged|missing)\s*<", grid)
    assert "shown with a week marked “needs review”" in grid and 'title="2025-W29: needs review, ' in grid
    # The chronicle read as a book says which weeks' texts are signed, and by whom; W28's edit is not signed.
    book = c.get(f"/p/{PROJECT}").text
    w30, w28 = (book[book.index(f'id="w-{w}"'):].split("</article>", 1)[0] for w in ("2025-W30", "2025-W28"))
    assert '<span class="badge signed">reviewed by Dr. Ana Li</span>' in w30 and "badge signed" not in w28


def test_a_weeks_citations_are_its_cited_entries_only(people: Settings) -> None:
    from chronicle.services.desk_views import week_page
    from chronicle.storage.db import connect

    page = week_page(people, PROJECT, IsoWeek.parse("2025-W30"))
    cited = {c.entry_id for s in page.sentences for c in s.citations if c.entry_id}
    assert cited and {e.entry_id for e in page.entries} == cited
    with connect(people, read_only=True) as conn:
        week_ids = {r[0] for r in conn.execute("SELECT entry_id FROM raw_logs WHERE project_id = ? AND "
                                               "week_number = 202530", [PROJECT]).fetchall()}
    html = login(client(people), "rita", PASSWORD).get(f"/p/{PROJECT}/w/2025-W30").text
    for entry in cited:
        assert f'href="#entry-{entry}"' in html and f'id="entry-{entry}"' in html
    assert not [e for e in week_ids - cited if e in html]  # the week's other entries are not on the page


def test_text_is_escaped_and_remote_content_never_loads(people: Settings) -> None:
    c = login(client(people), "ana", PASSWORD)
    evil = '本周按计划推进。<script>alert(1)</script><img src="http://example.invalid/x.png"> [x](http://e.invalid)'
    _edit(people, "2025-W31", text=evil)
    for url in (f"/p/{PROJECT}/w/2025-W31", f"/p/{PROJECT}", f"/p/{PROJECT}/w/2025-W31/history"):
        html = c.get(url).text
        assert "<script>alert" not in html and "<img src=\"http" not in html, url
        assert "&lt;script&gt;" in html or "&lt;img" in html, url


def test_stats_questions_and_negation(people: Settings) -> None:
    from chronicle.services.history import ask_chronicle

    c = login(client(people), "rita", PASSWORD)
    answer = c.get(f"/p/{PROJECT}", params={"q": "哪几周发生了 SAE？"}).text
    found = re.findall(r'<li><a href="/p/XH201/w/([0-9W-]+)">', answer)
    assert "counted in the stats" in answer and found == ["2025-W30"]  # the written week with an SAE
    offline = ask_chronicle(people, PROJECT, "哪几周发生了 SAE？")
    assert offline.engine == "offline-stats" and [w["week"] for w in offline.weeks] == [202530]
    text = c.get(f"/p/{PROJECT}", params={"q": "SAE 住院"}).text
    hits = re.findall(r'<li><a href="/p/XH201/w/([0-9W-]+)">', text)
    assert hits and hits[0] == "2025-W30"
    for week in hits:
        body = c.get(f"/p/{PROJECT}/w/{week}").text
        assert "【SAE】" in body or "SAE 1" in body or "住院" in body, week


def test_the_charts_draw_each_weeks_counts_from_the_stored_stats(people: Settings) -> None:
    from chronicle.services.desk_views import chronicle

    weeks = chronicle(people, PROJECT)
    html = login(client(people), "rita", PASSWORD).get(f"/p/{PROJECT}").text
    figures = re.findall(r"<figcaption>([^<]+) \(max (\d+)\)</figcaption>(.*?)</figure>", html, re.S)
    drawn = {title: (int(peak), body) for title, peak, body in figures}
    assert "log entries per week" in drawn and "enrolled (cumulative)" in drawn
    for title, key in (("log entries per week", "entries"), ("enrolled (cumulative)", "enrolled_total"),
                       ("SAE per week", "sae")):
        counts = {w.week: int(w.stats.get(key) or 0) for w in weeks}
        if title not in drawn:  # a series of events is left out only when no week counts one
            assert key == "sae" and not any(counts.values())
            continue
        peak, body = drawn[title]
        assert peak == max(counts.values())
        bars = re.findall(r'<rect x="[0-9.]+" y="([0-9.]+)" width="[0-9.]+" height="([0-9.]+)">'
                          r"<title>([0-9W-]+): (\d+)</title></rect>", body)
        assert {week: int(n) for _, _, week, n in bars} == {w: n for w, n in counts.items() if n}
        for y, h, _, n in bars:  # the bar's height is its count against the peak, standing on the baseline
            assert float(h) == pytest.approx(90 * int(n) / peak, abs=0.01)
            assert float(y) + float(h) == pytest.approx(90, abs=0.02)


def test_history_diffs_any_two_versions_and_the_queue(people: Settings) -> None:
    _edit(people, "2025-W29", ("本周记录", "本周一共记录"))
    _edit(people, "2025-W29", text="本周入组 5 人，无其他事件。")
    c = login(client(people), "ana", PASSWORD)
    h = c.get(f"/p/{PROJECT}/w/2025-W29/history", params={"a": 1, "b": 3}).text
    assert "--- version 1" in h and "+++ version 3" in h and "本周入组 5 人" in h
    assert h.count('class="v-') == 3 and "ana" in h and "test" in h
    queue = c.get("/queue").text
    assert "2025-W29" in queue and "入组 5 人" in queue and f"/p/{PROJECT}/w/2025-W29/sign" in queue
    assert f"/p/{PROJECT}/w/2025-W29/sign" not in login(client(people), "rita", PASSWORD).get("/queue").text
    token = csrf(c, f"/p/{PROJECT}/w/2025-W29/correct")
    preview = c.post(f"/p/{PROJECT}/w/2025-W29/correct", data={
        "csrf": token, "text": "本周入组 7 人。", "reason": "r", "base_version": "3", "action": "preview"})
    assert preview.status_code == 200 and "enrolled" in preview.text and 'id="preview-diff"' in preview.text
    empty_reason = c.post(f"/p/{PROJECT}/w/2025-W29/correct", data={
        "csrf": token, "text": "本周按计划推进。", "reason": " ", "base_version": "3", "action": "save"})
    assert empty_reason.status_code == 422 and "reason is required" in empty_reason.text


def test_history_shows_the_signature_that_cleared_a_versions_flag(people: Settings) -> None:
    """A flagged correction, then signed: its history row says who signed it, not "flagged" alone, so a
    clinician reading the history does not take a signed-off version for one still awaiting review."""
    from chronicle.services.reports import sign_report

    version = _edit(people, "2025-W29", text="本周入组 5 人，无其他事件。")  # a count the guard questions
    c = login(client(people), "ana", PASSWORD)
    row = re.search(rf'<tr class="v-{version}">.*?</tr>', c.get(f"/p/{PROJECT}/w/2025-W29/history").text).group(0)
    assert "flagged" in row
    sign_report(people, PROJECT, IsoWeek.parse("2025-W29"), version=version, account="ana", password=PASSWORD,
                meaning="approved", remote="test")
    row = re.search(rf'<tr class="v-{version}">.*?</tr>', c.get(f"/p/{PROJECT}/w/2025-W29/history").text).group(0)
    assert "approved by Dr. Ana Li" in row and "UTC" in row and "flagged" not in row


def test_a_week_the_last_run_failed_is_failed_on_the_grid_until_a_report_lands(
        people: Settings, online: FakeLLMServer) -> None:  # noqa: F811
    from chronicle.flows.backfill_weeks import backfill_weeks

    online.set_faults(rate=1.0, kinds=("500",))  # the endpoint is down for this run
    backfill_weeks(project_id=PROJECT, start_week="2025-W33", end_week="2025-W33", return_state=True)
    c = login(client(people), "rita", PASSWORD)
    assert _cell_states(c.get("/").text)["2025-W33"] == "failed"
    online.set_faults(rate=0.0, kinds=("500",))
    backfill_weeks(project_id=PROJECT, start_week="2025-W33", end_week="2025-W33")
    assert _cell_states(c.get("/").text)["2025-W33"] in ("generated", "flagged")  # a report landed


def test_each_read_page_opens_the_database_once(people: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """The account and the page's rows are read in one window (an open of the file is most of a small page's
    reads), closed before the page renders; a page of another project is refused inside that same window."""
    import chronicle.storage.files as files

    opens: list[bool] = []
    real_open = files._open

    def counting_open(path, read_only, deadline):  # type: ignore[no-untyped-def]
        opens.append(read_only)
        return real_open(path, read_only, deadline)

    c = login(client(people), "rita", PASSWORD)
    monkeypatch.setattr(files, "_open", counting_open)
    for url, status in (("/", 200), (f"/p/{PROJECT}", 200), (f"/p/{PROJECT}/w/2025-W30", 200),
                        (f"/p/{PROJECT}/w/2025-W33", 404), (f"/p/{PROJECT}/w/2025-W30/history", 200),
                        ("/queue", 200), ("/p/XH305", 404)):
        opens.clear()
        page = c.get(url)
        assert page.status_code == status, (url, page.text[:300])
        assert opens == [True], (url, opens)


def test_what_a_clinician_reads_uses_readable_names_not_internal_keys(people: Settings) -> None:
    """The week page's stats, the cited entries' types, a stats answer and the guard's count reasons name things in
    the report's language ("累计入组", "访视"), never by the pipeline's keys ("enrolled_total", "by_actor", "visit")."""
    c = login(client(people), "rita", PASSWORD)
    page = c.get(f"/p/{PROJECT}/w/2025-W30").text
    stats = page.split('id="stats"', 1)[1].split("</table>", 1)[0]
    for key in ("enrolled_total", "by_actor", "by_type", "deviations", "decisions"):
        assert f"<th>{key}</th>" not in stats, key
    assert "<th>累计入组</th>" in stats and "<th>按类型</th>" in stats and "访视 " in stats and "visit " not in stats
    types = re.findall(r'<span class="type">([^<]+)</span>', page)
    assert types and not {"enrollment", "sae", "deviation", "decision"} & set(types), types
    assert "SAE" in types and "入组" in types
    assert "另有 visit" not in page and "monitoring" not in page
    answer = c.get(f"/p/{PROJECT}", params={"q": "哪几周发生了 SAE？"}).text
    assert "(SAE 1)" in answer and "sae = " not in answer
    _edit(people, "2025-W29", text="本周入组 5 人，无其他事件。")
    flagged = c.get(f"/p/{PROJECT}/w/2025-W29").text
    assert "but the log counts enrolled this week = " in flagged and "but enrolled = " not in flagged


def test_an_empty_week_and_a_generated_version_say_what_they_are(people: Settings) -> None:
    """A week without entries says so, names no engine, and offers a note rather than a correction (a reviewer may
    still annotate and sign it); the history says why the engine wrote a version, not "no report yet"."""
    from chronicle.services.desk_views import grid_page
    from chronicle.services.weekly import plan_week, run_week

    # The sample trial's week without entries (a site holiday), written like every week
    project, week = next((g.project_id, c.week) for g in grid_page(people, lambda p: True).grids
                         for _, cells in g.years for c in cells if c.entries == 0)
    run_week(people, plan_week(people, project, IsoWeek.parse(week)), "test-run")
    reviewer = login(client(people), "ana" if project == PROJECT else "otto", PASSWORD)
    empty = reviewer.get(f"/p/{project}/w/{week}").text
    assert 'id="no-entries"' in empty and "engine none" not in empty
    assert "written by: fixed text, no entries" in empty
    assert ">Add a note</a>" in empty and ">Correct</a>" not in empty and "Sign (nothing was logged)" in empty
    assert f"Add a note to {project} {week}" in reviewer.get(f"/p/{project}/w/{week}/correct").text
    history = reviewer.get(f"/p/{project}/w/{week}/history").text
    assert "no report yet" not in history and "no entries this week" in history and "engine:none" not in history
    c = login(client(people), "ana", PASSWORD)
    written = c.get(f"/p/{PROJECT}/w/2025-W30").text
    assert ">Correct</a>" in written and 'id="no-entries"' not in written
    assert "written by: offline engine (no LLM)" in written
    history = c.get(f"/p/{PROJECT}/w/2025-W30/history").text
    assert "no report yet" not in history and "first text of the week" in history
    assert "engine:offline-extractive" not in history and "offline engine (no LLM)" in history


def test_grid_columns_are_iso_weeks_and_charts_name_their_weeks(people: Settings) -> None:
    """Column n of every year's line is ISO week n (blank squares before a year's first week), under a W01..W50
    scale; each trend chart names weeks on its x axis, the first week always."""
    c = login(client(people), "rita", PASSWORD)
    html = c.get("/").text
    section = html.split(f'id="project-{PROJECT}"', 1)[1].split("</section>", 1)[0]
    assert re.search(r'<span class="cell tick">W01</span>(<span class="cell tick"></span>){8}'
                     r'<span class="cell tick">W10</span>', section)
    for line in re.findall(r'<span class="yl">(\d{4})</span>\s*<span class="cells">(.*?)</span>\s*</div>', section,
                           re.S):
        squares = re.findall(r'<(?:a class="cell [^"]*" [^>]*data-week="(\d{4})-W(\d\d)"|span class="cell pad")',
                             line[1])
        first = next(i for i, (_, week) in enumerate(squares) if week)
        assert first == int(squares[first][1]) - 1, (line[0], first)  # W10 is the tenth column
        for column, (year, week) in enumerate(squares[first:], start=first + 1):
            assert (year, int(week)) == (line[0], column)
    from chronicle.services.desk_views import chronicle

    weeks = [w.week for w in chronicle(people, PROJECT)]
    page = c.get(f"/p/{PROJECT}").text
    for figure in re.findall(r"<figure>(.*?)</figure>", page, re.S):
        names = re.findall(r"<text [^>]*>([0-9W-]+)</text>", figure)
        assert names and names[0] == weeks[0] and set(names) <= set(weeks)
        assert len(names) >= min(len(weeks), 4)


def test_refused_lines_naming_a_safety_event_are_shown_to_whoever_holds_every_project(people: Settings) -> None:
    """A line the ingest refused is in no report; when it names an SAE, a clinician with a role on every project
    sees where it is on the projects page and the review queue. A refused line names no project the desk could
    trust, so an account of some projects does not see it."""
    from chronicle.ingest.model import Reject
    from chronicle.services.accounts import add_user
    from chronicle.storage.db import write
    from chronicle.storage.raw_logs import insert_rejects

    add_user(people, "root", "Rooted Reader", PASSWORD, {"*": "reader"})
    before = login(client(people), "root", PASSWORD).get("/").text
    refused = [Reject("/logs/XH201/site-3.jsonl", 17, 2048, "invalid_json", "unterminated string",
                      '{"project_id": "XH201", "type": "sae", "content": "受试者 03-011 因肺炎住院'),
               Reject("/logs/XH201/site-3.jsonl", 18, 2100, "invalid_json", "unterminated string",
                      '{"project_id": "XH201", "content": "checksum 3f2ae19c')]
    write(people, lambda conn: insert_rejects(conn, refused))

    root = login(client(people), "root", PASSWORD)
    home, queue = root.get("/").text, root.get("/queue").text
    assert 'id="safety-banner"' not in before and 'id="safety-banner"' in home and "1 refused log line(s)" in home
    assert 'id="safety-rejects"' in queue and "site-3.jsonl, line 17" in queue and "line 18" not in queue
    ana = login(client(people), "ana", PASSWORD)
    assert "safety-banner" not in ana.get("/").text and "safety-rejects" not in ana.get("/queue").text
