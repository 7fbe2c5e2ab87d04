"""Read-side SQL of the review desk: the week grid, a project's chronicle, one week with the entries it cites,
a week's versions, the review queue. Every function reads in the caller's short window; none writes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import duckdb

from chronicle.storage.db import from_json


@dataclass(frozen=True)
class GridRow:
    """One ISO week of one project: its entry count and, when there is one, its stored report's state."""

    project_id: str
    week_number: int
    start_date: date
    entries: int
    status: str | None
    model: str | None
    stale: bool
    needs_review: bool
    version: int | None
    reviewed_version: int | None
    signed_version: int | None
    flow_run_id: str | None
    updated_at: datetime | None


def all_projects(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Every project with logs or reports, sorted."""
    return [r[0] for r in conn.execute(
        "SELECT project_id FROM raw_logs GROUP BY 1 UNION SELECT project_id FROM weekly_reports ORDER BY 1").fetchall()]


# A semi-join on the page's projects, not list_contains per row: a hash lookup over the scanned rows.
_GRID_SQL = """
WITH counts AS (
    SELECT project_id, week_number, count(*) AS entries, min(local_date) AS first_day, max(local_date) AS last_day
    FROM raw_logs WHERE project_id IN (SELECT unnest($projects)) GROUP BY ALL
),
reps AS (
    SELECT project_id, week_number, start_date, status, model, stale, needs_review, version, reviewed_version,
           flow_run_id, updated_at
    FROM weekly_reports WHERE project_id IN (SELECT unnest($projects))
),
bounds AS (
    SELECT project_id, min(d) AS first_day, max(d) AS last_day FROM (
        SELECT project_id, first_day AS d FROM counts UNION ALL SELECT project_id, last_day FROM counts
        UNION ALL SELECT project_id, start_date FROM reps) GROUP BY 1
),
spine AS (
    SELECT project_id, CAST(unnest(generate_series(date_trunc('week', first_day), date_trunc('week', last_day),
                                                   INTERVAL 7 DAY)) AS DATE) AS start_date
    FROM bounds
),
signed AS (
    SELECT project_id, week_number, max(version) AS version FROM report_signatures
    WHERE project_id IN (SELECT unnest($projects)) GROUP BY ALL
)
SELECT s.project_id, isoyear(s.start_date) * 100 + week(s.start_date) AS wn, s.start_date,
       coalesce(c.entries, 0), r.status, r.model, coalesce(r.stale, false), coalesce(r.needs_review, false),
       r.version, r.reviewed_version, g.version, r.flow_run_id, r.updated_at
FROM spine s
LEFT JOIN counts c ON c.project_id = s.project_id AND c.week_number = isoyear(s.start_date) * 100 + week(s.start_date)
LEFT JOIN reps r ON r.project_id = s.project_id AND r.week_number = isoyear(s.start_date) * 100 + week(s.start_date)
LEFT JOIN signed g ON g.project_id = s.project_id AND g.week_number = isoyear(s.start_date) * 100 + week(s.start_date)
ORDER BY s.project_id, wn
"""


def grid_rows(conn: duckdb.DuckDBPyConnection, project_ids: list[str]) -> list[GridRow]:
    """Every ISO week from a project's first to its last (weeks without entries included), for `project_ids`."""
    if not project_ids:
        return []
    return [GridRow(*r) for r in conn.execute(_GRID_SQL, {"projects": project_ids}).fetchall()]


def failed_weeks(conn: duckdb.DuckDBPyConnection) -> list[tuple[datetime, str, int]]:
    """(run start, project, week) of every week a weekly run reported failed (pipeline_runs counts)."""
    rows = conn.execute(
        """SELECT started_at, counts FROM pipeline_runs
           WHERE counts IS NOT NULL AND json_array_length(json_extract(counts, '$.failed_weeks')) > 0""").fetchall()
    return [(started, str(p), int(w)) for started, counts in rows
            for p, w in (from_json(counts) or {}).get("failed_weeks", [])]


def latest_weekly_run(conn: duckdb.DuckDBPyConnection) -> str | None:
    """The most recent run that wrote weekly reports: its reports are `generated`, older ones `cached-current`."""
    # Version rows are written once (a report row's updated_at also moves when it is marked stale or reviewed).
    rows = conn.execute(
        """SELECT flow_run_id FROM weekly_report_versions WHERE flow_run_id IS NOT NULL AND status = 'generated'
           ORDER BY created_at DESC LIMIT 1""").fetchall()
    return rows[0][0] if rows else None


@dataclass(frozen=True)
class ChronicleRow:
    week_number: int
    summary: str
    status: str
    stale: bool
    needs_review: bool
    stats: dict[str, Any]
    signed: list[str]
    """"<meaning> by <printed name>" of each signature of the text shown (the current version), oldest first."""


def chronicle(conn: duckdb.DuckDBPyConnection, project_id: str) -> list[ChronicleRow]:
    """Every stored week of a project, oldest first (an edit is the text), with the signatures of that text."""
    rows = conn.execute(
        """SELECT r.week_number, r.summary, r.status, r.stale, r.needs_review, r.stats,
                  list(g.meaning || ' by ' || g.printed_name ORDER BY g.signed_at) FILTER (WHERE g.id IS NOT NULL)
           FROM weekly_reports r
           LEFT JOIN report_signatures g
             ON g.project_id = r.project_id AND g.week_number = r.week_number AND g.version = r.version
           WHERE r.project_id = ? GROUP BY ALL ORDER BY r.week_number""", [project_id]).fetchall()
    return [ChronicleRow(w, s, st, bool(stale), bool(nr), from_json(stats) or {}, list(signed or []))
            for w, s, st, stale, nr, stats, signed in rows]


@dataclass(frozen=True)
class EntryRow:
    entry_id: str
    ts: datetime
    actor: str | None
    type: str
    content: str
    source_file: str
    line_no: int | None


def entries_by_id(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int,
                  entry_ids: list[str]) -> list[EntryRow]:
    """The cited entries of one week, by id (never the project's other entries)."""
    if not entry_ids:
        return []
    rows = conn.execute(
        """SELECT entry_id, ts, actor, type, content, source_file, line_no FROM raw_logs
           WHERE project_id = $p AND week_number = $w AND list_contains($ids, entry_id) ORDER BY ts, entry_id""",
        {"p": project_id, "w": week_number, "ids": entry_ids}).fetchall()
    return [EntryRow(*r) for r in rows]


def week_entry_count(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> int:
    return conn.execute("SELECT count(*) FROM raw_logs WHERE project_id = ? AND week_number = ?",
                        [project_id, week_number]).fetchall()[0][0]


@dataclass(frozen=True)
class QueueRow:
    project_id: str
    week_number: int
    status: str
    version: int
    stale: bool
    needs_review: bool
    reasons: list[dict[str, Any]]
    updated_at: datetime


def review_queue(conn: duckdb.DuckDBPyConnection, project_ids: list[str]) -> list[QueueRow]:
    """Flagged and stale weeks of `project_ids`, oldest week first."""
    if not project_ids:
        return []
    rows = conn.execute(
        """SELECT project_id, week_number, status, version, stale, needs_review, review_reasons, updated_at
           FROM weekly_reports WHERE (needs_review OR stale) AND list_contains($projects, project_id)
           ORDER BY week_number, project_id""", {"projects": project_ids}).fetchall()
    return [QueueRow(p, w, s, v, bool(st), bool(nr), from_json(rr) or [], u) for p, w, s, v, st, nr, rr, u in rows]
