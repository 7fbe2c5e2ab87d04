"""Raw-log store: per-file state, and the SQL stage that turns JSON lines into week-bucketed rows.

JSONL/CSV lines are validated, timestamped and bucketed inside DuckDB (vectorised) rather than
row by row in Python: that is what keeps ingest close to DuckDB's own `read_json` speed.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

import duckdb
import pyarrow as pa

from chronicle.ingest.model import Entry, Reject
from chronicle.ingest.zones import (
    AMBIGUOUS_ABBREVIATIONS,
    FIXED_ABBREVIATIONS,
    MAX_OFFSET_MINUTES,
    NOT_ZONES,
    UTC_NAMES,
)

CANONICAL = ("project_id", "ts", "actor", "type", "content")

_REASON_SQL = """
CASE WHEN strlen(raw) > $max_bytes THEN 'line_too_long'
     WHEN j IS NULL THEN 'invalid_json'
     WHEN json_type(j) <> 'OBJECT' THEN 'not_an_object'
     WHEN project_id IS NULL THEN 'missing_project'
     WHEN ts_text IS NULL THEN 'missing_timestamp'
     WHEN zone_error IS NOT NULL THEN 'invalid_timezone'
     WHEN ts_tz IS NULL THEN 'invalid_timestamp'
     WHEN ts_tz > $now + INTERVAL 2 DAY THEN 'future_timestamp'
     WHEN ts_tz < TIMESTAMPTZ '1970-01-01 00:00:00+00' THEN 'implausible_timestamp'
     WHEN content IS NULL OR trim(content) = '' THEN 'missing_content'
END"""


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def _lit(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _json_path(key: str) -> str:
    # Quoted so dots or spaces in export column names are not read as path syntax.
    return "$." + json.dumps(key)


def _in(values: Sequence[str]) -> str:
    return "(" + ", ".join(_lit(v) for v in values) + ")"


def _case_upper(mapping: dict[str, Any]) -> str:
    whens = " ".join(f"WHEN {_lit(k)} THEN {_lit(v) if isinstance(v, str) else int(v)}" for k, v in mapping.items())
    return f"CASE upper(zone_text) {whens} END"


# What a timestamp ends with: its zone, only after a time of day (so the `-22` of `2026-11-22` is no offset).
_ZONE_TAIL = r"\d:\d\d(?::\d\d(?:[.,]\d+)?)?\s*([zZ]|[+-]\d\d(?::?\d\d)?|[A-Za-z][A-Za-z0-9_/+-]*)$"
# The common shapes (`Z`, `+08:00`, `+0800`, `+08`, naive) by position, with string functions: a regex on every
# line cost ~12 % of the whole SQL stage. Only a timestamp ending in a letter other than Z (a zone name) is
# matched with `_ZONE_TAIL`.
_ZONE_TEXT = f"""CASE
    WHEN ts_text IS NULL THEN ''
    WHEN right(ts_text, 1) IN ('Z', 'z') THEN right(ts_text, 1)
    WHEN NOT contains(ts_text, ':') THEN ''
    WHEN substr(ts_text, -6, 1) IN ('+', '-') AND substr(ts_text, -3, 1) = ':' THEN right(ts_text, 6)
    WHEN substr(ts_text, -5, 1) IN ('+', '-') AND substr(ts_text, -3, 1) <> ':' THEN right(ts_text, 5)
    WHEN substr(ts_text, -3, 1) IN ('+', '-') THEN right(ts_text, 3)
    WHEN right(ts_text, 1) BETWEEN '0' AND '9' THEN ''
    ELSE coalesce(regexp_extract(ts_text, {_lit(_ZONE_TAIL)}, 1), '') END"""
# An offset is within ±14:00 with minutes under 60 (compared as text: `+HH`, `+HHMM`, `+HH:MM`; no casts).
_HH, _MM = "substr(zone_text, 2, 2)", "CASE WHEN length(zone_text) > 3 THEN right(zone_text, 2) ELSE '00' END"
_OFFSET_OK = (f"({_HH} BETWEEN '00' AND '{MAX_OFFSET_MINUTES // 60:02d}' AND {_MM} BETWEEN '00' AND '59' "
              f"AND ({_HH} < '{MAX_OFFSET_MINUTES // 60:02d}' OR {_MM} = '00'))")


def _zone_sql() -> tuple[str, str, str]:
    """(zone_kind, ts_tz, zone_error) expressions over `ts_text`, `zone_text` and `tz` — see chronicle.ingest.zones.

    The common cases (`Z`, `+08:00`, naive) are decided by the first comparisons, on short strings; the
    name lists are only consulted for the rare timestamp that ends in a word.
    """
    kind = f"""CASE WHEN zone_text = '' THEN 'local'
         WHEN zone_text IN ('Z', 'z') THEN 'offset'
         WHEN zone_text[1] IN ('+', '-') THEN CASE WHEN {_OFFSET_OK} THEN 'offset' ELSE 'bad_offset' END
         WHEN upper(zone_text) IN {_in(NOT_ZONES)} THEN 'local'
         WHEN upper(zone_text) IN {_in(UTC_NAMES)} THEN 'utc'
         WHEN upper(zone_text) IN {_in(list(FIXED_ABBREVIATIONS))} THEN 'fixed'
         WHEN upper(zone_text) IN {_in(list(AMBIGUOUS_ABBREVIATIONS))} THEN 'ambiguous'
         WHEN contains(zone_text, '/') AND list_contains($zones, zone_text) THEN 'iana'
         ELSE 'unknown' END"""
    body = "try_cast(rtrim(substr(ts_text, 1, length(ts_text) - length(zone_text))) AS TIMESTAMP)"
    ts_tz = f"""CASE zone_kind
         WHEN 'local' THEN timezone(tz, try_cast(ts_text AS TIMESTAMP))
         WHEN 'offset' THEN try_cast(ts_text AS TIMESTAMPTZ)
         WHEN 'utc' THEN timezone('UTC', {body})
         WHEN 'fixed' THEN timezone('UTC', {body}) - to_minutes({_case_upper(FIXED_ABBREVIATIONS)})
         WHEN 'iana' THEN timezone(zone_text, {body}) END"""
    error = f"""CASE zone_kind
         WHEN 'bad_offset' THEN 'time zone offset ' || zone_text || ' is out of range (-14:00 .. +14:00)'
         WHEN 'ambiguous' THEN 'ambiguous time zone abbreviation ' || zone_text || ' ('
              || {_case_upper(AMBIGUOUS_ABBREVIATIONS)} || '); write an offset such as +08:00'
         WHEN 'unknown' THEN 'unknown time zone ' || zone_text
              || '; write an offset (+08:00) or an IANA name (Asia/Shanghai)' END"""
    return kind, ts_tz, error


def stage_lines_sql(column_map: dict[str, str], project_tz: dict[str, str], from_file: bool) -> str:
    """SQL turning lines (of the file `$path`, or the registered Arrow table `src`) into the `staged` rows.

    All candidate keys are extracted in ONE `json_extract_string(j, [paths])` call per line,
    which is what keeps this close to DuckDB's own `read_json`.
    """
    paths: list[str] = []
    fields: dict[str, str] = {}
    for name in CANONICAL:
        keys = [src for src, dst in column_map.items() if dst == name] + [name]
        idx = []
        for key in keys:
            paths.append(_json_path(key))
            idx.append(f"v[{len(paths)}]")
        fields[name] = f"coalesce({', '.join(idx)})"
    path_list = "[" + ", ".join(_lit(p) for p in paths) + "]"
    used = sorted({*CANONICAL, *column_map})
    patch = _lit(json.dumps(dict.fromkeys(used)))
    tz_expr = "$default_tz"
    if project_tz:
        whens = " ".join(f"WHEN {_lit(p)} THEN {_lit(tz)}" for p, tz in project_tz.items())
        tz_expr = f"CASE project_id {whens} ELSE $default_tz END"
    zone_kind, ts_tz, zone_error = _zone_sql()
    if from_file:
        # DuckDB's parallel CSV reader as a line splitter (no quotes, a delimiter the caller checked
        # is absent): several times faster than splitting in Python; row order is the file's order.
        source = """SELECT n::BIGINT AS line_no, NULL::BIGINT AS byte_offset, rtrim(coalesce(raw, ''), chr(13)) AS raw
                    FROM (SELECT raw, row_number() OVER () AS n
                          FROM read_csv($path, columns = {'raw': 'VARCHAR'}, delim = chr(1), quote = '', escape = '',
                                        header = false, auto_detect = false, strict_mode = false,
                                        max_line_size = $max_line_size, new_line = $new_line))
                    WHERE n BETWEEN $first_line AND $last_line"""
    else:
        source = "SELECT line_no, byte_offset, rtrim(raw, chr(13)) AS raw FROM src"
    return f"""
WITH s AS ({source}),
c AS (SELECT *, CASE WHEN strlen(raw) <= $max_bytes THEN try_cast(raw AS JSON) END AS j
      FROM s WHERE trim(raw) <> ''),
e AS (SELECT *, CASE WHEN json_type(j) = 'OBJECT' THEN json_extract_string(j, {path_list}) END AS v FROM c),
f AS (
  SELECT line_no, byte_offset, raw, j,
    nullif(trim(coalesce({fields["project_id"]}, $default_project)), '') AS project_id,
    nullif(trim({fields["ts"]}), '') AS ts_text,
    nullif(trim({fields["actor"]}), '') AS actor,
    lower(coalesce(nullif(trim({fields["type"]}), ''), 'message')) AS type,
    {fields["content"]} AS content
  FROM e
),
z AS (SELECT *, {tz_expr} AS tz, {_ZONE_TEXT} AS zone_text FROM f),
k AS (SELECT *, {zone_kind} AS zone_kind FROM z),
t AS (SELECT *, {ts_tz} AS ts_tz, {zone_error} AS zone_error FROM k),
r AS (SELECT *, {_REASON_SQL} AS reason FROM t)
SELECT line_no, byte_offset, raw, reason, CASE reason WHEN 'invalid_timezone' THEN zone_error END AS detail,
  project_id, actor, type, content,
  substr(md5($file || chr(31) || line_no::VARCHAR || chr(31) || raw), 1, 24) AS entry_id,
  CASE WHEN reason IS NULL THEN json_merge_patch(j, {patch}) END AS metadata,
  CASE WHEN reason IS NULL THEN timezone('UTC', ts_tz) END AS ts,
  CASE WHEN reason IS NULL THEN timezone(tz, ts_tz) END AS local_ts
FROM r"""


_zone_names: list[str] = []


def zone_names(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """IANA zone names (`Region/City`) this DuckDB's ICU knows; read once per process."""
    if not _zone_names:
        rows = conn.execute("SELECT name FROM pg_timezone_names() WHERE contains(name, '/') ORDER BY 1").fetchall()
        _zone_names.extend(r[0] for r in rows)
    return _zone_names


def _unregister(conn: duckdb.DuckDBPyConnection, *names: str) -> None:
    # After a failed statement the transaction is aborted and unregister raises too; the first error matters.
    for name in names:
        with contextlib.suppress(duckdb.Error):
            conn.unregister(name)


class FastPathError(RuntimeError):
    """DuckDB's line reader refused the file (e.g. a line over its size limit): use the Arrow path."""


def stage_lines(
    conn: duckdb.DuckDBPyConnection,
    *,
    source_file: str,
    path: str | None = None,
    first_line_no: int = 1,
    last_line_no: int = 0,
    new_line: str = "\\n",
    lines: Sequence[str] | None = None,
    line_nos: Sequence[int] | None = None,
    default_project: str | None,
    default_tz: str,
    project_tz: dict[str, str],
    column_map: dict[str, str],
    max_line_bytes: int,
) -> None:
    """Validate lines into the temp table `staged` (one row per non-blank line, `reason` NULL if good).

    Give either `path` with the line range to read (UTF-8, no `\\x01`, one kind of line ending —
    the caller checks), or `lines` with their `line_nos` (CSV rows as JSON, UTF-16 files, odd files).
    """
    params: dict[str, object] = {"max_bytes": max_line_bytes, "default_project": default_project,
                                 "default_tz": default_tz, "now": datetime.now(UTC), "file": source_file,
                                 "zones": zone_names(conn)}
    select = stage_lines_sql(column_map, project_tz, from_file=path is not None)
    sql = f"CREATE OR REPLACE TEMP TABLE staged AS {select}"
    if path is not None:
        params.update(path=path, first_line=first_line_no, last_line=last_line_no, new_line=new_line,
                      max_line_size=max(8 << 20, 2 * max_line_bytes))
        try:
            conn.execute(sql, params)
        except (duckdb.InvalidInputException, duckdb.ConversionException, duckdb.IOException) as exc:
            raise FastPathError(str(exc)) from exc
        return
    assert lines is not None and line_nos is not None
    src = pa.table({"line_no": pa.array(line_nos, pa.int64()), "byte_offset": pa.nulls(len(lines), pa.int64()),
                    "raw": pa.array(lines, pa.string())})
    conn.register("src", src)
    try:
        conn.execute(sql, params)
    finally:
        _unregister(conn, "src")


def commit_staged(conn: duckdb.DuckDBPyConnection, *, source: str, source_file: str) -> dict[str, int]:
    """Move `staged` into raw_logs / rejects; returns rejects by reason.

    No unique index on raw_logs (it made inserts several times slower, and the lake has none): ids
    already stored for this file are skipped by an anti-join, which is what keeps re-reads idempotent.
    """
    now = _now()
    conn.execute(
        """
        INSERT INTO raw_logs (entry_id, project_id, source, source_file, line_no, byte_offset, ts,
            local_date, iso_year, iso_week, week_number, actor, type, content, metadata, ingested_at)
        SELECT entry_id, project_id, $source, $file, line_no, byte_offset, ts,
            CAST(local_ts AS DATE), isoyear(local_ts), week(local_ts), isoyear(local_ts) * 100 + week(local_ts),
            actor, type, content, metadata, $now
        FROM staged
        WHERE reason IS NULL
          AND entry_id NOT IN (SELECT entry_id FROM raw_logs WHERE source_file = $file)
        """,
        {"file": source_file, "source": source, "now": now},
    )
    conn.execute(
        """
        INSERT INTO rejects (reject_id, source_file, line_no, byte_offset, reason, detail, raw, rejected_at)
        SELECT reject_id, $file, line_no, byte_offset, reason, detail, raw, $now
        FROM (SELECT substr(md5($file || chr(31) || line_no::VARCHAR || chr(31) || reason), 1, 24) AS reject_id,
                     line_no, byte_offset, reason, raw,
                     CASE reason WHEN 'invalid_timestamp'
                          THEN 'cannot parse ts for project ' || coalesce(project_id, '') ELSE detail END AS detail
              FROM staged WHERE reason IS NOT NULL)
        WHERE reject_id NOT IN (SELECT reject_id FROM rejects WHERE source_file = $file)
        QUALIFY row_number() OVER (PARTITION BY reject_id ORDER BY line_no) = 1
        """,
        {"file": source_file, "now": now},
    )
    return dict(conn.execute("SELECT reason, count(*) FROM staged WHERE reason IS NOT NULL GROUP BY 1").fetchall())


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


def count_file(conn: duckdb.DuckDBPyConnection, path: str) -> tuple[int, int]:
    """(rows, rejects) currently stored for one file."""
    rows = conn.execute("SELECT count(*) FROM raw_logs WHERE source_file = ?", [path]).fetchall()[0][0]
    rej = conn.execute("SELECT count(*) FROM rejects WHERE source_file = ?", [path]).fetchall()[0][0]
    return rows, rej
