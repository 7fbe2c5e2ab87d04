"""`pipeline_runs`: one row per flow run, next to Prefect's own history, for SQL users."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import duckdb


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def run_started(conn: duckdb.DuckDBPyConnection, flow_run_id: str, flow_name: str, parameters: dict[str, Any]) -> None:
    """(Re)start a run's row; a retried flow run starts over. MERGE: one atomic statement on both backends."""
    conn.execute(
        """MERGE INTO pipeline_runs t
           USING (SELECT ? AS flow_run_id, ? AS flow_name, ? AS parameters, ? AS started_at) s
           ON t.flow_run_id = s.flow_run_id
           WHEN MATCHED THEN UPDATE SET flow_name = s.flow_name, parameters = s.parameters,
               started_at = s.started_at, ended_at = NULL, state = 'RUNNING', counts = NULL, message = NULL
           WHEN NOT MATCHED THEN INSERT (flow_run_id, flow_name, parameters, started_at, state)
               VALUES (s.flow_run_id, s.flow_name, s.parameters, s.started_at, 'RUNNING')""",
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
