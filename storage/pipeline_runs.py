"""`pipeline_runs`: one row per flow run, next to Prefect's own history, for SQL users."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import duckdb

from chronicle.run_rows import RunRow
from chronicle.weeks import utc_now


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
        [flow_run_id, flow_name, json.dumps(parameters, default=str, ensure_ascii=False), utc_now()],
    )


def run_finished(conn: duckdb.DuckDBPyConnection, flow_run_id: str, state: str, counts: dict[str, Any],
                 message: str | None = None) -> None:
    conn.execute("UPDATE pipeline_runs SET ended_at = ?, state = ?, counts = ?, message = ? WHERE flow_run_id = ?",
                 [utc_now(), state, json.dumps(counts, default=str, ensure_ascii=False), message, flow_run_id])


def set_process(conn: duckdb.DuckDBPyConnection, flow_run_id: str, run_name: str | None, host: str, pid: int,
                pid_started: float | None) -> None:
    """Who runs the run (see migration 0008): lets a later reader tell a killed run from a live one."""
    conn.execute("UPDATE pipeline_runs SET run_name = ?, host = ?, pid = ?, pid_started = ? WHERE flow_run_id = ?",
                 [run_name, host, pid, pid_started, flow_run_id])


def record_unfinished(conn: duckdb.DuckDBPyConnection, flow_run_id: str, flow_name: str, run_name: str | None,
                      parameters: dict[str, Any], state: str, message: str | None, *, overrule: bool = False) -> bool:
    """A run Prefect saw fail, crash or be cancelled: end its RUNNING row, or add the row it never wrote (refused
    before its body ran, e.g. by Prefect's own parameter validation). A row already final is left as it is, unless
    `overrule` (Prefect ends the run as `state` whatever the run itself wrote: a cancel that landed as it wrote its
    final row); its counts are kept."""
    found = conn.execute("SELECT state FROM pipeline_runs WHERE flow_run_id = ?", [flow_run_id]).fetchall()
    if found and (found[0][0] == state or (found[0][0] != "RUNNING" and not overrule)):
        return False
    now = utc_now()
    if not found:
        conn.execute("INSERT INTO pipeline_runs (flow_run_id, flow_name, parameters, started_at, state) "
                     "VALUES (?, ?, ?, ?, 'RUNNING')",
                     [flow_run_id, flow_name, json.dumps(parameters, default=str, ensure_ascii=False), now])
    conn.execute("UPDATE pipeline_runs SET ended_at = ?, state = ?, message = ?, run_name = coalesce(run_name, ?) "
                 "WHERE flow_run_id = ?", [now, state, (message or "")[:2000], run_name, flow_run_id])
    return True


def running_on(conn: duckdb.DuckDBPyConnection, host: str) -> list[RunRow]:
    """RUNNING rows written by processes of `host`."""
    return _rows(conn.execute(f"SELECT {_COLUMNS} FROM pipeline_runs WHERE state = 'RUNNING' AND host = ?", [host]))


def ended_on(conn: duckdb.DuckDBPyConnection, host: str, since: datetime) -> list[RunRow]:
    """Rows of `host` that ended (any final state) at or after `since` (naive UTC, as stored), newest first."""
    return _rows(conn.execute(f"SELECT {_COLUMNS} FROM pipeline_runs WHERE state <> 'RUNNING' AND host = ? "
                              "AND ended_at >= ? ORDER BY ended_at DESC LIMIT 100", [host, since]))


def mark_crashed(conn: duckdb.DuckDBPyConnection, rows: list[RunRow]) -> None:
    """End rows whose process is gone (`chronicle.run_rows.crashed`); only while they are still RUNNING."""
    for row in rows:
        conn.execute("UPDATE pipeline_runs SET state = 'CRASHED', ended_at = ?, message = ? "
                     "WHERE flow_run_id = ? AND state = 'RUNNING'", [row.ended_at, row.message, row.flow_run_id])


_COLUMNS = ("flow_run_id, flow_name, state, started_at, ended_at, run_name, parameters, counts, message, host, pid, "
            "pid_started")


def _json(text: Any) -> dict[str, Any]:
    try:
        value = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {"raw": text}
    return value if isinstance(value, dict) else {}


def _rows(cur: duckdb.DuckDBPyConnection) -> list[RunRow]:
    return [RunRow(flow_run_id=r[0], flow_name=r[1], state=r[2], started_at=r[3], ended_at=r[4], run_name=r[5],
                   parameters=_json(r[6]), counts=_json(r[7]), message=r[8], host=r[9], pid=r[10], pid_started=r[11])
            for r in cur.fetchall()]


def runs_by_id(conn: duckdb.DuckDBPyConnection, flow_run_ids: list[str]) -> list[RunRow]:
    """The rows of these runs (those that have one)."""
    if not flow_run_ids:
        return []
    return _rows(conn.execute(f"SELECT {_COLUMNS} FROM pipeline_runs WHERE list_contains(?, flow_run_id)",
                              [sorted(set(flow_run_ids))]))


def flow_names(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """Every flow name with at least one recorded run, sorted."""
    return [r[0] for r in conn.execute("SELECT DISTINCT flow_name FROM pipeline_runs ORDER BY 1").fetchall()]


def recent_runs(conn: duckdb.DuckDBPyConnection, limit: int = 20, flow_name: str | None = None) -> list[RunRow]:
    """Newest runs first; `flow_name` matches part of the flow's name."""
    return _rows(conn.execute(
        f"SELECT {_COLUMNS} FROM pipeline_runs WHERE $flow IS NULL OR flow_name ILIKE '%' || $flow || '%' "
        "ORDER BY started_at DESC LIMIT $limit",
        {"flow": flow_name, "limit": limit},
    ))
