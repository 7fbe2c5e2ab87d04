"""Compaction of the embedded DuckDB file once short write windows have fragmented it.

Why it is needed: DuckDB 1.4 gives every write to an indexed table (PRIMARY KEY, UNIQUE — most of ours)
after the file was reopened a NEW row group, and never merges them again (its vacuum skips indexed tables;
fixed upstream after 1.4.4 by duckdb/duckdb#21316). Chronicle writes in short windows — open, commit,
close — so that other processes get the file in between; every window therefore leaves one small row
group per table it wrote, each in blocks of its own. Measured on a table of eight columns with a primary
key, 16 rows per window: after 1,600 windows the file was 407 MB for 25,600 rows (20 MB once copied) and
closing a window (its checkpoint) took 150 ms instead of 7 — a cost per week that grows with the history.

What is done: at the end of a writing flow (`storage/snapshot.py`, which already holds the file for one
CHECKPOINT and a copy), when the row groups beyond what the rows need exceed `MIN_EXTRA_ROW_GROUPS` and
their share of the file is large enough that the copy pays for itself (`_worth_it`), the database is
copied with `COPY FROM DATABASE` (tables with their constraints, views, indexes; data in full row
groups) into `<db>.compact.tmp`, checked, and swapped in with `os.replace`. The connection still open on
the old file writes nothing more (it was checkpointed first), so a kill at any moment leaves either the
old file or the new one, never a mix; a stale `.compact.tmp` is removed by the next compaction.
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

import duckdb

from chronicle.storage.files import STORAGE_VERSION

log = logging.getLogger("chronicle.storage.compaction")

ROW_GROUP_ROWS = 122_880  # DuckDB's default row group size
MIN_EXTRA_ROW_GROUPS = 64
"""Fewer surplus row groups than this are left alone: their cost is a few ms per window at most."""
BYTES_PER_EXTRA_ROW_GROUP = 256 * 1024
"""What one surplus row group costs in the file (measured: ~one 256 KiB block per window's row group)."""


@dataclass(frozen=True)
class Compaction:
    """One compaction: the file's size and its surplus row groups before, its size after, the seconds taken."""

    bytes_before: int
    bytes_after: int
    extra_row_groups: int
    seconds: float


def _tmp_path(path: Path) -> Path:
    return path.with_name(path.name + ".compact.tmp")


def extra_row_groups(conn: duckdb.DuckDBPyConnection) -> int:
    """Row groups of the main database's tables beyond the fewest their rows need."""
    tables = conn.execute("SELECT table_name FROM duckdb_tables() "
                          "WHERE database_name = current_database() AND NOT temporary").fetchall()
    if not tables:
        return 0
    # One statement for every table: two per table cost a statement's planning each, at every flow's end.
    counts = " UNION ALL ".join(
        f"""SELECT (SELECT count(DISTINCT row_group_id) FROM pragma_storage_info('{table.replace("'", "''")}')) """
        f"""AS g, (SELECT count(*) FROM "{table.replace('"', '""')}") AS n""" for (table,) in tables)
    return conn.execute(f"SELECT sum(greatest(0, g - (n + {ROW_GROUP_ROWS - 1}) // {ROW_GROUP_ROWS}))::BIGINT "
                        f"FROM ({counts})").fetchall()[0][0]


def _worth_it(extra: int, file_bytes: int) -> bool:
    # Surplus row groups must be at least a quarter of the file: the copy costs about the file's size, so
    # compacting only then keeps its cost per write window bounded however large the history grows.
    return extra >= MIN_EXTRA_ROW_GROUPS and extra * BYTES_PER_EXTRA_ROW_GROUP * 4 >= file_bytes


def _catalog(conn: duckdb.DuckDBPyConnection, database: str) -> list[tuple]:
    """What must survive the copy: every table's row count and DDL, the views, the indexes."""
    out = conn.execute("SELECT 'table', table_name, sql FROM duckdb_tables() WHERE database_name = ? "
                       "UNION ALL SELECT 'view', view_name, sql FROM duckdb_views() "
                       "WHERE database_name = ? AND NOT internal "
                       "UNION ALL SELECT 'index', index_name, sql FROM duckdb_indexes() WHERE database_name = ? "
                       "ORDER BY ALL", [database, database, database]).fetchall()
    counts = [("rows", name, str(conn.execute(f'SELECT count(*) FROM "{database}"."{name}"').fetchall()[0][0]))
              for kind, name, _sql in out if kind == "table"]
    return out + counts


def _copy_over(conn: duckdb.DuckDBPyConnection, path: Path, tmp: Path) -> None:
    """Write the compact copy to `tmp`, check it, make it durable and put it in `path`'s place."""
    source = conn.execute("SELECT current_database()").fetchall()[0][0]
    literal = str(tmp).replace("'", "''")  # ATTACH takes no bound parameters
    conn.execute(f"ATTACH '{literal}' AS chronicle_compacted (STORAGE_VERSION '{STORAGE_VERSION}')")
    try:
        conn.execute(f'COPY FROM DATABASE "{source}" TO chronicle_compacted')
        if _catalog(conn, "chronicle_compacted") != _catalog(conn, source):
            raise RuntimeError("the copy differs from the file")
    finally:
        try:
            conn.execute("DETACH chronicle_compacted")  # checkpoints and closes the copy: no WAL beside it
        except duckdb.Error:
            log.debug("DETACH of the compact copy failed", exc_info=True)  # the copy is discarded anyway
    with open(tmp, "rb+") as copy:
        os.fsync(copy.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


def compact_if_fragmented(conn: duckdb.DuckDBPyConnection, path: Path) -> Compaction | None:
    """Replace the file at `path` by a compact copy when fragmentation makes it worth it (module docstring).

    `conn` is the caller's connection to `path`, checkpointed, with no transaction open; the caller holds
    the cross-process lock and must not write through `conn` afterwards (it is on the old file then).
    A compaction that fails (a full disk, a copy that does not match) leaves the file as it was, logs a
    warning and returns None: it is upkeep, never a reason for the flow that wrote its data to fail.
    """
    started = time.monotonic()
    tmp = _tmp_path(path)
    tmp.unlink(missing_ok=True)  # left by a compaction that was killed: never used
    before = path.stat().st_size
    extra = extra_row_groups(conn)
    if not _worth_it(extra, before):
        return None
    try:
        _copy_over(conn, path, tmp)
    except (duckdb.Error, OSError, RuntimeError) as exc:
        log.warning("compaction of %s skipped, the file is left as it was (%d surplus row groups): %s",
                    path.name, extra, exc)
        return None
    finally:
        tmp.unlink(missing_ok=True)
    done = Compaction(before, path.stat().st_size, extra, time.monotonic() - started)
    log.info("compacted %s: %d surplus row groups, %.1f -> %.1f MB in %.2fs", path.name, extra,
             done.bytes_before / 1e6, done.bytes_after / 1e6, done.seconds)
    return done
