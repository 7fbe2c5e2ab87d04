"""Runs that could not be recorded because the database refused their row: the DuckDB file held past the lock
timeout, or a full disk.

The run's row goes to a small JSON-lines file beside the database instead, and into `pipeline_runs` the next
time anything opens the database for writing (the next flow start, or `chronicle runs`): a failed run is
never missing from the history because the database was the thing that failed.

A run that fills the disk to its last byte cannot append that line either. So each run sets aside room for its
row when it starts (`reserve`: a small file allocated while the disk had room, `pending_runs.<run>.jsonl`), writes
the row into that room when the journal itself is refused, and gives the room back when its row is stored.
"""

from __future__ import annotations

import errno
import json
import os
from contextlib import suppress
from pathlib import Path
from typing import Any

import duckdb

from chronicle.weeks import utc_now

JOURNAL = "pending_runs.jsonl"
RESERVE_BYTES = 16384
"""Room for one row: its message is cut at 2,000 characters, its parameters are a run's few (redacted) values."""


def journal_path(db_path: Path) -> Path:
    return db_path.with_name(JOURNAL)


def _reserved(db_path: Path, flow_run_id: str) -> Path:
    return db_path.with_name(f"pending_runs.{flow_run_id}.jsonl")


def reserve(db_path: Path, flow_run_id: str) -> None:
    """Set aside room for this run's final row while the disk has some (module docstring); best effort."""
    with suppress(OSError):
        fd = os.open(_reserved(db_path, flow_run_id), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)


def release(db_path: Path, flow_run_ids: list[str]) -> None:
    """Give back the room of runs whose rows are stored, or whose process is gone (reaped as CRASHED)."""
    for run_id in flow_run_ids:
        with suppress(OSError):
            path = _reserved(db_path, run_id)
            if not _read_rows(path):  # a row written into the room waits there for the next writer
                path.unlink(missing_ok=True)


def _write_reserved(db_path: Path, flow_run_id: str, line: bytes) -> None:
    """Write the row into the room set aside for it: its blocks are allocated, so a full disk does not refuse it."""
    fd = os.open(_reserved(db_path, flow_run_id), os.O_WRONLY)
    try:
        os.pwrite(fd, line[:RESERVE_BYTES], 0)
        os.ftruncate(fd, min(len(line), RESERVE_BYTES))  # the room's unused end: NULs, which no reader must see
    finally:
        os.close(fd)


def journal_run(db_path: Path, flow_run_id: str, flow_name: str, parameters: dict[str, Any], state: str,
                message: str | None) -> None:
    """Append one run's final row (written whole with one `write`, so a reader never sees half a line)."""
    now = utc_now()
    row = {"flow_run_id": flow_run_id, "flow_name": flow_name, "parameters": parameters,
           "started_at": now.isoformat(), "ended_at": now.isoformat(), "state": state,
           "message": (message or "")[:2000]}
    line = (json.dumps(row, default=str, ensure_ascii=False) + "\n").encode()
    path = journal_path(db_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if os.write(fd, line) != len(line):
                raise OSError(errno.ENOSPC, "the journal line was cut short")
        finally:
            os.close(fd)
    except OSError:
        if not _reserved(db_path, flow_run_id).exists():
            raise
        _write_reserved(db_path, flow_run_id, line)
        return
    release(db_path, [flow_run_id])


def _read_rows(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return []
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a crash mid-write (the run's row is in the next line or lost), or unused room
    return out


def pending(db_path: Path) -> list[dict[str, Any]]:
    rows = _read_rows(journal_path(db_path))
    for reserved in sorted(db_path.parent.glob("pending_runs.*.jsonl")):
        rows += _read_rows(reserved)
    return rows


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
    for row in rows:
        reserved = _reserved(db_path, row["flow_run_id"])
        if any(r["flow_run_id"] + r["state"] in done for r in _read_rows(reserved)):
            reserved.unlink(missing_ok=True)
    left = [r for r in _read_rows(journal_path(db_path)) if r["flow_run_id"] + r["state"] not in done]
    path = journal_path(db_path)
    if not left:
        path.unlink(missing_ok=True)
        return
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in left), encoding="utf-8")
    tmp.replace(path)
