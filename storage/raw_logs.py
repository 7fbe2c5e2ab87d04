"""Raw-log store: per-file state, parsed entries (notes, LoCoMo) and rejects.

JSONL/CSV lines are validated, timestamped and bucketed inside DuckDB by `chronicle.storage.ingest_sql`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from datetime import datetime
from typing import Any

import duckdb
import pyarrow as pa

from chronicle.ingest.model import Entry, Reject
from chronicle.storage.db import dict_rows
from chronicle.storage.ingest_history import CONTENT_KEY_SQL, registered, strings
from chronicle.weekly.guard.events import SAFETY_HINT, names_safety_event
from chronicle.weeks import utc_now

KEY = CONTENT_KEY_SQL.format(p="", sid="coalesce(json_extract_string(metadata, '$.id'), "
                                        "json_extract_string(metadata, '$.event_id'))")




def insert_entries(conn: duckdb.DuckDBPyConnection, entries: Sequence[Entry], now: datetime | None = None) -> int:
    """Insert parsed entries (notes, LoCoMo); existing ids are left alone. Returns rows added.

    Their file identity is their path (a note is known by its name: the name holds its date)."""
    if not entries:
        return 0
    rows = [asdict(e) for e in entries]
    now = now or utc_now()
    for row in rows:
        row["week_number"] = row["iso_year"] * 100 + row["iso_week"]
        row["metadata"] = json.dumps(row["metadata"], ensure_ascii=False)
        row["ingested_at"] = now
    table = pa.Table.from_pylist(rows)
    before = conn.execute("SELECT count(*) FROM raw_logs").fetchall()[0][0]
    with registered(conn, new_entries=table):
        conn.execute(
            f"""INSERT INTO raw_logs (entry_id, project_id, source, source_file, line_no, byte_offset, ts,
                 local_date, iso_year, iso_week, week_number, actor, type, content, metadata, ingested_at, file_id,
                 content_key)
               SELECT entry_id, project_id, source, source_file, line_no, byte_offset, ts, local_date, iso_year,
                 iso_week, week_number, actor, type, content, metadata::JSON, ingested_at, source_file,
                 {KEY} FROM new_entries
               WHERE entry_id NOT IN (SELECT entry_id FROM raw_logs
                                      WHERE source_file IN (SELECT DISTINCT source_file FROM new_entries))"""
        )
    return conn.execute("SELECT count(*) FROM raw_logs").fetchall()[0][0] - before


def clear_rejects(conn: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> None:
    if not paths:
        return
    with registered(conn, clear_paths=strings(paths, "path")):
        conn.execute("DELETE FROM rejects WHERE source_file IN (SELECT path FROM clear_paths)")


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
    with registered(conn, new_rejects=table):
        conn.execute(
            f"""INSERT INTO rejects (reject_id, source_file, line_no, byte_offset, reason, detail, raw, rejected_at,
                                    safety)
               SELECT reject_id, source_file, line_no, byte_offset, reason, detail, raw, $now, {SAFETY_UNDECIDED_SQL}
               FROM new_rejects
               WHERE reject_id NOT IN (SELECT reject_id FROM rejects
                                       WHERE source_file IN (SELECT DISTINCT source_file FROM new_rejects))
               QUALIFY row_number() OVER (PARTITION BY reject_id) = 1""",
            {"now": utc_now()},
        )
    flag_safety(conn, sorted({r.source_file for r in rejects}))


# At insert, a line SQL's cheap superset rules out is decided (false); the rest wait for `flag_safety`.
SAFETY_UNDECIDED_SQL = f"""CASE WHEN regexp_matches(raw, '{SAFETY_HINT.replace("'", "''")}') THEN NULL ELSE false END"""


def flag_safety(conn: duckdb.DuckDBPyConnection, files: Sequence[str]) -> None:
    """Decide `safety` for the refused lines of `files` that have no answer yet, by the rule itself. Called in the
    transaction that stores them, so a line is decided once (not on each read) and no finished ingest leaves one
    undecided; only `files`, so concurrent ingests of other files never update the same rows."""
    candidates = conn.execute("SELECT reject_id, raw FROM rejects WHERE safety IS NULL AND source_file IN "
                              "(SELECT unnest($files))", {"files": list(files)}).fetchall()
    if candidates:
        named = [reject_id for reject_id, raw in candidates if raw is not None and names_safety_event(raw)]
        conn.execute("UPDATE rejects SET safety = list_contains($named, reject_id) WHERE safety IS NULL "
                     "AND source_file IN (SELECT unnest($files))", {"named": named, "files": list(files)})


def refused_safety_lines(conn: duckdb.DuckDBPyConnection, paths: Sequence[str] | None = None,
                         since: datetime | None = None) -> list[tuple[str, int | None]]:
    """(file, line) of refused lines that name a safety event: of `paths` only, and refused at or after `since` (a
    run's new rejects), when given. A line not decided yet (stored before the `safety` column, no ingest since) is
    judged here by the same rule."""
    with registered(conn, refused_paths=strings(list(paths or []), "path")):
        rows = conn.execute(
            """SELECT source_file, line_no, CASE WHEN safety IS NULL THEN raw END FROM rejects
               WHERE (? OR source_file IN (SELECT path FROM refused_paths)) AND (? IS NULL OR rejected_at >= ?)
                 AND (safety OR (safety IS NULL AND regexp_matches(raw, ?))) ORDER BY source_file, line_no""",
            [paths is None, since, since, SAFETY_HINT]).fetchall()
    return [(path, line) for path, line, undecided in rows if undecided is None or names_safety_event(undecided)]


def file_states(conn: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The stored state of each of `paths` that has one, in one query (a batch of thousands of files)."""
    if not paths:
        return {}
    with registered(conn, state_paths=strings(paths, "path")):
        rows = dict_rows(conn.execute("SELECT * FROM ingest_files WHERE path IN (SELECT path FROM state_paths)"))
    return {row["path"]: row for row in rows}


def save_file_states(conn: duckdb.DuckDBPyConnection, states: Sequence[dict[str, Any]]) -> None:
    """Replace the rows of files (delete + insert: the caller's transaction makes it one change)."""
    if not states:
        return
    now = utc_now()
    columns = ("path", "project_id", "format", "size", "mtime_ns", "parsed_bytes", "parsed_lines",
               "prefix_sha256", "entries", "rejects", "content_sha256", "file_id", "head_len", "head_sha256",
               "duplicates", "note")
    types = (pa.string(), pa.string(), pa.string(), pa.int64(), pa.int64(), pa.int64(), pa.int64(),
             pa.string(), pa.int32(), pa.int32(), pa.string(), pa.string(), pa.int64(), pa.string(), pa.int32(),
             pa.string())
    new = pa.table({c: pa.array([s.get(c) for s in states], t) for c, t in zip(columns, types, strict=True)})
    with registered(conn, new_states=new):
        conn.execute("DELETE FROM ingest_files WHERE path IN (SELECT path FROM new_states)")
        conn.execute(f"INSERT INTO ingest_files ({', '.join(columns)}, ingested_at) "
                     f"SELECT {', '.join(columns)}, ? FROM new_states", [now])


def ingest_guard(path: str) -> list[str]:
    """Claim keys of one file's write window: two workers never write the same file at once (lake)."""
    return [f"ingest:{path}"]


def redact_project_ids(conn: duckdb.DuckDBPyConnection, file_ids: Sequence[str], redact: Callable[[str], str]) -> int:
    """The project ids of these files with any secret in them redacted (`ACME-ghp_….` -> `ACME-[REDACTED:api_key]`);
    returns how many ids changed. A project id travels into prompts, reports, run names, artifacts and CLI
    tables: ingest is the one gate it passes, so every later sink sees the redacted id. One query per batch."""
    if not file_ids:
        return 0
    with registered(conn, redact_paths=strings(file_ids, "path")):
        ids = [r[0] for r in conn.execute("SELECT DISTINCT project_id FROM raw_logs "
                                          "WHERE file_id IN (SELECT path FROM redact_paths)").fetchall()]
        changed = 0
        for project_id in ids:
            shown = redact(project_id)
            if shown != project_id:
                conn.execute("UPDATE raw_logs SET project_id = ? WHERE project_id = ? "
                             "AND file_id IN (SELECT path FROM redact_paths)", [shown, project_id])
                changed += 1
    return changed


def _counts(conn: duckdb.DuckDBPyConnection, table: str, column: str, keys: Sequence[str]) -> dict[str, int]:
    if not keys:
        return {}
    with registered(conn, count_keys=strings(keys)):
        return dict(conn.execute(f"SELECT {column}, count(*) FROM {table} "
                                 f"WHERE {column} IN (SELECT id FROM count_keys) GROUP BY 1").fetchall())


def count_rows(conn: duckdb.DuckDBPyConnection, file_ids: Sequence[str]) -> dict[str, int]:
    """Rows currently stored for each of the file identities `file_ids` (absent: none)."""
    return _counts(conn, "raw_logs", "file_id", file_ids)


def count_rejects(conn: duckdb.DuckDBPyConnection, paths: Sequence[str]) -> dict[str, int]:
    """Rejects currently stored for each of `paths` (absent: none)."""
    return _counts(conn, "rejects", "source_file", paths)
