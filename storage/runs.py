"""`pipeline_runs`: one row per flow run, next to Prefect's own history, for SQL users."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import duckdb


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def run_started(conn: duckdb.DuckDBPyConnection, flow_run_id: str, flow_name: str, parameters: dict[str, Any]) -> None:
    conn.execute(
        """INSERT OR REPLACE INTO pipeline_runs (flow_run_id, flow_name, parameters, started_at, state)
           VALUES (?, ?, ?, ?, 'RUNNING')""",
        [flow_run_id, flow_name, json.dumps(parameters, default=str, ensure_ascii=False), _now()],
    )


def run_finished(conn: duckdb.DuckDBPyConnection, flow_run_id: str, state: str, counts: dict[str, Any],
                 message: str | None = None) -> None:
    conn.execute(
        "UPDATE pipeline_runs SET ended_at = ?, state = ?, counts = ?, message = ? WHERE flow_run_id = ?",
        [_now(), state, json.dumps(counts, default=str, ensure_ascii=False), message, flow_run_id],
    )


def recent_runs(conn: duckdb.DuckDBPyConnection, limit: int = 20,
                flow_name: str | None = None) -> list[dict[str, Any]]:
    """Newest runs first; `flow_name` matches part of the flow's name."""
    cur = conn.execute(
        "SELECT flow_run_id, flow_name, state, started_at, ended_at, parameters, counts, message "
        "FROM pipeline_runs WHERE $flow IS NULL OR flow_name ILIKE '%' || $flow || '%' "
        "ORDER BY started_at DESC LIMIT $limit",
        {"flow": flow_name, "limit": limit},
    )
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
