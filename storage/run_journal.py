"""Runs that could not be recorded because the DuckDB file was held past the lock timeout.

The run's row goes to a small JSON-lines file beside the database instead, and into `pipeline_runs` the next
time anything opens the database for writing (the next flow start, or `chronicle runs`): a failed run is
never missing from the history because the database was the thing that failed.
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from chronicle.weeks import utc_now

JOURNAL = "pending_runs.jsonl"


def journal_path(db_path: Path) -> Path:
    return db_path.with_name(JOURNAL)


def journal_run(db_path: Path, flow_run_id: str, flow_name: str, parameters: dict[str, Any], state: str,
                message: str | None, started_at: datetime | None = None) -> None:
    """Append one run's final row (written whole with one `write`, so a reader never sees half a line)."""
    now = utc_now()
    row = {"flow_run_id": flow_run_id, "flow_name": flow_name, "parameters": parameters,
           "started_at": (started_at or now).isoformat(), "ended_at": now.isoformat(), "state": state,
           "message": (message or "")[:2000]}
    path = journal_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, (json.dumps(row, default=str, ensure_ascii=False) + "\n").encode())
    finally:
        os.close(fd)


def pending(db_path: Path) -> list[dict[str, Any]]:
    path = journal_path(db_path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a crash mid-write: the run's row is in the next line or lost with it
    return out


def flush(conn: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]) -> None:
    """Record journaled runs in `pipeline_runs` (idempotent: a run recorded already gets its final state)."""
    for row in rows:
        found = conn.execute("SELECT state FROM pipeline_runs WHERE flow_run_id = ?", [row["flow_run_id"]]).fetchall()
        if found:
            if found[0][0] in ("RUNNING", "CRASHED"):
                conn.execute("UPDATE pipeline_runs SET state = ?, ended_at = ?, message = ? WHERE flow_run_id = ?",
                             [row["state"], row["ended_at"], row["message"], row["flow_run_id"]])
            continue
        conn.execute("INSERT INTO pipeline_runs (flow_run_id, flow_name, parameters, started_at, ended_at, state, "
                     "message) VALUES (?, ?, ?, ?, ?, ?, ?)",
                     [row["flow_run_id"], row["flow_name"], json.dumps(row["parameters"], ensure_ascii=False),
                      row["started_at"], row["ended_at"], row["state"], row["message"]])


def clear(db_path: Path, rows: list[dict[str, Any]]) -> None:
    """Drop the journal once its rows are committed (rows journaled meanwhile are kept)."""
    done = {r["flow_run_id"] + r["state"] for r in rows}
    left = [r for r in pending(db_path) if r["flow_run_id"] + r["state"] not in done]
    path = journal_path(db_path)
    if not left:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in left), encoding="utf-8")
    tmp.replace(path)
