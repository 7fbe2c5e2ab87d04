"""What a week is made of, read from `raw_logs`: its entries in short-id order, the running enrolment count
before it, and the span of weeks a project has. The weekly engine's only inputs (read -> close -> LLM)."""

from __future__ import annotations

import duckdb

from chronicle.storage.db import dict_rows


def week_rows(conn: duckdb.DuckDBPyConnection, project_id: str, first: int, last: int) -> dict[int, list[dict]]:
    """Entries of weeks first..last, per week, ordered by (ts, entry_id) — the short-id order."""
    cur = conn.execute(
        """SELECT week_number, entry_id, ts, actor, type, content, source_file, line_no FROM raw_logs
           WHERE project_id = ? AND week_number BETWEEN ? AND ? ORDER BY week_number, ts, entry_id""",
        [project_id, first, last],
    )
    out: dict[int, list[dict]] = {}
    for row in dict_rows(cur):
        out.setdefault(row.pop("week_number"), []).append(row)
    return out


def enrolled_before(conn: duckdb.DuckDBPyConnection, project_id: str, week_number: int) -> int:
    return conn.execute(
        "SELECT count(*) FROM raw_logs WHERE project_id = ? AND type = 'enrollment' AND week_number < ?",
        [project_id, week_number],
    ).fetchall()[0][0]


def week_span(conn: duckdb.DuckDBPyConnection, project_id: str) -> tuple[int, int] | None:
    """(first, last) week with entries, or None for an unknown project."""
    first, last = conn.execute(
        "SELECT min(week_number), max(week_number) FROM raw_logs WHERE project_id = ?", [project_id]
    ).fetchall()[0]
    return None if first is None else (first, last)
