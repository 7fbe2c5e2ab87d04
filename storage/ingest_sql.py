"""The SQL stage of JSON lines: validate, place in time and bucket every line inside DuckDB, in two passes.

1. **Good lines, one typed scan.** Each line is parsed once for all its fields (`json_extract_string(raw,
   [paths])`), its timestamp read with its zone, and the lines that pass every check are inserted straight
   into `raw_logs` — no staging table, no window function (line numbers come with the lines).
2. **Refused lines, reasons only for them.** The lines of the batch that did not land in `raw_logs` (an
   anti-join on line numbers) are judged again with the full reason chain (`line_too_long`, `invalid_json`,
   …, `invalid_timezone` with its detail) and stored in `rejects`. A line is never dropped: one that passed
   the first pass's checks but is not in `raw_logs` is still refused, with a reason that says so.

The zone rules are `chronicle.ingest.zones`; the README's "Input contract" is the specification.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute

from chronicle.ingest.zones import (
    AMBIGUOUS_ABBREVIATIONS,
    FIXED_ABBREVIATIONS,
    MAX_OFFSET_MINUTES,
    NOT_ZONES,
    UTC_NAMES,
)
from chronicle.storage.ingest_history import CONTENT_KEY_SQL, registered
from chronicle.storage.raw_logs import SAFETY_UNDECIDED_SQL, flag_safety
from chronicle.weeks import utc_now

CANONICAL = ("project_id", "ts", "actor", "type", "content")

_REASON_SQL = """
CASE WHEN strlen(raw) > $max_bytes THEN 'line_too_long'
     WHEN j IS NULL THEN 'invalid_json'
     WHEN json_type(j) <> 'OBJECT' THEN 'not_an_object'
     WHEN len(keys) <> list_unique(keys) THEN 'duplicate_key'
     WHEN project_id IS NULL THEN 'missing_project'
     WHEN ts_text IS NULL THEN 'missing_timestamp'
     WHEN zone_error IS NOT NULL THEN 'invalid_timezone'
     WHEN ts_tz IS NULL THEN 'invalid_timestamp'
     WHEN dst = 'gap' THEN 'nonexistent_local_time'
     WHEN dst = 'fold' THEN 'ambiguous_local_time'
     WHEN ts_tz > $now + INTERVAL 2 DAY THEN 'future_timestamp'
     WHEN ts_tz < TIMESTAMPTZ '1970-01-01 00:00:00+00' THEN 'implausible_timestamp'
     WHEN content IS NULL OR trim(content) = '' THEN 'missing_content'
END"""


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


def _zone_sql() -> tuple[str, str, str, str, str]:
    """(zone_kind, wall, ts_tz, zone_error, dst) expressions over `ts_text`, `zone_text` and `tz` — see
    chronicle.ingest.zones.

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
    # The wall-clock time as written (without its zone), read once: the DST check compares against it.
    wall = """CASE zone_kind WHEN 'local' THEN try_cast(ts_text AS TIMESTAMP) WHEN 'offset' THEN NULL
         ELSE try_cast(rtrim(substr(ts_text, 1, length(ts_text) - length(zone_text))) AS TIMESTAMP) END"""
    ts_tz = f"""CASE zone_kind
         WHEN 'local' THEN timezone(tz, wall)
         WHEN 'offset' THEN try_cast(ts_text AS TIMESTAMPTZ)
         WHEN 'utc' THEN timezone('UTC', wall)
         WHEN 'fixed' THEN timezone('UTC', wall) - to_minutes({_case_upper(FIXED_ABBREVIATIONS)})
         WHEN 'iana' THEN timezone(zone_text, wall) END"""
    # A wall time in a zone with daylight saving may not exist (the spring gap) or exist twice (the autumn
    # fold). ICU moves a gap time forward and resolves a fold to its later instant (checked for New York,
    # Berlin, Sydney, Santiago): so a gap is a round trip that does not give the wall time back, and a fold is
    # a wall time the zone also showed one hour earlier. Only when a time of day was written (a date alone is
    # midnight by convention). Half-hour shifts (Lord Howe) are not detected as folds.
    dst = """CASE WHEN zone_kind IN ('local', 'iana') AND ts_tz IS NOT NULL AND contains(ts_text, ':') THEN
           CASE WHEN timezone(CASE zone_kind WHEN 'local' THEN tz ELSE zone_text END, ts_tz) <> wall THEN 'gap'
                WHEN timezone(CASE zone_kind WHEN 'local' THEN tz ELSE zone_text END, ts_tz - INTERVAL 1 HOUR)
                     = wall THEN 'fold' END END"""
    error = f"""CASE zone_kind
         WHEN 'bad_offset' THEN 'time zone offset ' || zone_text || ' is out of range (-14:00 .. +14:00)'
         WHEN 'ambiguous' THEN 'ambiguous time zone abbreviation ' || zone_text || ' ('
              || {_case_upper(AMBIGUOUS_ABBREVIATIONS)} || '); write an offset such as +08:00'
         WHEN 'unknown' THEN 'unknown time zone ' || zone_text
              || '; write an offset (+08:00) or an IANA name (Asia/Shanghai)' END"""
    return kind, wall, ts_tz, error, dst




SOURCE_IDS = ("id", "event_id")
"""Keys holding the source's own id of an entry: part of its identity across files (`content_key`)."""
_KEY = CONTENT_KEY_SQL.format(p="", sid="coalesce(sid_a, sid_b)")


def _fields(column_map: dict[str, str]) -> tuple[str, dict[str, str], str]:
    """(JSON path list literal, field name -> expression over `v`, metadata patch literal)."""
    paths: list[str] = []
    fields: dict[str, str] = {}
    for name in (*CANONICAL, *SOURCE_IDS):
        keys = [src for src, dst in column_map.items() if dst == name] + [name]
        idx = []
        for key in keys:
            paths.append(_json_path(key))
            idx.append(f"v[{len(paths)}]")
        fields[name] = f"coalesce({', '.join(idx)})"
    path_list = "[" + ", ".join(_lit(p) for p in paths) + "]"
    used = sorted({*CANONICAL, *column_map} - set(SOURCE_IDS))
    return path_list, fields, _lit(json.dumps(dict.fromkeys(used)))


def _placed_ctes(column_map: dict[str, str], project_tz: dict[str, str], parsed: str) -> str:
    """CTEs f, z, k, t after a CTE `e` holding `raw`, `v` (the extracted values): fields, zone and `ts_tz`."""
    _, fields, _ = _fields(column_map)
    tz_expr = "$default_tz"
    if project_tz:
        whens = " ".join(f"WHEN {_lit(p)} THEN {_lit(tz)}" for p, tz in project_tz.items())
        tz_expr = f"CASE project_id {whens} ELSE $default_tz END"
    zone_kind, wall, ts_tz, zone_error, dst = _zone_sql()
    return f"""{parsed},
f AS (
  SELECT *,
    {fields["id"]} AS sid_a, {fields["event_id"]} AS sid_b,
    nullif(trim(coalesce({fields["project_id"]}, $default_project)), '') AS project_id,
    nullif(trim({fields["ts"]}), '') AS ts_text,
    nullif(trim({fields["actor"]}), '') AS actor,
    lower(coalesce(nullif(trim({fields["type"]}), ''), 'message')) AS type,
    {fields["content"]} AS content
  FROM e
),
z AS (SELECT *, {tz_expr} AS tz, {_ZONE_TEXT} AS zone_text FROM f),
k AS (SELECT *, {zone_kind} AS zone_kind FROM z),
w AS (SELECT *, {wall} AS wall FROM k),
d AS (SELECT *, {ts_tz} AS ts_tz, {zone_error} AS zone_error FROM w),
t AS (SELECT *, {dst} AS dst FROM d)"""


def _raw(strip_cr: bool) -> str:
    return "rtrim(raw, chr(13))" if strip_cr else "raw"


def good_lines_sql(column_map: dict[str, str], project_tz: dict[str, str], strip_cr: bool, fresh: bool) -> str:
    """INSERT of the lines of `src` that pass every check into `raw_logs` (pass 1).

    `src` holds the lines of one or many files (`source_file`, `source` per line: a batch of small files is
    one scan). `try(json_extract_string(...))` is the one parse of a line: broken JSON gives NULL (and the
    line falls to pass 2), an array or a scalar gives no fields. The checks are the negation of
    `_REASON_SQL`, in SQL. `fresh`: no file of the batch has rows stored (first or whole re-reads), so no
    stored id needs skipping; otherwise `$resumed` lists the files read from an offset.
    """
    path_list, _, patch = _fields(column_map)
    # `keys`: a duplicate key is refused, not resolved (DuckDB would keep the first value, CSV the last).
    parsed = f"""WITH e AS (SELECT file_id, source_file, source, line_no, byte_offset, raw,
        try(json_extract_string(raw, {path_list})) AS v, try(json_keys(raw)) AS keys
      FROM (SELECT file_id, source_file, source, line_no, byte_offset, {_raw(strip_cr)} AS raw FROM src)
      WHERE strlen(raw) <= $max_bytes)"""
    ctes = _placed_ctes(column_map, project_tz, parsed)
    return f"""
INSERT INTO raw_logs (entry_id, project_id, source, source_file, line_no, byte_offset, ts,
    local_date, iso_year, iso_week, week_number, actor, type, content, metadata, ingested_at, file_id, content_key)
SELECT entry_id, project_id, source, source_file, line_no, byte_offset, ts, CAST(local_ts AS DATE), isoyear(local_ts),
    week(local_ts), isoyear(local_ts) * 100 + week(local_ts), actor, type, content, metadata, $ingested_at, file_id,
    {_KEY}
FROM ({ctes}
  SELECT *, substr(md5(file_id || chr(31) || line_no::VARCHAR || chr(31) || raw), 1, 24) AS entry_id,
    make_timestamp(epoch_us(ts_tz)) AS ts,
    timezone(tz, ts_tz) AS local_ts, json_merge_patch(raw, {patch}) AS metadata
  FROM t
  WHERE project_id IS NOT NULL AND ts_tz IS NOT NULL AND dst IS NULL AND len(keys) = list_unique(keys)
    AND ts_tz <= $now + INTERVAL 2 DAY AND ts_tz >= TIMESTAMPTZ '1970-01-01 00:00:00+00'
    AND content IS NOT NULL AND trim(content) <> '')""" + ("" if fresh else """
WHERE entry_id NOT IN (SELECT entry_id FROM raw_logs
                       WHERE file_id IN (SELECT unnest($resumed)) AND line_no >= $first_line)""")


def refused_lines_sql(column_map: dict[str, str], project_tz: dict[str, str], strip_cr: bool) -> str:
    """The non-blank lines of `src` not in `raw_logs` after pass 1, each with its reason (pass 2)."""
    path_list, _, _ = _fields(column_map)
    parsed = f"""WITH s AS (SELECT src.file_id, src.source_file, src.line_no, src.byte_offset, {_raw(strip_cr)} AS raw
        FROM src ANTI JOIN (SELECT file_id, line_no FROM raw_logs
                   WHERE file_id IN (SELECT unnest($ids)) AND line_no BETWEEN $first_line AND $last_line) stored
        ON src.file_id = stored.file_id AND src.line_no = stored.line_no),
c AS (SELECT *, CASE WHEN strlen(raw) <= $max_bytes THEN try_cast(raw AS JSON) END AS j
      FROM s WHERE trim(raw) <> ''),
e AS (SELECT *, CASE WHEN json_type(j) = 'OBJECT' THEN json_extract_string(j, {path_list}) END AS v,
      CASE WHEN json_type(j) = 'OBJECT' THEN json_keys(j) ELSE [] END AS keys FROM c)"""
    ctes = _placed_ctes(column_map, project_tz, parsed)
    return f"""{ctes},
r AS (SELECT *, {_REASON_SQL} AS reason FROM t)
SELECT source_file, line_no, byte_offset, raw, coalesce(reason, 'not_stored') AS reason,
  CASE coalesce(reason, 'not_stored')
       WHEN 'invalid_timezone' THEN zone_error
       WHEN 'invalid_timestamp' THEN 'cannot parse ts for project ' || coalesce(project_id, '')
       WHEN 'duplicate_key' THEN 'key(s) written more than once: '
            || array_to_string(list_filter(list_distinct(keys), x -> len(list_filter(keys, y -> y = x)) > 1), ', ')
            || '; which value is meant is unknown, so neither is taken'
       WHEN 'nonexistent_local_time' THEN strftime(wall, '%Y-%m-%d %H:%M:%S') || ' never happened in '
            || CASE zone_kind WHEN 'local' THEN tz ELSE zone_text END
            || ' (clocks jump forward at the daylight-saving change); write the time with its UTC offset'
       WHEN 'ambiguous_local_time' THEN strftime(wall, '%Y-%m-%d %H:%M:%S') || ' happened twice in '
            || CASE zone_kind WHEN 'local' THEN tz ELSE zone_text END
            || ' (clocks go back at the daylight-saving change); write the offset to say which'
       WHEN 'not_stored' THEN 'the line passed every check but was not stored; please report it' END AS detail
FROM r"""


_zone_names: list[str] = []


def zone_names(conn: duckdb.DuckDBPyConnection) -> list[str]:
    """IANA zone names (`Region/City`) this DuckDB's ICU knows; read once per process."""
    if not _zone_names:
        rows = conn.execute("SELECT name FROM pg_timezone_names() WHERE contains(name, '/') ORDER BY 1").fetchall()
        _zone_names.extend(r[0] for r in rows)
    return _zone_names


BATCH_ROWS = 65_536
"""Rows per Arrow record batch: DuckDB scans the batches of one table in parallel."""


def buffer_table(buffer: bytes, offsets: np.ndarray, first_line_no: int) -> pa.Table:
    """The lines of `chronicle.ingest.lines.split_lines` as the `src` table (zero-copy over `buffer`).

    The caller has checked `buffer` is UTF-8 without NUL bytes; Arrow's own check runs again here (cheap,
    vectorised) because DuckDB trusts Arrow strings.
    """
    n = len(offsets) - 1
    raw = pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(buffer)])
    raw.validate(full=True)
    line_nos = np.arange(first_line_no, first_line_no + n, dtype=np.int64)
    table = pa.table({"line_no": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(line_nos)]),
                      "byte_offset": pa.nulls(n, pa.int64()), "raw": raw})
    return pa.Table.from_batches(table.to_batches(max_chunksize=BATCH_ROWS), table.schema)


def lines_table(lines: Sequence[str], line_nos: Sequence[int]) -> pa.Table:
    """Lines already decoded in Python (CSV rows as JSON, UTF-16 files, files with refused lines)."""
    return pa.table({"line_no": pa.array(line_nos, pa.int64()), "byte_offset": pa.nulls(len(lines), pa.int64()),
                     "raw": pa.array(lines, pa.large_string())})


@dataclass(frozen=True)
class LinePart:
    """The lines of one file in a batch: the path they were read from, their content's identity, their format."""

    source_file: str
    file_id: str
    source: str
    table: pa.Table


def batch_table(parts: Sequence[LinePart]) -> pa.Table:
    """The `src` table of a batch: the lines of every part with `source_file`, `file_id` and `source`.

    The file and format are dictionary columns (4 bytes a line, not the path again on every line of a large
    file). Many small files are combined into record batches of `BATCH_ROWS`: thousands of one-row batches
    would cost DuckDB's scan more than the lines; one large file keeps its zero-copy chunks.
    """
    parts = [p for p in parts if p.table.num_rows]
    counts = np.array([p.table.num_rows for p in parts], dtype=np.int64)
    formats = sorted({p.source for p in parts})
    file_idx = np.repeat(np.arange(len(parts), dtype=np.int32), counts)
    fmt_idx = np.repeat(np.array([formats.index(p.source) for p in parts], dtype=np.int32), counts)
    template = parts[0].table if parts else lines_table([], [])
    columns = {name: pa.chunked_array([c for p in parts for c in p.table.column(name).chunks],
                                      template.schema.field(name).type) for name in ("line_no", "byte_offset", "raw")}
    table = pa.table({
        "source_file": pa.DictionaryArray.from_arrays(file_idx, pa.array([p.source_file for p in parts], pa.string())),
        "file_id": pa.DictionaryArray.from_arrays(file_idx, pa.array([p.file_id for p in parts], pa.string())),
        "source": pa.DictionaryArray.from_arrays(fmt_idx, pa.array(formats, pa.string())),
        **columns})
    if len(parts) > 1:
        table = table.combine_chunks()
    return pa.Table.from_batches(table.to_batches(max_chunksize=BATCH_ROWS), table.schema)


def store_lines(conn: duckdb.DuckDBPyConnection, table: pa.Table, *, resumed: Sequence[str] = (),
                default_project: str | None, default_tz: str, project_tz: dict[str, str], column_map: dict[str, str],
                max_line_bytes: int, now: datetime | None = None) -> dict[str, dict[str, int]]:
    """Lines of a `batch_table` into `raw_logs` and `rejects`; returns refused lines by file and reason.

    `source_file` is the path a line was read from, `file_id` the identity of the content it belongs to (entry
    ids, and the rows of a file, go by the identity). Entry ids already stored for the identities in `resumed`
    are skipped (anti-join; the other files have just had every row moved aside by the caller, or never had
    any), as are stored rejects:
    re-reads are idempotent. When every line was stored, pass 2 has nothing to judge and is not run. The
    caller's transaction makes the whole batch one change.
    """
    if table.num_rows == 0:
        return {}
    line_nos = table.column("line_no")
    files = table.column("source_file").chunk(0).dictionary.to_pylist()  # one dictionary for all chunks
    ids = table.column("file_id").chunk(0).dictionary.to_pylist()
    now = (now or utc_now()).replace(tzinfo=UTC)
    strip_cr = bool(pa.compute.any(pa.compute.ends_with(table.column("raw"), "\r")).as_py())
    params: dict[str, object] = {"max_bytes": max_line_bytes, "default_project": default_project,
                                 "default_tz": default_tz, "now": now, "zones": zone_names(conn)}
    first_line = {"first_line": pa.compute.min(line_nos).as_py()}
    fresh = not resumed
    with registered(conn, src=table):
        stored = _insert_good_lines(conn, good_lines_sql(column_map, project_tz, strip_cr, fresh),
                                    {**params, **({} if fresh else {**first_line, "resumed": list(resumed)}),
                                     "ingested_at": now.replace(tzinfo=None)})
        if stored == table.num_rows:
            return {}  # every line is in raw_logs: nothing refused, no blank line
        conn.execute(f"CREATE OR REPLACE TEMP TABLE refused AS {refused_lines_sql(column_map, project_tz, strip_cr)}",
                     {**params, **first_line, "ids": ids, "last_line": pa.compute.max(line_nos).as_py()})
    return _store_refused(conn, files, now)


def _insert_good_lines(conn: duckdb.DuckDBPyConnection, sql: str, params: dict[str, object]) -> int:
    """Pass 1: the lines that make entries into raw_logs; how many lines are stored (new or there already)."""
    # Filter pushdown would copy the JSON parse into every condition that reads a field of it (measured:
    # the line parsed four times, 2x the CPU of the whole pass); without it each line is parsed once.
    conn.execute("SET disabled_optimizers = 'filter_pushdown'")
    try:
        return conn.execute(sql, params).fetchall()[0][0]
    finally:
        with contextlib.suppress(duckdb.Error):  # an aborted transaction refuses it; the first error matters
            conn.execute("RESET disabled_optimizers")


def _store_refused(conn: duckdb.DuckDBPyConnection, files: list[str], now: datetime) -> dict[str, dict[str, int]]:
    """The temp table `refused` into `rejects` (each reject once); refused lines by file and reason."""
    conn.execute(
        f"""
        INSERT INTO rejects (reject_id, source_file, line_no, byte_offset, reason, detail, raw, rejected_at, safety)
        SELECT reject_id, source_file, line_no, byte_offset, reason, detail, raw, $now, {SAFETY_UNDECIDED_SQL}
        FROM (SELECT substr(md5(source_file || chr(31) || line_no::VARCHAR || chr(31) || reason), 1, 24)
                     AS reject_id, source_file, line_no, byte_offset, reason, detail, raw FROM refused)
        WHERE reject_id NOT IN (SELECT reject_id FROM rejects WHERE source_file IN (SELECT unnest($files)))
        QUALIFY row_number() OVER (PARTITION BY reject_id ORDER BY line_no) = 1
        """,
        {"files": files, "now": now.replace(tzinfo=None)},
    )
    flag_safety(conn, files)
    counts: dict[str, dict[str, int]] = {}
    for file, reason, n in conn.execute("SELECT source_file, reason, count(*) FROM refused GROUP BY 1, 2").fetchall():
        counts.setdefault(file, {})[reason] = n
    conn.execute("DROP TABLE refused")
    return counts


