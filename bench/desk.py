"""bench/desk: the review desk's server time per page at 1,000 projects x 156 weeks, against the DuckDB queries
that produce the same rows in the same run.

One embedded home gets `--projects` projects of 156 ISO weeks (4 log entries and one report per week, a few
flagged, stale or edited), one week with 20 versions, and one week of 2,000 entries whose report cites 30 of
them. Every page is requested `--repeat` times through the real application (Starlette's TestClient: routing,
session cookie, account lookup, the reads, Jinja2 rendering), signed in as an account that sees every project;
the baseline is the storage query functions those pages read through, in one read window per page as the page
reads them, timed in the same loop. Reported: p95 of each page and of its queries; goal: each page's p95 <= 3x
its queries' p95, and the grid's p95 <= 150 ms at load <= 2.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._util import LoadSampler
from bench._weekly_util import bench_env, write_result

PASSWORD = "bench-password-1"
BIG_WEEK = "2024-W10"


def _fill(settings: Any, projects: int) -> None:
    """Bulk rows straight through SQL (a backfill of 156,000 weeks would take the bench hours, not the point)."""
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        conn.execute(f"""
            INSERT INTO raw_logs (entry_id, project_id, source, source_file, line_no, ts, local_date, iso_year,
                                  iso_week, week_number, actor, type, content)
            SELECT md5(p || '-' || w || '-' || k), printf('P%04d', p), 'jsonl', 'bench.jsonl', w * 4 + k,
                   CAST(d AS TIMESTAMP) + to_hours(8 + k), d, isoyear(d), week(d), isoyear(d) * 100 + week(d),
                   'CRC-王敏', ['message', 'enrollment', 'ae', 'sae'][1 + k],
                   'XH201-01-' || w || ' 完成访视，数据已录入 EDC；入组 1 例'
            FROM (SELECT p, w, k, CAST(DATE '2023-01-02' + CAST(7 * w AS INTEGER) AS DATE) AS d
                  FROM range({projects}) a(p), range(156) b(w), range(4) c(k))""")
        conn.execute("""
            INSERT INTO weekly_reports (id, project_id, week_number, iso_year, iso_week, start_date, end_date,
                                        summary, stats, citations, model, prompt_version, input_hash, entry_count,
                                        status, stale, needs_review, review_reasons, version, flow_run_id)
            SELECT uuid(), project_id, week_number, any_value(iso_year), any_value(iso_week),
                   min(local_date), CAST(min(local_date) + INTERVAL 6 DAY AS DATE),
                   '## 本周要点' || chr(10) || chr(10) || '- 入组 1 人 [E2]。' || chr(10) || '- SAE 1 例 [E4]。',
                   '{"entries": 4, "enrolled": 1, "ae": 1, "sae": 1, "enrolled_total": 1}',
                   json_object('E2', min(entry_id), 'E4', max(entry_id)), 'offline-extractive', 'v1', 'h', 4,
                   CASE WHEN week_number % 53 = 7 THEN 'edited' ELSE 'generated' END,
                   week_number % 41 = 3, week_number % 37 = 0,
                   CASE WHEN week_number % 37 = 0
                        THEN '[{"kind": "uncited", "sentence": "入组 1 人。", "detail": "cites no entry"}]' END,
                   1, 'bench-run'
            FROM raw_logs GROUP BY project_id, week_number""")


def _special_weeks(settings: Any) -> None:
    """P0000 2023-W02 with 20 versions; BIG 2024-W10 with 2,000 entries, its report citing 30."""
    from chronicle.storage.db import connect

    with connect(settings) as conn:
        conn.execute("""
            INSERT INTO weekly_report_versions (report_id, project_id, week_number, version, status, summary,
                                                model, prompt_version, input_hash, author, reason)
            SELECT 'r', 'P0000', 202302, v, 'edited',
                   '## 本周要点' || chr(10) || '- 第 ' || v || ' 版：入组 ' || v || ' 人 [E2]。' || chr(10) ||
                   repeat('- 访视按计划进行，数据已录入 EDC [E4]。' || chr(10), 30),
                   'human', 'v1', 'h', 'reviewer-' || (v % 3), '更正第 ' || v || ' 次'
            FROM range(1, 21) t(v)""")
        conn.execute("""
            INSERT INTO raw_logs (entry_id, project_id, source, source_file, line_no, ts, local_date, iso_year,
                                  iso_week, week_number, actor, type, content)
            SELECT md5('big-' || k), 'BIG', 'jsonl', 'big.jsonl', k, TIMESTAMP '2024-03-04 08:00' + to_minutes(k),
                   DATE '2024-03-04', 2024, 10, 202410, 'CRC-王敏', 'message', '第 ' || k || ' 条消息：访视已完成'
            FROM range(2000) t(k)""")
        cites = ", ".join(f"'E{i + 1}', md5('big-{i * 60}')" for i in range(30))
        summary = "\\n".join(f"- 第 {i + 1} 件事已处理 [E{i + 1}]。" for i in range(30))
        conn.execute(f"""
            INSERT INTO weekly_reports (id, project_id, week_number, iso_year, iso_week, start_date, end_date,
                                        summary, stats, citations, model, prompt_version, input_hash, entry_count,
                                        status, version)
            VALUES (uuid(), 'BIG', 202410, 2024, 10, DATE '2024-03-04', DATE '2024-03-10', E'{summary}',
                    '{{"entries": 2000}}', json_object({cites}), 'offline-extractive', 'v1', 'h', 2000,
                    'generated', 1)""")


def _timed(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return 1000 * (time.perf_counter() - t0)


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1] if len(values) > 1 else values[0]


def _pages(settings: Any, visible: list[str]) -> dict[str, tuple[str, Callable[[], Any]]]:
    """Page name -> (URL, the storage reads producing its rows: the account and the page's queries in one read
    window, as the page does)."""
    from chronicle.storage import desk, desk_views, reports
    from chronicle.storage.db import read

    def grid(conn: Any) -> None:
        desk.get_account(conn, "bench")
        desk_views.all_projects(conn)
        desk_views.grid_rows(conn, visible[:40])
        desk_views.failed_weeks(conn)
        desk_views.latest_weekly_run(conn)

    def chronicle(conn: Any) -> None:
        desk.get_account(conn, "bench")
        desk_views.chronicle(conn, "P0001")

    def week(conn: Any) -> None:
        desk.get_account(conn, "bench")
        row = reports.get_report(conn, "BIG", 202410)
        desk_views.entries_by_id(conn, "BIG", 202410, list(row["citations"].values()))
        desk.signature_rows(conn, "BIG", 202410)

    def history(conn: Any) -> None:
        desk.get_account(conn, "bench")
        reports.history(conn, "P0000", 202302)

    return {"grid": ("/", lambda: read(settings, grid)),
            "chronicle": ("/p/P0001", lambda: read(settings, chronicle)),
            "week": (f"/p/BIG/w/{BIG_WEEK}", lambda: read(settings, week)),
            "history": ("/p/P0000/w/2023-W02/history", lambda: read(settings, history))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--projects", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-desk-"))
    bench_env(root / "home")

    from starlette.testclient import TestClient

    from chronicle.desk.app import create_app
    from chronicle.services.accounts import add_user
    from chronicle.settings import Settings
    from chronicle.storage import desk_views
    from chronicle.storage.db import read
    from tests.desk.web import login

    settings = Settings(home=root / "home")
    t0 = time.perf_counter()
    _fill(settings, args.projects)
    _special_weeks(settings)
    print(f"filled {args.projects} projects x 156 weeks in {time.perf_counter() - t0:.1f}s")
    add_user(settings, "bench", "Bench Reader", PASSWORD, {"*": "reader"})
    # One client for the run (its event loop thread started once, as a server's is).
    with TestClient(create_app(settings), base_url="http://127.0.0.1", follow_redirects=False) as client:
        login(client, "bench", PASSWORD)
        pages = _pages(settings, read(settings, desk_views.all_projects))
        ours, base, record = _measure(client, pages, args.repeat)
    _report(ours, base, record, args.projects)


def _measure(client: Any, pages: dict[str, tuple[str, Callable[[], Any]]],
             repeat: int) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, Any]]:
    ours: dict[str, list[float]] = {name: [] for name in pages}
    base: dict[str, list[float]] = {name: [] for name in pages}
    for url, _ in pages.values():  # warm: templates compiled, file cached
        assert client.get(url).status_code == 200, url
    with LoadSampler() as load:
        for _ in range(repeat):
            for name, (url, queries) in pages.items():  # alternated, so machine load hits both alike
                ours[name].append(_timed(lambda url=url: client.get(url)))
                base[name].append(_timed(queries))
    return ours, base, load.record()


def _report(ours: dict[str, list[float]], base: dict[str, list[float]], record: dict[str, Any],
            projects: int) -> None:
    pages = list(ours)
    figures = {name: {"page_p95_ms": round(p95(ours[name]), 2), "queries_p95_ms": round(p95(base[name]), 2),
                      "page_median_ms": round(statistics.median(ours[name]), 2),
                      "ratio": round(p95(ours[name]) / p95(base[name]), 3)} for name in pages}
    for name, f in figures.items():
        print(f"{name:10s} page p95 {f['page_p95_ms']:8.1f} ms   queries p95 {f['queries_p95_ms']:8.1f} ms   "
              f"ratio {f['ratio']:.2f}")
    worst = max(figures.values(), key=lambda f: f["ratio"])
    grid = figures["grid"]["page_p95_ms"]
    met = all(f["ratio"] <= 3 for f in figures.values()) and (grid <= 150 or record["load_avg_1m"] > 2)
    write_result("desk", measure="p95 server time per page (grid, 156-week chronicle, 2,000-entry week, 20-version "
                                 "history) vs the DuckDB queries producing the same rows",
                 ours=worst["page_p95_ms"], baseline=worst["queries_p95_ms"], unit="ms",
                 goal="every page p95 <= 3x its queries; grid p95 <= 150 ms at load <= 2", met=met,
                 baseline_name="the storage queries of the same page", extra={"pages": figures, "load": record,
                                                                             "projects": projects})


if __name__ == "__main__":
    main()
