"""Raw-log store: per-file state, parsed entries (notes, LoCoMo) and rejects.

JSONL/CSV lines are validated, timestamped and bucketed inside DuckDB by `storage.ingest_sql`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from chronicle.ingest.model import Entry, Reject


def _unregister(conn: duckdb.DuckDBPyConnection, *names: str) -> None:
    # After a failed statement the transaction is aborted and unregister raises too; the first error matters.
    for name in names:
        with contextlib.suppress(duckdb.Error):
            conn.unregister(name)


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def insert_entries(conn: duckdb.DuckDBPyConnection, entries: Sequence[Entry]) -> int:
    """Insert parsed entries (notes, LoCoMo); existing ids are left alone. Returns rows added."""
    if not entries:
        return 0
    rows = [asdict(e) for e in entries]
    now = _now()
    for row in rows:
        row["week_number"] = row["iso_year"] * 100 + row["iso_week"]
        row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False)
        row["ingested_at"] = now
    table = pa.Table.from_pylist(rows)
    before = conn.execute("SELECT count(*) FROM raw_logs").fetchall()[0][0]
    conn.register("new_entries", table)
    try:
        conn.execute(
            """INSERT INTO raw_logs (entry_id, project_id, source, source_file, line_no, byte_offset, ts,
                 local_date, iso_year, iso_week, week_number, actor, type, content, metadata, ingested_at)
               SELECT entry_id, project_id, source, source_file, line_no, byte_offset, ts, local_date, iso_year,
                 iso_week, week_number, actor, type, content, metadata::JSON, ingested_at FROM new_entries
               WHERE entry_id NOT IN (SELECT entry_id FROM raw_logs
                                      WHERE source_file IN (SELECT DISTINCT source_file FROM new_entries))"""
        )
    finally:
        _unregister(conn, "new_entries")
    return conn.execute("SELECT count(*) FROM raw_logs").fetchall()[0][0] - before


def remove_entries_not_in(conn: duckdb.DuckDBPyConnection, source_file: str, keep_ids: Sequence[str]) -> int:
    """A rewritten file: drop its rows that the new version no longer has."""
    conn.register("keep_ids", pa.table({"entry_id": pa.array(list(keep_ids), pa.string())}))
    try:
        n = conn.execute(
            "SELECT count(*) FROM raw_logs WHERE source_file = ? AND entry_id NOT IN (SELECT entry_id FROM keep_ids)",
            [source_file],
        ).fetchall()[0][0]
        conn.execute(
            "DELETE FROM raw_logs WHERE source_file = ? AND entry_id NOT IN (SELECT entry_id FROM keep_ids)",
            [source_file],
        )
    finally:
        _unregister(conn, "keep_ids")
    return n


def forget_file(conn: duckdb.DuckDBPyConnection, source_file: str) -> int:
    """Remove every row and reject of a file before it is re-read from the start."""
    n = conn.execute("SELECT count(*) FROM raw_logs WHERE source_file = ?", [source_file]).fetchall()[0][0]
    conn.execute("DELETE FROM raw_logs WHERE source_file = ?", [source_file])
    conn.execute("DELETE FROM rejects WHERE source_file = ?", [source_file])
    return n


def clear_rejects(conn: duckdb.DuckDBPyConnection, source_file: str) -> None:
    conn.execute("DELETE FROM rejects WHERE source_file = ?", [source_file])


def insert_rejects(conn: duckdb.DuckDBPyConnection, rejects: Sequence[Reject]) -> None:
    """Store refused input; a reject already stored (same file, position and reason) is left alone."""
    if not rejects:
        return
    table = pa.table({
        "reject_id": pa.array([r.reject_id for r in rejects], pa.string()),
        "source_file": pa.array([r.source_file for r in rejects], pa.string()),
        "line_no": pa.array([r.line_no for r in rejects], pa.int32()),
        "byte_offset": pa.array([r.byte_offset for r in rejects], pa.int64()),
        "reason": pa.array([r.reason for r in rejects], pa.string()),
        "detail": pa.array([r.detail for r in rejects], pa.string()),
        "raw": pa.array([r.raw for r in rejects], pa.string()),
    })
    conn.register("new_rejects", table)
    try:
        conn.execute(
            """INSERT INTO rejects (reject_id, source_file, line_no, byte_offset, reason, detail, raw, rejected_at)
               SELECT reject_id, source_file, line_no, byte_offset, reason, detail, raw, ? FROM new_rejects
               WHERE reject_id NOT IN (SELECT reject_id FROM rejects
                                       WHERE source_file IN (SELECT DISTINCT source_file FROM new_rejects))
               QUALIFY row_number() OVER (PARTITION BY reject_id) = 1""",
            [_now()],
        )
    finally:
        _unregister(conn, "new_rejects")


def file_state(conn: duckdb.DuckDBPyConnection, path: str) -> dict[str, Any] | None:
    cur = conn.execute("SELECT * FROM ingest_files WHERE path = ?", [path])
    rows = cur.fetchall()
    if not rows:
        return None
    return dict(zip([d[0] for d in cur.description], rows[0], strict=True))


def save_file_state(conn: duckdb.DuckDBPyConnection, state: dict[str, Any]) -> None:
    """Replace a file's row (delete + insert: the caller's transaction makes it one change)."""
    conn.execute("DELETE FROM ingest_files WHERE path = ?", [state["path"]])
    conn.execute(
        """INSERT INTO ingest_files (path, project_id, format, size, mtime_ns, parsed_bytes,
             parsed_lines, prefix_sha256, entries, rejects, content_sha256, ingested_at)
           VALUES ($path, $project_id, $format, $size, $mtime_ns, $parsed_bytes, $parsed_lines,
             $prefix_sha256, $entries, $rejects, $content_sha256, $now)""",
        {"content_sha256": None, **state, "now": _now()},
    )


def ingest_guard(path: str) -> list[str]:
    """Claim keys of one file's write window: two workers never write the same file at once (lake)."""
    return [f"ingest:{path}"]


def redact_project_ids(conn: duckdb.DuckDBPyConnection, source_file: str, redact: Callable[[str], str]) -> int:
    """The file's project ids with any secret in them redacted (`ACME-ghp_….` -> `ACME-[REDACTED:api_key]`);
    returns how many ids changed. A project id travels into prompts, reports, run names, artifacts and CLI
    tables: ingest is the one gate it passes, so every later sink sees the redacted id."""
    ids = [r[0] for r in conn.execute("SELECT DISTINCT project_id FROM raw_logs WHERE source_file = ?",
                                      [source_file]).fetchall()]
    changed = 0
    for project_id in ids:
        shown = redact(project_id)
        if shown != project_id:
            conn.execute("UPDATE raw_logs SET project_id = ? WHERE source_file = ? AND project_id = ?",
                         [shown, source_file, project_id])
            changed += 1
    return changed


def count_file(conn: duckdb.DuckDBPyConnection, path: str) -> tuple[int, int]:
    """(rows, rejects) currently stored for one file."""
    rows = conn.execute("SELECT count(*) FROM raw_logs WHERE source_file = ?", [path]).fetchall()[0][0]
    rej = conn.execute("SELECT count(*) FROM rejects WHERE source_file = ?", [path]).fetchall()[0][0]
    return rows, rej
