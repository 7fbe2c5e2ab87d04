"""Reads of the freshness views (migration 0014) as typed rows; the same SQL on the file and on the lake."""

from __future__ import annotations

from datetime import datetime

import duckdb

from chronicle.ops import ProjectFreshness


def project_freshness(conn: duckdb.DuckDBPyConnection) -> list[ProjectFreshness]:
    rows = conn.execute(
        """SELECT project_id, last_ended_week, last_current_week, missing_weeks, stale_week_list, review_week_list,
                  last_entry_at, last_ingested_at
           FROM pipeline_freshness ORDER BY project_id""").fetchall()
    return [ProjectFreshness(r[0], r[1], r[2], tuple(r[3] or ()), tuple(r[4] or ()), tuple(r[5] or ()), r[6], r[7])
            for r in rows]


def last_runs(conn: duckdb.DuckDBPyConnection) -> dict[str, tuple[datetime | None, str | None, int]]:
    """{flow_name: (last completed at (UTC, naive), last run's state, failures since the last success)}."""
    rows = conn.execute(
        "SELECT flow_name, last_completed_at, last_state, failures_since_success FROM pipeline_run_freshness"
    ).fetchall()
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def first_run_at(conn: duckdb.DuckDBPyConnection) -> datetime | None:
    """When the pipeline's first run of any flow started (UTC, naive); None before any run."""
    return conn.execute("SELECT min(started_at) FROM pipeline_runs").fetchone()[0]
